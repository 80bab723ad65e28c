"""CPU per sequential durable step on SQLite, two trees timed in turn (issue 18).

``bench/durable.py``'s ``sqlite-1tx`` case (a chain of service calls, each instance
created then run to its end alone: ``Worker(concurrency=1, batch=1,
group_commit=False)``, one transaction per step) measured by what a step costs the
process: ``time.process_time`` per step, which the load of a shared machine moves far
less than wall time, and the WAL frames (pages) a step's commit writes. One
long-lived process per tree (``--old``, ``--new``) takes a sample at a time, in turn,
the side sampled first alternating by round; the figure is the median of the ratios
new/old of the pairs. From the repository root::

    git worktree add /tmp/old main --detach
    .venv/bin/python bench/step_cpu.py --old /tmp/old --new . --rounds 30

``--synchronous OFF`` leaves the fsync out (durability is not what is measured here:
the stores' default, FULL, is what ``bench/durable.py`` times); the CPU figure is much
the same either way, the wall time is not. A sample is ``--instances`` instances of a
chain of ``--chain`` calls; only ``run_until_idle`` is timed, as in ``bench/durable.py``.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO, Any

FRAME = 4096 + 24  # a WAL frame: a page and its header


def serve(root: Path, chain: int, synchronous: str) -> None:
    """The worker: says ``ready`` and the WAL frames per step, then answers ``RUN n``
    lines with the CPU and wall µs per step of that many instances."""
    sys.path.insert(0, str(root))
    sys.path.insert(0, str(root / "bench"))
    import durable as bench  # the tree's own bench/durable.py: its chain and handler

    from wflang.durable.worker import Worker
    from wflang.store import open_store

    folder = Path(tempfile.mkdtemp(prefix="wf-step-cpu-"))
    table = bench.compile_chain(chain, folder)
    store = open_store(f"sqlite:///{folder / 'state.db'}")
    store.backend.synchronous = synchronous  # type: ignore[attr-defined]
    store.migrate()
    store.deploy(table)
    deployed = store.deployed("chain")
    worker = Worker(
        store, {bench.SERVICE: bench.Handler()}, concurrency=1, batch=1, group_commit=False
    )
    wal = Path(f"{folder / 'state.db'}-wal")
    made = 0

    def run(n: int) -> tuple[float, float, int, int]:
        nonlocal made
        cpu = wall = 0.0
        steps = grown = 0
        for _ in range(n):
            made += 1
            store.create(deployed, {}, f"i{made:06d}")
            before = wal.stat().st_size
            c0, t0 = time.process_time(), time.perf_counter()
            steps += worker.run_until_idle()
            wall += time.perf_counter() - t0
            cpu += time.process_time() - c0
            grown += wal.stat().st_size - before
        return cpu, wall, steps, grown

    # The pages a step's commit writes: the WAL's growth while nothing checkpoints it
    # (once checkpointed, it is written again from its start and no longer grows).
    conn = store.backend._conn()  # type: ignore[attr-defined]
    conn.execute("PRAGMA wal_autocheckpoint=0")
    _, _, steps, grown = run(20)
    conn.execute("PRAGMA wal_autocheckpoint=1000")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    run(20)  # warm: caches, the statement cache, the tables' first pages
    print("ready", grown / FRAME / steps, flush=True)
    for line in sys.stdin:
        gc.collect()
        cpu, wall, steps, _ = run(int(line.split()[1]))
        print(f"{cpu / steps * 1e6} {wall / steps * 1e6}", flush=True)
    store.close()


class Side:
    def __init__(self, root: Path, chain: int, synchronous: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, __file__, "--serve", str(root), "--chain", str(chain),
             "--synchronous", synchronous],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        self.stdin: IO[str] = self.process.stdin  # type: ignore[assignment]
        self.stdout: IO[str] = self.process.stdout  # type: ignore[assignment]
        ready, _, frames = self.stdout.readline().partition(" ")
        if ready != "ready":
            raise SystemExit(f"the worker for {root} did not start")
        self.frames = float(frames)

    def sample(self, instances: int) -> tuple[float, float]:
        self.stdin.write(f"RUN {instances}\n")
        self.stdin.flush()
        cpu, wall = map(float, self.stdout.readline().split())
        return cpu, wall

    def close(self) -> None:
        self.stdin.close()
        self.process.wait()


def summary(samples: list[tuple[float, float]], frames: float) -> dict[str, float]:
    cpu, wall = zip(*samples, strict=True)
    return {
        "cpu_us_median": statistics.median(cpu),
        "cpu_us_min": min(cpu),
        "wall_us_median": statistics.median(wall),
        "wal_frames_per_step": frames,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--old", type=Path, help="the tree of the old version")
    ap.add_argument("--new", type=Path, default=Path("."), help="the tree of the new version")
    ap.add_argument("--rounds", type=int, default=20, help="samples of each version")
    ap.add_argument("--instances", type=int, default=20, help="instances per sample")
    ap.add_argument("--chain", type=int, default=10, help="service calls per instance")
    ap.add_argument("--synchronous", default="FULL", choices=("FULL", "NORMAL", "OFF"))
    ap.add_argument("--json", action="store_true", help="print the report as JSON")
    ap.add_argument("--serve", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.serve is not None:
        serve(args.serve.resolve(), args.chain, args.synchronous)
        return
    roots = {"new": args.new} if args.old is None else {"old": args.old, "new": args.new}
    sides = {name: Side(root.resolve(), args.chain, args.synchronous)
             for name, root in roots.items()}  # fmt: skip
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in sides}
    order = list(sides)
    for r in range(args.rounds):
        for name in order if r % 2 == 0 else order[::-1]:
            samples[name].append(sides[name].sample(args.instances))
    for side in sides.values():
        side.close()
    report: dict[str, Any] = {
        "load_average": os.getloadavg(),
        "synchronous": args.synchronous,
        "chain": args.chain,
        "rounds": args.rounds,
        "instances": args.instances,
        **{name: summary(s, sides[name].frames) for name, s in samples.items()},
    }
    if "old" in samples:
        pairs = sorted(n[0] / o[0] for o, n in zip(samples["old"], samples["new"], strict=True))
        report["cpu_ratio_median"] = statistics.median(pairs)
        report["cpu_ratio_q1"] = pairs[len(pairs) // 4]
        report["cpu_ratio_q3"] = pairs[(3 * len(pairs)) // 4]
    if args.json:
        print(json.dumps(report))
        return
    print(f"synchronous={args.synchronous}, chain of {args.chain}, {args.rounds} rounds of "
          f"{args.instances} instances, load {report['load_average'][0]:.2f}")  # fmt: skip
    for name in sides:
        s = report[name]
        print(f"{name:>4}: CPU/step {s['cpu_us_median']:7.1f} µs (min {s['cpu_us_min']:.1f}), "
              f"wall/step {s['wall_us_median']:7.1f} µs, WAL frames/step "
              f"{s['wal_frames_per_step']:.2f}")  # fmt: skip
    if "cpu_ratio_median" in report:
        print(
            f"CPU new/old: {report['cpu_ratio_median']:.3f} "
            f"({report['cpu_ratio_q1']:.3f}..{report['cpu_ratio_q3']:.3f})"
        )


if __name__ == "__main__":
    main()
