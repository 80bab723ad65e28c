"""Retention on both stores: ``purge`` deletes instances that ended before a cut-off with
every row they left, and nothing anyone may still need."""

from __future__ import annotations

import pytest

from wflang.durable.client import Client
from wflang.store import Store
from wflang.store.records import UnknownInstance, UnknownWorkflow

from .kit import DAY, OPS_HANDLERS, Durable, VirtualClock, data_table, fails, ok, opsflow

TABLES = ("wf_history", "wf_task", "wf_inbox", "wf_timer", "wf_outbox", "wf_instance")


#: The outbox events of an instance's end.
ENDS = ("instance.finished", "instance.dead_lettered")


def rows(store: Store, iid: str) -> dict[str, int]:
    """How many rows each table holds for this instance."""
    with store.backend.read() as tx:
        out = {
            t: int(str(tx.query(f"SELECT count(*) FROM {t} WHERE instance_id = ?", (iid,))[0][0]))
            for t in TABLES[:-1]
        }
        out["wf_instance"] = int(
            str(tx.query("SELECT count(*) FROM wf_instance WHERE id = ?", (iid,))[0][0])
        )
    return out


def finished(d: Durable, iid: str) -> None:
    """Drive an opsflow instance to its end: the human task, then the signal."""
    d.complete("approve", {"ok": True}, iid)
    d.signal(iid, "go", {"by": "ann"})
    assert d.status(iid) == "completed"


def test_purge_deletes_old_finished_instances_and_all_their_rows(
    store: Store, clock: VirtualClock
) -> None:
    d = Durable(store, clock, OPS_HANDLERS, opsflow())
    old = d.start("opsflow", {"id": "x"}, "old-1")
    finished(d, old)
    assert rows(store, old)["wf_history"] > 3 and rows(store, old)["wf_task"] >= 3
    clock.advance(31 * DAY)
    recent = d.start("opsflow", {"id": "y"}, "recent-1")
    finished(d, recent)
    running = d.start("opsflow", {"id": "z"}, "running-1")  # waits for its human task

    # Its events (its status changes, its instance.finished) were published: the purge
    # may take them too.
    events = [e.id for e in store.outbox(limit=1000) if e.instance_id == old]
    assert store.mark_published(events) == len(events) > 1

    purged = d.client.purge(30 * DAY)

    assert purged.instances == (old,)
    assert purged.rows["wf_instance"] == 1 and purged.rows["wf_history"] > 3
    assert rows(store, old) == dict.fromkeys(TABLES, 0)
    with pytest.raises(UnknownInstance):
        store.instance(old)
    # What is younger or still running is whole.
    for iid in (recent, running):
        assert rows(store, iid)["wf_instance"] == 1
        assert len(store.history(iid)) == rows(store, iid)["wf_history"] > 0
    finished(d, running)  # and still runs to its end
    assert d.client.purge(30 * DAY).instances == ()


def test_dry_run_counts_and_changes_nothing(store: Store, clock: VirtualClock) -> None:
    d = Durable(store, clock, OPS_HANDLERS, opsflow())
    ids = [d.start("opsflow", {"id": f"x{i}"}, f"i-{i}") for i in range(3)]
    for iid in ids:
        finished(d, iid)
    before = {iid: rows(store, iid) for iid in ids}
    clock.advance(2 * DAY)

    dry = d.client.purge(DAY, dry_run=True, batch=2)

    assert dry.rows["wf_instance"] == 3
    assert dry.rows["wf_history"] == sum(b["wf_history"] for b in before.values())
    assert dry.rows["wf_task"] == sum(b["wf_task"] for b in before.values())
    assert {iid: rows(store, iid) for iid in ids} == before
    # The real purge, in batches of 2, removes exactly what the dry run counted.
    real = d.client.purge(DAY, batch=2)
    assert sorted(real.instances) == ids
    assert real.rows == dry.rows


def test_dead_lettered_instances_stay_unless_asked_for(store: Store, clock: VirtualClock) -> None:
    d = Durable(store, clock, {**OPS_HANDLERS, "svc.b": fails("Boom")}, opsflow())
    iid = d.start("opsflow", {"id": "x"}, "dl-1")
    assert d.status(iid) == "dead_lettered"
    clock.advance(10 * DAY)
    assert d.client.purge(DAY).instances == ()
    assert d.client.purge(DAY, statuses=["dead_lettered"]).instances == (iid,)
    unpublished = len([e for e in store.outbox(limit=1000) if e.instance_id == iid])
    assert rows(store, iid) == {**dict.fromkeys(TABLES, 0), "wf_outbox": unpublished}


def test_a_parent_and_child_are_purged_only_when_both_have_ended(
    store: Store, clock: VirtualClock
) -> None:
    d = Durable(store, clock, {}, data_table("kid"), data_table("parent"))
    parent = d.start("parent", {"id": "p"}, "parent-1")
    (child,) = [i.id for i in store.instances(limit=10) if i.parent_id == parent]
    clock.advance(5 * DAY)
    assert d.status(parent) == "waiting" and d.status(child) == "waiting"
    assert d.client.purge(DAY).instances == ()  # neither ended

    d.signal(child, "go", {"by": "bob"})
    assert d.status(child) == "completed" and d.status(parent) == "completed"
    assert d.instance(parent).output == {"by": "bob"}
    clock.advance(5 * DAY)
    assert sorted(d.client.purge(DAY).instances) == sorted([parent, child])


