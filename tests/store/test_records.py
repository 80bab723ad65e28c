"""What each step changed, on both stores (issue 15, item 6): the history rows hold the
changes the step function computed, the same as the engine's (values of the same types:
exact decimals, timestamps as milliseconds), and an instance that waits for the world
is stored ``waiting``."""

from __future__ import annotations

from decimal import Decimal

from wflang.runtime.ir import Value
from wflang.runtime.values import identical
from wflang.store import Store
from wflang.testing import WorkflowEnv

from .kit import DAY, Durable, VirtualClock, example, ok, replays_exactly

INPUT: dict[str, Value] = {"invoice_id": "i-1", "amount": Decimal("100.50")}
APPROVAL = {"by": "ada", "at": "2026-12-01T10:00:00Z"}


def tax(amount: Decimal) -> dict[str, Decimal]:
    return {"total": amount * Decimal("1.20")}


def test_the_stores_record_the_changes_the_engine_records(
    store: Store, clock: VirtualClock
) -> None:
    table = example("invoice_approval")
    env = WorkflowEnv([table], {"tax.add": tax}, now=clock())
    iid = env.start("invoice_approval", INPUT, instance_id="i-1")
    d = Durable(store, clock, {"tax.add": tax}, table)
    d.start("invoice_approval", INPUT, "i-1")
    assert (d.status(iid), env.status(iid)) == ("waiting", "waiting")
    env.signal(iid, "approval", APPROVAL)
    d.signal(iid, "approval", APPROVAL)
    assert d.status(iid) == env.status(iid) == "completed"
    stored = [row.entry.changes for row in store.history(iid)]
    assert stored == [e.changes for e in env.history(iid)]
    assert identical(stored, [e.changes for e in env.history(iid)])  # types too
    assert stored[1][0].value == Decimal("120.6000")
    replays_exactly(store, iid)


def test_a_waiting_instance_is_listed_as_waiting_until_its_timeout(
    store: Store, clock: VirtualClock
) -> None:
    table = example("invoice_approval")
    d = Durable(store, clock, {"tax.add": ok({"total": 1})}, table)
    d.start("invoice_approval", INPUT, "i-2")
    assert d.status("i-2") == "waiting"
    assert [i.id for i in store.instances(status="waiting")] == ["i-2"]
    assert store.instances(status="running") == []
    clock.advance(7 * DAY)
    d.run()
    assert d.status("i-2") == "failed"
    # the step that changed nothing in the context records nothing
    assert [row.entry.changes for row in store.history("i-2")][-1] == ()
