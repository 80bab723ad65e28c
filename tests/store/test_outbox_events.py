"""The outbox on both stores (issue 12 item 7): an instance finishes once; a dead
letter, which ops may retry, is an event of its own (and not counted as finished)."""

from __future__ import annotations

from wflang.runtime.engine import TaskError
from wflang.runtime.ir import Value
from wflang.store import Store

from .kit import OPS_HANDLERS, Durable, VirtualClock, opsflow

#: The outbox events of an instance's end.
ENDS = ("instance.finished", "instance.dead_lettered")


def outbox(store: Store, iid: str) -> list[tuple[str, object]]:
    """The instance's end events (its status changes left out)."""
    ends = store.outbox(kinds=ENDS)
    return [(e.kind, e.payload["status"]) for e in ends if e.instance_id == iid]


def test_a_dead_letter_is_its_own_outbox_event_and_an_instance_finishes_once(
    store: Store, clock: VirtualClock
) -> None:
    calls = {"b": 0}

    def b_fails_once(a: int, **_: Value) -> dict[str, Value]:
        calls["b"] += 1
        if calls["b"] == 1:
            raise TaskError("Boom", "not yet")
        return {"b": a + 1}

    d = Durable(store, clock, {**OPS_HANDLERS, "svc.b": b_fails_once}, opsflow())
    iid = d.start("opsflow", {"id": "o"}, "once-1")
    assert outbox(store, iid) == [("instance.dead_lettered", "dead_lettered")]
    (event,) = store.outbox(kinds=ENDS)
    assert event.payload["error"] == "b: Boom not yet"
    d.client.retry(iid, reason="fixed")
    d.run()
    d.complete("approve", {"ok": True}, iid)
    d.signal(iid, "go", {"by": "ada"})
    assert d.status(iid) == "completed"
    assert d.worker.counters.finished == 1  # wf_instances_finished: the dead letter is no end
    assert outbox(store, iid) == [
        ("instance.dead_lettered", "dead_lettered"),
        ("instance.finished", "completed"),
    ]
