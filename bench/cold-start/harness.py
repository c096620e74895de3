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
import json
import os
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import broadcast
from cpu_share import CpuShare, open_shares
from events import CONSUMER, ELEMENT_ADDRESS, SECRET, SESSION, check_response, display_address, events_for
from proxy import TimingProxy, make_tls
from report import BASELINE, key, report
from runtime_api import REGION, Invocation, Run, RuntimeApi

now = time.perf_counter_ns

FUNCTIONS = ("cold-start-echo", "display", "element", "call-types", "sandbox", "broadcast")
# The functions that talk to DynamoDB (the echo does not).
STORE_FUNCTIONS = ("display", "element", "call-types", "sandbox", "broadcast")

# The memory size the functions are told when they run at a full core.
MEMORY_MB = 256
# How long a cold start may take here before the harness gives up (moto on a
# busy machine can be very slow; see DYNAMODB_OPERATION_TIMEOUT_MS below).
GIVE_UP_S = 150


def tables(round_: int) -> dict[str, str]:
    """The table names of one round of cold starts: every round gets fresh
    tables (and the last round's are dropped), because moto copies every
    table on each transaction and slows down as the store grows."""
    prefix = f"nurse-call-bench-{SESSION}-{round_ + 1}-"
    return {
        "CALL_TYPES_TABLE": f"{prefix}call-types",
        "CONSUMERS_TABLE": f"{prefix}consumers",
        "DATA_TABLE": f"{prefix}data",
        "CONNECTIONS_TABLE": f"{prefix}connections",
    }


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


def dynamodb(moto: str, operation: str, body: dict) -> None:
    """One DynamoDB request straight to moto (it does not check signatures)."""
    request = urllib.request.Request(
        moto.rstrip("/") + "/",
        data=json.dumps(body).encode(),
        method="POST",
        headers={
            "Content-Type": "application/x-amz-json-1.0",
            "X-Amz-Target": f"DynamoDB_20120810.{operation}",
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


def drop_tables(moto: str, names: dict[str, str]) -> None:
    for name in names.values():
        try:
            dynamodb(moto, "DeleteTable", {"TableName": name})
        except urllib.error.HTTPError as error:
            if error.code != 400:  # 400: not there (no broadcast in this run)
                raise


def lambda_env(function: str, runtime_api: str, endpoint: str | None,
               cert_file: Path | None, names: dict[str, str],
               memory_mb: int = MEMORY_MB, management: str | None = None) -> dict[str, str]:
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
    if function == "broadcast" and management:
        env["LIVE_MANAGEMENT_ENDPOINT"] = f"{management}/live"
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
        # Init up to the warm-up's first byte to the store: what issue 7's
        # budget is about (runtime, SDK, certificates), the warm-up aside.
        "init_setup_ms": (((proxy.first_start(started, run.first_next) or run.first_next)
                           - started) / 1e6) if proxy else (run.first_next - started) / 1e6,
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

    # The management API's stand-in behind proxies of its own that record
    # into moto's: the broadcast's time at both services is its "store" time.
    management = broadcast.ManagementApi()
    proxies: dict[str, TimingProxy] = {}
    management_proxies: dict[str, TimingProxy] = {}
    if not args.tls_only:
        proxies["http"] = TimingProxy(upstream)
        management_proxies["http"] = TimingProxy(management.address, None, proxies["http"])
    cert_file = None
    if args.tls or args.tls_only:
        context, cert_file = make_tls(workdir)
        proxies["https"] = TimingProxy(upstream, context)
        management_proxies["https"] = TimingProxy(management.address, context,
                                                  proxies["https"])

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
            if "broadcast" in functions:
                broadcast.create_connections(
                    lambda operation, body: dynamodb(args.moto, operation, body),
                    names["CONNECTIONS_TABLE"])
            for label, directory, extra, store, function, memory in scenarios:
                proxy = proxies[store] if function in STORE_FUNCTIONS else None
                share = shares[int(memory)].fresh() if memory != "full" else None
                env = lambda_env(function, api.address,
                                 proxy.endpoint if proxy else None,
                                 cert_file if store == "https" else None, names,
                                 share.memory_mb if share else MEMORY_MB,
                                 management_proxies[store].endpoint
                                 if store in management_proxies else None)
                env.update(extra)
                name = scenario_name(label, store, memory)
                events = events_for(function, name, rep, count)
                log = logs / f"{name}-{function}.log"
                posted = management.delivered
                try:
                    sample = cold_start(api, directory / function, function, env, events,
                                        proxy, log, share, args.throttle_init)
                finally:
                    if share is not None:
                        share.remove()
                if function == "broadcast" and (
                        management.delivered - posted != broadcast.CONNECTIONS * count):
                    raise Failure(f"broadcast: {management.delivered - posted} posts, expected "
                                  f"{broadcast.CONNECTIONS * count}; see {log}")
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
