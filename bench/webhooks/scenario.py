#!/usr/bin/env python3
"""The scenario of bench/webhooks/run: write → first delivery attempt.

    scenario.py receivers --count 3 --ports-file ports.txt
    scenario.py run --url URL --seed seed.json --staff staff.jsonl --calls N \
        --rate R --watch S --receivers ports.txt --budget-p99-ms B

`receivers` starts COUNT plain HTTP receivers on free loopback ports in one
process (threads), writes their ports to the file, and answers 200 to every
POST, recording its `webhook-id`, the body's type and call id and the
arrival time (`GET /received` returns them). They do not verify: the test
suite's receiver does that (tests/receivers/webhook_receiver.py); here only
the time counts.

`run` signs the staff on (the whole house), opens N Notrufe at R a second
(signed as DECISIONS §2 says) and keeps, per call, when the open was
answered (the write is committed then); after S seconds it reads every
receiver: the latency of a call at an endpoint is the arrival of the first
attempt of its `call.alert` minus the open's answer. Prints the markdown
table (p50, p99, max over calls × endpoints); exits 1 when p99 is over the
budget or an alert is missing.
"""

import argparse
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "alarms"))
from scenario import open_calls, percentile, request, staff_members  # noqa: E402 (bench/alarms)


def receivers(args: argparse.Namespace) -> int:
    servers = []
    for _ in range(args.count):
        got, lock = [], threading.Lock()

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            received, guard = got, lock

            def log_message(self, format, *a):  # noqa: A002
                pass

            def reply(self, status, data=b"{}"):
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self):  # noqa: N802
                arrived = time.time()
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                parsed = json.loads(body)
                with self.guard:
                    self.received.append({
                        "id": self.headers.get("webhook-id"),
                        "type": parsed.get("type"),
                        "call": (parsed.get("data") or {}).get("call", {}).get("id"),
                        "at": arrived,
                    })
                self.reply(200)

            def do_GET(self):  # noqa: N802
                with self.guard:
                    data = json.dumps(self.received).encode()
                self.reply(200, data)

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
    Path(args.ports_file).write_text("\n".join(str(s.server_address[1]) for s in servers) + "\n")
    threading.Event().wait()
    return 0


def run(args: argparse.Namespace) -> int:
    seeded = json.loads(Path(args.seed).read_text())
    consumer = seeded["consumers"][0]
    for member in staff_members(args.staff):
        request("PUT", f"{args.url}/api/v1/staff/duty", {"sections": []}, member["token"])
    ports = Path(args.receivers).read_text().split()

    started = time.monotonic()
    answered = open_calls(args.url, consumer, args.calls, args.rate, lambda i: f"S{i % 10}")
    print(f"{args.calls} calls opened in {time.monotonic() - started:.1f} s; "
          f"waiting {args.watch} s for the deliveries", file=sys.stderr)
    time.sleep(args.watch)

    latencies, missing = [], 0
    for port in ports:
        first = {}
        for got in request("GET", f"http://127.0.0.1:{port}/received"):
            if got["type"] == "call.alert" and got["call"] in answered:
                first[got["call"]] = min(first.get(got["call"], got["at"]), got["at"])
        missing += len(answered) - len(first)
        latencies += [int(1000 * max(0.0, at - answered[call])) for call, at in first.items()]
    if not latencies:
        print("no alert arrived", file=sys.stderr)
        return 1
    p50, p99 = percentile(latencies, 50), percentile(latencies, 99)
    ok = p99 <= args.budget_p99_ms and missing == 0
    print()
    print("| calls | rate /s | endpoints | first attempts | missing | p50 ms | p99 ms | max ms | budget p99 ms | |")
    print("|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|")
    print(f"| {args.calls} | {args.rate:g} | {len(ports)} | {len(latencies)} | {missing} | {p50} | {p99} "
          f"| {max(latencies)} | {args.budget_p99_ms} | {'ok' if ok else 'MISSED'} |")
    return 0 if ok else 1


def main() -> int:
    parser = argparse.ArgumentParser()
    commands = parser.add_subparsers(dest="command", required=True)
    r = commands.add_parser("receivers")
    r.add_argument("--count", type=int, required=True)
    r.add_argument("--ports-file", required=True)
    s = commands.add_parser("run")
    for name in ("url", "seed", "staff", "receivers"):
        s.add_argument(f"--{name}", required=True)
    s.add_argument("--calls", type=int, required=True)
    s.add_argument("--rate", type=float, required=True)
    s.add_argument("--watch", type=int, required=True)
    s.add_argument("--budget-p99-ms", type=int, required=True)
    args = parser.parse_args()
    return receivers(args) if args.command == "receivers" else run(args)


if __name__ == "__main__":
    sys.exit(main())
