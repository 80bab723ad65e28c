"""The fence (``store.reads.send_fence``) finds each result's call by its primary key.

Planned on ``wf_task_leased`` (its conditions match the partial index) it walked the
index entries of every call leased within the lease window, dead versions included:
0.5 ms and 1,780 buffers a step after 2,200 calls, against 0.01 ms by the key (issue 18).
"""

from __future__ import annotations

from wflang.store import Store, reads


def _fence(store: Store, n: int) -> str:
    values = ", ".join("(?, ?, ?)" for _ in range(n))
    return f"{reads._FENCE}(VALUES {values}){reads._FENCE_TAIL}".format(now="?")


def test_the_fence_is_planned_on_the_primary_key(store: Store) -> None:
    row = (
        "INSERT INTO wf_task (key, instance_id, node, kind, service, args, attempt, status, "
        "run_at, lease_epoch, lease_expires_at, created_at, updated_at) "
        "VALUES (?, ?, 'n', 'service', 's', '{}', 1, ?, 0, 1, ?, 0, 0)"
    )
    # Calls of three instances, most done, as a store holds them after a while.
    with store.backend.transaction() as tx:
        tx.executemany(row, [(f"k{i:04d}", f"j{i % 3}", "done", None) for i in range(400)])
        tx.executemany(row, [(f"r{i}", f"j{i}", "running", 10_000) for i in range(3)])
        tx.execute("ANALYZE wf_task")
    for n in (1, 2):
        params = (5, *("r1", 1, "j1", "r2", 1, "j2")[: 3 * n], 5)
        with store.backend.read() as tx:
            if store.dialect.name == "sqlite":
                explain = "EXPLAIN QUERY PLAN "
                plan = " ".join(str(r) for r in tx.query(explain + _fence(store, n), params))
                assert "wf_task_leased" not in plan, plan
            else:  # a table this small is read whole, else
                tx.execute("SET LOCAL enable_seqscan = off")
                explain = "EXPLAIN "
                plan = " ".join(str(r[0]) for r in tx.query(explain + _fence(store, n), params))
                assert "wf_task_pkey" in plan and "wf_task_leased" not in plan, plan
