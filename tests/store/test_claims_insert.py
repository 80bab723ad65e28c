"""The calls a step leases at once (``Claims.claim_new``) are this worker's only where
its insert wrote them: a key that was there already is not leased again, whether the
insert was one row (SQLite: the count of rows it inserted) or several (RETURNING)."""

from __future__ import annotations

import pytest

from wflang.runtime import instance as rt
from wflang.store import Store
from wflang.store.claims import Claims


def _call(key: str) -> rt.ScheduleTask:
    return rt.ScheduleTask(key, 0, "a", "svc.a", {"n": 1}, 1)


@pytest.mark.parametrize(("calls", "taken"), [(1, False), (1, True), (3, True)])
def test_a_call_whose_key_is_there_already_is_not_leased(
    store: Store, calls: int, taken: bool
) -> None:
    keys = [f"i:a:{n}:0:1" for n in range(calls)]
    with store.backend.transaction() as tx:  # a row with the first key, someone else's
        if taken:
            tx.execute(
                "INSERT INTO wf_task (key, instance_id, node, kind, service, args, attempt, "
                "status, run_at, lease_owner, lease_epoch, created_at, updated_at) VALUES "
                "(?, 'i', 'a', 'service', 'svc.a', '{}', 1, 'running', 0, 'other', 7, 0, 0)",
                (keys[0],),
            )
    with store.backend.transaction(pipelined=False) as tx:
        claims = Claims(tx, store.dialect, worker="w", now=10, lease_ms=1_000, slots=calls,
                        services=None, once=frozenset())  # fmt: skip
        for key in keys:
            claims.claim_new("i", _call(key))
        claims.flush()
    settled = claims.settle(tuple(claims.eager))
    mine = keys[1:] if taken else keys
    assert [t.key for t in settled] == mine
    found = {t.key: (t.lease_owner, t.status) for t in store.tasks(instance_id="i")}
    if taken:
        assert found[keys[0]] == ("other", "running")  # untouched
    assert all(found[k] == ("w", "running") for k in mine)
