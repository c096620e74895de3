"""The cold-start harness's figures (README.md here): medians and p90 of
every row, the markdown table, and the budgets."""

from __future__ import annotations

import math
import statistics

BASELINE = "cold-start-echo"

# Budgets (issue 7; the init's under a warm-up, issue 30).
INIT_FACTOR = 2.0
FIRST_MS = 50.0
RSS_MIB = 30.0
# The init's warm-up waits at most this (functions/wiring/src/warm_up.rs).
WARM_UP_LIMIT_MS = 500.0
# Each function's memory in the stack (MEMORY_MB of infra/lib/functions.ts,
# chosen on this bench: docs/performance.md): the first request's budget
# holds at that size's CPU share (and at a full core), not at the smaller
# sizes the bench shows for comparison.
CHOSEN_MB = {"display": "256", "element": "256", "call-types": "128", "sandbox": "128",
             "broadcast": "512"}


def median(values: list[float]) -> float:
    return statistics.median(values)


def p90(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(0.9 * len(ordered)) - 1)]


def pair(values: list[float]) -> tuple[float, float]:
    return median(values), p90(values)


def summarise(samples: list[dict]) -> dict:
    warm = [w for s in samples for w in s["warm_ms"]]
    warm_own = [w - st for s in samples for w, st in zip(s["warm_ms"], s["warm_store_ms"])]
    rss = [s["rss_kib"] / 1024 for s in samples]
    out = {
        "n": len(samples),
        "init": pair([s["init_ms"] for s in samples]),
        "init_store": pair([s.get("init_store_ms", 0.0) for s in samples]),
        "init_own": pair([s["init_ms"] - s.get("init_store_ms", 0.0) for s in samples]),
        "init_setup": pair([s.get("init_setup_ms", s["init_ms"]) for s in samples]),
        "first": pair([s["first_ms"] for s in samples]),
        "first_store": pair([s["first_store_ms"] for s in samples]),
        "first_own": pair([s["first_ms"] - s["first_store_ms"] for s in samples]),
        "rss": (median(rss), max(rss)),
    }
    if warm:
        out["warm"] = pair(warm)
        out["warm_own"] = pair(warm_own)
    return out


def fmt(values: tuple[float, float]) -> str:
    return f"{values[0]:.1f} / {values[1]:.1f}"


def key(label: str, store: str, function: str, memory: str) -> str:
    return f"{label}|{store}|{function}|{memory}"


def cpu_text(memory: str) -> str:
    if memory == "full":
        return "full core"
    return f"{memory} MB ({100 * int(memory) / 1769:.1f} %)"


def report(results: dict, labels: list[str], memories: list[str],
           functions: list[str]) -> tuple[str, list[str]]:
    """The markdown table and the budgets missed. The first build is checked:
    its first invocation's own time p90 and RSS in every row; its init
    against the second build's (at most the warm-up's limit more) when there
    is one, else (issue 7) its own part against the echo's on plain moto."""
    lines = [
        "| build | CPU share | store | function | init ms (med / p90) | of it store | "
        "× echo | first inv. total | of it store | own (med / p90) | warm own | "
        "max RSS MiB | budgets |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    missed = []
    for index, label in enumerate(labels):
        checked = index == 0
        for memory in memories:
            base = results.get(key(label, "http", BASELINE, memory)) or results.get(
                key(labels[0], "http", BASELINE, memory))
            base_init = summarise(base)["init"][0] if base else float("nan")
            for store in ("http", "https"):
                for function in functions:
                    samples = results.get(key(label, store, function, memory))
                    if not samples:
                        continue
                    s = summarise(samples)
                    ratio = s["init_setup"][0] / base_init
                    verdicts = []
                    if checked and function != BASELINE:
                        verdicts = judge(s, ratio, results, labels, store, function, memory)
                        missed += [f"{function} ({store}, {cpu_text(memory)}, {label}): {v}"
                                   for v in verdicts]
                    verdict = ("MISSED: " + "; ".join(verdicts)) if verdicts else (
                        "ok" if checked and function != BASELINE else "–")
                    store_text = "–" if function == BASELINE else (
                        "moto" if store == "http" else "moto+TLS")
                    lines.append(
                        f"| {label} | {cpu_text(memory)} | {store_text} | {function} | "
                        f"{fmt(s['init'])} | {fmt(s['init_store'])} | {ratio:.2f} | "
                        f"{fmt(s['first'])} | {fmt(s['first_store'])} | "
                        f"{fmt(s['first_own'])} | "
                        f"{fmt(s['warm_own']) if 'warm_own' in s else '–'} | "
                        f"{fmt(s['rss'])} | {verdict} |"
                    )
    budgets = (
        f"Budgets (checked on the first build): first invocation's own time (total minus "
        f"the time moto was answering) p90 < {FIRST_MS:g} ms at a full core and at the "
        f"function's memory in the stack ({', '.join(f'{f} {m} MB' for f, m in CHOSEN_MB.items())}); "
        f"max RSS < {RSS_MIB:g} MiB; "
        f"init median at most {WARM_UP_LIMIT_MS:g} ms (the warm-up's limit) above the "
        f"second build's in the same row, or without a second build the init up to the "
        f"warm-up's first request ≤ {INIT_FACTOR:g}× the echo's init on plain moto. "
        f"× echo: the init up to the warm-up's first request over the echo's init at the "
        f"same CPU share."
    )
    return "\n".join(lines) + "\n\n" + budgets, missed


def judge(s: dict, ratio: float, results: dict, labels: list[str], store: str,
          function: str, memory: str) -> list[str]:
    verdicts = []
    if len(labels) > 1:
        other = results.get(key(labels[1], store, function, memory))
        if other:
            before = summarise(other)["init"][0]
            if not s["init"][0] <= before + WARM_UP_LIMIT_MS:
                verdicts.append(f"init {s['init'][0]:.1f} > {before:.1f} + "
                                f"{WARM_UP_LIMIT_MS:g} ms")
    elif store == "http" and not ratio <= INIT_FACTOR:
        # The TLS rows' https endpoint makes the functions load the system's
        # roots at init, which they never do in AWS (store-dynamodb's
        # client.rs): the init is judged on the plain rows.
        verdicts.append(f"init {ratio:.2f}× > {INIT_FACTOR:g}×")
    if memory in ("full", CHOSEN_MB.get(function)) and not s["first_own"][1] < FIRST_MS:
        verdicts.append(f"first own p90 {s['first_own'][1]:.1f} ≥ {FIRST_MS:g} ms")
    if not s["rss"][1] < RSS_MIB:
        verdicts.append(f"RSS {s['rss'][1]:.1f} ≥ {RSS_MIB:g} MiB")
    return verdicts
