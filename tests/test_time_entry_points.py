"""Time text at every entry point of the engine and the test kit (issue 14, item 4; one
walk of a value by its type, issue 13): a handler's result (and its error's payload, and
a delayed call's answer), a published message (at once or kept with a TTL), a signal, a
human task's form and an operator's forced output may all write a ``timestamp`` or a
``duration`` as ISO-8601 text (or ``10m``), at any depth; the instance and its history
hold the milliseconds. Text that is no time is refused with the field's path, and
nothing is sent. On SQLite and PostgreSQL, and through `wf`, in
tests/store/test_time_entry_points.py."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from functools import cache
from pathlib import Path

import pytest

from wflang.cli import main
from wflang.compiler.compile import compile_workflow
from wflang.dsl.parser import parse
from wflang.runtime import instance as rt
from wflang.runtime import table as tb
from wflang.runtime.engine import Engine
from wflang.runtime.ir import Value
from wflang.runtime.outcome import TaskError
from wflang.testing import MINUTE, WorkflowEnv, delay, permanent, succeed

AGENDA = """\
workflow agenda version 1

type Slot { at: timestamp, length: duration = 30m }

error Late { by: duration, until: timestamp? }

input { id: string, since: timestamp? }

context {
    due: timestamp?,
    span: duration?,
    slot: duration?,
    late: duration?,
    booked: timestamp?,
    slots: duration?,
    moved: timestamp?,
    decided: timestamp?,
}

message booked { at: timestamp, slots: list[Slot] = [] }

signal moved { to: timestamp }

service cal.plan(id: string) -> { due: timestamp, span: duration, slot: Slot } raises Late

start plan

task plan: service cal.plan {
    args { id: input.id }
    output { due: result.due, span: result.span, slot: result.slot.length }
    on Late -> late
    next book
}

task late: script {
    output { late: error.payload.by }
    next book
}

wait book: message booked correlate input.id {
    output { booked: message.at, slots: sum(message.slots[*].length) }
    next move
}

wait move: signal moved {
    output { moved: signal.to }
    next decide
}

task decide: user "planners" {
    form { at: timestamp, extra: duration = 5m }
    output { decided: result.at + result.extra }
    next done
}

