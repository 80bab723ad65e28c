"""List forms benchmark: the evaluator against plain Python, per item (issue 14, item 1).

Run from the repository root::

    .venv/bin/python bench/lists.py [--items 1000] [--repeat 7] [--json]

Each case is an expression over ``input.lines`` (``--items`` records of a sku, a
quantity and a decimal price), compiled once with ``compile_ir`` (under the default
``Limits``, so the budget of items is counted as in a workflow), and the same
computation written as a plain Python comprehension over the same values. The cases
and their Python twins take turns in every round (``--repeat`` rounds), and each
figure is the median, in nanoseconds per item, after a ``gc.collect()``; the ratio is
the evaluator's time over Python's.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import time
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.benchlib import machine, source_state  # noqa: E402
from wflang.runtime.ir import IR, Apply, Const, Each, Get, Load, Project, compile_ir  # noqa: E402
from wflang.runtime.values import Value  # noqa: E402

LINES = Get(Load("input"), "lines")
ITEM_QTY = Get(Load("l"), "qty")

#: name -> (the IR, the same in plain Python over the list of records)
CASES: dict[str, tuple[IR, Callable[[list[dict[str, Any]]], object]]] = {
    "xs[*].qty": (Project(LINES, ("qty",)), lambda xs: [x["qty"] for x in xs]),
    "sum(xs[*].qty)": (
        Apply("sum", (Project(LINES, ("qty",)),)),
        lambda xs: sum(x["qty"] for x in xs),
    ),
    "sum(xs[*].price) (decimal)": (
        Apply("sum_decimal", (Project(LINES, ("price",)),)),
        lambda xs: sum((x["price"] for x in xs), Decimal(0)),
    ),
    "any(xs, l => l.qty > 100)": (
        Each("any", LINES, "l", Apply("gt", (ITEM_QTY, Const(100)))),
        lambda xs: any(x["qty"] > 100 for x in xs),
    ),
    "filter(xs, l => l.qty > 3)": (
        Each("filter", LINES, "l", Apply("gt", (ITEM_QTY, Const(3)))),
        lambda xs: [x for x in xs if x["qty"] > 3],
    ),
    "map(xs, l => l.sku)": (
        Each("map", LINES, "l", Get(Load("l"), "sku")),
        lambda xs: [x["sku"] for x in xs],
    ),
}


def lines(n: int) -> list[Value]:
    return [
        {"sku": f"s{i}", "qty": i % 7, "price": Decimal(i % 50) / 4 + Decimal("0.25")}
        for i in range(n)
    ]


def timed(run: Callable[[], object], times: int) -> float:
    gc.collect()
    start = time.perf_counter()
    for _ in range(times):
        run()
    return (time.perf_counter() - start) / times


def measure(items: int, repeat: int) -> dict[str, dict[str, float]]:
    data = lines(items)
    env: dict[str, Value] = {"input": {"lines": data}}
    records: list[dict[str, Any]] = [x for x in data if isinstance(x, dict)]
    compiled = {name: compile_ir(node) for name, (node, _) in CASES.items()}
    for name, (_, plain) in CASES.items():  # the same answer, before anything is timed
        got, want = compiled[name](env), plain(records)
        assert got == want, name
    times = max(1, 200_000 // items)
    samples: dict[str, tuple[list[float], list[float]]] = {n: ([], []) for n in CASES}
    for _ in range(repeat):  # the cases and their twins take turns in every round
        for name, (_, plain) in CASES.items():
            fn = compiled[name]
            samples[name][0].append(timed(lambda: fn(env), times))  # noqa: B023
            samples[name][1].append(timed(lambda: plain(records), times))  # noqa: B023
    report: dict[str, dict[str, float]] = {}
    for name, (ours, python) in samples.items():
        a, b = statistics.median(ours), statistics.median(python)
        report[name] = {
            "ns_per_item": round(a / items * 1e9, 1),
            "python_ns_per_item": round(b / items * 1e9, 1),
            "ratio": round(a / b, 2),
        }
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--items", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    report = {
        "machine": machine(),
        "source": source_state(("wflang",), "wflang"),
        "items": args.items,
        "repeat": args.repeat,
        "cases": measure(args.items, args.repeat),
    }
    if args.json:
        print(json.dumps(report, indent=1))
        return
    print(f"{args.items} items, median of {args.repeat} rounds, source {report['source']}")
    print(f"{'case':30} {'ns/item':>9} {'python':>9} {'ratio':>7}")
    for name, row in report["cases"].items():
        print(f"{name:30} {row['ns_per_item']:>9} {row['python_ns_per_item']:>9} {row['ratio']:>7}")


if __name__ == "__main__":
    main()
