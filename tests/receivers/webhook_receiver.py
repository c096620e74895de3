#!/usr/bin/env python3
"""A webhook receiver for the black-box tests (DECISIONS §16), as an alarm
server's would be: every delivery is verified with the Standard Webhooks
reference library from PyPI (`standardwebhooks`, pinned in
requirements-test.txt), which no one here wrote.

    python3 tests/receivers/webhook_receiver.py [--port 0]

prints `listening on <port>` once it accepts connections. A delivery is any
POST outside /control/. It is verified against the secrets the test gave
(any of them may match, as during a rotation); a delivery that does not
verify (tampered body, stale or future timestamp, wrong signature) is
answered 400 and recorded with `verified: false`. A verified one is answered
with the next status of the script the test set (default 200).

Control (JSON):
  POST /control/secrets  {"secrets": ["whsec_…", …]}
  POST /control/answers  {"statuses": [503, 503, 503]}  answered in turn, then 200
  GET  /control/received {"deliveries": [{id, timestamp, type, body, verified,
                          status, received_at, path}, …]} in arrival order
"""

import argparse
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from standardwebhooks.webhooks import Webhook, WebhookVerificationError

LOCK = threading.Lock()
SECRETS = []
STATUSES = []
RECEIVED = []


def verified(body, headers):
    """The parsed body if any secret verifies it, else None."""
    for secret in SECRETS:
        try:
            return Webhook(secret).verify(body, headers)
        except WebhookVerificationError:
            continue
    return None


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format, *args):  # noqa: A002 (the base class's name)
        pass

    def answer(self, status, payload=None):
        data = json.dumps(payload if payload is not None else {}).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def body(self):
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length).decode("utf-8") if length else ""

    def do_GET(self):  # noqa: N802 (http.server's name)
        if self.path == "/control/received":
            with LOCK:
                self.answer(200, {"deliveries": list(RECEIVED)})
        else:
            self.answer(404)

    def do_POST(self):  # noqa: N802
        text = self.body()
        if self.path == "/control/secrets":
            with LOCK:
                SECRETS[:] = json.loads(text)["secrets"]
            self.answer(200)
            return
        if self.path == "/control/answers":
            with LOCK:
                STATUSES[:] = json.loads(text)["statuses"]
            self.answer(200)
            return
        headers = {name.lower(): value for name, value in self.headers.items()}
        with LOCK:
            parsed = verified(text, headers)
            status = 400 if parsed is None else (STATUSES.pop(0) if STATUSES else 200)
            RECEIVED.append(
                {
                    "id": headers.get("webhook-id"),
                    "timestamp": headers.get("webhook-timestamp"),
                    "signature": headers.get("webhook-signature"),
                    "content_type": headers.get("content-type"),
                    "type": parsed.get("type") if parsed else None,
                    "body": text,
                    "verified": parsed is not None,
                    "status": status,
                    "received_at": time.time(),
                    "path": self.path,
                }
            )
        self.answer(status)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.daemon_threads = True
    print(f"listening on {server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
