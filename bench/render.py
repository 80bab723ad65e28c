"""Render benchmark: DOT and Mermaid generation for long chains, and Graphviz's time.

Run from the repository root::

    .venv/bin/python bench/render.py [--sizes 1000,10000] [--repeat 5]

For each size, a chain of script tasks (the 1,000-node chain of
``tests/test_render.py``) is parsed and modelled once, untimed; then building
the diagram and writing DOT, and writing Mermaid, are timed ``--repeat`` times
each (medians of ``time.perf_counter`` after ``gc.collect()``). ``dot -Tsvg`` is
timed once for sizes up to 1,000 when Graphviz is installed. Linear generation
shows as a time per node that stays flat as the size grows.
"""

from __future__ import annotations

import argparse
import gc
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from wflang.compiler.model import Model  # noqa: E402
from wflang.dsl.parser import parse_bytes  # noqa: E402
from wflang.render import build, to_dot, to_mermaid  # noqa: E402
from wflang.render.command import model_of  # noqa: E402


def chain(n: int) -> str:
    """A workflow of ``n`` script tasks in a row and an end."""
    steps = "".join(f"task s{i}: script {{\n    next s{i + 1}\n}}\n\n" for i in range(n - 1))
    return f"workflow big version 1\n\nstart s0\n\n{steps}end s{n - 1}: completed\n"


def _build_dot(model: Model) -> str:
    return to_dot(build(model))


def median(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        gc.collect()
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000,10000")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    print("| nodes  | build + DOT | per node | Mermaid | dot -Tsvg |")
    print("|-------:|------------:|---------:|--------:|----------:|")
    for n in (int(s) for s in args.sizes.split(",")):
        parsed = parse_bytes(chain(n).encode("utf-8"), "big.wf")
        model = model_of(parsed)
        diagram = build(model)
        t_dot = median(partial(_build_dot, model), args.repeat)
        t_mmd = median(partial(to_mermaid, diagram), args.repeat)
        t_svg = "-"
        if n <= 1000 and shutil.which("dot"):
            text = to_dot(diagram).encode("utf-8")
            t0 = time.perf_counter()
            subprocess.run(["dot", "-Tsvg"], input=text, capture_output=True, check=True)
            t_svg = f"{time.perf_counter() - t0:.2f} s"
        print(f"| {n:>6,} | {t_dot * 1000:>8.1f} ms | {t_dot / n * 1e6:>5.1f} us |"
              f" {t_mmd * 1000:>4.1f} ms | {t_svg:>9} |")  # fmt: skip


if __name__ == "__main__":
    main()
