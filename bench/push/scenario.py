#!/usr/bin/env python3
"""The scenario of bench/push/run: write → push decrypted by the stand-in.

    scenario.py proxy --target http://localhost:P --port-file port.txt
    scenario.py run --url URL --seed seed.json --staff staff.jsonl \
        --push-service http://localhost:P --proxy http://127.0.0.1:Q \
        --calls N --rate R --watch S --budget-p99-ms B

`proxy` is a recording proxy in front of web-push-testing (the Web Push
service stand-in of the test suite, which decrypts every push but keeps no
times): it forwards each `POST /notify/<hash>` unchanged and notes, per
push, its `Topic` (the call) and when the stand-in answered 201, that is
when it had decrypted it (`GET /seen` returns them).

`run` subscribes every staff member's "browser" at the stand-in with the
service's VAPID key (`GET /api/v1/staff/push-key`), registers it
(`POST /api/v1/staff/push-subscriptions`, its endpoint pointed at the
proxy), signs everybody on for the whole house, opens N Notrufe at R a
second (signed as DECISIONS §2 says) and keeps when each open was answered
(the write committed). After S seconds: the latency of a call at a phone is
the stand-in's 201 for the call's alert minus the open's answer; p50, p99,
max over calls × staff. It then asks the stand-in for every phone's
decrypted pushes and counts the alerts in them. Prints the markdown table;
exits 1 when p99 is over the budget or an alert is missing.
"""

import argparse
import json
import sys
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "alarms"))
from scenario import open_calls, percentile, request, staff_members  # noqa: E402 (bench/alarms)

FORWARDED = ("TTL", "Content-Encoding", "Content-Type", "Authorization", "Urgency", "Topic")


def proxy(args: argparse.Namespace) -> int:
    seen, lock = [], threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format, *a):  # noqa: A002
            pass

        def reply(self, status, data=b""):
            self.send_response(status)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self):  # noqa: N802
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            forward = urllib.request.Request(args.target + self.path, data=body, method="POST")
            for name in FORWARDED:
                if self.headers.get(name):
                    forward.add_header(name, self.headers[name])
            try:
                with urllib.request.urlopen(forward, timeout=30) as answer:
                    status, data = answer.status, answer.read()
            except urllib.error.HTTPError as error:
                status, data = error.code, error.read()
            with lock:
                seen.append({"topic": self.headers.get("Topic"), "hash": self.path.rsplit("/", 1)[-1],
                             "status": status, "at": time.time()})
            self.reply(status, data)

        def do_GET(self):  # noqa: N802
            with lock:
                data = json.dumps(seen).encode()
            self.reply(200, data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    server.request_queue_size = 256
    Path(args.port_file).write_text(f"{server.server_address[1]}\n")
    server.serve_forever()
    return 0


def run(args: argparse.Namespace) -> int:
    seeded = json.loads(Path(args.seed).read_text())
    consumer = seeded["consumers"][0]
    members = staff_members(args.staff)
    hashes = []
    for member in members:
        key = request("GET", f"{args.url}/api/v1/staff/push-key", token=member["token"])["data"]["public_key"]
        made = request("POST", f"{args.push_service}/subscribe",
                       {"userVisibleOnly": "true", "applicationServerKey": key})["data"]
        hashes.append(made["clientHash"])
        subscription = {"endpoint": f"{args.proxy}/notify/{made['clientHash']}", "expirationTime": None,
                        "keys": made["keys"]}
        request("POST", f"{args.url}/api/v1/staff/push-subscriptions", subscription, member["token"])
        request("PUT", f"{args.url}/api/v1/staff/duty", {"sections": []}, member["token"])
    print(f"{len(members)} staff subscribed and on duty", file=sys.stderr)

    started = time.monotonic()
    answered = open_calls(args.url, consumer, args.calls, args.rate, lambda i: f"S{i % 10}")
    print(f"{args.calls} calls opened in {time.monotonic() - started:.1f} s; "
          f"waiting {args.watch} s for the pushes", file=sys.stderr)
    time.sleep(args.watch)

    first = {}
    for push in request("GET", f"{args.proxy}/seen"):
        if push["status"] != 201 or not (push["topic"] or "").startswith("call-"):
            continue
        call = int(push["topic"].removeprefix("call-"))
        if call in answered:
            key = (call, push["hash"])
            first[key] = min(first.get(key, push["at"]), push["at"])
    latencies = [int(1000 * max(0.0, at - answered[call])) for (call, _), at in first.items()]
    # What the stand-in decrypted: every phone's alert of every call.
    decrypted = 0
    for client_hash in hashes:
        messages = request("POST", f"{args.push_service}/get-notifications",
                           {"clientHash": client_hash})["data"]["messages"]
        decrypted += len({json.loads(m)["call"]["id"] for m in messages
                          if json.loads(m)["type"] == "call.alert"} & answered.keys())
    expected = len(answered) * len(members)
    missing = expected - decrypted
    if not latencies:
        print("no push arrived", file=sys.stderr)
        return 1
    p50, p99 = percentile(latencies, 50), percentile(latencies, 99)
    ok = p99 <= args.budget_p99_ms and missing == 0
    print()
    print("| calls | rate /s | staff with a phone | alerts decrypted | missing | p50 ms | p99 ms | max ms "
          "| budget p99 ms | |")
    print("|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|")
    print(f"| {args.calls} | {args.rate:g} | {len(members)} | {decrypted} | {missing} | {p50} | {p99} "
          f"| {max(latencies)} | {args.budget_p99_ms} | {'ok' if ok else 'MISSED'} |")
    return 0 if ok else 1


def main() -> int:
    parser = argparse.ArgumentParser()
    commands = parser.add_subparsers(dest="command", required=True)
    p = commands.add_parser("proxy")
    p.add_argument("--target", required=True)
    p.add_argument("--port-file", required=True)
    r = commands.add_parser("run")
    for name in ("url", "seed", "staff", "push-service", "proxy"):
        r.add_argument(f"--{name}", required=True)
    r.add_argument("--calls", type=int, required=True)
    r.add_argument("--rate", type=float, required=True)
    r.add_argument("--watch", type=int, required=True)
    r.add_argument("--budget-p99-ms", type=int, required=True)
    args = parser.parse_args()
    return proxy(args) if args.command == "proxy" else run(args)


if __name__ == "__main__":
    sys.exit(main())
