"""Two versions of the runtime timed in turn, for a machine shared with other work.

``bench/runtime.py`` times one version per process; on a busy machine the load moves
between two such runs by more than the difference to measure. Here one long-lived
process per version (each with its own tree: ``--old`` and ``--new``, whose
``bench/runtime.py`` builds and drives the workflows) takes one sample at a time, in
turn, so that both see the same load; the figure of a case is the median of the
ratios new/old of its pairs. From the repository root::

    git worktree add /tmp/old 3fcedfa --detach
    .venv/bin/python bench/runtime_paired.py --old /tmp/old --new . --rounds 200

A sample is ``--runs`` runs (``--engine-runs`` on the engine) of one workflow of size
100 on one path, timed with ``time.process_time`` after a ``gc.collect()``; the version
sampled first alternates from round to round.
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

WORKFLOWS = ("chain", "loop", "fanout")
PATHS = ("step", "engine")
SIZE = 100


def serve(root: Path) -> None:
    """The worker: answers ``CASE RUNS`` lines with the µs per step of that many runs."""
    sys.path.insert(0, str(root / "bench"))
    spec = importlib.util.spec_from_file_location("runtime_bench", root / "bench" / "runtime.py")
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    runs: dict[str, Callable[[], object]] = {}
    for workflow in WORKFLOWS:
        table, _ = bench.compile_table(workflow, SIZE)
        runs[f"{workflow}/step"] = _bound(bench.drive_steps, table)
        runs[f"{workflow}/engine"] = _bound(bench.drive_engine, table)
    for run in runs.values():  # warm
        for _ in range(5):
            run()
    print("ready", flush=True)
    for line in sys.stdin:
        case, count = line.split()
        run, n = runs[case], int(count)
        gc.collect()
        t0 = time.process_time()
        for _ in range(n):
            run()
        print((time.process_time() - t0) / n / (SIZE + 1) * 1e6, flush=True)


def _bound(drive: Callable[[Any], object], table: Any) -> Callable[[], object]:
    return lambda: drive(table)


class Worker:
    def __init__(self, root: Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, __file__, "--serve", str(root)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.stdin: IO[str] = self.process.stdin  # type: ignore[assignment]
        self.stdout: IO[str] = self.process.stdout  # type: ignore[assignment]
        if self.stdout.readline().strip() != "ready":
            raise SystemExit(f"the worker for {root} did not start")

    def sample(self, case: str, runs: int) -> float:
        self.stdin.write(f"{case} {runs}\n")
        self.stdin.flush()
        return float(self.stdout.readline())

    def close(self) -> None:
        self.stdin.close()
        self.process.wait()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--old", type=Path, help="the tree of the old version")
    ap.add_argument("--new", type=Path, help="the tree of the new version")
    ap.add_argument("--rounds", type=int, default=100, help="samples of each case and version")
    ap.add_argument("--runs", type=int, default=15, help="runs per sample on the step path")
    ap.add_argument("--engine-runs", type=int, default=10, help="runs per sample on the engine")
    ap.add_argument("--json", action="store_true", help="print the report as JSON")
    ap.add_argument("--case", action="append", help="only this case (repeatable), e.g. fanout/step")
    ap.add_argument("--serve", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.serve is not None:
        serve(args.serve.resolve())
        return
    if args.old is None or args.new is None:
        ap.error("--old and --new are needed")
    workers = {"old": Worker(args.old.resolve()), "new": Worker(args.new.resolve())}
    cases = args.case or [f"{w}/{p}" for w in WORKFLOWS for p in PATHS]
    times: dict[str, dict[str, list[float]]] = {c: {"old": [], "new": []} for c in cases}
    for r in range(args.rounds):
        for case in cases:
            runs = args.runs if case.endswith("/step") else args.engine_runs
            for side in ("old", "new") if r % 2 == 0 else ("new", "old"):
                times[case][side].append(workers[side].sample(case, runs))
    for worker in workers.values():
        worker.close()
    report: dict[str, dict[str, float]] = {}
    for case in cases:
        old, new = times[case]["old"], times[case]["new"]
        pairs = sorted(b / a for a, b in zip(old, new, strict=True))
        report[case] = {
            "old_median_us": statistics.median(old),
            "new_median_us": statistics.median(new),
            "old_min_us": min(old),
            "new_min_us": min(new),
            "ratio_median": statistics.median(pairs),
            "ratio_q1": pairs[len(pairs) // 4],
            "ratio_q3": pairs[(3 * len(pairs)) // 4],
        }
    if args.json:
        print(json.dumps({"rounds": args.rounds, "cases": report}))
        return
    print(f"{'case':<14} {'old med':>8} {'new med':>8} {'old min':>8} {'new min':>8}  new/old")
    for case, c in report.items():
        print(
            f"{case:<14} {c['old_median_us']:>8.2f} {c['new_median_us']:>8.2f} "
            f"{c['old_min_us']:>8.2f} {c['new_min_us']:>8.2f}  {c['ratio_median']:.3f} "
            f"({c['ratio_q1']:.3f}..{c['ratio_q3']:.3f})"
        )


if __name__ == "__main__":
    main()
