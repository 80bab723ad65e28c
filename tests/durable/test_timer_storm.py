"""Timer storm (issue 5): thousands of timers due at the same instant each fire once.

Every instance of ``tests/data/durable/nap.wf`` sleeps one minute; the virtual
clock then jumps past all of them at once, and two workers race to fire them.
10,000 timers on SQLite; on PostgreSQL 2,000 in local runs and 10,000 in CI (``.ci/run``
sets ``WFLANG_TEST_PG_STORM=10000``; the full size adds some 20-40 s on this machine).
"""

from __future__ import annotations

import collections
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from wflang.durable.worker import Worker
from wflang.runtime import instance as rt
from wflang.store import Store

from .helpers import SUMMARY, VirtualClock, bulk_store, fixture_table, history_gaps

STORM = {"sqlite": 10_000, "postgresql": int(os.environ.get("WFLANG_TEST_PG_STORM", "2000"))}
WORKERS = 2


def test_timer_storm_each_timer_fires_once(
    store_url: str, make_store: Callable[..., Store], clock: VirtualClock
) -> None:
    backend = store_url.split(":", 1)[0]
    n = STORM[backend]
    store = make_store(store_url, clock=clock)
    store.deploy(fixture_table("nap"))
    deployed = store.deployed("nap")
    ids = [f"t{i:05d}" for i in range(n)]
    setup = bulk_store(store_url, clock)
    try:
        for i, iid in enumerate(ids):
            setup.create(deployed, {"n": i}, iid)
    finally:
        setup.close()
    assert Worker(store, {}, batch=256, worker_id="starter").run_until_idle() == n
    before = store.stats()
    assert before.instances == {"waiting": n}, before
    assert before.due_timers == 0

    clock.advance(60_000)  # exactly due: `due <= now` fires
    assert store.stats().due_timers == n

    def fire(k: int) -> int:
        """Fire due timers until no instance is left waiting for its timer (another worker may hold the
        rows this one wanted, which makes one ``run_until_idle`` return early)."""
        worker = Worker(store, {}, batch=256, worker_id=f"firer-{k}")
        idle = threading.Event()  # never set: a short pause when the other worker holds rows
        total = 0
        for _ in range(10_000):
            done = worker.run_until_idle()
            total += done
            if not store.stats().instances.get("waiting"):
                return total
            if not done:
                idle.wait(0.01)
        raise AssertionError(f"firer-{k} gave up with instances still waiting")

    started = time.monotonic()
    with ThreadPoolExecutor(WORKERS) as pool:
        per_worker = list(pool.map(fire, range(WORKERS)))
    elapsed = time.monotonic() - started

    assert sum(per_worker) == n, per_worker  # one transition per timer, no more
    after = store.stats()
    assert after.instances == {"completed": n}, after
    assert after.due_timers == 0
    fired: collections.Counter[int] = collections.Counter()
    problems: list[str] = []
    for iid in ids:
        rows = store.history(iid)
        fired[sum(isinstance(r.entry.event, rt.TimerFired) for r in rows)] += 1
        problems += history_gaps(store, iid, rows)
    assert fired == {1: n}, f"TimerFired rows per instance: {dict(fired)}"
    assert not problems, problems[:10]
    line = (
        f"timer storm {backend:10} timers={n} fired_once={fired[1]} "
        f"fired_per_worker={per_worker} fire_seconds={elapsed:.1f}"
    )
    SUMMARY.append(line)
    print(line)
