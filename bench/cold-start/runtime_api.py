"""The Lambda Runtime API (2018-06-01) the cold-start harness serves on
loopback (README.md here): hands out one cold start's events, notes when
each was handed out and answered, and moves the function's process into its
CPU share once its init is over."""

from __future__ import annotations

import json
import socket
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from cpu_share import CpuShare

now = time.perf_counter_ns

REGION = "eu-central-1"
# The deadline each invocation is given (the stack's timeout).
TIMEOUT_S = 10


class Invocation:
    def __init__(self, event: dict, expected: int):
        self.request_id = str(uuid.uuid4())
        self.event = event
        self.payload = json.dumps(event).encode()
        self.expected = expected
        self.handed_out: int | None = None
        self.answered: int | None = None
        self.body: bytes | None = None
        self.error: str | None = None


class Run:
    """One cold start: the invocations to hand out and what happened."""

    def __init__(self, function: str, invocations: list[Invocation]):
        self.function = function
        self.invocations = invocations
        self.by_id = {inv.request_id: inv for inv in invocations}
        self.index = 0
        self.first_next: int | None = None
        self.init_error: str | None = None
        # Set by cold_start: the process, and the CPU share it gets once its
        # init is done (None: a full core throughout).
        self.pid: int | None = None
        self.share_after_init: CpuShare | None = None
        self.lock = threading.Lock()
        self.idle = threading.Event()  # all answered (or failed): measure, stop
        self.stop = threading.Event()  # the process is gone: release `next`


class RuntimeApi(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), RuntimeHandler)
        self.run: Run | None = None

    @property
    def address(self) -> str:
        host, port = self.server_address[:2]
        return f"{host}:{port}"


class RuntimeHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: RuntimeApi

    def setup(self) -> None:
        super().setup()
        self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass

    def send_all(self, status: str, headers: dict[str, str], body: bytes) -> None:
        """The whole response in one write (no Nagle delay between parts)."""
        head = f"HTTP/1.1 {status}\r\n"
        head += "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        head += f"Content-Length: {len(body)}\r\n\r\n"
        self.wfile.write(head.encode() + body)
        self.wfile.flush()

    def accepted(self) -> None:
        self.send_all("202 Accepted", {"Content-Type": "application/json"}, b'{"status":"OK"}')

    def read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def do_GET(self) -> None:  # noqa: N802
        arrived = now()
        run = self.server.run
        if run is None or self.path != "/2018-06-01/runtime/invocation/next":
            self.send_all("404 Not Found", {}, b"")
            return
        with run.lock:
            if run.first_next is None:
                run.first_next = arrived
                if run.share_after_init is not None and run.pid is not None:
                    # Init is over: from here on the function's CPU share.
                    run.share_after_init.add(run.pid)
            inv = run.invocations[run.index] if run.index < len(run.invocations) else None
        if inv is None:
            # Nothing left: the function is idle. Hold the request like Lambda
            # does until the process is stopped.
            run.idle.set()
            run.stop.wait()
            self.close_connection = True
            return
        deadline = int(time.time() * 1000) + TIMEOUT_S * 1000
        headers = {
            "Content-Type": "application/json",
            "Lambda-Runtime-Aws-Request-Id": inv.request_id,
            "Lambda-Runtime-Deadline-Ms": str(deadline),
            "Lambda-Runtime-Invoked-Function-Arn": (
                f"arn:aws:lambda:{REGION}:123456789012:function:{run.function}"
            ),
            "Lambda-Runtime-Trace-Id": (
                "Root=1-6740c2a0-0123456789abcdef01234567;Parent=53995c3f42cd8ad8;Sampled=0"
            ),
        }
        inv.handed_out = now()
        self.send_all("200 OK", headers, inv.payload)

    def do_POST(self) -> None:  # noqa: N802
        arrived = now()
        run = self.server.run
        body = self.read_body()
        parts = self.path.strip("/").split("/")
        if run is None:
            self.send_all("404 Not Found", {}, b"")
            return
        if parts[1:] == ["runtime", "init", "error"]:
            run.init_error = body.decode(errors="replace")
            self.accepted()
            run.idle.set()
            return
        if len(parts) == 5 and parts[1:3] == ["runtime", "invocation"]:
            inv = run.by_id.get(parts[3])
            if inv is not None and parts[4] in ("response", "error"):
                # Book-keeping before the reply: the runtime asks for the next
                # event as soon as it has the 202.
                with run.lock:
                    inv.answered = arrived
                    inv.body = body
                    if parts[4] == "error":
                        inv.error = f"invocation error: {body[:500]!r}"
                    run.index += 1
                if inv.error:
                    run.idle.set()
                self.accepted()
                return
        self.send_all("404 Not Found", {}, b"")
