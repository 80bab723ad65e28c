"""Two workers on PostgreSQL must not wait for, or come away empty because of, the rows
the other holds: ``FOR UPDATE SKIP LOCKED`` should hand each worker a disjoint share.

A second connection plays the other worker: it holds the row locks of the first ready
rows in an open transaction, as a worker's ``advance`` does while it steps them.
"""

from __future__ import annotations

from collections.abc import Callable

import psycopg

from wflang.runtime.ir import Value
from wflang.store import Store

from .helpers import VirtualClock, fixture_table

READY = 100
HELD = 50


def _ready_instances(
    store: Store, clock: VirtualClock, workflow: str, make_input: Callable[[int], dict[str, Value]]
) -> None:
    store.deploy(fixture_table(workflow))
    deployed = store.deployed(workflow)
    for i in range(READY):
        store.create(deployed, make_input(i), f"n{i:03d}")
        clock.advance(1)  # a strict order: the first ones are the head of the queue


def test_claims_skip_the_tasks_another_worker_holds(
    pg_url: str, make_store: Callable[..., Store], clock: VirtualClock
) -> None:
    store = make_store(pg_url, clock=clock)
    _ready_instances(store, clock, "two_step", lambda i: {"id": f"n{i}"})
    assert store.advance("starter", instances=READY).instances == READY
    with psycopg.connect(pg_url) as other:
        held = {
            str(k)
            for (k,) in other.execute(
                "SELECT key FROM wf_task WHERE status = 'ready' ORDER BY run_at, key "
                f"LIMIT {HELD} FOR UPDATE"
            ).fetchall()
        }
        adv = store.advance("B", instances=0, claim=10)
        other.rollback()
    assert len(held) == HELD
    assert len(adv.claimed) == 10
    assert not held & {t.key for t in adv.claimed}


def test_ready_instances_behind_a_locked_head_are_stepped(
    pg_url: str, make_store: Callable[..., Store], clock: VirtualClock
) -> None:
    store = make_store(pg_url, clock=clock)
    _ready_instances(store, clock, "nap", lambda i: {"n": i})
    with psycopg.connect(pg_url) as other:
        held = other.execute(
            f"SELECT id FROM wf_instance ORDER BY wake_at, id LIMIT {HELD} FOR UPDATE"
        ).fetchall()
        adv = store.advance("B", instances=16)
        other.rollback()
    assert len(held) == HELD
    assert adv.instances == 16  # 50 other instances are ready and unlocked
