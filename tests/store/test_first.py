"""The event-based choice on both stores (issue 15 item 1): ``first`` waits on a token
per arm (a signal, a message subscription by correlation, a timer row), is listed by
``waiting_on`` under each arm, and the step that takes the winning event removes the
other arms' timer and subscription rows in its own transaction. Two arms' events in the
inbox back to back are two steps: the first wins, the second is buffered. The store ends
where the engine ends on the same script (a differential run)."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

from wflang.runtime import instance as rt
from wflang.runtime.ir import Value
from wflang.runtime.waiting import waiting_on
from wflang.store import Store
from wflang.store.rows import scalar
from wflang.testing import WorkflowEnv

from .kit import DAY, HOUR, T0, Durable, VirtualClock, compile_text, replays_exactly, seq_problems

APPROVAL = compile_text(
    (Path(__file__).resolve().parents[1] / "data" / "first" / "approval.wf").read_text()
)


def rows(store: Store, table: str, iid: str) -> int:
    with store.backend.transaction() as tx:
        return scalar(tx.query(f"SELECT count(*) FROM {table} WHERE instance_id = ?", (iid,)))


def test_each_arm_waits_and_is_listed(store: Store, clock: VirtualClock) -> None:
    d = Durable(store, clock, {}, APPROVAL)
    d.start("approval", {"order_id": "o-1"}, "a-1")
    info = store.instance("a-1")
    assert info.status == "waiting"
    assert info.waiting_on == ("message:paid", "signal:approve", "signal:reject", "timer")
    for label in info.waiting_on:
        assert [i.id for i in store.instances(waiting_on=label)] == ["a-1"]
    assert rows(store, "wf_subscription", "a-1") == 1
    assert rows(store, "wf_timer", "a-1") == 1


def test_a_signal_wins_and_the_other_arms_go_in_its_transaction(
    store: Store, clock: VirtualClock
) -> None:
    d = Durable(store, clock, {}, APPROVAL)
    d.start("approval", {"order_id": "o-1"}, "a-1")
    d.signal("a-1", "approve", {"by": "ann"})
    assert rows(store, "wf_subscription", "a-1") == 0
    timers = [t.purpose for t in d.instance("a-1").timers]
    assert timers == ["sleep"] and rows(store, "wf_timer", "a-1") == 1  # the 2d one is gone
    assert store.instance("a-1").waiting_on == ("timer",)
    assert d.client.publish("paid", "o-1", {"amount": Decimal(1)}).delivered == ()
    d.advance(HOUR)
    assert d.status("a-1") == "completed"
    assert d.instance("a-1").output == {
        "approver": "ann", "paid": Decimal("0.0"), "route": "approved",
    }  # fmt: skip
    assert not seq_problems(store, "a-1")
    replays_exactly(store, "a-1")


def test_a_message_or_the_timer_wins(store: Store, clock: VirtualClock) -> None:
    d = Durable(store, clock, {}, APPROVAL)
    d.start("approval", {"order_id": "o-1"}, "a-1")
    d.start("approval", {"order_id": "o-2"}, "a-2")
    assert d.client.publish("paid", "o-1", {"amount": Decimal("9.90")}).delivered == ("a-1",)
    d.run()
    d.advance(2 * DAY)
    assert d.instance("a-1").output == {"approver": "", "paid": Decimal("9.90"), "route": "paid"}
    assert store.instance("a-2").waiting_on == ("signal:approve",)  # at 'again'
    assert rows(store, "wf_subscription", "a-2") == 0
    d.advance(HOUR)
    assert d.instance("a-2").output == {"approver": "", "paid": Decimal("0.0"), "route": ""}
    for iid in ("a-1", "a-2"):
        replays_exactly(store, iid)


def test_two_arms_events_back_to_back(store: Store, clock: VirtualClock) -> None:
    d = Durable(store, clock, {}, APPROVAL)
    d.start("approval", {"order_id": "o-1"}, "a-1")
    # Both in the inbox before the worker steps the instance.
    assert d.client.signal("a-1", "reject", {})
    assert d.client.signal("a-1", "approve", {"by": "ann"})
    d.run()
    inst = d.instance("a-1")
    assert d.status("a-1") == "failed"  # 'reject' came first
    assert inst.timers == () and rows(store, "wf_timer", "a-1") == 0
    taken = [
        r.entry.event.name
        for r in store.history("a-1")
        if isinstance(r.entry.event, rt.SignalReceived)
    ]
    assert taken == ["reject", "approve"]  # the second, a step of its own, found no arm
    replays_exactly(store, "a-1")


#: (what, its name or the time to advance by, its payload)
Action = tuple[str, str | int, dict[str, Value]]


@pytest.mark.parametrize(
    "script",
    [
        [("signal", "approve", {"by": "ann"}), ("advance", HOUR, {})],
        [("signal", "approve", {"by": "ann"}), ("signal", "reject", {}), ("advance", HOUR, {})],
        [("publish", "paid", {"amount": Decimal("3")}), ("signal", "approve", {"by": "x"})],
        [("advance", 2 * DAY, {}), ("signal", "approve", {"by": "late"})],
        [("advance", 2 * DAY + HOUR, {})],
        [("signal", "reject", {}), ("publish", "paid", {"amount": Decimal("1")})],
    ],
    ids=["approve", "approve-then-reject", "paid", "timer-then-late", "timer-twice", "reject"],
)
def test_the_store_ends_where_the_engine_ends(
    store: Store, clock: VirtualClock, script: list[Action]
) -> None:
    d = Durable(store, clock, {}, APPROVAL)
    env = WorkflowEnv([APPROVAL], now=T0)
    d.start("approval", {"order_id": "o-1"}, "a-1")
    kid = env.start("approval", {"order_id": "o-1"})
    for action, what, payload in script:
        if action == "signal":
            assert isinstance(what, str)
            d.signal("a-1", what, payload)
            env.signal(kid, what, payload)
        elif action == "publish":
            assert isinstance(what, str)
            d.client.publish(what, "o-1", payload)
            d.run()
            env.publish(what, "o-1", payload)
        else:
            assert isinstance(what, int)
            d.advance(what)
            env.advance(ms=what)
    got, want = d.instance("a-1"), env.instance(kid)
    assert (got.status, got.output, got.context) == (want.status, want.output, want.context)
    assert [(b.kind, b.name) for b in got.buffered] == [(b.kind, b.name) for b in want.buffered]
    assert waiting_on(got.tokens) == waiting_on(want.tokens)
    assert [t.purpose for t in got.timers] == [t.purpose for t in want.timers]
    assert not seq_problems(store, "a-1")
    replays_exactly(store, "a-1")


DEADLINE = compile_text(
    (Path(__file__).resolve().parents[1] / "data" / "first" / "deadline.wf").read_text()
)


@pytest.mark.parametrize(
    ("expires_in", "script"),
    [
        (3 * HOUR, [("advance", 3 * HOUR, {})]),  # the deadline wins
        (2 * DAY, [("advance", DAY, {})]),  # the delay wins
        (-HOUR, [("advance", 0, {})]),  # a deadline already past fires at once
        (HOUR, [("signal", "pay", {}), ("advance", DAY, {})]),  # the signal wins
    ],
    ids=["deadline", "delay", "past", "signal"],
)
def test_an_until_arm_ends_where_the_engine_ends(
    store: Store, clock: VirtualClock, expires_in: int, script: list[Action]
) -> None:
    """A delay and a deadline race in one ``first``: the earlier timer row fires, and
    the step that takes it deletes the other arm's row in its transaction."""
    d = Durable(store, clock, {}, DEADLINE)
    env = WorkflowEnv([DEADLINE], now=T0)
    given: dict[str, Value] = {"order_id": "o-1", "expires_at": T0 + expires_in}
    d.start("deadline", given, "d-1")
    kid = env.start("deadline", given)
    if expires_in > 0:  # (a deadline past is due at once: the worker fires it already)
        assert rows(store, "wf_timer", "d-1") == 2
        assert sorted((t.purpose, t.due) for t in d.instance("d-1").timers) == sorted(
            (t.purpose, t.due) for t in env.instance(kid).timers
        )
    for action, what, payload in script:
        if action == "signal":
            assert isinstance(what, str)
            d.signal("d-1", what, payload)
            env.signal(kid, what, payload)
        else:
            assert isinstance(what, int)
            d.advance(what)
            env.advance(ms=what)
    got, want = d.instance("d-1"), env.instance(kid)
    assert (got.status, got.output) == (want.status, want.output)
    assert got.status.finished and rows(store, "wf_timer", "d-1") == 0
    assert not seq_problems(store, "d-1")
    replays_exactly(store, "d-1")
