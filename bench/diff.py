"""Diff benchmark: the time of ``diff_specs`` against parsing the two versions.

Run from the repository root::

    .venv/bin/python bench/diff.py [--sizes 1000,10000] [--repeat 5] [--json]

For each shape and size, the workflow of ``bench/check.py`` (version 1) is evolved
into version 2 by a few edits that the rules report: an optional input field,
and a changed retry policy on every service task with ``attempts: 3``.
Both texts are parsed once untimed (the warm-up); then parsing both is timed and
``diff_specs`` on the two specs is timed, ``--repeat`` times each, as medians of
``time.perf_counter`` after a ``gc.collect()``. The report gives diff/parse.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import benchlib  # the folder of this script is on sys.path when it runs
from check import SHAPES, generate

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from wflang.compiler.diff import diff_specs  # noqa: E402
from wflang.dsl.parser import parse  # noqa: E402


def evolve(text: str) -> str:
    """Version 2 of a generated workflow."""
    new = text.replace("version 1", "version 2", 1)
    new = new.replace("express: bool = false,", "express: bool = false,\n    gift: string?,", 1)
    return new.replace("attempts: 3,", "attempts: 5,")


def timed(run: Callable[[], Any], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def run_bench(sizes: list[int], shapes: list[str], repeat: int) -> dict[str, Any]:
    rows = []
    for shape in shapes:
        for n in sizes:
            old_text = generate(shape, n)
            new_text = evolve(old_text)
            old, new = parse(old_text, "old.wf"), parse(new_text, "new.wf")
            assert old.spec is not None and new.spec is not None
            old_spec, new_spec = old.spec, new.spec
            changes = len(diff_specs(old_spec, new_spec).changes)
            t_parse = timed(lambda a=old_text, b=new_text: (parse(a), parse(b)), repeat)
            t_diff = timed(lambda a=old_spec, b=new_spec: diff_specs(a, b), repeat)
            rows.append({"shape": shape, "nodes": n, "changes": changes,
                         "parse_both_s": t_parse, "diff_s": t_diff,
                         "diff_over_parse": t_diff / t_parse})  # fmt: skip
    return {"machine": benchlib.machine(), "rows": rows}


def render(report: dict[str, Any]) -> str:
    lines = [f"{'shape':<8} {'nodes':>6} {'changes':>8} {'parse both':>11} {'diff':>9} diff/parse"]
    for r in report["rows"]:
        lines.append(
            f"{r['shape']:<8} {r['nodes']:>6} {r['changes']:>8} {r['parse_both_s']:>10.3f}s "
            f"{r['diff_s']:>8.3f}s {r['diff_over_parse']:>9.3f}"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sizes", default="1000,10000")
    p.add_argument("--shapes", default=",".join(SHAPES))
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    report = run_bench(sizes, args.shapes.split(","), args.repeat)
    sys.stdout.write(json.dumps(report, indent=2) + "\n" if args.json else render(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
