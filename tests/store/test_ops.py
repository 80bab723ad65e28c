"""Operator actions on both stores: dead letters, retry, replay, force-complete and
cancel; each refused action changes nothing, each accepted one is in the history
with who asked and why."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping

import pytest

from wflang.durable.client import Client, InvalidValue
from wflang.runtime import instance as rt
from wflang.runtime.engine import Handler, TaskError
from wflang.runtime.ir import Value
from wflang.store import Store
from wflang.store.records import HistoryRow, IllegalAction, UnknownInstance

from .kit import (
    OPS_HANDLERS,
    Durable,
    Factory,
    VirtualClock,
    example,
    ok,
    opsflow,
    replays_exactly,
    seq_problems,
    snapshot,
)


def fail_first(n: int, result: Mapping[str, Value] | None = None) -> Handler:
    """Fails permanently (error Boom) on its first ``n`` calls, then returns ``result``."""
    calls = {"n": 0}

    def fn(**args: Value) -> Mapping[str, Value]:
        calls["n"] += 1
        if calls["n"] <= n:
            raise TaskError("Boom", f"call {calls['n']} failed")
        return dict(result) if result is not None else {"b": int(str(args.get("a", 0))) + 1}

    return fn


def ops_rows(store: Store, iid: str) -> list[HistoryRow]:
    kinds = (rt.RetryFrom, rt.CompleteStep, rt.CancelRequested, rt.ForceComplete)
    return [r for r in store.history(iid) if isinstance(r.entry.event, kinds)]


def dead_at_b(store: Store, clock: VirtualClock) -> tuple[Durable, str]:
    """An opsflow instance dead-lettered at b (svc.b fails once, for good)."""
    d = Durable(store, clock, {**OPS_HANDLERS, "svc.b": fail_first(1)}, opsflow())
    iid = d.start("opsflow", {"id": "x", "amount": 2}, "dl-1")
    assert d.status(iid) == "dead_lettered"
    return d, iid


def test_a_permanent_failure_dead_letters_the_instance(store: Store, clock: VirtualClock) -> None:
    d, iid = dead_at_b(store, clock)
    (dead,) = d.client.dead_letters()
    assert dead.id == iid and dead.workflow == "opsflow"
    assert dead.instance is not None
    assert "Boom" in (dead.instance.error or "")
    assert d.client.dead_letters("other") == []
    doc = d.client.history_document(iid)
    assert doc["status"] == "dead_lettered" and doc["failed"] == "b"


def test_retry_resumes_from_the_failed_step_with_new_keys(
    store: Store, clock: VirtualClock
) -> None:
    d, iid = dead_at_b(store, clock)
    before = len(store.history(iid))
    d.client.retry(iid, reason="svc.b is fixed")
    d.run()
    assert d.status(iid) == "waiting"  # at the human task now
    calls = [(s, args, k) for s, args, _, k in d.recorder.calls]
    assert [s for s, *_ in calls] == ["svc.a", "svc.b", "svc.b"]  # a is not run again
    first_b, second_b = (k for s, _, k in calls if s == "svc.b")
    assert first_b != second_b  # a new idempotency key for the new attempt
    (row,) = ops_rows(store, iid)
    assert row.entry.seq == before + 1
    assert isinstance(row.entry.event, rt.RetryFrom) and row.entry.event.state is None
    assert (row.actor, row.reason) == ("tester", "svc.b is fixed")
    d.complete("approve", {"ok": True}, iid)
    d.signal(iid, "go", {"by": "ada"})
    assert d.instance(iid).output == {"a": 20, "b": 21, "ok": True, "by": "ada"}
    assert seq_problems(store, iid) == []
    replays_exactly(store, iid)


def test_replay_from_a_step_with_changed_input(store: Store, clock: VirtualClock) -> None:
    d, iid = dead_at_b(store, clock)
    d.client.replay_from(iid, "a", input={"amount": 5}, reason="wrong amount")
    d.run()
    assert [(s, args.get("amount")) for s, args, *_ in d.recorder.calls if s == "svc.a"] == [
        ("svc.a", 2),
        ("svc.a", 5),
    ]
    keys = d.recorder.keys("svc.a")
    assert keys[0] != keys[1]
    assert d.instance(iid).context["a"] == 50 and d.instance(iid).context["b"] == 51
    (row,) = ops_rows(store, iid)
    assert row.entry.event == rt.RetryFrom("a", {"amount": 5})
    assert (row.actor, row.reason) == ("tester", "wrong amount")
    replays_exactly(store, iid)


def test_replay_refuses_a_bad_input_and_an_unknown_step(store: Store, clock: VirtualClock) -> None:
    d, iid = dead_at_b(store, clock)
    before = snapshot(store, iid)
    with pytest.raises(InvalidValue, match="'amount' must be int, not str"):
        d.client.replay_from(iid, "a", input={"amount": "five"}, reason=None)
    with pytest.raises(InvalidValue, match="unknown input field 'colour'"):
        d.client.replay_from(iid, "a", input={"colour": "red"}, reason=None)
    with pytest.raises(IllegalAction, match=r"opsflow v1 has no step 'zz' \(steps: a, b, "):
        d.client.replay_from(iid, "zz", reason=None)
    d.run()
    assert snapshot(store, iid) == before


def test_force_complete_a_dead_lettered_step(store: Store, clock: VirtualClock) -> None:
    d, iid = dead_at_b(store, clock)
    before = snapshot(store, iid)
    with pytest.raises(InvalidValue, match="the output of b does not fit: 'b' must be int"):
        d.client.force_complete(iid, "b", {"b": "many"}, reason="x")
    with pytest.raises(InvalidValue, match="missing field 'b'"):
        d.client.force_complete(iid, "b", {}, reason="x")
    with pytest.raises(
        IllegalAction, match=r"nothing waits at 'a' in instance 'dl-1' \(it is at b\)"
    ):
        d.client.force_complete(iid, "a", {"a": 1}, reason="x")
    d.run()
    assert snapshot(store, iid) == before
    d.client.force_complete(iid, "b", {"b": 99}, reason="done by hand")
    d.run()
    inst = d.instance(iid)
    assert inst.status is rt.Status.WAITING and inst.context["b"] == 99
    assert d.recorder.services() == ["svc.a", "svc.b"]  # b was not called again
    (row,) = ops_rows(store, iid)
    assert row.entry.event == rt.CompleteStep("b", {"b": 99})
    assert (row.actor, row.reason) == ("tester", "done by hand")
    replays_exactly(store, iid)


def test_force_complete_a_waiting_step(store: Store, clock: VirtualClock) -> None:
    d = Durable(store, clock, {"svc.a": OPS_HANDLERS["svc.a"]}, opsflow())  # nobody serves b
    iid = d.start("opsflow", {"id": "w"}, "wait-1")
    (task,) = store.tasks(instance_id=iid, status="ready")
    assert task.node == "b"
    with pytest.raises(InvalidValue, match="'b' must be int, not bool"):
        d.client.force_complete(iid, "b", {"b": True}, reason=None)
    d.client.force_complete(iid, "b", {"b": 7}, reason="svc.b is down")
    d.run()
    assert store.task(task.key).status != "ready"  # the call is withdrawn, not left to run
    assert d.instance(iid).context["b"] == 7
    key = d.task("approve", iid)  # a human task can be forced too
    d.client.force_complete(iid, "approve", {"ok": True}, reason="approved on the phone")
    d.run()
    assert d.instance(iid).context["ok"] is True
    assert store.task(key).status != "open"
    # A signal wait too: its output reads the given payload as signal.x.
    with pytest.raises(InvalidValue, match="'by' must be string, not int"):
        d.client.force_complete(iid, "wait_go", {"by": 5}, reason=None)
    d.client.force_complete(iid, "wait_go", {"by": "ops"}, reason="confirmed by mail")
    d.run()
    assert d.status(iid) == "completed" and (d.instance(iid).output or {}).get("by") == "ops"
    assert [(r.entry.event, r.reason) for r in ops_rows(store, iid)] == [
        (rt.CompleteStep("b", {"b": 7}), "svc.b is down"),
        (rt.CompleteStep("approve", {"ok": True}), "approved on the phone"),
        (rt.CompleteStep("wait_go", {"by": "ops"}), "confirmed by mail"),
    ]
    replays_exactly(store, iid)


def test_cancel_without_compensation(store: Store, clock: VirtualClock) -> None:
    d = Durable(store, clock, OPS_HANDLERS, opsflow())
    iid = d.start("opsflow", {"id": "c"}, "c-1")
    key = d.task("approve", iid)
    d.client.cancel(iid, compensate=False, reason="customer left")
    d.run()
    assert d.status(iid) == "cancelled"
    assert store.task(key).status == "cancelled"
    assert d.client.open_tasks() == []
    (row,) = ops_rows(store, iid)
    assert row.entry.event == rt.CancelRequested(False, "customer left")
    assert (row.actor, row.reason) == ("tester", "customer left")


def test_cancel_with_compensation_runs_the_saga_in_reverse(
    store: Store, clock: VirtualClock
) -> None:
    handlers = {
        "inventory.reserve": ok({"reservation_id": "r-1"}),
        "payments.charge": ok({"charge_id": "ch-1", "settled": True}),
        "shipping.create": ok({"shipment_id": "s-1"}),
        "inventory.release": ok(),
        "payments.refund": ok({"refund_id": "rf-1"}),
        "shipping.cancel": ok(),
    }  # notify.send has no handler: the order waits at confirm
    d = Durable(store, clock, handlers, example("order_saga"))
    customer: dict[str, Value] = {"id": "c", "name": "A", "email": "a@x", "tier": "gold"}
    address: dict[str, Value] = {
        "name": "A",
        "line1": "l",
        "city": "c",
        "postcode": "p",
        "country": "NO",
    }
    order: dict[str, Value] = {
        "order_id": "o-1",
        "customer": customer,
        "items": [],
        "subtotal": 10,
        "ship_to": address,
    }
    iid = d.start("order_saga", order, "o-1")
    assert d.status(iid) == "running"
    d.client.cancel(iid, compensate=True, reason="fraud review")
    d.run()
    assert d.status(iid) == "cancelled"
    assert d.recorder.services()[-3:] == ["shipping.cancel", "payments.refund", "inventory.release"]
    (row,) = ops_rows(store, iid)
    assert row.entry.event == rt.CancelRequested(True, "fraud review")
    assert (row.actor, row.reason) == ("tester", "fraud review")
    assert store.tasks(instance_id=iid, status="ready") == []
    replays_exactly(store, iid)


@pytest.mark.parametrize(
    ("action", "error", "message"),
    [
        ("retry", IllegalAction, "instance 'run-1' is waiting; only dead-lettered instances"),
        ("replay", IllegalAction, "instance 'run-1' is waiting; only dead-lettered instances"),
        ("force-unknown-step", IllegalAction, "opsflow v1 has no step 'nope'"),
        ("force-not-waiting", IllegalAction, "nothing waits at 'a' in instance 'run-1'"),
        ("retry-ghost", UnknownInstance, "no instance 'ghost'"),
        ("cancel-ghost", UnknownInstance, "no instance 'ghost'"),
        ("force-ghost", UnknownInstance, "no instance 'ghost'"),
    ],
)
def test_illegal_actions_on_a_running_instance_change_nothing(
    store: Store, clock: VirtualClock, action: str, error: type[Exception], message: str
) -> None:
    d = Durable(store, clock, OPS_HANDLERS, opsflow())
    iid = d.start("opsflow", {"id": "r"}, "run-1")
    before = snapshot(store, iid)
    c = d.client
    with pytest.raises(error) as err:
        if action == "retry":
            c.retry(iid, reason="r")
        elif action == "replay":
            c.replay_from(iid, "a", reason="r")
        elif action == "force-unknown-step":
            c.force_complete(iid, "nope", {}, reason="r")
        elif action == "force-not-waiting":
            c.force_complete(iid, "a", {"a": 1}, reason="r")
        elif action == "retry-ghost":
            c.retry("ghost", reason="r")
        elif action == "cancel-ghost":
            c.cancel("ghost", compensate=False, reason="r")
        else:
            c.force_complete("ghost", "a", {"a": 1}, reason="r")
    assert message in str(err.value)
    d.run()
    assert snapshot(store, iid) == before
    assert ops_rows(store, iid) == []


@pytest.mark.parametrize("action", ["cancel", "retry", "force", "replay"])
def test_actions_on_a_completed_instance_are_refused(
    store: Store, clock: VirtualClock, action: str
) -> None:
    d = Durable(store, clock, OPS_HANDLERS, opsflow())
    iid = d.start("opsflow", {"id": "f"}, "fin-1")
    d.complete("approve", {"ok": True}, iid)
    d.signal(iid, "go", {"by": "a"})
    assert d.status(iid) == "completed"
    before = snapshot(store, iid)
    with pytest.raises(IllegalAction, match="instance 'fin-1' is completed"):
        if action == "cancel":
            d.client.cancel(iid, compensate=True, reason="late")
        elif action == "retry":
            d.client.retry(iid, reason="late")
        elif action == "replay":
            d.client.replay_from(iid, "a", reason="late")
        else:
            d.client.force_complete(iid, "b", {"b": 1}, reason="late")
    d.run()
    assert snapshot(store, iid) == before


def test_the_retry_refusal_is_spelled_right(store: Store, clock: VirtualClock) -> None:
    d = Durable(store, clock, OPS_HANDLERS, opsflow())
    iid = d.start("opsflow", {"id": "r"}, "run-1")
    with pytest.raises(IllegalAction) as err:
        d.client.retry(iid, reason=None)
    assert "only dead-lettered instances can be retried" in str(err.value)


def test_cancel_a_pending_instance(store: Store, clock: VirtualClock) -> None:
    """Cancelled before any worker took it: it starts and is cancelled in one go."""
    d = Durable(store, clock, OPS_HANDLERS, opsflow())
    d.client.start("opsflow", {"id": "p"}, instance_id="p-1")
    assert store.instance("p-1").status == "pending"
    d.client.cancel("p-1", compensate=False, reason="typo")
    d.run()
    assert d.status("p-1") == "cancelled"
    assert d.recorder.calls == []  # svc.a never ran
    (row,) = ops_rows(store, "p-1")
    assert (row.actor, row.reason) == ("tester", "typo")


def test_an_operator_can_give_up_on_a_dead_lettered_instance(
    store: Store, clock: VirtualClock
) -> None:
    d, iid = dead_at_b(store, clock)
    d.client.cancel(iid, compensate=True, reason="the customer withdrew")
    d.run()
    assert d.status(iid) in ("cancelled", "compensated")
    (row,) = [r for r in ops_rows(store, iid) if isinstance(r.entry.event, rt.CancelRequested)]
    assert row.reason == "the customer withdrew" and row.actor
    assert not seq_problems(store, iid)
    with pytest.raises(IllegalAction, match="cannot be cancelled"):
        d.client.cancel(iid, compensate=False, reason=None)


def _race(store: Store, iid: str) -> list[str]:
    """Two operators act on ``iid`` at the same moment; what each was told."""
    barrier = threading.Barrier(2)
    outcomes: list[str] = []

    def act(action: Callable[[], None]) -> None:
        barrier.wait()
        try:
            action()
            outcomes.append("ok")
        except IllegalAction as err:
            outcomes.append(str(err))

    ann, bob = Client(store, actor="ann"), Client(store, actor="bob")
    threads = [
        threading.Thread(target=act, args=(lambda: ann.cancel(iid, compensate=False, reason="a"),)),
        threading.Thread(target=act, args=(lambda: bob.force_complete(iid, "b", {"b": 1}, reason="b"),)),
    ]  # fmt: skip
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return outcomes


def test_two_ops_actions_at_once_one_is_refused(opener: Factory, clock: VirtualClock) -> None:
    """The check for a pending action and the delivery share a transaction that locks the
    instance: of two operators acting at the same moment, exactly one gets through."""
    store = opener()
    store.migrate()
    d = Durable(store, clock, {"svc.a": OPS_HANDLERS["svc.a"]}, opsflow())  # b never runs
    for round_ in range(5):
        iid = d.start("opsflow", {"id": f"r{round_}"}, f"race-{round_}")
        outcomes = _race(store, iid)
        assert outcomes.count("ok") == 1, outcomes
        assert "waiting for a worker" in next(o for o in outcomes if o != "ok")
