"""A deadline in an event-based choice (issue 15's loose end): ``until EXPR -> NODE`` is an
arm of a ``first`` as ``after EXPR -> NODE`` is, its timer set at an instant (a
``timestamp``) instead of after a delay, so a delay and a deadline can race. Each stage
takes it: parse, format, check (its type, a second ``until``, WF402), diff, draw, and the
engine and the test kit (the stores: tests/store/test_first.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from wflang.compiler.check import check
from wflang.compiler.config import Config
from wflang.compiler.diff import diff_specs
from wflang.compiler.registry import Preset
from wflang.dsl import parse
from wflang.dsl import spec as sp
from wflang.dsl.formatter import format_spec
from wflang.runtime.waiting import waiting_on
from wflang.testing import WorkflowEnv

DATA = Path(__file__).resolve().parent / "data" / "first"
T0 = 1_772_442_000_000  # 2026-03-02T09:00:00Z
HOUR, DAY = 3_600_000, 86_400_000

HEAD = "workflow w version 1\ninput { id: string, by: timestamp }\nsignal go\nstart f\n"


def parsed(arms: str, head: str = HEAD) -> sp.WorkflowSpec:
    result = parse(head + "first f {\n" + arms + "}\nend e: completed\nend x: failed\n", "f.wf")
    assert result.diagnostics == (), result.diagnostics
    assert result.spec is not None
    return result.spec


def findings(arms: str, head: str = HEAD, preset: Preset = Preset.RECOMMENDED
             ) -> list[tuple[str, str]]:  # fmt: skip
    result = parse(head + "first f {\n" + arms + "}\nend e: completed\nend x: failed\n", "f.wf")
    assert result.spec is not None, result.diagnostics
    found = check([result], Config(preset)).diagnostics
    return [(d.code, d.message) for d in found]


def env() -> WorkflowEnv:
    return WorkflowEnv.from_files(DATA / "deadline.wf", now=T0)


def test_an_until_arm_parses_into_an_until_trigger_and_formats_canonically() -> None:
    spec = parsed("    on signal go -> e\n    until   input.by->x\n")
    first = spec.nodes[0]
    assert isinstance(first, sp.FirstNode)
    until = first.arms[1]
    assert isinstance(until.trigger, sp.UntilTrigger)
    assert until.target.text == "x"
    source = (
        HEAD + "first f {\n    on signal go -> e\n    until   input.by->x\n}\nend e: completed\n"
    )
    result = parse(source, "f.wf")
    assert result.spec is not None
    assert "    until input.by -> x\n" in format_spec(result.spec, source)
    fixture = (DATA / "deadline.wf").read_text(encoding="utf-8")
    fixture_spec = parse(fixture, "deadline.wf").spec
    assert fixture_spec is not None
    assert format_spec(fixture_spec, fixture) == fixture  # the fixture is canonical


def test_an_until_arm_takes_no_block() -> None:
    source = HEAD + "first f {\n    until input.by -> x { output { } }\n}\nend x: failed\n"
    result = parse(source, "f.wf")
    assert result.spec is None or result.diagnostics != ()


def test_its_instant_must_be_a_timestamp() -> None:
    assert findings("    on signal go -> e\n    until 2d -> x\n") == [
        ("WF301", "'until' must be timestamp, not duration")
    ]
    assert findings("    on signal go -> e\n    until input.by -> x\n") == []


def test_two_until_arms_are_one_too_many_but_an_after_may_race_an_until() -> None:
    twice = findings(
        "    on signal go -> e\n    until input.by -> e\n    until input.by + 1d -> x\n"
    )
    assert twice == [("WF366", "first 'f' waits for a timer twice: only one of the arms could win")]
    assert findings("    on signal go -> e\n    after 2d -> e\n    until input.by -> x\n") == []


def test_an_until_arm_is_the_timeout_that_wf402_asks_for() -> None:
    head = "workflow w version 1\ninput { by: timestamp }\nsignal go\nsignal stop\nstart f\n"
    signals = "    on signal go -> e\n    on signal stop -> x\n"
    assert findings(signals, head, Preset.ALL) == [
        ("WF305", "input field 'by' is never read"),
        ("WF402", "first 'f' has no 'after' arm"),
    ]
    assert findings(signals + "    until input.by -> x\n", head, Preset.ALL) == []


def test_it_is_drawn_with_the_timer_s_mark() -> None:
    from wflang.render.build import build  # (the renderer, for this test only)

    result = parse((DATA / "deadline.wf").read_text(encoding="utf-8"), "deadline.wf")
    diagram = build(next(iter(check([result]).models.values())))
    labels = sorted(e.label for e in diagram.edges if e.tail == "outcome")
    assert labels == ["△ pay", "◷ 1d", "◷ input.expires_at"]


def test_an_until_arm_added_or_removed_is_a_change_for_waiting_instances() -> None:
    old = parsed("    on signal go -> e\n    after 2d -> x\n")
    new = parsed("    on signal go -> e\n    after 2d -> x\n    until input.by -> x\n")
    messages = [c.diagnostic.message for c in diff_specs(old, new).changes]
    assert any("'f' now waits for until too" in m for m in messages), messages
    back = [c.diagnostic.message for c in diff_specs(new, old).changes]
    assert any("'f' no longer waits for until" in m for m in back), back
    assert "'until' of 'f' (to 'x') was removed" in back  # its edge, by its kind


def test_it_waits_on_every_arm_with_a_timer_at_the_deadline() -> None:
    e = env()
    iid = e.start("deadline", {"order_id": "o-1", "expires_at": T0 + 3 * HOUR})
    inst = e.instance(iid)
    assert waiting_on(inst.tokens) == ("signal:pay", "timer")  # (a label once)
    assert len(inst.tokens) == 4  # the node's, and one per arm
    assert sorted((t.purpose, t.due) for t in inst.timers) == [
        ("after", T0 + DAY),
        ("until", T0 + 3 * HOUR),
    ]


@pytest.mark.parametrize(
    ("expires_in", "advance", "route", "status"),
    [
        (3 * HOUR, 3 * HOUR, "expired", "failed"),  # the deadline comes first
        (2 * DAY, DAY, "reminded", "completed"),  # the delay comes first
    ],
)
def test_the_earlier_timer_wins_and_cancels_the_other(
    expires_in: int, advance: int, route: str, status: str
) -> None:
    e = env()
    iid = e.start("deadline", {"order_id": "o-1", "expires_at": T0 + expires_in})
    e.advance(ms=advance - 1)
    assert e.status(iid) == "waiting"
    e.advance(ms=1)
    assert e.status(iid) == status
    assert e.instance(iid).output == {"route": route}
    assert e.instance(iid).timers == ()


def test_a_deadline_already_past_fires_at_once() -> None:
    e = env()
    iid = e.start("deadline", {"order_id": "o-1", "expires_at": T0 - HOUR})
    e.advance(ms=0)
    assert e.status(iid) == "failed"
    assert e.instance(iid).output == {"route": "expired"}


def test_a_signal_before_the_deadline_wins() -> None:
    e = env()
    iid = e.start("deadline", {"order_id": "o-1", "expires_at": T0 + HOUR})
    e.signal(iid, "pay")
    assert e.instance(iid).output == {"route": "paid"}
    e.advance(ms=DAY)
    assert e.status(iid) == "completed"


def test_a_comment_inside_a_timer_arm_stays_on_its_line() -> None:
    """A timer arm takes no block: a comment inside one is kept after the arm's line
    (it used to be written as a block, ``after 2d -> x {}``, which does not parse)."""
    source = HEAD + (
        "first f {\n"
        "    on signal go -> e\n"
        "    until input.by // the deadline\n"
        "        -> x\n"
        "    after /* grace */ 2d -> x\n"
        "}\nend e: completed\nend x: failed\n"
    )
    result = parse(source, "f.wf")
    assert result.spec is not None, result.diagnostics
    formatted = format_spec(result.spec, source)
    assert "    until input.by -> x  // the deadline\n" in formatted
    assert "    after 2d -> x  /* grace */\n" in formatted
    again = parse(formatted, "f.wf")
    assert again.diagnostics == () and again.spec is not None
    assert format_spec(again.spec, formatted) == formatted
