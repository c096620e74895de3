#!/usr/bin/env python3
"""Cold-start harness for the Lambda functions (bench/cold-start/README.md).

Serves the AWS Lambda Runtime API (2018-06-01) on loopback, starts each
function's native `bootstrap` the way Lambda does (AWS_LAMBDA_RUNTIME_API and
the usual environment), hands it API Gateway HTTP API (v2) events and times:

  init      process start (just before posix_spawn) to its first
            GET /runtime/invocation/next
  first     the first event handed out to its response posted
  warm      the same for the invocations after it
  store     of `first`/`warm`: the time DynamoDB (moto, behind a timing proxy)
            was busy answering; `own` = total - store is the function's part
  rss       VmHWM of the process after the last invocation (peak resident)

With --memory, each function runs under the CPU share Lambda gives that
memory size (cpu_share.py): from its first GET …/next on, i.e. init at a full
core as Lambda's init burst, or from its start with --throttle-init.

Every measurement is a fresh process; N repetitions, scenarios interleaved so
that load on the machine spreads evenly over them. Python 3 standard library
only; clocks are time.perf_counter_ns (CLOCK_MONOTONIC).

The store must be running (moto, given by --moto). For every round of cold
starts the harness creates fresh tables with call types, one consumer and the
elements the events need (`local-server --seed`) and drops them afterwards; it
puts a timing proxy (plain, and with --tls a TLS-terminating one with its own
CA) in front of moto.
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from cpu_share import CpuShare, open_shares
from proxy import TimingProxy, make_tls
from report import BASELINE, key, report

now = time.perf_counter_ns

FUNCTIONS = ("cold-start-echo", "display", "element", "call-types", "sandbox")
# The functions that talk to DynamoDB (the echo does not).
STORE_FUNCTIONS = ("display", "element", "call-types", "sandbox")

CONSUMER = "6f1c7d2e-5a8b-4c3d-9e0f-1a2b3c4d5e6f"
SECRET = "bench-secret"
REGION = "eu-central-1"

# Table names and addresses differ per harness run, so that a store used
# before still answers every open with 201.
SESSION = uuid.uuid4().hex[:8]
# The memory size the functions are told when they run at a full core.
MEMORY_MB = 256
TIMEOUT_S = 10
# How long a cold start may take here before the harness gives up (moto on a
# busy machine can be very slow; see DYNAMODB_OPERATION_TIMEOUT_MS below).
GIVE_UP_S = 150
ELEMENT_ADDRESS = "bench-element"


def tables(round_: int) -> dict[str, str]:
    """The table names of one round of cold starts: every round gets fresh
    tables (and the last round's are dropped), because moto copies every
    table on each transaction and slows down as the store grows."""
    prefix = f"nurse-call-bench-{SESSION}-{round_ + 1}-"
    return {
        "CALL_TYPES_TABLE": f"{prefix}call-types",
        "CONSUMERS_TABLE": f"{prefix}consumers",
        "DATA_TABLE": f"{prefix}data",
    }




# ---------------------------------------------------------------------------
# Events: API Gateway HTTP API payload format 2.0
# ---------------------------------------------------------------------------


def http_event(method: str, path: str, body: str | None = None, query: str = "") -> dict:
    domain = "a1b2c3d4e5.execute-api.eu-central-1.amazonaws.com"
    headers = {
        "accept": "*/*",
        "host": domain,
        "user-agent": "curl/8.5.0",
        "x-amzn-trace-id": "Root=1-6740c2a0-0123456789abcdef01234567",
        "x-forwarded-for": "203.0.113.7",
        "x-forwarded-port": "443",
        "x-forwarded-proto": "https",
    }
    if body is not None:
        headers["content-type"] = "application/json"
        headers["content-length"] = str(len(body.encode()))
    epoch_ms = int(time.time() * 1000)
    event = {
        "version": "2.0",
        "routeKey": f"ANY {path}",
        "rawPath": path,
        "rawQueryString": query,
        "headers": headers,
        "requestContext": {
            "accountId": "123456789012",
            "apiId": "a1b2c3d4e5",
            "domainName": domain,
            "domainPrefix": "a1b2c3d4e5",
            "http": {
                "method": method,
                "path": path,
                "protocol": "HTTP/1.1",
                "sourceIp": "203.0.113.7",
                "userAgent": "curl/8.5.0",
            },
            "requestId": uuid.uuid4().hex[:16] + "=",
            "routeKey": f"ANY {path}",
            "stage": "$default",
            "time": time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime()),
            "timeEpoch": epoch_ms,
        },
        "isBase64Encoded": False,
    }
    if query:
        event["queryStringParameters"] = dict(
            part.split("=", 1) for part in query.split("&") if "=" in part
        )
    if body is not None:
        event["body"] = body
    return event


def signed_body(target: str, data: dict) -> str:
    """A signed request (README "Trying it with curl", DECISIONS §2)."""
    data_json = json.dumps(data, separators=(",", ":"))
    message = f"{target}.{CONSUMER}.{data_json}".encode()
    digest = hmac.new(SECRET.encode(), message, hashlib.sha256).hexdigest()
    return (
        f'{{"target":{json.dumps(target)},"consumer":"{CONSUMER}",'
        f'"hash":"{digest}","data":{data_json}}}'
    )


def display_address(scenario: str, rep: int, k: int) -> str:
    return f"bench-{SESSION}-{scenario}-{rep}-{k}"


def events_for(function: str, scenario: str, rep: int, count: int) -> list[tuple[dict, int]]:
    """The events of one cold start and the status each must answer with."""
    events = []
    for k in range(count):
        if function == "display":
            # A fresh address each time: every open is a new call (201).
            address = display_address(scenario, rep, k)
            body = signed_body(address, {"event": "Normalruf", "battery": 80.0})
            events.append((http_event("POST", "/api/v1/display", body, "include=type"), 201))
        elif function == "element":
            body = signed_body(ELEMENT_ADDRESS, {"battery": float(50 + k), "reachable": True})
            events.append((http_event("POST", "/api/v1/element", body), 200))
        elif function == "call-types":
            events.append((http_event("GET", "/api/v1/display/call-types"), 200))
        elif function == "sandbox":
            events.append((http_event("POST", "/api/v1/sandbox/consumers"), 201))
        else:  # the echo answers its event
            events.append((http_event("GET", "/api/v1/display/call-types"), 0))
    return events


def check_response(function: str, event: dict, expected: int, body: bytes) -> str | None:
    """None when the response is the expected one, else what is wrong."""
    try:
        response = json.loads(body)
    except ValueError:
        return f"response is not JSON: {body[:300]!r}"
    if function == BASELINE:
        return None if response == event else "the echo did not return its event"
    status = response.get("statusCode") if isinstance(response, dict) else None
    if status != expected:
        return f"status {status}, expected {expected}: {body[:500]!r}"
    return None


# ---------------------------------------------------------------------------
# The Runtime API
# ---------------------------------------------------------------------------


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


# ---------------------------------------------------------------------------
# Preparing the store
# ---------------------------------------------------------------------------


def prepare_store(local_server: Path, moto: str, names: dict[str, str],
                  elements: list[str], workdir: Path) -> None:
    """Tables, call types, the consumer and the elements, through the local
    server (it creates missing tables, seeds call types and applies --seed)."""
    seed = {
        "consumers": [{"id": CONSUMER, "name": "cold-start bench", "secrets": [SECRET]}],
        "elements": [{"address": a, "code": a[-12:], "name": a} for a in elements],
    }
    seed_file = workdir / "seed.json"
    seed_file.write_text(json.dumps(seed))
    env = {**os.environ, **names, "RUST_LOG": "info",
           "AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench",
           "AWS_REGION": REGION,
           "DYNAMODB_ATTEMPT_TIMEOUT_MS": "30000", "DYNAMODB_OPERATION_TIMEOUT_MS": "120000"}
    process = subprocess.Popen(
        [str(local_server), "--mode", "production", "--dynamodb-endpoint", moto,
         "--seed", str(seed_file), "--listen", "127.0.0.1:0"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    assert process.stdout is not None
    lines = []
    for line in process.stdout:
        lines.append(line)
        if '"listening"' in line:
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=30)
            return
    process.wait()
    sys.exit("local-server did not get ready:\n" + "".join(lines[-20:]))


# ---------------------------------------------------------------------------
# Measuring
# ---------------------------------------------------------------------------


def drop_tables(moto: str, names: dict[str, str]) -> None:
    """DeleteTable straight to moto (it does not check signatures)."""
    for name in names.values():
        request = urllib.request.Request(
            moto.rstrip("/") + "/",
            data=json.dumps({"TableName": name}).encode(),
            method="POST",
            headers={
                "Content-Type": "application/x-amz-json-1.0",
                "X-Amz-Target": "DynamoDB_20120810.DeleteTable",
                "X-Amz-Date": "20260101T000000Z",
                "Authorization": (
                    "AWS4-HMAC-SHA256 Credential=bench/20260101/"
                    f"{REGION}/dynamodb/aws4_request, SignedHeaders=host;x-amz-date, "
                    "Signature=0"
                ),
            },
        )
        with urllib.request.urlopen(request, timeout=120) as response:
            response.read()


def lambda_env(function: str, runtime_api: str, endpoint: str | None,
               cert_file: Path | None, names: dict[str, str],
               memory_mb: int = MEMORY_MB) -> dict[str, str]:
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "LANG": "en_US.UTF-8",
        "TZ": ":UTC",
        "_HANDLER": "bootstrap",
        "LAMBDA_TASK_ROOT": "/var/task",
        "LAMBDA_RUNTIME_DIR": "/var/runtime",
        "AWS_LAMBDA_RUNTIME_API": runtime_api,
        "AWS_LAMBDA_FUNCTION_NAME": function,
        "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(memory_mb),
        "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
        "AWS_LAMBDA_LOG_GROUP_NAME": f"/aws/lambda/{function}",
        "AWS_LAMBDA_LOG_STREAM_NAME": "2026/11/22/[$LATEST]0123456789abcdef0123456789abcdef",
        "AWS_LAMBDA_INITIALIZATION_TYPE": "on-demand",
        "AWS_REGION": REGION,
        "AWS_DEFAULT_REGION": REGION,
        "AWS_ACCESS_KEY_ID": "ASIABENCHBENCHBENCH0",
        "AWS_SECRET_ACCESS_KEY": "bench/bench/bench/bench/bench/bench/bench0",
        "AWS_SESSION_TOKEN": "bench-session-token",
        "AWS_XRAY_CONTEXT_MISSING": "LOG_ERROR",
        "SERVICE_MODE": "sandbox" if function == "sandbox" else "production",
        "SERVICE_TIME_ZONE": "Europe/Berlin",
        "RUST_LOG": "info",
        **names,
    }
    if endpoint:
        env["DYNAMODB_ENDPOINT"] = endpoint
        # moto is slow and stalls now and then on a busy machine: a timed-out
        # attempt whose write went through would be retried and answered
        # differently (200 "already open"). DynamoDB in AWS keeps the defaults.
        env["DYNAMODB_ATTEMPT_TIMEOUT_MS"] = "60000"
        env["DYNAMODB_OPERATION_TIMEOUT_MS"] = "120000"
    if cert_file:
        # The system's roots plus the bench CA; the folder too, so that loading
        # the roots costs what it costs without these variables (file and
        # folder, as openssl-probe finds them).
        env["SSL_CERT_FILE"] = str(cert_file)
        cert_dir = ssl.get_default_verify_paths().capath or "/etc/ssl/certs"
        if os.path.isdir(cert_dir):
            env["SSL_CERT_DIR"] = cert_dir
    return env


def vm_hwm_kib(pid: int) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


class Failure(Exception):
    pass


def cold_start(api: RuntimeApi, binary: Path, function: str, env: dict[str, str],
               events: list[tuple[dict, int]], proxy: TimingProxy | None,
               log: Path, share: CpuShare | None = None,
               throttle_init: bool = False) -> dict:
    invocations = [Invocation(event, expected) for event, expected in events]
    run = Run(function, invocations)
    if share is not None and not throttle_init:
        run.share_after_init = share
    api.run = run
    log_fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    null_fd = os.open(os.devnull, os.O_RDONLY)
    try:
        started = now()
        pid = os.posix_spawn(str(binary), [str(binary)], env, file_actions=[
            (os.POSIX_SPAWN_DUP2, null_fd, 0),
            (os.POSIX_SPAWN_DUP2, log_fd, 1),
            (os.POSIX_SPAWN_DUP2, log_fd, 2),
        ])
    finally:
        os.close(log_fd)
        os.close(null_fd)
    if share is not None and throttle_init:
        # posix_spawn returns after the exec: only the loader's first steps
        # ran unthrottled.
        share.add(pid)
    with run.lock:
        run.pid = pid
        if run.first_next is not None and run.share_after_init is not None:
            run.share_after_init.add(pid)  # init was over before pid was known
    exited = None
    limit = time.monotonic() + GIVE_UP_S
    while not run.idle.wait(0.02):
        done_pid, status, _ = os.wait4(pid, os.WNOHANG)
        if done_pid:
            exited = status
            break
        if time.monotonic() > limit:
            break
    rss = vm_hwm_kib(pid) if exited is None else None
    if exited is None:
        os.kill(pid, signal.SIGKILL)
        _, _, usage = os.wait4(pid, 0)
        rss = rss or usage.ru_maxrss
    run.stop.set()
    api.run = None

    if run.init_error:
        raise Failure(f"{function}: init error: {run.init_error[:500]}")
    if exited is not None:
        raise Failure(f"{function}: the process exited (status {exited}) before it was done; see {log}")
    for inv in invocations:
        if inv.answered is None or inv.handed_out is None:
            raise Failure(f"{function}: no answer within {GIVE_UP_S} s; see {log}")
        if inv.error:
            raise Failure(f"{function}: {inv.error}")
        problem = check_response(function, inv.event, inv.expected, inv.body or b"")
        if problem:
            raise Failure(f"{function}: {problem}")
    assert run.first_next is not None

    def timing(inv: Invocation) -> tuple[float, float]:
        assert inv.handed_out is not None and inv.answered is not None
        total = inv.answered - inv.handed_out
        store = proxy.busy_ns(inv.handed_out, inv.answered) if proxy else 0
        return total / 1e6, store / 1e6

    first, first_store = timing(invocations[0])
    warm = [timing(inv) for inv in invocations[1:]]
    return {
        "init_ms": (run.first_next - started) / 1e6,
        # The warm-up's request to the store during init (issue 30).
        "init_store_ms": (proxy.busy_ns(started, run.first_next) / 1e6) if proxy else 0.0,
        "first_ms": first,
        "first_store_ms": first_store,
        "warm_ms": [w for w, _ in warm],
        "warm_store_ms": [s for _, s in warm],
        "rss_kib": rss,
    }


# ---------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--moto", required=True, help="moto's endpoint URL (plain HTTP)")
    parser.add_argument("--local-server", required=True, type=Path,
                        help="the local-server binary (prepares the tables)")
    parser.add_argument("--build", nargs=2, action="append", required=True,
                        metavar=("DIR", "LABEL"),
                        help="a folder with the five release binaries and its label; "
                             "the first one is checked against the budgets")
    parser.add_argument("--what-if", nargs=2, action="append", default=[],
                        metavar=("LABEL", "VAR=VALUE[,VAR=VALUE]"),
                        help="also run the first build's binaries with this environment "
                             "added (plain HTTP only, not checked)")
    parser.add_argument("--runs", type=int, default=20, help="cold starts per scenario")
    parser.add_argument("--warm", type=int, default=5, help="warm invocations per cold start")
    parser.add_argument("--tls", action="store_true",
                        help="also run the store functions against moto behind TLS")
    parser.add_argument("--tls-only", action="store_true",
                        help="the store functions only against moto behind TLS")
    parser.add_argument("--memory", default="full",
                        help="comma-separated memory sizes in MB, each run at its CPU "
                             "share (cpu_share.py), or 'full' for a full core")
    parser.add_argument("--cpu-period-us", type=int, default=100_000,
                        help="the CPU quota's period (the kernel's default 100 ms; how "
                             "Lambda slices its share is not published)")
    parser.add_argument("--throttle-init", action="store_true",
                        help="cap the CPU share from the process's start, not only "
                             "after its init (Lambda's init burst)")
    parser.add_argument("--functions", default=",".join(FUNCTIONS))
    parser.add_argument("--out", type=Path, help="write every sample here (JSON)")
    parser.add_argument("--logs", type=Path, help="folder for the functions' output")
    args = parser.parse_args()

    functions = [f for f in args.functions.split(",") if f]
    unknown = set(functions) - set(FUNCTIONS)
    if unknown:
        parser.error(f"unknown functions: {sorted(unknown)}")
    if BASELINE not in functions:
        functions.insert(0, BASELINE)
    for directory, _ in args.build:
        for function in functions:
            if not (Path(directory) / function).is_file():
                parser.error(f"{Path(directory) / function} is missing")
    what_ifs = []
    for label, assignments in args.what_if:
        extra = dict(a.split("=", 1) for a in assignments.split(",") if "=" in a)
        if not extra:
            parser.error(f"--what-if {label}: no VAR=VALUE")
        what_ifs.append((label, extra))

    memories = [m.strip() for m in args.memory.split(",") if m.strip()]
    if not all(m == "full" or m.isdigit() for m in memories):
        parser.error("--memory takes sizes in MB or 'full'")
    shares = open_shares([int(m) for m in memories if m != "full"], args.cpu_period_us)
    for share in shares.values():
        print(f"CPU share {share.describe()}", flush=True)

    workdir = Path(tempfile.mkdtemp(prefix="cold-start-"))
    logs = args.logs or workdir / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    moto = args.moto.removeprefix("http://").rstrip("/")
    host, port = moto.rsplit(":", 1)
    upstream = (host, int(port))

    proxies: dict[str, TimingProxy] = {}
    if not args.tls_only:
        proxies["http"] = TimingProxy(upstream)
    cert_file = None
    if args.tls or args.tls_only:
        context, cert_file = make_tls(workdir)
        proxies["https"] = TimingProxy(upstream, context)

    # Scenarios: (label, binaries, extra environment, store, function,
    # memory); the echo needs no store (its rows say "http"), a what-if
    # reruns the store functions of the first build over plain HTTP.
    scenarios = []
    for memory in memories:
        for directory, label in args.build:
            for store in proxies:
                for function in functions:
                    if function == BASELINE:
                        continue
                    scenarios.append((label, Path(directory), {}, store, function, memory))
            if BASELINE in functions:
                scenarios.append((label, Path(directory), {}, "http", BASELINE, memory))
        for label, extra in what_ifs:
            for function in functions:
                if function != BASELINE:
                    scenarios.append((label, Path(args.build[0][0]), extra, "http", function,
                                      memory))
    labels = list(dict.fromkeys(label for label, *_ in scenarios))
    count = 1 + args.warm
    display_names = [scenario_name(label, store, memory)
                     for label, _, _, store, function, memory in scenarios
                     if function == "display"]

    api = RuntimeApi()
    threading.Thread(target=api.serve_forever, daemon=True).start()
    results: dict[str, list[dict]] = {}
    total = len(scenarios) * args.runs
    done = 0
    started = time.monotonic()
    try:
        # Round -1 is a warm-up (binaries in the page cache, moto's first
        # requests), not recorded. Each round has its own tables.
        for rep in range(-1, args.runs):
            names = tables(rep)
            elements = [ELEMENT_ADDRESS] + [display_address(name, rep, k)
                                            for name in display_names for k in range(count)]
            prepare_store(args.local_server, args.moto, names, elements, workdir)
            for label, directory, extra, store, function, memory in scenarios:
                proxy = proxies[store] if function in STORE_FUNCTIONS else None
                share = shares.get(int(memory)) if memory != "full" else None
                env = lambda_env(function, api.address,
                                 proxy.endpoint if proxy else None,
                                 cert_file if store == "https" else None, names,
                                 share.memory_mb if share else MEMORY_MB)
                env.update(extra)
                name = scenario_name(label, store, memory)
                events = events_for(function, name, rep, count)
                log = logs / f"{name}-{function}.log"
                sample = cold_start(api, directory / function, function, env, events, proxy,
                                    log, share, args.throttle_init)
                if rep >= 0:
                    results.setdefault(key(label, store, function, memory), []).append(sample)
                    done += 1
            drop_tables(args.moto, names)
            if rep >= 0:
                print(f"  {done}/{total} cold starts ({time.monotonic() - started:.0f} s)",
                      flush=True)
    except Failure as failure:
        print(f"FAILED: {failure}", file=sys.stderr)
        print(f"logs: {logs}", file=sys.stderr)
        return 2
    finally:
        api.shutdown()
        for share in shares.values():
            share.remove()

    if args.out:
        args.out.write_text(json.dumps(results, indent=1))
    table, missed = report(results, labels, memories, functions)
    print()
    print(f"{args.runs} cold starts per row, {args.warm} warm invocations each; "
          f"times in ms, RSS = VmHWM; CPU share from "
          f"{'the process start' if args.throttle_init else 'the end of init'}.")
    print()
    print(table)
    if args.logs is None:
        shutil.rmtree(workdir, ignore_errors=True)
    if missed:
        print("\nMISSED BUDGETS:\n" + "\n".join(f"- {m}" for m in missed))
        return 1
    return 0


def scenario_name(label: str, store: str, memory: str) -> str:
    safe = "".join(c if c.isalnum() else "-" for c in label)
    return f"{safe}-{store}-{memory}"


if __name__ == "__main__":
    sys.exit(main())
