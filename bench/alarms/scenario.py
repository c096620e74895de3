#!/usr/bin/env python3
"""The scenario of bench/alarms/run.

    scenario.py seed --calls N --out seed.json
    scenario.py run --url URL --seed seed.json --staff staff.jsonl --calls N \
        --rate R --watch S --log server.log --budget-p99-ms B

`seed` writes a seed file for the local server (production mode): one
consumer with a fresh secret and N registered elements.

`run` signs each staff member on (ten sections; every tenth for the whole
house), opens N Notrufe at R a second (signed as DECISIONS §2 says, sections
round robin), watches S seconds after the last open, then reads the server's
log: every `due alarm stepped` line of that window is a level or re-alert the
timers started, `late_ms` after its time. Prints the markdown table; exits 1
when p99 is over the budget or nothing was measured.
"""

import argparse
import datetime
import hashlib
import hmac
import json
import os
import secrets
import sys
import time
import urllib.request
import uuid
from pathlib import Path

SECTIONS = [f"S{i}" for i in range(10)]


def address(i: int) -> str:
    return f"Zimmer-{i:04d}"


def seed(args: argparse.Namespace) -> None:
    consumer = {
        "id": str(uuid.uuid4()),
        "name": "Alarm benchmark (bench/alarms)",
        "secrets": [secrets.token_hex(32)],
        "allow_sha1": False,
    }
    elements = [
        {"address": address(i), "code": f"Z{i:04d}", "name": f"Zimmer {i}"}
        for i in range(args.calls)
    ]
    Path(args.out).write_text(json.dumps({"consumers": [consumer], "elements": elements}))


def request(method: str, url: str, body: dict | None = None, token: str | None = None) -> dict:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method)
    if body is not None:
        req.add_header("Content-Type", "application/json")
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    with urllib.request.urlopen(req, timeout=30) as response:
        return json.load(response)


def staff_members(path: str) -> list[dict]:
    """The admin's `--json` outputs, one after the other."""
    text, members, decoder, at = Path(path).read_text(), [], json.JSONDecoder(), 0
    while True:
        while at < len(text) and text[at].isspace():
            at += 1
        if at >= len(text):
            return members
        member, at = decoder.raw_decode(text, at)
        members.append(member)


def open_calls(url: str, consumer: dict, calls: int, rate: float, section_of) -> dict[int, float]:
    """Opens `calls` Notruf calls on `address(i)` in section `section_of(i)`,
    `rate` a second, each signed as `consumer` (its first secret). Returns
    when each was answered (wall clock), by call id."""
    cid, secret = consumer["id"], consumer["secrets"][0]
    answered = {}
    started = time.monotonic()
    for i in range(calls):
        time.sleep(max(0.0, started + i / rate - time.monotonic()))
        data = {"event": "Notruf", "section": section_of(i)}
        data_json = json.dumps(data, separators=(",", ":"))
        target = address(i)
        signed = hmac.new(secret.encode(), f"{target}.{cid}.{data_json}".encode(), hashlib.sha256)
        body = {"target": target, "consumer": cid, "hash": signed.hexdigest(), "data": data}
        opened = request("POST", f"{url}/api/v1/display", body)
        answered[opened["data"]["id"]] = time.time()
    return answered


def cpu_seconds(pid: int) -> float:
    """User and system CPU time the process has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def percentile(values: list[int], p: float) -> int:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))]


def run(args: argparse.Namespace) -> int:
    seeded = json.loads(Path(args.seed).read_text())
    consumer = seeded["consumers"][0]
    members = staff_members(args.staff)
    for i, member in enumerate(members):
        sections = [] if i % 10 == 9 else [SECTIONS[i % len(SECTIONS)]]
        request("PUT", f"{args.url}/api/v1/staff/duty", {"sections": sections}, member["token"])
    print(f"{len(members)} staff on duty", file=sys.stderr)

    started = time.monotonic()
    open_calls(args.url, consumer, args.calls, args.rate, lambda i: SECTIONS[i % len(SECTIONS)])
    opened_for = time.monotonic() - started
    print(f"{args.calls} calls opened in {opened_for:.1f} s; watching {args.watch} s", file=sys.stderr)
    time.sleep(1)
    window_start = datetime.datetime.now(datetime.timezone.utc)
    cpu_before = cpu_seconds(args.pid)
    time.sleep(args.watch - 1)
    window_end = datetime.datetime.now(datetime.timezone.utc)
    cpu = cpu_seconds(args.pid) - cpu_before

    late, levels = [], {}
    for line in Path(args.log).read_text().splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if entry.get("message") != "due alarm stepped":
            continue
        at = datetime.datetime.fromisoformat(entry["timestamp"].replace("Z", "+00:00"))
        if window_start <= at <= window_end:
            late.append(int(entry["late_ms"]))
            levels[entry["alarm_level"]] = levels.get(entry["alarm_level"], 0) + 1
    if not late:
        print("no level or re-alert started in the window", file=sys.stderr)
        return 1
    p50, p99 = percentile(late, 50), percentile(late, 99)
    ok = p99 <= args.budget_p99_ms
    window = (window_end - window_start).total_seconds()
    print()
    print("| calls | staff on duty | steps in the window | steps/s | by level (1/2/3) | p50 ms | p99 ms | max ms "
          "| server CPU ms/step | server CPU, cores | budget p99 ms | |")
    print("|--:|--:|--:|--:|--|--:|--:|--:|--:|--:|--:|---|")
    print(
        f"| {args.calls} | {len(members)} | {len(late)} | {len(late) / window:.1f} "
        f"| {levels.get(1, 0)}/{levels.get(2, 0)}/{levels.get(3, 0)} | {p50} | {p99} | {max(late)} "
        f"| {1000 * cpu / len(late):.2f} | {cpu / window:.2f} "
        f"| {args.budget_p99_ms} | {'ok' if ok else 'MISSED'} |"
    )
    return 0 if ok else 1


def main() -> int:
    parser = argparse.ArgumentParser()
    commands = parser.add_subparsers(dest="command", required=True)
    s = commands.add_parser("seed")
    s.add_argument("--calls", type=int, required=True)
    s.add_argument("--out", required=True)
    r = commands.add_parser("run")
    for name in ("url", "seed", "staff", "log"):
        r.add_argument(f"--{name}", required=True)
    r.add_argument("--calls", type=int, required=True)
    r.add_argument("--rate", type=float, required=True)
    r.add_argument("--watch", type=int, required=True)
    r.add_argument("--budget-p99-ms", type=int, required=True)
    r.add_argument("--pid", type=int, required=True)
    args = parser.parse_args()
    if args.command == "seed":
        seed(args)
        return 0
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
