"""Startup of the ``wf`` command, as ratios to a bare ``python -c pass`` (issue 13).

One command, from the repository root::

    .venv/bin/python bench/cli.py              # 15 rounds
    .venv/bin/python bench/cli.py --rounds 31 --json

Each round runs every case once, in a rotating order, as a fresh process (the
wall time of ``subprocess.run``), so a load that comes and goes on a shared
machine hits every case alike; the figure of a case is the median of its rounds,
and its ratio is that median over the median of ``python -c pass``. The parser
cache is warmed once before the rounds (a first run after an install or a grammar
change also builds the parser; that cost is reported separately, with a fresh
cache folder). Targets: ``wf --version`` at most 4x, ``wf check`` at most 10x.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchlib import ROOT, machine, source_state

WF = str(Path(sys.executable).with_name("wf"))
CASES: dict[str, list[str]] = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "wf --version": [WF, "--version"],
    "wf check examples/order_saga.wf": [WF, "check", "examples/order_saga.wf"],
}
TARGETS = {"wf --version": 4.0, "wf check examples/order_saga.wf": 10.0}


def _wall(argv: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, check=False)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {done.returncode}: {done.stderr.decode()}")
    return elapsed


def measure(rounds: int, env: dict[str, str]) -> dict[str, list[float]]:
    names = list(CASES)
    times: dict[str, list[float]] = {name: [] for name in names}
    for name in names:  # warm the page cache and the parser cache
        _wall(CASES[name], env)
    for r in range(rounds):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            times[name].append(_wall(CASES[name], env))
        print(f"round {r + 1}/{rounds}", file=sys.stderr)
    return times


def cold_check(env: dict[str, str]) -> float:
    """``wf check`` with an empty parser cache: the parser is built (and stored)."""
    with tempfile.TemporaryDirectory() as folder:
        return _wall(CASES["wf check examples/order_saga.wf"], {**env, "WFLANG_CACHE_DIR": folder})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    args = parser.parse_args()
    env = dict(os.environ)
    load_before = os.getloadavg()
    times = measure(args.rounds, env)
    cold = cold_check(env)
    base = statistics.median(times["python -c pass"])
    report = {
        "machine": machine("lark", "attrs"),
        "source": source_state(("wflang", "bench"), "wflang or bench"),
        "load_average": [load_before, os.getloadavg()],
        "rounds": args.rounds,
        "cases": {
            name: {
                "median_ms": round(statistics.median(t) * 1000, 1),
                "min_ms": round(min(t) * 1000, 1),
                "ratio": round(statistics.median(t) / base, 2),
                "target": TARGETS.get(name),
            }
            for name, t in times.items()
        },
        "check_with_empty_parser_cache_ms": round(cold * 1000, 1),
    }
    if args.json:
        print(json.dumps(report, indent=2))
        return
    info = report["machine"]
    print(f"{info['date']}  {info['platform']}  {info['python']}  cpus {info['cpu_count']}")
    print(f"source {report['source']}; load average before/after: "
          f"{load_before[0]:.2f} / {os.getloadavg()[0]:.2f}; {args.rounds} rounds")  # fmt: skip
    print(f"{'case':34} {'median ms':>10} {'min ms':>8} {'ratio':>6} {'target':>7}")
    for name, row in report["cases"].items():
        target = f"<= {row['target']:g}" if row["target"] else ""
        print(f"{name:34} {row['median_ms']:>10.1f} {row['min_ms']:>8.1f} "
              f"{row['ratio']:>6.2f} {target:>7}")  # fmt: skip
    print(f"wf check with an empty parser cache: {cold * 1000:.1f} ms (once)")


if __name__ == "__main__":
    main()
