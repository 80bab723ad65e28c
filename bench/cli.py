"""Startup of the ``wf`` command, as ratios to a bare ``python -c pass`` (issue 13).

One command, from the repository root::

    .venv/bin/python bench/cli.py              # 15 rounds
    .venv/bin/python bench/cli.py --rounds 31 --json

Each round runs every case once, in a rotating order, as a fresh process (the
wall time of ``subprocess.run``), so a load that comes and goes on a shared
machine hits every case alike; the figure of a case is the median of its rounds,
and its ratio is that median over the median of ``python -c pass``. The CPU
time each process used (user and system, from ``getrusage``) is reported beside
it, with its own ratio: on a loaded machine it varies less than the wall time,
which includes waiting for a core. The parser
cache is warmed once before the rounds (a first run after an install or a grammar
change also builds the parser; that cost is reported separately, with a fresh
cache folder). ``wf check`` is measured twice: ``--no-cache`` (the whole check)
and a repeated check answered by the result cache (``wflang/cli/check_cache.py``;
both caches live in a temporary folder of the run's own, filled by the warm-up
runs). A third time, ``--no-cache``, answered by ``wf daemon`` (docs/daemon.md),
started for the run with its socket in that folder (the other cases set
``WFLANG_NO_DAEMON=1``). Targets: ``wf --version`` at most 4x, ``wf check`` at most 10x.

Every case runs with compiled bytecode, as an installed ``wf`` does (pip writes
the ``.pyc`` files at install time): the processes share a fresh
``PYTHONPYCACHEPREFIX`` folder that the warm-up runs fill, for the standard
library, the packages and ``wflang`` alike. ``--bytecode as-is`` keeps the
environment as it is instead: with ``PYTHONDONTWRITEBYTECODE=1`` (as in some
sandboxes) and no ``__pycache__`` in the checkout, every run compiles ``wflang``
from source while ``python -c pass`` reads the standard library's bytecode.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchlib import ROOT, machine, source_state

WF = str(Path(sys.executable).with_name("wf"))
#: ``wf check`` twice: the whole check (``--no-cache``, as every check before the
#: result cache), and a repeated check that the result cache answers.
CHECK_COLD = "wf check --no-cache (whole check)"
CHECK_WARM = "wf check (result cache hit)"
#: The whole check answered by a warm ``wf daemon`` (docs/daemon.md): the other ``wf``
#: cases run with ``WFLANG_NO_DAEMON=1``. Its CPU time is the client's alone (the
#: server's child is not a child of this process): compare its wall time.
CHECK_DAEMON = "wf check --no-cache (wf daemon)"
CASES: dict[str, list[str]] = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "wf --version": [WF, "--version"],
    CHECK_COLD: [WF, "check", "--no-cache", "examples/order_saga.wf"],
    CHECK_WARM: [WF, "check", "examples/order_saga.wf"],
    CHECK_DAEMON: [WF, "check", "--no-cache", "examples/order_saga.wf"],
}
TARGETS = {"wf --version": 4.0, CHECK_COLD: 10.0, CHECK_WARM: 10.0, CHECK_DAEMON: 10.0}


def _run(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """The wall time of one process, and the CPU time (user and system) it used."""
    if argv is not CASES[CHECK_DAEMON]:
        env = {**env, "WFLANG_NO_DAEMON": "1"}
    cpu_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, check=False)
    elapsed = time.perf_counter() - start
    cpu_after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {done.returncode}: {done.stderr.decode()}")
    cpu = (cpu_after.ru_utime - cpu_before.ru_utime) + (cpu_after.ru_stime - cpu_before.ru_stime)
    return elapsed, cpu


def measure(rounds: int, env: dict[str, str]) -> dict[str, dict[str, list[float]]]:
    """Per case, the wall and the CPU times of its rounds."""
    names = list(CASES)
    times: dict[str, dict[str, list[float]]] = {name: {"wall": [], "cpu": []} for name in names}
    for name in names:  # warm the page cache, the bytecode and the parser cache
        _run(CASES[name], env)
    for r in range(rounds):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            wall, cpu = _run(CASES[name], env)
            times[name]["wall"].append(wall)
            times[name]["cpu"].append(cpu)
        print(f"round {r + 1}/{rounds}", file=sys.stderr)
    return times


def cold_check(env: dict[str, str]) -> float:
    """``wf check`` with an empty parser cache: the parser is built (and stored)."""
    with tempfile.TemporaryDirectory() as folder:
        empty = {**env, "WFLANG_CACHE_DIR": folder}
        return _run(CASES[CHECK_COLD], empty)[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument(
        "--bytecode",
        choices=("cached", "as-is"),
        default="cached",
        help="cached: every process reads bytecode from one shared, warmed folder "
        "(as an installed wf); as-is: the environment's own setting",
    )
    args = parser.parse_args()
    with (
        tempfile.TemporaryDirectory(prefix="wflang-bench-pyc-") as pyc,
        tempfile.TemporaryDirectory(prefix="wflang-bench-cache-") as cache,
    ):
        # A cache folder of the run's own (the parser and the result of the check,
        # stored by the warm-up runs), never the user's.
        # The daemon's socket in a folder of the run's own too (XDG_RUNTIME_DIR).
        env = {**os.environ, "WFLANG_CACHE_DIR": cache, "XDG_RUNTIME_DIR": cache}
        env.pop("WFLANG_NO_CACHE", None)
        env.pop("WFLANG_NO_DAEMON", None)
        if args.bytecode == "cached":
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            env["PYTHONPYCACHEPREFIX"] = pyc
        daemon = [WF, "daemon"]
        subprocess.run([*daemon, "start"], cwd=ROOT, env=env, check=True, capture_output=True)
        try:
            measure_and_print(args, env)
            served = subprocess.run(
                [*daemon, "status"], cwd=ROOT, env=env, capture_output=True, check=False
            )
            print(served.stdout.decode().strip(), file=sys.stderr)  # it did answer
        finally:
            subprocess.run([*daemon, "stop"], cwd=ROOT, env=env, check=True, capture_output=True)


def measure_and_print(args: argparse.Namespace, env: dict[str, str]) -> None:
    load_before = os.getloadavg()
    times = measure(args.rounds, env)
    cold = cold_check(env)
    base = statistics.median(times["python -c pass"]["wall"])
    base_cpu = statistics.median(times["python -c pass"]["cpu"])
    report = {
        "machine": machine("lark", "attrs"),
        "source": source_state(("wflang", "bench"), "wflang or bench"),
        "load_average": [load_before, os.getloadavg()],
        "rounds": args.rounds,
        "bytecode": args.bytecode,
        "cases": {
            name: {
                "median_ms": round(statistics.median(t["wall"]) * 1000, 1),
                "min_ms": round(min(t["wall"]) * 1000, 1),
                "ratio": round(statistics.median(t["wall"]) / base, 2),
                "cpu_median_ms": round(statistics.median(t["cpu"]) * 1000, 1),
                "cpu_ratio": round(statistics.median(t["cpu"]) / base_cpu, 2),
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
          f"{load_before[0]:.2f} / {os.getloadavg()[0]:.2f}; {args.rounds} rounds; "
          f"bytecode {args.bytecode}")  # fmt: skip
    print(f"{'case':34} {'median ms':>10} {'min ms':>8} {'ratio':>6} {'target':>7} "
          f"{'cpu ms':>7} {'cpu ratio':>9}")  # fmt: skip
    for name, row in report["cases"].items():
        target = f"<= {row['target']:g}" if row["target"] else ""
        print(f"{name:34} {row['median_ms']:>10.1f} {row['min_ms']:>8.1f} "
              f"{row['ratio']:>6.2f} {target:>7} {row['cpu_median_ms']:>7.1f} "
              f"{row['cpu_ratio']:>9.2f}")  # fmt: skip
    print(f"wf check with an empty parser cache: {cold * 1000:.1f} ms (once)")


if __name__ == "__main__":
    main()