def test_a_finished_child_of_a_running_parent_stays(store: Store, clock: VirtualClock) -> None:
    d = Durable(store, clock, {}, data_table("kid"), data_table("fork_kid"))
    parent = d.start("fork_kid", {"id": "p"}, "parent-1")
    (child,) = [i.id for i in store.instances(limit=10) if i.parent_id == parent]
    d.signal(child, "go", {"by": "bob"})
    assert d.status(child) == "completed" and d.status(parent) == "waiting"
    clock.advance(5 * DAY)
    assert d.client.purge(DAY).instances == ()  # the parent may still need it
    d.signal(parent, "done", {"by": "ann"})
    assert d.status(parent) == "completed"
    clock.advance(5 * DAY)
    assert sorted(d.client.purge(DAY).instances) == sorted([parent, child])


def test_unpublished_outbox_rows_are_kept(store: Store, clock: VirtualClock) -> None:
    d = Durable(store, clock, OPS_HANDLERS, opsflow())
    iid = d.start("opsflow", {"id": "x"}, "i-1")
    finished(d, iid)
    # its status changes and its instance.finished: nobody consumed them
    kept = rows(store, iid)["wf_outbox"]
    assert kept > 1
    clock.advance(2 * DAY)
    purged = d.client.purge(DAY)
    assert purged.instances == (iid,) and purged.rows["wf_outbox"] == 0
    assert rows(store, iid)["wf_outbox"] == kept and rows(store, iid)["wf_instance"] == 0
    # A consumer still gets them after the purge, with what it needs to know.
    (event,) = store.outbox(kinds=ENDS)
    assert (event.instance_id, event.kind) == (iid, "instance.finished")
    assert event.payload["workflow"] == "opsflow" and event.payload["status"] == "completed"


def test_the_outbox_is_read_in_order_and_acknowledged_once(
    store: Store, clock: VirtualClock
) -> None:
    d = Durable(store, clock, OPS_HANDLERS, opsflow())
    ids = [d.start("opsflow", {"id": f"x{i}"}, f"i-{i}") for i in range(3)]
    for iid in reversed(ids):
        finished(d, iid)
    events = store.outbox(kinds=ENDS)
    assert [e.instance_id for e in events] == list(reversed(ids))  # in commit order
    outputs = [e.payload["output"] for e in events]
    assert [o["by"] for o in outputs if isinstance(o, dict)] == ["ann"] * 3
    assert store.outbox(limit=1, after=events[0].id, kinds=ENDS) == [events[1]]
    assert store.mark_published([events[0].id, events[1].id]) == 2
    assert store.mark_published([events[0].id]) == 0  # twice: nothing changes
    assert store.outbox(kinds=ENDS) == [events[2]]


def test_only_one_workflow_and_bad_requests(store: Store, clock: VirtualClock) -> None:
    d = Durable(store, clock, {**OPS_HANDLERS, "step.one": ok({"v": 1})}, opsflow())
    iid = d.start("opsflow", {"id": "x"}, "i-1")
    finished(d, iid)
    clock.advance(2 * DAY)
    with pytest.raises(UnknownWorkflow, match="no workflow 'other' is deployed"):
        d.client.purge(DAY, workflow="other")
    client = Client(store)
    with pytest.raises(ValueError, match="cannot purge status running"):
        client.purge(DAY, statuses=["running"])
    with pytest.raises(ValueError, match="age must be between 0 and 100 years"):
        client.purge(-1)
    assert rows(store, iid)["wf_instance"] == 1
    assert client.purge(DAY, workflow="opsflow").instances == (iid,)


def test_a_dead_lettered_relative_keeps_its_family(store: Store, clock: VirtualClock) -> None:
    """A dead-lettered instance may be retried: its parent (to report to) and its child
    (to read) stay, even when dead letters are purged."""
    d = Durable(store, clock, {}, data_table("kid"), data_table("parent"))
    parent = d.start("parent", {"id": "p"}, "parent-1")
    (child,) = [i.id for i in store.instances(limit=10) if i.parent_id == parent]
    with store.backend.transaction() as tx:  # as if both had dead-lettered
        tx.execute("UPDATE wf_instance SET status = 'dead_lettered'")
    clock.advance(5 * DAY)
    assert d.client.purge(DAY, statuses=["dead_lettered"]).instances == ()
    with store.backend.transaction() as tx:  # the child ended; the parent did not
        tx.execute("UPDATE wf_instance SET status = 'completed' WHERE id = ?", (child,))
    purged = d.client.purge(DAY, statuses=["dead_lettered", "completed"])
    assert purged.instances == (parent,)  # the child's parent has not ended: it stays
