"""Time in expressions (issue 14, item 4): ``now()`` is the time of the event the step
processes (the virtual clock in tests, recorded with the step, so a replay gives the
same value), and timestamps and durations add, subtract, scale and compare, typed by
the checker. On the engine and the test kit here; on SQLite and PostgreSQL in
tests/store/test_time.py."""

from __future__ import annotations

from functools import cache

import pytest

from wflang.compiler.check import check
from wflang.compiler.compile import compile_workflow
from wflang.dsl.formatter import format_spec
from wflang.dsl.parser import parse
from wflang.runtime import table as tb
from wflang.runtime.engine import Engine
from wflang.runtime.ir import Value
from wflang.testing import MINUTE, WorkflowEnv

T0 = 1_772_442_000_000  # 2026-03-02T09:00:00Z

STAMPS = """\
workflow stamps version 1

input { opens_at: timestamp, wait_for: duration = 10m }

context { started: timestamp?, noted: timestamp? }

output {
    started: timestamp,
    waited: duration,
    late: bool,
    half: duration,
    twice: duration,
    within: bool,
    deadline: timestamp,
}

service clock.note(at: timestamp) -> { seen: timestamp }

start stamp

task stamp: script {
    output { started: now() }
    next both
}

parallel both {
    branch one {
        task note: service clock.note {
            args { at: now() }
            output { noted: result.seen }
            next one_done
        }
        end one_done: completed
    }
    branch two {
        sleep pause input.wait_for / 2 next two_done
        end two_done: completed
    }
    join all -> stop
}

end stop: completed {
    output {
        started: coalesce(context.started, input.opens_at),
        waited: now() - coalesce(context.started, input.opens_at),
        late: now() > input.opens_at,
        half: input.wait_for / 2,
        twice: 2 * input.wait_for,
        within: now() - input.opens_at <= 1h and input.wait_for * 3 > 5m,
        deadline: input.opens_at + input.wait_for,
    }
}
"""


@cache
def stamps() -> tb.Table:
    result = compile_workflow(parse(STAMPS, "stamps.wf"))
    assert result.table is not None, [d.message for d in result.check.diagnostics]
    return result.table


def note(at: Value) -> dict[str, Value]:
    return {"seen": at}


def expected(opens_at: int) -> dict[str, Value]:
    """What the instance started at T0 gives, the sleep of 5 minutes taken."""
    return {
        "started": T0,
        "waited": 5 * MINUTE,
        "late": opens_at < T0 + 5 * MINUTE,
        "half": 5 * MINUTE,
        "twice": 20 * MINUTE,
        "within": T0 + 5 * MINUTE - opens_at <= 60 * MINUTE,
        "deadline": opens_at + 10 * MINUTE,
    }


@pytest.mark.parametrize("opens_at", [T0 - 30 * MINUTE, T0 + 2 * MINUTE, T0 - 2 * 60 * MINUTE])
def test_now_is_the_steps_clock_on_the_engine_and_the_test_kit(opens_at: int) -> None:
    engine = Engine([stamps()], {"clock.note": note}, now=T0)
    kit = WorkflowEnv([stamps()], {"clock.note": note}, now=T0)
    on_engine = engine.start("stamps", {"opens_at": opens_at})
    on_kit = kit.start("stamps", {"opens_at": opens_at})
    engine.advance(5 * MINUTE)
    kit.advance(minutes=5)
    for inst in (engine.instance(on_engine), kit.instance(on_kit)):
        assert inst.status.value == "completed", inst.error
        assert inst.output == expected(opens_at)
        assert type(inst.output["started"]) is int  # epoch milliseconds, not a float
        assert inst.context["noted"] == T0  # the service was called at the start's time
    assert kit.replay(on_kit).reproduces(kit.instance(on_kit))


