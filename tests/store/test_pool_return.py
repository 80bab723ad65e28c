"""A PostgreSQL transaction gives its connection back to the pool before it returns
(issue 18): with a ``reset`` callback psycopg_pool returns every connection through its
worker thread, a thread wake-up per transaction, and a connection that is not back yet
sends the next transaction to another one."""

from __future__ import annotations

import pytest

from wflang.store import open_store
from wflang.store.postgres import PostgresBackend

from .kit import PG_DSN


@pytest.mark.skipif(not PG_DSN, reason="WFLANG_TEST_PG_DSN is not set")
def test_a_connection_is_back_in_the_pool_when_its_transaction_returns() -> None:
    store = open_store(PG_DSN, pool=1)
    try:
        backend = store.backend
        assert isinstance(backend, PostgresBackend)
        pool = backend.pool
        pool.wait()
        for pipelined in (False, True, False, True):
            with backend.transaction(pipelined=pipelined) as tx:
                tx.query("SELECT 1")
            # no wait: back already, in this thread
            assert pool.get_stats()["pool_available"] == 1
        with backend.read() as tx:
            tx.query("SELECT 1")
        assert pool.get_stats()["pool_available"] == 1
    finally:
        store.close()
