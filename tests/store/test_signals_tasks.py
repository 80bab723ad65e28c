"""Signals and human tasks through the durable client, on both stores."""

from __future__ import annotations

import pytest

from wflang.durable.client import InvalidValue
from wflang.runtime import instance as rt
from wflang.store import Store
from wflang.store.records import IllegalAction, UnknownInstance, UnknownTask

from .kit import OPS_HANDLERS, Durable, VirtualClock, opsflow, replays_exactly, snapshot


@pytest.fixture
def d(store: Store, clock: VirtualClock) -> Durable:
    return Durable(store, clock, OPS_HANDLERS, opsflow())


def _at_wait(d: Durable, iid: str = "i-1") -> str:
    d.start("opsflow", {"id": iid, "amount": 2}, iid)
    d.complete("approve", {"ok": True}, iid)
    (token,) = d.instance(iid).tokens
    assert token.waiting == "signal:go"
    return iid


def _signals_taken(d: Durable, iid: str) -> list[rt.SignalReceived]:
    return [
        r.entry.event for r in d.store.history(iid) if isinstance(r.entry.event, rt.SignalReceived)
    ]


# --------------------------------------------------------------------- signals


def test_a_signal_moves_a_waiting_instance(d: Durable) -> None:
    iid = _at_wait(d)
    assert d.signal(iid, "go", {"by": "ada"}) is True
    assert d.status(iid) == "completed"
    assert d.instance(iid).output == {"a": 20, "b": 21, "ok": True, "by": "ada"}
    last = d.store.history(iid)[-1]
    assert isinstance(last.entry.event, rt.SignalReceived)
    assert last.actor == "tester"  # who sent it is recorded
    replays_exactly(d.store, iid)


def test_a_duplicate_key_is_ignored(d: Durable) -> None:
    iid = _at_wait(d)
    assert d.client.signal(iid, "go", {"by": "ada"}, key="k-1") is True
    assert d.client.signal(iid, "go", {"by": "bob"}, key="k-1") is False
    assert d.client.signal(iid, "go", {"by": "eve"}, key="k-1") is False
    assert d.store.stats().pending_events == 1
    d.run()
    taken = _signals_taken(d, iid)
    assert [(s.name, s.payload, s.key) for s in taken] == [("go", {"by": "ada"}, "k-1")]
    assert d.instance(iid).context["by"] == "ada"


def test_an_early_signal_is_buffered_then_taken(d: Durable) -> None:
    iid = d.start("opsflow", {"id": "e"}, "early")
    assert d.signal(iid, "go", {"by": "early-bird"}, key="k") is True
    inst = d.instance(iid)
    assert inst.status is rt.Status.WAITING and len(inst.buffered) == 1
    assert [t.waiting for t in inst.tokens] != ["signal:go"]
    d.complete("approve", {"ok": False}, iid)
    assert d.status(iid) == "completed"
    assert d.instance(iid).output == {"a": 10, "b": 11, "ok": False, "by": "early-bird"}
    assert d.instance(iid).buffered == ()
    assert len(_signals_taken(d, iid)) == 1
    replays_exactly(d.store, iid)


@pytest.mark.parametrize(
    ("name", "payload", "kind", "message"),
    [
        ("go", {"by": 5}, "signal", "the signal 'go' does not fit: 'by' must be string, not int"),
        (
            "go",
            {"by": "a", "when": 1},
            "signal",
            "unknown field 'when' in signal go (fields: by)",
        ),
        ("go", {}, "signal", "missing field 'by' (string) in signal go"),
        ("stop", {}, "signal", "opsflow declares no signal 'stop' (signals: go)"),
        ("go", {"by": "a"}, "message", "opsflow declares no message 'go' (messages: none)"),
    ],
)
def test_a_bad_signal_is_refused_and_nothing_is_written(
    d: Durable, name: str, payload: dict[str, object], kind: str, message: str
) -> None:
    iid = _at_wait(d)
    before = snapshot(d.store, iid)
    with pytest.raises(InvalidValue) as err:
        d.client.signal(iid, name, payload, key="k", kind=kind)  # type: ignore[arg-type]  # the bad input under test
    assert message in str(err.value)
    d.run()
    assert snapshot(d.store, iid) == before
    # the key was not used up: the same key with a good payload is taken
    assert d.signal(iid, "go", {"by": "ada"}, key="k") is True
    assert d.status(iid) == "completed"