def test_a_replay_reads_the_recorded_time_not_the_clock() -> None:
    kit = WorkflowEnv([stamps()], {"clock.note": note}, now=T0)
    iid = kit.start("stamps", {"opens_at": T0})
    kit.advance(minutes=5)
    kit.advance(hours=3)  # the clock moves on; the history keeps each step's time
    replayed = kit.replay(iid)
    assert replayed.reproduces(kit.instance(iid))
    assert replayed.instance is not None and replayed.instance.output == expected(T0)


def test_now_prints_back_as_written() -> None:
    spec = parse(STAMPS, "stamps.wf").spec
    assert spec is not None
    assert format_spec(spec, STAMPS) == STAMPS


BAD = """\
workflow bad version 1

input { opens_at: timestamp, wait_for: duration = 10m, at: timestamp = now() }

output { a: timestamp, b: bool, c: duration, d: bool, e: timestamp, f: duration, g: timestamp }

start stop

end stop: completed {
    output {
        a: now() + 5,
        b: now() < 5,
        c: now() * 2,
        d: input.wait_for < input.opens_at,
        e: now() + now(),
        f: input.wait_for * 1.5,
        g: now(1),
    }
}
"""


def test_wrong_mixes_of_time_are_type_errors() -> None:
    result = check([parse(BAD, "bad.wf")])
    found = sorted((d.code, d.span.line, d.message) for d in result.diagnostics)
    assert found == [
        ("WF301", 3, "the default of 'at' cannot call now(): a default is a constant"),
        ("WF301", 11, "'+' does not apply to timestamp and int"),
        ("WF301", 12, "timestamp and int cannot be ordered with '<'"),
        ("WF301", 13, "'*' does not apply to timestamp and int"),
        ("WF301", 14, "duration and timestamp cannot be ordered with '<'"),
        ("WF301", 15, "'+' does not apply to timestamp and timestamp"),
        ("WF301", 16, "'*' does not apply to duration and decimal"),
        ("WF301", 17, "now() takes 0 arguments, not 1"),
    ]


WINDOW = """\
workflow window version 1

type Slot { at: timestamp, length: duration }

input { opens_at: timestamp, grace: duration, slots: list[Slot] = [], by_name: map[string, duration]? }

signal moved { to: timestamp, extra: duration? }

context { closes_at: timestamp? }

output { opens_at: timestamp, closes_at: timestamp, total: duration, named: duration }

start wait_move

wait wait_move: signal moved {
    output { closes_at: signal.to + coalesce(signal.extra, 0s) }
    next done
}

end done: completed {
    output {
        opens_at: input.opens_at,
        closes_at: coalesce(context.closes_at, input.opens_at),
        total: input.grace + sum(input.slots[*].length),
        named: coalesce(input.by_name["a"], 0s),
    }
}
"""
#: A start input as JSON from outside may write its times as text (issue 14, item 4).
WINDOW_INPUT: dict[str, Value] = {
    "opens_at": "2026-12-01T10:00:00Z",
    "grace": "PT10M",
    "slots": [
        {"at": "2026-12-01T11:00:00+01:00", "length": "1h30m"},
        {"at": 1_796_119_200_000, "length": 60_000},
    ],
    "by_name": {"a": "P1DT12H"},
}
WINDOW_SIGNAL: dict[str, Value] = {"to": "2026-12-02T09:30:00.250Z", "extra": "250ms"}
OPENS = 1_796_119_200_000  # 2026-12-01T10:00:00Z
WINDOW_OUTPUT: dict[str, Value] = {
    "opens_at": OPENS,
    "closes_at": OPENS + 23 * 60 * MINUTE + 30 * MINUTE + 500,
    "total": 10 * MINUTE + 90 * MINUTE + MINUTE,
    "named": 36 * 60 * MINUTE,
}


@cache
def window() -> tb.Table:
    result = compile_workflow(parse(WINDOW, "window.wf"))
    assert result.table is not None, [d.message for d in result.check.diagnostics]
    return result.table


