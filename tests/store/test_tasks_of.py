"""An instance's tasks are a range of ``wf_task``'s key (``status.TASKS_OF``, migration
9), on both stores: what lists, cancels, compacts or purges one instance's tasks finds
those and no other, even an instance whose id is this one's with a colon and more."""

from __future__ import annotations

import pytest

from wflang.store import Store
from wflang.store.status import TASKS_OF, tasks_of

from .kit import DAY, OPS_HANDLERS, Durable, VirtualClock, opsflow

#: ids whose task keys share a beginning: "a:b:..." starts with "a:" as "a:..." does
IDS = ("a", "a:b", "a:", "a;", "b")


def _keys(store: Store, iid: str) -> list[str]:
    """The instance's task keys as the column says."""
    with store.backend.read() as tx:
        found = tx.query("SELECT key FROM wf_task WHERE instance_id = ? ORDER BY key", (iid,))
    return [str(k) for (k,) in found]


def _at_approve(store: Store, clock: VirtualClock) -> Durable:
    """Each of ``IDS`` started and at its human task (two calls done, one task open)."""
    d = Durable(store, clock, OPS_HANDLERS, opsflow())
    for iid in IDS:
        d.start("opsflow", {"id": iid}, iid)
        assert [t.node for t in d.client.open_tasks(iid)] == ["approve"], iid
    return d


def test_the_tasks_of_an_instance_are_its_own(store: Store, clock: VirtualClock) -> None:
    _at_approve(store, clock)
    for iid in IDS:
        keys = _keys(store, iid)
        assert len(keys) == 3 and all(k.startswith(f"{iid}:") for k in keys), keys
        listed = store.tasks(instance_id=iid, limit=100)
        assert sorted(t.key for t in listed) == keys
        assert {t.instance_id for t in listed} == {iid}
        assert [t.key for t in store.tasks(instance_id=iid, status="open")] == [
            k for k in keys if ":approve:" in k
        ]


def test_cancelling_one_leaves_the_others_tasks_open(store: Store, clock: VirtualClock) -> None:
    d = _at_approve(store, clock)
    d.client.cancel("a", compensate=False, reason="not wanted")
    d.run()
    assert d.status("a") == "cancelled"
    assert store.tasks(instance_id="a", status="open") == []
    assert [t.status for t in store.tasks(instance_id="a") if t.node == "approve"] == ["cancelled"]
    for iid in IDS[1:]:
        assert [t.node for t in store.tasks(instance_id=iid, status="open")] == ["approve"], iid


def test_compacting_one_deletes_its_done_tasks_only(store: Store, clock: VirtualClock) -> None:
    _at_approve(store, clock)
    clock.ms += DAY  # the done tasks closed before the checkpoint's time
    done = store.compact("a")
    assert done.rows["wf_task"] == 2  # its two calls; its open task stays
    assert [t.node for t in store.tasks(instance_id="a")] == ["approve"]
    for iid in IDS[1:]:
        assert len(_keys(store, iid)) == 3, iid


def test_purging_one_deletes_its_tasks_only(store: Store, clock: VirtualClock) -> None:
    d = _at_approve(store, clock)
    d.client.cancel("a", compensate=False, reason="done with it")
    d.run()
    clock.ms += DAY
    dry = store.purge(ended_before=clock.ms, dry_run=True)
    assert dry.instances == ("a",) and dry.rows["wf_task"] == 3
    purged = store.purge(ended_before=clock.ms)
    assert purged.instances == ("a",) and purged.rows["wf_task"] == 3
    assert _keys(store, "a") == []
    for iid in IDS[1:]:
        assert len(_keys(store, iid)) == 3, iid


def test_the_range_is_a_search_of_the_primary_key(store: Store) -> None:
    """Each statement with ``TASKS_OF`` searches the key's b-tree (no index by instance
    is left to read); on PostgreSQL the key compares by its bytes (the "C" collation:
    under a language's collation a colon sorts apart from its bytes' place)."""
    sql = f"SELECT key FROM wf_task WHERE {TASKS_OF}"
    with store.backend.read() as tx:
        if store.dialect.name == "sqlite":
            plan = str(tx.query("EXPLAIN QUERY PLAN " + sql, tasks_of("a")))
            assert "USING PRIMARY KEY (key>? AND key<?)" in plan, plan
            return
        (collation,) = tx.query(
            "SELECT collation_name FROM information_schema.columns "
            "WHERE table_schema = current_schema() AND table_name = 'wf_task' "
            "AND column_name = 'key'"
        )
        assert collation == ("C",)
        tx.execute("SET LOCAL enable_seqscan = off")  # a few rows: a scan would be cheaper
        plan = str(tx.query("EXPLAIN " + sql, tasks_of("a")))
        assert "wf_task_pkey" in plan, plan


@pytest.mark.parametrize("iid", ["a", "a:b", "ü:ß", "x" * 200])
def test_tasks_of_bounds_exactly_the_keys_that_begin_with_the_id(iid: str) -> None:
    first, past, same = tasks_of(iid)
    assert same == iid
    inside = [f"{iid}:", f"{iid}:t:1:0:1", f"{iid}:\U0010ffff"]
    outside = [iid, f"{iid}0", f"{iid};", f"{iid}:"[:-1] + "9", f"{iid[:-1]}"]
    assert all(first <= k < past for k in inside)
    assert not any(first <= k < past for k in outside)
    # Python's order of str is the order of their UTF-8 bytes (what the stores compare)
    assert all(
        (first.encode() <= k.encode() < past.encode()) == (first <= k < past)
        for k in inside + outside
    )
