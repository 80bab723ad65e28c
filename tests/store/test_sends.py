"""Send tasks on both stores (issue 15 item 3): the signal and the message a send task
sends are delivered in the transaction of its step (its key makes the delivery happen
once), each send is an outbox row naming whom it reached, and the store ends where the
engine ends (a differential run of the same scenario)."""

from __future__ import annotations

from pathlib import Path

from wflang.runtime import instance as rt
from wflang.runtime.ir import Value
from wflang.store import Store
from wflang.testing import WorkflowEnv, succeed

from .kit import Durable, VirtualClock, compile_text, ok, replays_exactly, seq_problems

DATA = Path(__file__).resolve().parents[1] / "data" / "sends"
SHOP = compile_text((DATA / "shop.wf").read_text())
WAREHOUSE = compile_text((DATA / "warehouse.wf").read_text())
SETTLE = compile_text((DATA.parent / "settle.wf").read_text())
BOOK = {"carrier.book": ok({"carrier": "dhl"})}


def durable(store: Store, clock: VirtualClock) -> Durable:
    return Durable(store, clock, BOOK, SHOP, WAREHOUSE, SETTLE)


def sent(store: Store) -> list[tuple[str, str, str, str, list[str]]]:
    return [
        (e.instance_id, e.kind, str(e.payload["name"]), str(e.payload["to"]),
         list(e.payload["reached"]))  # type: ignore[arg-type]
        for e in store.outbox(limit=100)
        if e.kind.endswith(".sent")
    ]  # fmt: skip


def test_a_send_reaches_its_instance_and_its_waiters_in_the_step(
    store: Store, clock: VirtualClock
) -> None:
    d = durable(store, clock)
    d.start("shop", {"order_id": "o-1"}, "shop-1")
    d.start("shop", {"order_id": "o-2"}, "shop-2")
    d.start("warehouse", {"order_id": "o-1", "shop": "shop-1", "boxes": 3}, "wh-1")

    assert d.status("wh-1") == "completed"
    assert d.status("shop-1") == "completed"
    assert d.instance("shop-1").output == {"boxes": 3, "carrier": "dhl"}
    assert d.status("shop-2") == "waiting"
    assert sent(store) == [
        ("wh-1", "signal.sent", "packed", "shop-1", ["shop-1"]),
        ("wh-1", "message.sent", "shipped", "o-1", ["shop-1"]),
    ]
    for iid in ("wh-1", "shop-1", "shop-2"):
        assert not seq_problems(store, iid)
        replays_exactly(store, iid)


def test_a_send_nobody_takes_is_an_outbox_row_that_reached_nobody(
    store: Store, clock: VirtualClock
) -> None:
    d = durable(store, clock)
    d.start("settle", {"order_id": "o-2"}, "settle-1")  # declares no 'packed'
    d.start("warehouse", {"order_id": "o-9", "shop": "settle-1"}, "wh-1")
    d.start("warehouse", {"order_id": "o-9", "shop": "nobody"}, "wh-2")
    assert d.status("wh-1") == d.status("wh-2") == "completed"
    assert len(store.history("settle-1")) == 1
    assert [(iid, to, reached) for iid, _, _, to, reached in sent(store)] == [
        ("wh-1", "settle-1", []),
        ("wh-1", "o-9", []),
        ("wh-2", "nobody", []),
        ("wh-2", "o-9", []),
    ]


def test_the_store_ends_where_the_engine_ends(store: Store, clock: VirtualClock) -> None:
    d = durable(store, clock)
    env = WorkflowEnv([SHOP, WAREHOUSE], {"carrier.book": succeed({"carrier": "dhl"})})
    # (workflow, input, the shop it signals: the n-th instance started)
    script: list[tuple[str, dict[str, Value], int | None]] = [
        ("shop", {"order_id": "o-1"}, None),
        ("shop", {"order_id": "o-1"}, None),  # two waiters for one correlation
        ("warehouse", {"order_id": "o-1", "boxes": 4}, 0),
        ("warehouse", {"order_id": "o-1", "boxes": 5}, 1),  # o-1 again: nobody waits now
    ]
    ids: list[str] = []
    kit_ids: list[str] = []
    for n, (workflow, given, shop) in enumerate(script):
        ours = given if shop is None else {**given, "shop": ids[shop]}
        kits = given if shop is None else {**given, "shop": kit_ids[shop]}
        ids.append(d.start(workflow, ours, f"i-{n}"))
        kit_ids.append(env.start(workflow, kits))
    for iid, kid in zip(ids, kit_ids, strict=True):
        got, want = d.instance(iid), env.instance(kid)
        assert (got.status, got.output, got.context) == (want.status, want.output, want.context)
    taken = [
        (r.entry.event.name, r.entry.event.payload)
        for r in store.history("i-1")
        if isinstance(r.entry.event, rt.SignalReceived)
    ]
    assert taken == [("shipped", {"order_id": "o-1", "carrier": "dhl"}), ("packed", {"boxes": 5})]
