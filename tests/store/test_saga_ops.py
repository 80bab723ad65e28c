"""A saga on both stores (issue 12 items 6 and 7): a compensation that fails for good
dead-letters the instance with the rest waiting, ops retry, force-complete or skip it
(who and why in the history), then the remaining compensations run in order; a call
whose outcome is unknown (timed out) is compensated, a business error is not; and the
outbox says the instance was dead-lettered, then that it finished, once."""

from __future__ import annotations

import pytest

from wflang.durable.client import InvalidValue
from wflang.runtime import instance as rt
from wflang.runtime.engine import Handler, TaskError
from wflang.runtime.ir import Value
from wflang.store import Store
from wflang.store.records import IllegalAction

from .kit import (
    MINUTE,
    SECOND,
    Durable,
    VirtualClock,
    data_table,
    ok,
    replays_exactly,
    snapshot,
)

UNDO = ["fx.undo_c", "fx.undo_b", "fx.undo_a"]


class Fixable:
    """fx.undo_b: fails (Gone, transiently) until fixed."""

    def __init__(self) -> None:
        self.fixed = False

    def __call__(self, **_: Value) -> dict[str, Value]:
        if not self.fixed:
            raise TaskError("Gone", "the charge is gone", transient=True)
        return {"note": "retried"}


def rejected(**_: Value) -> None:
    raise TaskError("Rejected", "no")


def handlers(**overrides: Handler) -> dict[str, Handler]:
    base: dict[str, Handler] = {
        "fx.a": ok({"a": "a-1"}),
        "fx.b": ok({"b": "b-1"}),
        "fx.c": rejected,
        "fx.undo_a": ok(),
        "fx.undo_b": ok({"note": "b undone"}),
        "fx.undo_c": ok(),
    }
    base.update({k.replace("__", "."): v for k, v in overrides.items()})
    return base


def undone(d: Durable) -> list[str]:
    return [s for s in d.recorder.services() if s.startswith("fx.undo")]


def dead_in_undo_b(store: Store, clock: VirtualClock) -> tuple[Durable, str, Fixable]:
    undo_b = Fixable()
    d = Durable(store, clock, handlers(fx__undo_b=undo_b), data_table("saga_ops"))
    iid = d.start("saga_ops", {"id": "x"}, "saga-1")
    d.advance(SECOND)  # undo_b's second and last attempt
    assert d.status(iid) == "dead_lettered"
    return d, iid, undo_b


#: The outbox events of an instance's end.
ENDS = ("instance.finished", "instance.dead_lettered")


def outbox(store: Store, iid: str) -> list[tuple[str, object]]:
    """The instance's end events (its status changes left out)."""
    ends = store.outbox(kinds=ENDS)
    return [(e.kind, e.payload["status"]) for e in ends if e.instance_id == iid]


def test_a_failed_compensation_dead_letters_with_the_rest_waiting(
    store: Store, clock: VirtualClock
) -> None:
    d, iid, _ = dead_in_undo_b(store, clock)
    assert undone(d) == ["fx.undo_b", "fx.undo_b"]  # undo_a has not run: never swallowed
    (dead,) = d.client.dead_letters()
    assert dead.id == iid and dead.instance is not None
    assert dead.instance.error == "compensation 'undo_b' failed: Gone the charge is gone"
    assert d.client.history_document(iid)["failed"] == "undo_b"
    assert outbox(store, iid) == [("instance.dead_lettered", "dead_lettered")]


