"""The checker and its reports grow linearly with the workflow and the findings.

No timing margins: each test compares a size with four times that size, where
linear growth gives a ratio near 4 and quadratic growth one near 16, and fails
above 8. Memory is measured with tracemalloc, time as the process's own CPU time
(other processes on a busy machine do not count), the best of a few runs.
"""

from __future__ import annotations

import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

from wflang.compiler.check import check, module_model
from wflang.compiler.config import Config
from wflang.compiler.program import load_program
from wflang.compiler.registry import Preset
from wflang.compiler.report import FORMATS, Report, render
from wflang.compiler.rules.loops import unbounded_loop
from wflang.dsl.parser import parse

LINEAR = 8  # a linear ratio is about 4, a quadratic one about 16


def busy_loop(n: int) -> str:
    """A loop of n tasks that never waits, with an exit."""
    tasks = "".join(f"task t{i}: service s.work {{ next t{i + 1} }}\n" for i in range(n - 1))
    return (
        "workflow w version 1\nservice s.work()\ninput { stop: bool }\nstart t0\n"
        f"{tasks}task t{n - 1}: service s.work {{ next again }}\n"
        "choice again { when input.stop -> done else -> t0 }\nend done: completed\n"
    )


def loop_peak_memory(n: int) -> int:
    program = load_program([parse(busy_loop(n), "w.wf")])
    model = module_model(program, "w.wf")
    _ = model.graph, model.positions  # built once per file, shared by every rule
    tracemalloc.start()
    try:
        assert len(list(unbounded_loop(model))) == 1
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_unbounded_loop_memory_grows_linearly_with_the_loop() -> None:
    assert loop_peak_memory(1000) / loop_peak_memory(250) < LINEAR


def cpu_time(work: Callable[[], object]) -> float:
    best = float("inf")
    for _ in range(3):
        start = time.process_time()
        work()
        best = min(best, time.process_time() - start)
    return best


def unused_signals(n: int, suppressed: bool = False) -> str:
    """A workflow with n findings (signals never used), each suppressed or not."""
    comment = "  // wf: ignore[WF304]" if suppressed else ""
    signals = "".join(f"signal s{i}{comment}\n" for i in range(n))
    return f"workflow w version 1\n{signals}start done\nend done: completed\n"


def test_every_report_format_grows_linearly_with_the_findings() -> None:
    def report(n: int) -> Report:
        result = check([parse(unused_signals(n), "w.wf")], Config(Preset.ALL))
        assert len(result.diagnostics) == n
        return Report(result.diagnostics, result.sources, result.files)

    def rendering(fmt: str, report: Report) -> Callable[[], object]:
        return lambda: render(fmt, report, root=Path())

    small, large = report(2000), report(8000)
    for fmt in FORMATS:
        ratio = cpu_time(rendering(fmt, large)) / cpu_time(rendering(fmt, small))
        assert ratio < LINEAR, fmt


def test_suppressions_cost_grows_linearly_with_the_findings() -> None:
    def run(n: int) -> Callable[[], object]:
        parsed = parse(unused_signals(n, suppressed=True), "w.wf")
        return lambda: check([parsed], Config(Preset.ALL))

    assert cpu_time(run(8000)) / cpu_time(run(2000)) < LINEAR
