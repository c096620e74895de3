#!/usr/bin/env python3
"""Trailing closes and the store check of the load benchmark.

    check-store.py close-trailing --url URL --requests DIR --result FILE
    check-store.py verify --results FILE... (--sqlite DB | --dynamodb URL --table NAME)
    check-store.py outbox-drained --sqlite DB --limit SECONDS

`close-trailing`, after each wrk run: wrk stops mid-pair, so for every thread
the close of the pair holding its last issued request is sent (again, if it
was the last one: a repeated close closes nothing and answers 200 []).

`verify`, after all runs: every call in the store is closed (SQLite: no row
with closed_at NULL; DynamoDB: no call item without closed_at and no
open-call lock left), and the number of calls written matches the opens
sent. An open is "sent" when wrk issued it; the last request of a thread may
have been cut off by wrk's stop before the server saw it, so the calls
written may be up to one per thread and run below the opens sent, never above.
Prints one JSON line; exits 1 when the check fails.

`outbox-drained`, with WEBHOOK=1 once wrk stopped: how long the webhook
outbox takes to empty (every event delivered and finished; at saturation
the deliveries lag), waiting up to SECONDS. Prints one line.
"""

import argparse
import json
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path


def bench_result(path: str) -> dict:
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if line.startswith("BENCH_RESULT "):
            return json.loads(line[len("BENCH_RESULT "):])
    raise SystemExit(f"{path}: no BENCH_RESULT line (did wrk finish?)")


def post(url: str, body: str) -> tuple[int, str]:
    request = urllib.request.Request(
        url + "/api/v1/display",
        data=body.encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def close_trailing(args: argparse.Namespace) -> None:
    result = bench_result(args.result)
    sent = closed = 0
    for thread, issued in enumerate(result["issued"]):
        if issued == 0:
            continue
        lines = Path(args.requests, f"t{thread:02d}.req").read_text().splitlines()
        last = (issued - 1) % len(lines)
        close = lines[last - last % 2 + 1]
        status, text = post(args.url, close)
        if status != 200:
            raise SystemExit(f"trailing close of thread {thread}: {status} {text}")
        sent += 1
        closed += len(json.loads(text)["data"])
    print(f"trailing closes: {sent} sent, {closed} call(s) closed by them")


def read_only(db: str):
    import sqlite3

    return sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)


def count_sqlite(db: str) -> dict:
    connection = read_only(db)
    total, still_open = connection.execute(
        "SELECT count(*), coalesce(sum(closed_at IS NULL), 0) FROM calls"
    ).fetchone()
    connection.close()
    return {"calls": total, "open_calls": still_open, "open_locks": 0}


def count_dynamodb(endpoint: str, table: str) -> dict:
    import boto3  # from the moto venv (requirements-test.txt)

    client = boto3.client("dynamodb", endpoint_url=endpoint)
    counts = {"calls": 0, "open_calls": 0, "open_locks": 0}
    for page in client.get_paginator("scan").paginate(
        TableName=table, ProjectionExpression="sk, closed_at", ConsistentRead=True
    ):
        for item in page["Items"]:
            sk = item["sk"]["S"]
            if sk == "call":
                counts["calls"] += 1
                counts["open_calls"] += "closed_at" not in item
            elif sk.startswith("open#"):
                counts["open_locks"] += 1
    return counts


def verify(args: argparse.Namespace) -> None:
    results = [bench_result(path) for path in args.results]
    requests = sum(sum(r["issued"]) for r in results)
    opens = sum((issued + 1) // 2 for r in results for issued in r["issued"])
    cut_off = sum(1 for r in results for issued in r["issued"] if issued)
    if args.sqlite:
        counts = count_sqlite(args.sqlite)
    else:
        counts = count_dynamodb(args.dynamodb, args.table)
    ok = (
        counts["open_calls"] == 0
        and counts["open_locks"] == 0
        and opens - cut_off <= counts["calls"] <= opens
    )
    report = {"requests_sent": requests, "opens_sent": opens, **counts, "ok": ok}
    print(json.dumps(report))
    sys.exit(0 if ok else 1)


def outbox_drained(args: argparse.Namespace) -> None:
    connection = read_only(args.sqlite)
    started = time.monotonic()
    while True:
        left = connection.execute("SELECT count(*) FROM webhook_outbox").fetchone()[0]
        waited = time.monotonic() - started
        if left == 0:
            print(f"webhook outbox empty {waited:.1f} s after wrk stopped")
            return
        if waited > args.limit:
            print(f"webhook outbox still holds {left} events {args.limit:.0f} s after wrk stopped")
            return
        time.sleep(0.25)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    c = commands.add_parser("close-trailing")
    c.add_argument("--url", required=True)
    c.add_argument("--requests", required=True)
    c.add_argument("--result", required=True)
    v = commands.add_parser("verify")
    v.add_argument("--results", nargs="+", required=True)
    store = v.add_mutually_exclusive_group(required=True)
    store.add_argument("--sqlite")
    store.add_argument("--dynamodb")
    v.add_argument("--table", default="nurse-call-data")
    d = commands.add_parser("outbox-drained")
    d.add_argument("--sqlite", required=True)
    d.add_argument("--limit", type=float, required=True)
    args = parser.parse_args()
    commands_by_name = {
        "close-trailing": close_trailing,
        "verify": verify,
        "outbox-drained": outbox_drained,
    }
    commands_by_name[args.command](args)


if __name__ == "__main__":
    main()