@pytest.mark.parametrize("action", ["retry", "replay", "force-complete", "skip"])
def test_ops_settle_the_failed_compensation_then_the_rest_run(
    store: Store, clock: VirtualClock, action: str
) -> None:
    d, iid, undo_b = dead_in_undo_b(store, clock)
    undo_b.fixed = True
    if action == "retry":
        d.client.retry(iid, reason="the ledger is back")
    elif action == "replay":  # from the failed compensation: its retry
        d.client.replay_from(iid, "undo_b", reason="the ledger is back")
    elif action == "force-complete":
        d.client.force_complete(iid, "undo_b", {"note": "by hand"}, reason="refunded by hand")
    else:
        d.client.skip_compensation(iid, "undo_b", reason="refunded by phone")
    d.run()
    inst = d.instance(iid)
    assert inst.status is rt.Status.COMPENSATED
    assert (inst.output, inst.error) == ({"id": "x", "status": "rolled_back"}, "Rejected")
    runs_again = action in ("retry", "replay")
    assert undone(d) == ["fx.undo_b"] * (2 + runs_again) + ["fx.undo_a"]
    assert inst.context["undone"] == {
        "retry": "retried", "replay": "retried", "force-complete": "by hand", "skip": None,
    }[action]  # fmt: skip
    ops = [r for r in store.history(iid) if r.actor is not None and r.entry.event is not None]
    assert [(r.actor, r.reason) for r in ops] == [("tester", ops[0].reason)]
    assert ops[0].reason in ("the ledger is back", "refunded by hand", "refunded by phone")
    if action == "skip":
        assert ops[0].entry.event == rt.SkipCompensation("undo_b", "refunded by phone")
        assert "compensation undo_b skipped by an operator: refunded by phone" in (
            ops[0].entry.decisions
        )
    # Item 7: dead-lettered once, finished once.
    assert outbox(store, iid) == [
        ("instance.dead_lettered", "dead_lettered"),
        ("instance.finished", "compensated"),
    ]
    replays_exactly(store, iid)


def test_refused_ops_on_a_failed_compensation_change_nothing(
    store: Store, clock: VirtualClock
) -> None:
    d, iid, _ = dead_in_undo_b(store, clock)
    before = snapshot(store, iid)
    with pytest.raises(IllegalAction, match=r"needs a reason \(--reason\)"):
        d.client.skip_compensation(iid, "undo_b", reason=" ")
    with pytest.raises(
        IllegalAction, match=r"no compensation waits at 'b' .*\(it waits at undo_b\)"
    ):
        d.client.skip_compensation(iid, "b", reason="why not")
    with pytest.raises(IllegalAction, match="has no step 'zz'"):
        d.client.skip_compensation(iid, "zz", reason="why not")
    with pytest.raises(
        IllegalAction,
        match=r"dead-lettered in its compensation 'undo_b': retry it, force-complete it or "
        r"skip it \(replay only from 'undo_b'\)",
    ):
        d.client.replay_from(iid, "a", reason="start over")
    with pytest.raises(InvalidValue, match="the output of undo_b does not fit"):
        d.client.force_complete(iid, "undo_b", {"note": 5}, reason="x")
    d.run()
    assert snapshot(store, iid) == before


def test_a_skip_is_refused_when_no_saga_runs(store: Store, clock: VirtualClock) -> None:
    d = Durable(store, clock, handlers(fx__c=ok({"c": "c-1"})), data_table("saga_ops"))
    iid = d.start("saga_ops", {"id": "y"}, "saga-2")
    assert d.status(iid) == "completed"
    with pytest.raises(IllegalAction, match="is completed: it runs no compensation to skip"):
        d.client.skip_compensation(iid, "undo_a", reason="nothing to do")


def test_a_timed_out_call_is_compensated_a_business_error_is_not(
    store: Store, clock: VirtualClock
) -> None:
    served = handlers()
    del served["fx.c"]  # nobody answers c: it was dispatched, its outcome stays unknown
    d = Durable(store, clock, served, data_table("saga_ops"))
    iid = d.start("saga_ops", {"id": "t"}, "timed-out")
    d.advance(MINUTE)
    assert d.status(iid) == "compensated"
    assert undone(d) == UNDO
    d2 = Durable(store, clock, handlers(), data_table("saga_ops"))
    iid2 = d2.start("saga_ops", {"id": "r"}, "rejected")
    assert d2.status(iid2) == "compensated"
    assert undone(d2) == ["fx.undo_b", "fx.undo_a"]
    replays_exactly(store, iid)