end done: completed
"""

HOUR = 60 * MINUTE
DEC_1 = 1_796_119_200_000  # 2026-12-01T10:00:00Z
#: What each entry point is given, as JSON from outside: times as text, at every depth.
PLAN: dict[str, Value] = {
    "due": "2026-12-01T10:00:00Z",
    "span": "PT10M",
    "slot": {"at": "2026-12-01T11:00:00+01:00"},  # its length: the default, 30m
}
LATE: dict[str, Value] = {"by": "1h30m", "until": "2026-12-01T10:00:00Z"}
BOOKED: dict[str, Value] = {
    "at": "2026-12-02T09:30:00.250Z",
    "slots": [{"at": "2026-12-01T10:00:00Z", "length": "P1DT1H"}, {"at": DEC_1}],
}
MOVED: dict[str, Value] = {"to": "2026-12-03T10:00:00Z"}
FORM: dict[str, Value] = {"at": "2026-12-01T10:00:00+01:00"}  # extra: the default, 5m
#: The context those give: only milliseconds.
PLANNED: dict[str, Value] = {"due": DEC_1, "span": 10 * MINUTE, "slot": 30 * MINUTE}
AFTER: dict[str, Value] = {
    "booked": DEC_1 + 23 * HOUR + 30 * MINUTE + 250,
    "slots": 25 * HOUR + 30 * MINUTE,
    "moved": DEC_1 + 48 * HOUR,
    "decided": DEC_1 - HOUR + 5 * MINUTE,
}
#: Text that is no time, each refused with the field's path.
BAD = ("2026-13-45", "PT", "10 parsecs")


@cache
def agenda() -> tb.Table:
    result = compile_workflow(parse(AGENDA, "agenda.wf"))
    assert result.table is not None, [d.message for d in result.check.diagnostics]
    return result.table


def context(inst: rt.Instance) -> dict[str, Value]:
    return {k: v for k, v in inst.context.items() if v is not None}


def plan(**_: Value) -> dict[str, Value]:
    return dict(PLAN)


def finish_on_engine(engine: Engine, iid: str) -> None:
    """The message, the signal and the form, each with its times as text."""
    assert engine.publish("booked", "a1", BOOKED) == [iid]
    engine.signal(iid, "moved", MOVED)
    (task,) = engine.human_tasks()
    engine.complete_task(task.key, FORM)


def test_every_entry_point_of_the_engine_takes_time_text() -> None:
    engine = Engine([agenda()], {"cal.plan": plan})
    iid = engine.start("agenda", {"id": "a1"})
    assert context(engine.instance(iid)) == PLANNED  # the handler's result
    finish_on_engine(engine, iid)
    inst = engine.instance(iid)
    assert inst.status is rt.Status.COMPLETED, inst.error
    assert context(inst) == {**PLANNED, **AFTER}
    received = [e.event for e in engine.history(iid) if isinstance(e.event, rt.SignalReceived)]
    assert [type(s.payload["at" if s.kind == "message" else "to"]) for s in received] == [int, int]


def test_every_entry_point_of_the_test_kit_takes_time_text() -> None:
    kit = WorkflowEnv([agenda()], {"cal.plan": [delay()]})
    iid = kit.start("agenda", {"id": "a1"})
    (key,) = kit.open_tasks(iid)
    kit.complete(key, PLAN)  # a delayed call's answer
    assert context(kit.instance(iid)) == PLANNED
    assert kit.publish("booked", "a1", BOOKED) == [iid]
    kit.signal(iid, "moved", MOVED)
    (key,) = kit.open_tasks(iid)
    kit.complete(key, FORM)
    assert context(kit.instance(iid)) == {**PLANNED, **AFTER}
    assert kit.replay(iid).reproduces(kit.instance(iid))
    scripted = WorkflowEnv([agenda()], {"cal.plan": succeed(PLAN)})
    sid = scripted.start("agenda", {"id": "a1"})
    assert context(scripted.instance(sid)) == PLANNED


def test_an_error_payload_from_a_handler_takes_time_text() -> None:
    kit = WorkflowEnv([agenda()], {"cal.plan": permanent("Late", "late", LATE)})
    iid = kit.start("agenda", {"id": "a1"})
    assert context(kit.instance(iid)) == {"late": 90 * MINUTE}
    (failed,) = [e.event for e in kit.history(iid) if isinstance(e.event, rt.TaskFailed)]
    assert failed.payload == {"by": 90 * MINUTE, "until": DEC_1}


def test_a_message_kept_with_a_ttl_takes_time_text() -> None:
    engine = Engine([agenda()], {"cal.plan": plan})
    assert engine.publish("booked", "a1", BOOKED, ttl_ms=HOUR) == []  # nobody waits yet
    iid = engine.start("agenda", {"id": "a1"})
    assert context(engine.instance(iid)) == {**PLANNED, "booked": AFTER["booked"],
                                             "slots": AFTER["slots"]}  # fmt: skip


def test_forced_outputs_take_time_text() -> None:
    """An operator finishes a dead-lettered service call, a message wait and a form."""

    def broken(**_: Value) -> None:
        raise TaskError("Broken", "down")

    kit = WorkflowEnv([agenda()], {"cal.plan": broken})
    iid = kit.start("agenda", {"id": "a1"})
    assert kit.status(iid) == "dead_lettered"
    kit.force_complete(iid, "plan", PLAN)
    assert context(kit.instance(iid)) == PLANNED
    kit.force_complete(iid, "book", BOOKED)
    kit.signal(iid, "moved", MOVED)
    kit.force_complete(iid, "decide", FORM)
    assert context(kit.instance(iid)) == {**PLANNED, **AFTER}
    forced = [e.event for e in kit.history(iid) if isinstance(e.event, rt.CompleteStep)]
    assert [f.output for f in forced] == [
        {"due": DEC_1, "span": 10 * MINUTE, "slot": {"at": DEC_1}},  # defaults: the step's
        {"at": AFTER["booked"], "slots": [{"at": DEC_1, "length": 25 * HOUR}, {"at": DEC_1}]},
        {"at": DEC_1 - HOUR},
    ]
    assert kit.replay(iid).reproduces(kit.instance(iid))


#: Each entry point given bad text (``{bad}``) in a time field, and the field's path.
ENTRY_POINTS: dict[str, tuple[Callable[[WorkflowEnv, str, str], object], str]] = {
    "forced output": (
        lambda kit, iid, bad: kit.force_complete(iid, "plan", {**PLAN, "span": bad}),
        "span",
    ),
    "published message": (
        lambda kit, iid, bad: kit.publish(
            "booked", "a1", {"at": DEC_1, "slots": [{"at": DEC_1}, {"at": bad}]}
        ),
        "slots[1].at",
    ),
    "message": (lambda kit, iid, bad: kit.message(iid, "booked", {"at": bad}), "at"),
}


@pytest.mark.parametrize("bad", BAD)
@pytest.mark.parametrize("entry", sorted(ENTRY_POINTS))
def test_text_that_is_no_time_is_refused_with_its_path_and_nothing_is_sent(
    entry: str, bad: str
) -> None:
    kit = WorkflowEnv([agenda()], {"cal.plan": [delay()]})
    iid = kit.start("agenda", {"id": "a1"})
    if entry != "forced output":  # else at the delayed call
        (key,) = kit.open_tasks(iid)
        kit.complete(key, PLAN)
    before, history = kit.instance(iid), len(kit.history(iid))
    act, path = ENTRY_POINTS[entry]
    with pytest.raises(
        ValueError, match=rf"'{re.escape(path)}' must be (timestamp|duration) \("
    ) as refused:
        act(kit, iid, bad)
    assert str(refused.value).endswith(f"), not {bad!r}")  # the text itself, said back
    assert kit.instance(iid) == before and len(kit.history(iid)) == history


@pytest.mark.parametrize("bad", BAD)
def test_a_result_with_text_that_is_no_time_is_an_invalid_result_naming_its_path(
    bad: str,
) -> None:
    """A handler's result is not refused to anyone: it fails the attempt (a handler bug)."""
    kit = WorkflowEnv([agenda()], {"cal.plan": succeed({**PLAN, "slot": {"at": bad}})})
    iid = kit.start("agenda", {"id": "a1"})
    (failed,) = [e.event for e in kit.history(iid) if isinstance(e.event, rt.TaskFailed)]
    assert failed.error == "InvalidResult"
    assert failed.message.startswith("'slot.at' must be timestamp (epoch milliseconds or ISO")
    assert context(kit.instance(iid)) == {}