def test_input_and_signals_take_iso_8601_text_on_the_engine_and_the_test_kit() -> None:
    kit = WorkflowEnv([window()])
    iid = kit.start("window", WINDOW_INPUT)
    inst = kit.instance(iid)
    assert inst.input["opens_at"] == OPENS and inst.input["grace"] == 10 * MINUTE
    assert inst.input["slots"] == [
        {"at": OPENS, "length": 90 * MINUTE},
        {"at": OPENS, "length": MINUTE},
    ]
    kit.signal(iid, "moved", WINDOW_SIGNAL)
    assert kit.instance(iid).output == WINDOW_OUTPUT
    assert kit.replay(iid).reproduces(kit.instance(iid))
    engine = Engine([window()], {})
    started = engine.start("window", WINDOW_INPUT)
    assert engine.instance(started).input == inst.input  # the history holds the ints
    assert engine.history(started)[0].input == inst.input


@pytest.mark.parametrize(
    ("field", "value", "problem"),
    [
        (
            "opens_at",
            "2026-12-01T10:00:00",
            "'opens_at' must be timestamp (epoch milliseconds or ISO-8601 text such as "
            "2026-12-01T10:00:00Z), not '2026-12-01T10:00:00'",
        ),
        (
            "opens_at",
            "2026-02-30T10:00:00Z",
            "'opens_at' must be timestamp (epoch milliseconds or ISO-8601 text such as "
            "2026-12-01T10:00:00Z), not '2026-02-30T10:00:00Z'",
        ),
        (
            "grace",
            "P1M",
            "'grace' must be duration (integer milliseconds or text such as PT10M or 10m), "
            "not 'P1M'",
        ),
        (
            "grace",
            1.5,
            "'grace' must be duration (integer milliseconds or text such as PT10M "
            "or 10m), not decimal",
        ),
    ],
)
def test_time_text_that_is_no_time_is_refused_and_nothing_starts(
    field: str, value: Value, problem: str
) -> None:
    engine = Engine([window()], {})
    with pytest.raises(ValueError, match="does not fit") as refused:
        engine.start("window", {**WINDOW_INPUT, field: value})
    assert getattr(refused.value, "problems", None) == (problem,)
    assert engine.records == {}


MEETING = """\
workflow meeting version 1

context { ends_at: timestamp? }

output { ends_at: timestamp }

start book

task book: user "assistants" {
    form { starts_at: timestamp, length: duration }
    output { ends_at: result.starts_at + result.length }
    next done
}

end done: completed {
    output { ends_at: coalesce(context.ends_at, now()) }
}
"""


@cache
def meeting() -> tb.Table:
    result = compile_workflow(parse(MEETING, "meeting.wf"))
    assert result.table is not None, [d.message for d in result.check.diagnostics]
    return result.table


#: A person's form as JSON may write its times as text too.
FORM: dict[str, Value] = {"starts_at": "2026-12-01T10:00:00+01:00", "length": "PT1H30M"}
ENDS_AT = OPENS - 60 * MINUTE + 90 * MINUTE


def test_a_form_takes_iso_8601_text_on_the_engine_and_the_test_kit() -> None:
    engine = Engine([meeting()], {})
    iid = engine.start("meeting", {})
    (task,) = engine.human_tasks()
    with pytest.raises(ValueError, match="'length' must be duration"):
        engine.complete_task(task.key, {**FORM, "length": "90 minutes"})
    assert engine.instance(iid).status.value == "waiting"  # the task is still open
    engine.complete_task(task.key, FORM)
    assert engine.instance(iid).output == {"ends_at": ENDS_AT}
    kit = WorkflowEnv([meeting()])
    kid = kit.start("meeting", {})
    (task,) = kit.engine.human_tasks()
    kit.complete(task.key, FORM)
    assert kit.instance(kid).output == {"ends_at": ENDS_AT}
    assert kit.replay(kid).reproduces(kit.instance(kid))
