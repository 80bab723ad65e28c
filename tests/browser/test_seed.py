"""The seeded store is what the browser tests expect, on both stores."""

from __future__ import annotations

from wflang.store import Store

from ..store.kit import VirtualClock
from .seed import DEAD, HOSTILE, HOSTILE_ID, INVOICES, seed


def test_the_seed_holds_each_case(store: Store, clock: VirtualClock) -> None:
    d = seed(store, clock)
    status = {i.id: i.status for i in store.instances(limit=1000)}
    assert status["order-1"] == "completed"
    assert {status[i] for i in INVOICES} == {"waiting"}
    assert status["loan-1"] == "waiting"
    assert [t.node for t in d.client.open_tasks("loan-1")] == ["underwrite"]
    assert {status[i] for i in DEAD} == {"dead_lettered"}
    assert status[HOSTILE_ID] == "completed"
    info = store.instance(HOSTILE_ID)
    assert info.instance is not None and info.instance.output is not None
    assert info.instance.output["approved_by"] == HOSTILE
    children = [i for i in store.instances(limit=1000) if i.parent_id == "loan-1"]
    assert [c.status for c in children] == ["completed"]
    assert [v.version for v in store.versions("order_saga")] == [3, 4]
