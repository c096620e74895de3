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

With `--receipt-seconds R` (the server's RECEIPT_SECONDS) the table also
counts the steps due at a receipt deadline: each step's due time (its line's
time less `late_ms`) is placed after its call's `opened_at`; nobody posts a
receipt here, so the section's recipients are not reached at R and start
the house (at 20 s by time otherwise), whose recipients are not reached R
later and start Leitung (no one new there: everyone is on duty for the
house) and then leave the call unattended (the policy the run script sets).
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
import zoneinfo
from pathlib import Path

SECTIONS = [f"S{i}" for i in range(10)]
# When the house's level falls due by time (bench/alarms/run's policy).
HOUSE_AFTER = 20


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


def signed_open(consumer: dict, target: str, data: dict) -> dict:
    """The body of `POST /api/v1/display` for `target` with `data`, signed
    as `consumer` (its first secret) as DECISIONS §2 says: HMAC-SHA256 over
    `<target>.<consumer>.<data as compact JSON>`."""
    cid, secret = consumer["id"], consumer["secrets"][0]
    data_json = json.dumps(data, separators=(",", ":"))
    signed = hmac.new(secret.encode(), f"{target}.{cid}.{data_json}".encode(), hashlib.sha256)
    return {"target": target, "consumer": cid, "hash": signed.hexdigest(), "data": data}


def open_calls(
    url: str, consumer: dict, calls: int, rate: float, section_of, opened_at: dict | None = None
) -> dict[int, float]:
    """Opens `calls` Notruf calls on `address(i)` in section `section_of(i)`,
    `rate` a second, each signed as `consumer` (its first secret). Returns
    when each was answered (wall clock), by call id; `opened_at`, if given,
    gets each call's `opened_at` as the server kept it (whole seconds)."""
    answered = {}
    started = time.monotonic()
    for i in range(calls):
        time.sleep(max(0.0, started + i / rate - time.monotonic()))
        body = signed_open(consumer, address(i), {"event": "Notruf", "section": section_of(i)})
        opened = request("POST", f"{url}/api/v1/display", body)
        answered[opened["data"]["id"]] = time.time()
        if opened_at is not None:
            opened_at[opened["data"]["id"]] = datetime.datetime.fromisoformat(opened["data"]["opened_at"])
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
    opened_at = {}
    open_calls(args.url, consumer, args.calls, args.rate, lambda i: SECTIONS[i % len(SECTIONS)], opened_at)
    # Wire times are local to the installation (no offset).
    zone = zoneinfo.ZoneInfo(os.environ.get("SERVICE_TIME_ZONE", "Europe/Berlin"))
    opened_at = {cid: at.replace(tzinfo=zone) if at.tzinfo is None else at for cid, at in opened_at.items()}
    opened_for = time.monotonic() - started
    print(f"{args.calls} calls opened in {opened_for:.1f} s; watching {args.watch} s", file=sys.stderr)
    time.sleep(1)
    window_start = datetime.datetime.now(datetime.timezone.utc)
    cpu_before = cpu_seconds(args.pid)
    time.sleep(args.watch - 1)
    window_end = datetime.datetime.now(datetime.timezone.utc)
    cpu = cpu_seconds(args.pid) - cpu_before
    load = Path("/proc/loadavg").read_text().split()[0]

    # Receipt deadlines, in seconds after the open (see the module's doc).
    deadlines = set()
    if args.receipt_seconds:
        house_at = min(HOUSE_AFTER, args.receipt_seconds)
        deadlines = {args.receipt_seconds, house_at + args.receipt_seconds}
    late, levels, offsets, at_deadline = [], {}, {}, []
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
            opened = opened_at.get(int(entry["call_id"]))
            if opened is not None:
                due = at - datetime.timedelta(milliseconds=int(entry["late_ms"]))
                offset = round((due - opened).total_seconds())
                offsets[offset] = offsets.get(offset, 0) + 1
                if offset in deadlines:
                    at_deadline.append(int(entry["late_ms"]))
    if not late:
        print("no level or re-alert started in the window", file=sys.stderr)
        return 1
    p50, p99 = percentile(late, 50), percentile(late, 99)
    ok = p99 <= args.budget_p99_ms
    window = (window_end - window_start).total_seconds()
    common = sorted(offsets.items(), key=lambda kv: -kv[1])[:12]
    print("steps by due time after the open (s: steps): "
          + ", ".join(f"{o}: {n}" for o, n in sorted(common)), file=sys.stderr)
    deadline_cell = "–"
    if args.receipt_seconds:
        deadline_cell = f"{len(at_deadline)} (at {'/'.join(str(d) for d in sorted(deadlines))} s)"
        if at_deadline:
            deadline_cell += f"; p99 {percentile(at_deadline, 99)} ms, max {max(at_deadline)}"
    print()
    print("| calls | staff on duty | RECEIPT_SECONDS | steps in the window | of them at a receipt deadline "
          "| steps/s | by level (1/2/3) | p50 ms | p99 ms | max ms "
          "| server CPU ms/step | server CPU, cores | load (1 min) | budget p99 ms | |")
    print("|--:|--:|--:|--:|--|--:|--|--:|--:|--:|--:|--:|--:|--:|---|")
    print(
        f"| {args.calls} | {len(members)} | {args.receipt_seconds or 'default'} | {len(late)} | {deadline_cell} "
        f"| {len(late) / window:.1f} "
        f"| {levels.get(1, 0)}/{levels.get(2, 0)}/{levels.get(3, 0)} | {p50} | {p99} | {max(late)} "
        f"| {1000 * cpu / len(late):.2f} | {cpu / window:.2f} | {load} "
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
    r.add_argument("--receipt-seconds", type=int, default=0)
    args = parser.parse_args()
    if args.command == "seed":
        seed(args)
        return 0
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
