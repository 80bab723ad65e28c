"""Repeating boundary timers (issue 15 item 2) in memory, on the virtual clock:
``every EXPR, at most N -> T`` and BPMN's ``every R2/PT1H -> T`` start ``T`` beside the
node at each firing, a firing every interval after the one before, until the bound or
until the node is done; nothing sleeps."""

from __future__ import annotations

from pathlib import Path

import pytest

from wflang.compiler.check import check
from wflang.dsl import spec as sp
from wflang.dsl.formatter import format_spec
from wflang.dsl.parser import parse, parse_file
from wflang.runtime import instance as rt
from wflang.testing import MINUTE, WorkflowEnv

DATA = Path(__file__).resolve().parent / "data" / "cycles"
HOUR = 60 * MINUTE


def env() -> WorkflowEnv:
    return WorkflowEnv.from_files(DATA / "reminders.wf")


def fired(e: WorkflowEnv, iid: str) -> list[tuple[int, str]]:
    """(time, decision) of every timer that fired."""
    return [
        (h.at, d) for h in e.history(iid) for d in h.decisions if d.startswith("timer boundary")
    ]


def test_the_spec_keeps_how_each_cycle_was_written() -> None:
    parsed = parse_file(DATA / "reminders.wf")
    assert parsed.spec is not None and not parsed.diagnostics
    (wait,) = [n for n in parsed.spec.nodes if isinstance(n, sp.WaitNode)]
    assert [t.when for t in wait.timeouts] == ["every input.gap, at most 3", "R2/PT1H", "1d"]
    every, iso, _ = wait.timeouts
    assert every.cycle == sp.Cycle(3, span=every.cycle.span if every.cycle else None)  # type: ignore[arg-type]
    assert iso.cycle is not None and iso.cycle.iso and iso.cycle.times == 2
    assert not every.interrupting and not iso.interrupting
    # The duration of R2/PT1H is a literal of its own, at its place in the line.
    assert (iso.after.span.line, iso.after.span.column) == (17, 14)
    text = (DATA / "reminders.wf").read_text()
    assert format_spec(parsed.spec, text) == text


def test_a_cycle_fires_every_interval_up_to_its_bound() -> None:
    e = env()
    iid = e.start("reminders", {"id": "a"})
    e.advance(hours=3)
    assert fired(e, iid) == [
        (10 * MINUTE, "timer boundary:0 of approval fired"),
        (20 * MINUTE, "timer boundary:0:2 of approval fired"),
        (30 * MINUTE, "timer boundary:0:3 of approval fired"),
        (HOUR, "timer boundary:1 of approval fired"),
        (2 * HOUR, "timer boundary:1:2 of approval fired"),
    ]
    assert e.context(iid)["reminded"] == 3
    assert e.status(iid) == "waiting"
    # Only the interrupting day is left.
    assert [t.purpose for t in e.instance(iid).timers] == ["boundary:2"]


def test_the_node_done_cancels_the_cycle() -> None:
    e = env()
    iid = e.start("reminders", {"id": "a", "gap": "PT25M"})
    e.advance(minutes=55)
    e.signal(iid, "approved")
    e.advance(hours=5)
    assert [d for _, d in fired(e, iid)] == [
        "timer boundary:0 of approval fired",
        "timer boundary:0:2 of approval fired",
    ]
    assert e.status(iid) == "completed"
    assert e.instance(iid).output == {"reminded": 2}
    assert e.instance(iid).timers == ()


def test_a_zero_interval_is_refused_at_run_time() -> None:
    e = env()
    iid = e.start("reminders", {"id": "a", "gap": "PT0S"})
    assert e.status(iid) == "dead_lettered"
    assert "repeats every 0 ms" in (e.instance(iid).error or "")


@pytest.mark.parametrize(
    ("clause", "found"),
    [
        ("every 10m -> remind", [("WF361", "the repeating timer 'every 10m' has no bound")]),
        ("every R/PT10M -> remind", [("WF361", "the repeating timer 'R/PT10M' has no bound")]),
        ("every 10m, at most 0 -> remind", [("WF306", "a repeating timer fires at least once")]),
        ("every R0/PT10M -> remind", [("WF306", "a repeating timer fires at least once")]),
        ("every 0s, at most 2 -> remind", [("WF306", "the duration 0s is not positive")]),
        ("every 10m, at most 2 -> remind", []),
        ("every 10, at most 2 -> remind", [("WF301", "a timeout must be duration, not int")]),
    ],
)
def test_the_checker_on_cycles(clause: str, found: list[tuple[str, str]]) -> None:
    source = f"""workflow w version 1
signal go
start hold
wait hold: signal go {{
    {clause}
    next done
}}
end remind: completed
end done: completed
"""
    result = check([parse(source, "w.wf")])
    assert [(d.code, d.message) for d in result.diagnostics] == found


def test_every_is_a_clause_of_the_nodes_that_take_timeouts() -> None:
    source = (
        "workflow w version 1\nstart s\nsleep s 1m {\n    every 1m, at most 2 -> s\n    next s\n}\n"
    )
    result = check([parse(source, "w.wf")])
    assert ("WF003", "a sleep node does not take 'every'") in [
        (d.code, d.message) for d in result.diagnostics
    ]


def test_history_replays() -> None:
    e = env()
    iid = e.start("reminders", {"id": "a"})
    e.advance(hours=2)
    e.signal(iid, "approved")
    replayed = e.replay(iid)
    assert replayed.ok and replayed.instance == e.instance(iid)
    assert isinstance(e.history(iid)[-1].event, rt.SignalReceived)


def _wait_with(clause: str, version: int = 1) -> sp.WorkflowSpec:
    source = (
        f"workflow w version {version}\nsignal go\nstart hold\n"
        f"wait hold: signal go {{\n    {clause}\n    next done\n}}\n"
        "end remind: completed\nend done: completed\n"
    )
    parsed = parse(source, "w.wf")
    assert parsed.spec is not None
    return parsed.spec


def test_wf_diff_reports_a_cycle_that_fires_otherwise() -> None:
    from wflang.compiler.diff import diff_specs

    old = _wait_with("every 10m, at most 3 -> remind")
    changes = diff_specs(old, _wait_with("every 10m, at most 5 -> remind", 2)).changes
    assert [(c.diagnostic.code, c.diagnostic.message) for c in changes] == [
        (
            "WF650",
            "the timeouts of 'hold' changed from every 10m, at most 3 to every 10m, at most 5",
        )
    ]
    once = diff_specs(old, _wait_with("timeout 10m non-interrupting -> remind", 2)).changes
    assert [c.diagnostic.code for c in once] == ["WF650"]
    same = diff_specs(old, _wait_with("every R3/PT10M -> remind", 2)).changes
    assert same == ()
