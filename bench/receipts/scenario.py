#!/usr/bin/env python3
"""The scenario of bench/receipts/run: write → receipt posted by a stand-in
phone (issue 45).

    scenario.py run --url URL --seed seed.json --staff staff.jsonl \
        --calls N --rate R --watch S --budget-p99-ms B --pid PID

Signs every staff member on for the whole house, opens one live socket per
person as the staff page does (`GET /api/v1/display/live?token=…`), then
opens N Notrufe at R a second (signed as DECISIONS §2 says). Each socket is
a stand-in phone: the moment a `call.alert` arrives it posts the alert's
`receipt` (`POST /api/v1/staff/receipts`, the person's token as Bearer), as
the open page and the service worker do. Per alert: from the open's request
sent (and, second figure, from its answer) to the receipt's 200, with the
two halves (open → alert on the socket, alert → receipt's 200); p50, p99,
max. Waits until every alert is received or S seconds after the last open.
Prints the markdown table; exits 1 when p99 from the open sent is over the
budget, an alert is missing, or a receipt was not answered 200.

Standard library only (the bench's Python has no WebSocket package): a
minimal WebSocket client (RFC 6455: unmasked server frames, masked pongs)
and keep-alive HTTP/1.1, all on one asyncio loop so that every time is
taken on one clock, `time.monotonic()`. The phones look into a frame only
when it starts as a `call.alert` does: with 100 pages open every receipt
sends the call (and its 100 recipients) to every page, which is most of
what the sockets carry, and the client must not be what is measured.
"""

import argparse
import asyncio
import base64
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "alarms"))
from scenario import address, cpu_seconds, percentile, request, signed_open, staff_members  # noqa: E402

LIVE = "/api/v1/display/live"
RECEIPTS = "/api/v1/staff/receipts"
ALERT = b'{"type":"call.alert"'


