"""Load-independent counts per step of ``bench/runtime.py``'s workflows: bytecodes run,
Python calls and C calls, for the step function and the engine.

A machine shared with other work makes times noisy; these counts do not depend on the
load, so two versions can be compared on any machine. Give the tree to measure with
``--root`` (its ``bench/runtime.py`` builds and drives the workflows, its ``wflang`` is
measured), for instance the old code in a second worktree::

    git worktree add /tmp/old 3fcedfa --detach
    .venv/bin/python bench/step_counts.py --root /tmp/old
    .venv/bin/python bench/step_counts.py

Bytecodes are the ``opcode`` events of ``sys.settrace`` (every bytecode run in Python
code, the benchmark's driver included), calls the ``call`` and ``c_call`` events of
``sys.setprofile``; each is counted over one whole run of the workflow (after one
untimed run) and divided by its steps (``--size`` + 1). Machine instructions per step,
which also count what C code does, are measured with valgrind (``bench/RESULTS.md``,
2026-12-01).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from collections.abc import Callable
from pathlib import Path
from types import FrameType, ModuleType
from typing import Any

HERE = Path(__file__).resolve().parent.parent
WORKFLOWS = ("chain", "loop", "fanout")


def load_runtime_bench(root: Path) -> ModuleType:
    """``root``'s ``bench/runtime.py``, which puts ``root`` first on ``sys.path``."""
    sys.path.insert(0, str(root / "bench"))
    spec = importlib.util.spec_from_file_location("runtime_bench", root / "bench" / "runtime.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def counts(run: Callable[[], object]) -> dict[str, int]:
    """Bytecodes, Python calls and C calls of one call of ``run``."""
    seen = {"bytecodes": 0, "python_calls": 0, "c_calls": 0}

    def trace(frame: FrameType, event: str, arg: Any) -> Any:
        frame.f_trace_opcodes = True
        if event == "opcode":
            seen["bytecodes"] += 1
        return trace

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event == "call":
            seen["python_calls"] += 1
        elif event == "c_call":
            seen["c_calls"] += 1

    run()  # warm: the table compiled, caches filled
    sys.settrace(trace)
    try:
        run()
    finally:
        sys.settrace(None)
    sys.setprofile(profile)
    try:
        run()
    finally:
        sys.setprofile(None)
    return seen


def _bound(drive: Callable[[Any], object], table: Any) -> Callable[[], object]:
    return lambda: drive(table)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", type=Path, default=HERE, help="the tree to measure")
    ap.add_argument("--size", type=int, default=100, help="tasks, iterations, branches")
    ap.add_argument("--json", action="store_true", help="print the report as JSON")
    args = ap.parse_args()
    bench = load_runtime_bench(args.root.resolve())
    steps = args.size + 1
    report: dict[str, dict[str, dict[str, float]]] = {}
    for workflow in WORKFLOWS:
        table, _ = bench.compile_table(workflow, args.size)
        runs: dict[str, Callable[[], object]] = {
            "step": _bound(bench.drive_steps, table),
            "engine": _bound(bench.drive_engine, table),
        }
        report[workflow] = {
            path: {name: n / steps for name, n in counts(run).items()} for path, run in runs.items()
        }
    if args.json:
        print(json.dumps({"root": str(args.root), "size": args.size, "per_step": report}))
        return
    print(f"{args.root} (size {args.size}), per step:")
    print(f"{'workflow':<8} {'path':<7} {'bytecodes':>9} {'py calls':>8} {'C calls':>8}")
    for workflow, paths in report.items():
        for path, c in paths.items():
            print(
                f"{workflow:<8} {path:<7} {c['bytecodes']:>9.1f} {c['python_calls']:>8.1f} "
                f"{c['c_calls']:>8.1f}"
            )


if __name__ == "__main__":
    main()
