#!/usr/bin/env python3
"""Seed file and pre-signed display requests for the load benchmark.

    make-requests.py seed --threads T --addresses A --out seed.json
    make-requests.py requests --seed seed.json --threads T --pairs P \
        --first-round R --out DIR

`seed` writes a seed file for the local server (`--seed`, production mode):
one consumer with a fresh random secret and T x A registered elements, the
addresses of thread t being 02:00:00:<t>:<k> (k < A, locally administered
MAC-style, as radio gateways send them).

`requests` writes DIR/t<NN>.req for threads 0..T-1: one JSON body per line,
P pairs per thread, each pair an open and then a close of the same address,
signed as README "Trying it with curl" and DECISIONS §2 describe: hex
HMAC-SHA256 of `<target>.<consumer>.<data_json>` keyed with the secret, where
data_json is the `data` text exactly as it is in the body. Pair j of a thread
uses its address j mod A in round R + j div A; the round picks the event and
the battery level (two decimals), so every body differs from every other
(up to 10,001 rounds). A wrk connection that sends a thread's lines in order
keeps open-before-close per address; no other thread touches its addresses.
"""

import argparse
import hashlib
import hmac
import json
import secrets
import uuid
from pathlib import Path

EVENTS = ["Normalruf", "WC", "Notruf", "Anwesenheit"]


def address(thread: int, k: int) -> str:
    return f"02:00:00:{thread:02x}:{k >> 8:02x}:{k & 0xFF:02x}"


def seed(args: argparse.Namespace) -> None:
    consumer = {
        "id": str(uuid.uuid4()),
        "name": "Load benchmark (bench/load)",
        "secrets": [secrets.token_hex(32)],
        "allow_sha1": False,
    }
    elements = [
        {
            "address": address(t, k),
            "code": f"B{t:02d}{k:04d}",
            "name": f"Lastprobe {t}-{k}, Bett 1",
        }
        for t in range(args.threads)
        for k in range(args.addresses)
    ]
    meta = {"threads": args.threads, "addresses": args.addresses}
    text = json.dumps({"consumers": [consumer], "elements": elements}, indent=1)
    Path(args.out).write_text(text + "\n", encoding="utf-8")
    # The server rejects unknown keys in the seed file: keep ours beside it.
    Path(args.out + ".meta").write_text(json.dumps(meta) + "\n", encoding="utf-8")


def body(target: str, consumer: str, secret: bytes, data: dict) -> str:
    data_json = json.dumps(data, separators=(",", ":"))
    message = f"{target}.{consumer}.{data_json}".encode()
    digest = hmac.new(secret, message, hashlib.sha256).hexdigest()
    # Built by hand so that the body carries exactly the signed data text.
    return (
        f'{{"target":{json.dumps(target)},"consumer":"{consumer}",'
        f'"hash":"{digest}","data":{data_json}}}'
    )


def requests(args: argparse.Namespace) -> None:
    seed_file = json.loads(Path(args.seed).read_text(encoding="utf-8"))
    meta = json.loads(Path(args.seed + ".meta").read_text(encoding="utf-8"))
    consumer = seed_file["consumers"][0]
    consumer_id, secret = consumer["id"], consumer["secrets"][0].encode()
    per_thread = meta["addresses"]
    if args.threads > meta["threads"]:
        raise SystemExit(f"the seed has addresses for {meta['threads']} threads only")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for t in range(args.threads):
        lines = []
        for j in range(args.pairs):
            target = address(t, j % per_thread)
            round_ = args.first_round + j // per_thread
            battery = (round_ % 10001) / 100
            event = EVENTS[round_ % len(EVENTS)]
            lines.append(body(target, consumer_id, secret, {"event": event, "battery": battery}))
            lines.append(body(target, consumer_id, secret, {"closed": True, "battery": battery}))
        (out / f"t{t:02d}.req").write_text("\n".join(lines) + "\n", encoding="utf-8")
    # Rounds used, so that the next run can start after them.
    print(args.first_round + -(-args.pairs // per_thread))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    s = commands.add_parser("seed")
    s.add_argument("--threads", type=int, required=True)
    s.add_argument("--addresses", type=int, required=True, help="per thread, at most 65536")
    s.add_argument("--out", required=True)
    r = commands.add_parser("requests")
    r.add_argument("--seed", required=True)
    r.add_argument("--threads", type=int, required=True)
    r.add_argument("--pairs", type=int, required=True, help="open+close pairs per thread")
    r.add_argument("--first-round", type=int, default=0)
    r.add_argument("--out", required=True)
    args = parser.parse_args()
    {"seed": seed, "requests": requests}[args.command](args)


if __name__ == "__main__":
    main()
