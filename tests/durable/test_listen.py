"""A worker listens again after losing its notification connection (issue 20 item 5).

After ``pg_terminate_backend`` of its LISTEN connection a worker used to poll only,
for good. Now it opens the connection again, and a NOTIFY wakes it as before. The
test never sleeps: it sees the new connection being opened (the store's ``listen``)
and the worker's wake-up event being set by the notification of a new instance.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable

import psycopg
import pytest

from wflang.durable.worker import Worker
from wflang.store import Store
from wflang.store.postgres import PostgresBackend

from .helpers import PG_DSN, fixture_table

BOUND_S = 60  # a bound against a hang; the worker's own poll is an hour away


def test_a_worker_listens_again_after_its_backend_is_terminated(
    pg_url: str, make_store: Callable[..., Store], monkeypatch: pytest.MonkeyPatch
) -> None:
    store = make_store(pg_url)
    store.deploy(fixture_table("two_step"))
    worker = Worker(
        store,
        {},
        poll_ms=3_600_000,
        worker_id=f"listen-{uuid.uuid4().hex[:8]}",
        allow_missing_handlers=True,  # it only listens
    )
    opened = threading.Semaphore(0)
    assert isinstance(store.backend, PostgresBackend)
    real = store.backend.listen

    def listen(name: str) -> psycopg.Connection[tuple[object, ...]]:
        conn = real(name)  # listening once it returns
        opened.release()
        return conn

    monkeypatch.setattr(store.backend, "listen", listen)
    with worker.woken_by_notify():
        assert opened.acquire(timeout=BOUND_S)
        with psycopg.connect(PG_DSN, autocommit=True) as admin:
            killed = admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE application_name = %s",
                (f"wflang listen {worker.id}",),
            ).fetchall()
        assert killed == [(True,)]
        assert opened.acquire(timeout=BOUND_S), "the worker did not listen again"

        # Nothing else sets the worker's wake-up event (its loop is not running): a
        # new instance's NOTIFY, received on the new connection, does.
        worker.wake.clear()
        store.create(store.deployed("two_step"), {"id": "x"}, "x")
        assert worker.wake.wait(BOUND_S), "the notification did not wake the worker"
        # Counted before it listened on the new connection, which the wake-up came from.
        assert worker.counters.listen_reconnects == 1