@pytest.mark.parametrize("slot_at", ["2026-12-01T11:00:00+01:00", *BAD])
def test_wf_run_takes_time_text_in_the_input_and_a_handlers_result(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    slot_at: str,
) -> None:
    (tmp_path / "agenda.wf").write_text(AGENDA)
    result = {**PLAN, "slot": {"at": slot_at}}
    (tmp_path / "wf_run_time_handlers.py").write_text(
        "from wflang.runtime.engine import handler\n\n"
        f'@handler("cal.plan")\ndef plan(id):\n    return {result!r}\n'
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("wf_run_time_handlers", None)
    try:
        code = main(["run", str(tmp_path / "agenda.wf"), "--handlers", "wf_run_time_handlers",
                     "--input", '{"id": "a1", "since": "2026-12-01T10:00:00Z"}'])  # fmt: skip
    finally:
        sys.modules.pop("wf_run_time_handlers", None)
    out = capsys.readouterr().out
    if slot_at in BAD:
        assert code == 1 and "status: dead_lettered" in out
        assert "InvalidResult 'slot.at' must be timestamp (epoch milliseconds or ISO" in out
    else:
        assert code == 0 and "status: waiting" in out and "InvalidResult" not in out
        assert "message:booked:a1" in out  # past the service call, waiting for the message