class Http:
    """One keep-alive HTTP/1.1 connection (answers with a Content-Length or
    chunked, as hyper sends them)."""

    def __init__(self, host: str, port: int):
        self.host, self.port = host, port
        self.reader = self.writer = None

    async def request(self, method: str, path: str, body: bytes, headers: dict) -> tuple[int, bytes]:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        head = [f"{method} {path} HTTP/1.1", f"Host: {self.host}:{self.port}", f"Content-Length: {len(body)}"]
        head += [f"{name}: {value}" for name, value in headers.items()]
        self.writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + body)
        status_line, *lines = (await self.reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
        fields = {}
        for line in lines:
            if ":" in line:
                name, value = line.split(":", 1)
                fields[name.strip().lower()] = value.strip()
        if "content-length" in fields:
            data = await self.reader.readexactly(int(fields["content-length"]))
        else:
            data = b""
            while size := int((await self.reader.readuntil(b"\r\n")).split(b";")[0], 16):
                data += await self.reader.readexactly(size)
                await self.reader.readexactly(2)
            await self.reader.readuntil(b"\r\n")
        if fields.get("connection", "").lower() == "close":
            self.close()
        return int(status_line.split()[1]), data

    def close(self):
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None


class Pool:
    """Idle keep-alive connections, a new one when all are busy: a phone
    posts each receipt at once, never behind its previous one."""

    def __init__(self, host: str, port: int):
        self.host, self.port, self.idle = host, port, []

    async def request(self, method: str, path: str, body: bytes, headers: dict) -> tuple[int, bytes]:
        connection = self.idle.pop() if self.idle else Http(self.host, self.port)
        try:
            answer = await connection.request(method, path, body, headers)
        except Exception:
            connection.close()
            raise
        self.idle.append(connection)
        return answer


class Phone(asyncio.Protocol):
    """A staff page's live socket. `on_alert(phone, message)` gets every
    `call.alert`, parsed; everything else is counted and dropped."""

    def __init__(self, on_alert):
        self.on_alert = on_alert
        self.buffer = bytearray()
        self.open = asyncio.get_running_loop().create_future()
        self.closed = False
        self.fragments = None
        self.messages = self.received_bytes = self.alert_bytes = 0
        self.transport = None

    def connection_made(self, transport):
        self.transport = transport

    def data_received(self, data):
        self.received_bytes += len(data)
        self.buffer += data
        if not self.open.done():
            end = self.buffer.find(b"\r\n\r\n")
            if end < 0:
                return
            status = bytes(self.buffer[: self.buffer.find(b"\r\n")])
            del self.buffer[: end + 4]
            if b" 101 " not in status:
                self.open.set_exception(RuntimeError(f"live socket refused: {status!r}"))
                return
            self.open.set_result(None)
        self.frames()

    def frames(self):
        buffer = self.buffer
        while len(buffer) >= 2:
            first, length = buffer[0], buffer[1] & 0x7F
            at = 2
            if length == 126:
                if len(buffer) < 4:
                    return
                length, at = int.from_bytes(buffer[2:4], "big"), 4
            elif length == 127:
                if len(buffer) < 10:
                    return
                length, at = int.from_bytes(buffer[2:10], "big"), 10
            if buffer[1] & 0x80:
                at += 4  # a server never masks; skipped if it did
            if len(buffer) < at + length:
                return
            opcode, fin = first & 0x0F, first & 0x80
            if opcode == 0x9:
                self.send(0xA, bytes(buffer[at : at + length]))
            elif opcode == 0x8:
                self.closed = True
            elif opcode in (0x1, 0x0):
                # Whole messages only; a fragmented one is put together.
                if opcode == 0x1 and fin:
                    self.message(buffer, at, length)
                elif opcode == 0x1:
                    self.fragments = bytearray(buffer[at : at + length])
                elif self.fragments is not None:
                    self.fragments += buffer[at : at + length]
                    if fin:
                        whole, self.fragments = self.fragments, None
                        self.message(whole, 0, len(whole))
            del buffer[: at + length]

    def message(self, data, at, length):
        self.messages += 1
        if data[at : at + len(ALERT)] == ALERT:
            self.alert_bytes = max(self.alert_bytes, length)
            self.on_alert(self, json.loads(bytes(data[at : at + length])))

    def send(self, opcode: int, payload: bytes):
        """A client frame: always masked (RFC 6455 5.3)."""
        mask = os.urandom(4)
        head = bytes([0x80 | opcode])
        if len(payload) < 126:
            head += bytes([0x80 | len(payload)])
        else:
            head += bytes([0x80 | 126]) + len(payload).to_bytes(2, "big")
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        self.transport.write(head + mask + masked)

    def connection_lost(self, exc):
        self.closed = True
        if not self.open.done():
            self.open.set_exception(RuntimeError(f"live socket lost: {exc}"))


async def connect_phone(host: str, port: int, token: str, on_alert) -> Phone:
    loop = asyncio.get_running_loop()
    _, phone = await loop.create_connection(lambda: Phone(on_alert), host, port)
    key = base64.b64encode(os.urandom(16)).decode()
    phone.transport.write(
        (
            f"GET {LIVE}?token={token} HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
        ).encode()
    )
    await asyncio.wait_for(phone.open, 10)
    return phone


def load_average() -> str:
    return Path("/proc/loadavg").read_text().split()[0]


def stats(values: list[float]) -> tuple[int, int, int]:
    """p50, p99, max in whole milliseconds."""
    ms = [round(v * 1000) for v in values]
    return percentile(ms, 50), percentile(ms, 99), max(ms)


async def scenario(args: argparse.Namespace) -> int:
    host, port = args.url.removeprefix("http://").split(":")
    port = int(port)
    seeded = json.loads(Path(args.seed).read_text())
    consumer = seeded["consumers"][0]
    members = staff_members(args.staff)
    for member in members:
        request("PUT", f"{args.url}/api/v1/staff/duty", {"sections": []}, member["token"])

    posts = Pool(host, port)
    sent, answered = {}, {}  # call id → when the open was sent / answered
    alerts = {}  # (call id, staff id) → when the alert arrived
    receipts = {}  # (call id, staff id) → when the receipt's 200 came
    refused, errors, repeats = [], [], 0
    tasks = set()

    async def post_receipt(member, key, receipt):
        body = json.dumps({"receipt": receipt}).encode()
        headers = {"Authorization": f"Bearer {member['token']}", "Content-Type": "application/json"}
        try:
            status, data = await posts.request("POST", RECEIPTS, body, headers)
        except Exception as error:  # noqa: BLE001 (counted and shown)
            errors.append(repr(error))
            return
        if status == 200:
            receipts.setdefault(key, time.monotonic())
        else:
            refused.append((status, data[:200]))

    def alert_for(member):
        def on_alert(phone, message):
            nonlocal repeats
            key = (message["call"]["id"], member["id"])
            if key in alerts:
                repeats += 1  # a re-alert: its receipt is posted too, not timed
            alerts.setdefault(key, time.monotonic())
            task = asyncio.ensure_future(post_receipt(member, key, message["receipt"]))
            tasks.add(task)
            task.add_done_callback(tasks.discard)

        return on_alert

    phones = [await connect_phone(host, port, m["token"], alert_for(m)) for m in members]
    print(f"{len(members)} staff on duty for the whole house, their pages connected", file=sys.stderr)

    opens = Pool(host, port)
    load_before, cpu_before, started = load_average(), cpu_seconds(args.pid), time.monotonic()

    async def open_one(i):
        body = json.dumps(signed_open(consumer, address(i), {"event": "Notruf", "section": f"S{i % 10}"}))
        at = time.monotonic()
        status, data = await opens.request("POST", "/api/v1/display", body.encode(), {"Content-Type": "application/json"})
        if status not in (200, 201):
            errors.append(f"open {i}: {status} {data[:200]!r}")
            return
        call_id = json.loads(data)["data"]["id"]
        sent[call_id], answered[call_id] = at, time.monotonic()

    openings = []
    for i in range(args.calls):
        await asyncio.sleep(max(0.0, started + i / args.rate - time.monotonic()))
        openings.append(asyncio.ensure_future(open_one(i)))
    await asyncio.gather(*openings)
    expected = len(sent) * len(members)
    deadline = time.monotonic() + args.watch
    while time.monotonic() < deadline and (len(receipts) + len(refused) < expected or tasks):
        await asyncio.sleep(0.1)
    took = time.monotonic() - started
    cpu, load_after = cpu_seconds(args.pid) - cpu_before, load_average()
    closed = sum(phone.closed for phone in phones)
    messages = sum(phone.messages for phone in phones)
    received_mb = sum(phone.received_bytes for phone in phones) / 1e6
    for phone in phones:
        phone.transport.close()

    timed = [key for key in receipts if key[0] in sent]
    if not timed:
        print(f"no receipt answered 200; errors: {errors[:3]} refused: {refused[:3]}", file=sys.stderr)
        return 1
    from_sent = stats([receipts[k] - sent[k[0]] for k in timed])
    from_answer = stats([receipts[k] - answered[k[0]] for k in timed])
    to_phone = stats([alerts[k] - sent[k[0]] for k in timed])
    to_receipt = stats([receipts[k] - alerts[k] for k in timed])
    missing = expected - len([k for k in alerts if k[0] in sent])
    # Posted but not answered by the end of the watch (still in the server).
    unanswered = expected - missing - len(timed) - len(refused)
    ok = (
        from_sent[1] <= args.budget_p99_ms
        and missing == 0
        and unanswered <= 0
        and not refused
        and not errors
        and not closed
    )
    for line in (errors + [f"receipt answered {s}: {d!r}" for s, d in refused])[:5]:
        print(line, file=sys.stderr)
    print(
        f"{messages} live messages ({received_mb:.0f} MB) reached the {len(phones)} pages in {took:.1f} s; "
        f"{repeats} re-alerts; the largest call.alert {max(p.alert_bytes for p in phones):,} bytes "
        f"(a Web Push payload is the same message, at most 3 KB)",
        file=sys.stderr,
    )
    print()
    print(
        "| calls | phones | alerts | receipts 200 | missing | refused or failed | unanswered | open sent → receipt 200, "
        "p50 / p99 / max ms | open answered → receipt 200 | open sent → alert at phone | alert → receipt 200 "
        "| server CPU ms/alert | server CPU, cores | load (1 min) before / after | budget p99 ms | |"
    )
    print("|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--|--:|---|")
    fmt = lambda s: f"{s[0]} / {s[1]} / {s[2]}"  # noqa: E731
    print(
        f"| {len(sent)} | {len(phones)} | {expected - missing} | {len(timed)} | {missing} "
        f"| {len(refused) + len(errors) + closed} | {max(0, unanswered)} | **{fmt(from_sent)}** | {fmt(from_answer)} | {fmt(to_phone)} "
        f"| {fmt(to_receipt)} | {1000 * cpu / max(1, expected):.2f} | {cpu / took:.2f} "
        f"| {load_before} / {load_after} | {args.budget_p99_ms} | {'ok' if ok else 'MISSED'} |"
    )
    return 0 if ok else 1


def main() -> int:
    parser = argparse.ArgumentParser()
    commands = parser.add_subparsers(dest="command", required=True)
    r = commands.add_parser("run")
    for name in ("url", "seed", "staff"):
        r.add_argument(f"--{name}", required=True)
    r.add_argument("--calls", type=int, required=True)
    r.add_argument("--rate", type=float, required=True)
    r.add_argument("--watch", type=int, required=True)
    r.add_argument("--budget-p99-ms", type=int, required=True)
    r.add_argument("--pid", type=int, required=True)
    args = parser.parse_args()
    return asyncio.run(scenario(args))


if __name__ == "__main__":
    sys.exit(main())
