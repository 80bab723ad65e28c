"""An instance's tasks are a range of ``wf_task``'s key (``status.TASKS_OF``, migration
9), on both stores: what lists, cancels, compacts or purges one instance's tasks finds
those and no other, even an instance whose id is this one's with a colon and more."""

from __future__ import annotations

from wflang.store import Store
from wflang.store.status import OF_INSTANCE

from .kit import DAY, OPS_HANDLERS, Durable, VirtualClock, opsflow

#: ids whose task keys share a beginning ("a:b:..." starts with "a:" as "a:..." does), or
#: sort beside it in a language's collation (which ignores punctuation and case at first)
IDS = ("a", "a:b", "a:", "a;", "a-", "a ", "A", "ü:ß", "b")


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
    sql = f"SELECT key FROM wf_task WHERE {OF_INSTANCE}"
    with store.backend.read() as tx:
        if store.dialect.name == "sqlite":
            plan = str(tx.query("EXPLAIN QUERY PLAN " + sql, ("a",) * 3))
            assert "USING PRIMARY KEY (key>? AND key<?)" in plan, plan
            return
        (collation,) = tx.query(
            "SELECT collation_name FROM information_schema.columns "
            "WHERE table_schema = current_schema() AND table_name = 'wf_task' "
            "AND column_name = 'key'"
        )
        assert collation == ("C",)
        tx.execute("SET LOCAL enable_seqscan = off")  # a few rows: a scan would be cheaper
        plan = str(tx.query("EXPLAIN " + sql, ("a",) * 3))
        assert "wf_task_pkey" in plan, plan


def test_the_range_holds_exactly_the_keys_that_begin_with_the_id_and_a_colon(
    store: Store,
) -> None:
    """Rows written by hand, keys beside each other in every order: each id's range, as
    the store compares keys, holds its own and nothing else."""
    ids = [*IDS, "x" * 200, "a\U0010ffff", "a9"]
    suffixes = ["", "t:1:0:1", "\U0010ffff", ":", ";"]
    with store.backend.transaction() as tx:
        for iid in ids:
            for m, suffix in enumerate(suffixes):
                tx.execute(
                    "INSERT INTO wf_task (key, instance_id, node, kind, service, args, attempt, "
                    "status, run_at, created_at, updated_at) VALUES "
                    "(?, ?, 'a', 'service', 's', '{}', 1, 'done', 0, 0, 0)",
                    (f"{iid}:{m}{suffix}", iid),
                )
    with store.backend.read() as tx:
        for iid in ids:
            found = sorted(str(k) for (k,) in tx.query(
                f"SELECT key FROM wf_task WHERE {OF_INSTANCE}", (iid,) * 3))  # fmt: skip
            assert found == sorted(f"{iid}:{m}{s}" for m, s in enumerate(suffixes)), iid