def test_a_signal_to_an_unknown_instance(d: Durable) -> None:
    with pytest.raises(UnknownInstance, match="no instance 'ghost'"):
        d.client.signal("ghost", "go", {"by": "a"})
    assert d.store.stats().pending_events == 0


def test_a_signal_to_a_finished_instance_is_illegal(d: Durable) -> None:
    iid = _at_wait(d)
    d.signal(iid, "go", {"by": "ada"})
    before = snapshot(d.store, iid)
    with pytest.raises(IllegalAction, match="instance 'i-1' is completed: it cannot take"):
        d.client.signal(iid, "go", {"by": "bob"})
    assert snapshot(d.store, iid) == before


# ----------------------------------------------------------------- human tasks


def test_open_human_tasks_are_listed(d: Durable) -> None:
    d.start("opsflow", {"id": "a"}, "t-1")
    d.start("opsflow", {"id": "b"}, "t-2")
    tasks = d.client.open_tasks()
    assert [(t.instance_id, t.node, t.kind, t.status) for t in tasks] == [
        ("t-1", "approve", "human", "open"),
        ("t-2", "approve", "human", "open"),
    ]
    assert tasks[0].assignee == "ops" and tasks[0].form == ("ok",)
    assert [t.instance_id for t in d.client.open_tasks("t-2")] == ["t-2"]
    assert d.store.stats().open_human_tasks == 2


def test_a_human_task_completed_with_a_valid_output(d: Durable) -> None:
    d.start("opsflow", {"id": "a"}, "t-1")
    key = d.task("approve")
    done = d.client.complete_task(key, {"ok": True})
    assert done.status == "done"
    d.run()
    assert d.client.open_tasks() == []
    assert d.instance("t-1").context["ok"] is True
    assert d.instance("t-1").tokens[0].waiting == "signal:go"
    rows = [r for r in d.store.history("t-1") if isinstance(r.entry.event, rt.TaskCompleted)]
    assert rows[-1].entry.event == rt.TaskCompleted(key, {"ok": True})
    assert rows[-1].actor == "tester"


@pytest.mark.parametrize(
    ("output", "problem"),
    [
        ({"ok": "yes"}, "'ok' must be bool, not str"),
        ({"ok": 1}, "'ok' must be bool, not int"),
        ({}, "missing field 'ok' (bool) in output of approve"),
        ({"ok": True, "note": "x"}, "unknown field 'note' in output of approve (fields: ok)"),
    ],
)
def test_a_wrong_output_is_refused(d: Durable, output: dict[str, object], problem: str) -> None:
    d.start("opsflow", {"id": "a"}, "t-1")
    key = d.task("approve")
    before = snapshot(d.store, "t-1")
    with pytest.raises(InvalidValue) as err:
        d.client.complete_task(key, output)  # type: ignore[arg-type]  # the bad input under test
    assert problem in err.value.problems
    assert str(err.value).startswith(f"the output of task '{key}' does not fit")
    d.run()
    assert snapshot(d.store, "t-1") == before
    assert d.store.task(key).status == "open"


def test_completing_a_task_twice_is_refused(d: Durable) -> None:
    d.start("opsflow", {"id": "a"}, "t-1")
    key = d.task("approve")
    d.client.complete_task(key, {"ok": True})
    with pytest.raises(IllegalAction, match=f"task '{key}' is done, not open"):
        d.client.complete_task(key, {"ok": False})
    d.run()
    assert d.instance("t-1").context["ok"] is True
    before = snapshot(d.store, "t-1")
    with pytest.raises(IllegalAction, match="is done, not open"):
        d.client.complete_task(key, {"ok": False})
    assert snapshot(d.store, "t-1") == before


def test_an_unknown_task_key_is_refused(d: Durable) -> None:
    d.start("opsflow", {"id": "a"}, "t-1")
    before = snapshot(d.store, "t-1")
    with pytest.raises(UnknownTask, match="no task 'nope'"):
        d.client.complete_task("nope", {"ok": True})
    assert snapshot(d.store, "t-1") == before


def test_a_service_call_is_not_completed_by_hand(store: Store, clock: VirtualClock) -> None:
    d = Durable(store, clock, {"svc.a": OPS_HANDLERS["svc.a"]}, opsflow())  # no svc.b worker
    d.start("opsflow", {"id": "a"}, "t-1")
    (task,) = store.tasks(instance_id="t-1", status="ready")
    assert task.node == "b"
    with pytest.raises(IllegalAction, match="is a service call; only human tasks"):
        d.client.complete_task(task.key, {"b": 1})
    assert store.task(task.key).status == "ready"
