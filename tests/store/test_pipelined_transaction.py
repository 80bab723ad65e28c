"""A pipelined write transaction (``Backend.transaction(pipelined=True)``) is one
transaction, all or nothing, on both stores.

On PostgreSQL it sends no BEGIN and no COMMIT (issue 18): the statements of a pipeline
up to its Sync are one implicit transaction. These tests hold it to what the explicit
one gave: a Python error or a failed statement anywhere undoes everything, a statement
whose row count is waited for ends nothing, and the locks of its first reads are held
until the end.
"""

from __future__ import annotations

import pytest

from wflang.store import Store
from wflang.store.backend import Tx


class Boom(Exception):
    pass


def _scratch(store: Store) -> None:
    with store.backend.transaction() as tx:
        tx.execute("CREATE TABLE t_probe (k text PRIMARY KEY, n integer NOT NULL)")
        tx.execute("INSERT INTO t_probe (k, n) VALUES ('held', 0)")


def _keys(store: Store) -> list[str]:
    with store.backend.read() as tx:
        return [str(k) for (k,) in tx.query("SELECT k FROM t_probe ORDER BY k")]


def _writes(tx: Tx) -> None:
    """Writes of every kind, with waits between them (a query, a row count)."""
    tx.write("INSERT INTO t_probe (k, n) VALUES (?, ?)", ("a", 1))
    assert tx.execute("UPDATE t_probe SET n = n + 1 WHERE k IN ('a', 'held')") == 2
    assert tx.query("SELECT n FROM t_probe WHERE k = ?", ("a",)) == [(2,)]
    tx.executemany("INSERT INTO t_probe (k, n) VALUES (?, ?)", [("b", 1), ("c", 1)])
    assert tx.send("SELECT count(*) FROM t_probe")() == [(4,)]


def test_a_pipelined_transaction_commits_everything_it_wrote(store: Store) -> None:
    _scratch(store)
    with store.backend.transaction(pipelined=True) as tx:
        _writes(tx)
    assert _keys(store) == ["a", "b", "c", "held"]
    with store.backend.read() as tx:
        assert tx.query("SELECT n FROM t_probe WHERE k = 'held'") == [(1,)]


def test_a_python_error_after_waits_undoes_everything(store: Store) -> None:
    _scratch(store)
    with pytest.raises(Boom), store.backend.transaction(pipelined=True) as tx:
        _writes(tx)
        tx.write("INSERT INTO t_probe (k, n) VALUES ('d', 1)")  # sent, not waited for
        raise Boom
    assert _keys(store) == ["held"]
    with store.backend.read() as tx:
        assert tx.query("SELECT n FROM t_probe WHERE k = 'held'") == [(0,)]
    # the connection is as good as new
    with store.backend.transaction(pipelined=True) as tx:
        tx.write("INSERT INTO t_probe (k, n) VALUES ('e', 1)")
    assert _keys(store) == ["e", "held"]


def test_a_failed_statement_undoes_everything(store: Store) -> None:
    _scratch(store)
    duplicate = pytest.raises(Exception, match=r"(?i)unique|constraint")
    with duplicate, store.backend.transaction(pipelined=True) as tx:
        _writes(tx)
        tx.write("INSERT INTO t_probe (k, n) VALUES ('a', 9)")  # a duplicate key
        tx.write("INSERT INTO t_probe (k, n) VALUES ('z', 1)")
    assert _keys(store) == ["held"]


def test_the_locks_of_the_first_reads_last_to_the_end(store: Store) -> None:
    if store.dialect.name != "postgresql":
        pytest.skip("SQLite has one writer: no row locks")
    import psycopg
    from psycopg import errors

    _scratch(store)
    url = store.backend.url
    with store.backend.transaction(pipelined=True) as tx:
        assert tx.query("SELECT n FROM t_probe WHERE k = 'held' FOR UPDATE") == [(0,)]
        tx.write("UPDATE t_probe SET n = 5 WHERE k = 'held'")
        assert tx.execute("UPDATE t_probe SET n = n + 1 WHERE k = 'held'") == 1
        with psycopg.connect(url, autocommit=True) as other:
            with pytest.raises(errors.LockNotAvailable):
                other.execute("SELECT n FROM t_probe WHERE k = 'held' FOR UPDATE NOWAIT")
            # nothing of it is visible before its end
            assert other.execute("SELECT n FROM t_probe WHERE k = 'held'").fetchall() == [(0,)]
    with store.backend.read() as rtx:
        assert rtx.query("SELECT n FROM t_probe WHERE k = 'held'") == [(6,)]


def test_a_statement_refused_in_the_block_keeps_its_connection(store: Store) -> None:
    """A refused row (or a deadlock) aborts the pipeline: its Sync rolls back, and the
    connection goes back to the pool as good, not closed and opened again."""
    if store.dialect.name != "postgresql":
        pytest.skip("a PostgreSQL connection pool")
    from wflang.store.postgres import PostgresBackend

    _scratch(store)
    backend = store.backend
    assert isinstance(backend, PostgresBackend)
    opened = backend.pool.get_stats().get("connections_num", 0)
    for _ in range(3):
        refused = pytest.raises(Exception, match=r"(?i)unique|duplicate")
        with refused, backend.transaction(pipelined=True) as tx:
            tx.write("INSERT INTO t_probe (k, n) VALUES ('a', 1)")
            tx.write("INSERT INTO t_probe (k, n) VALUES ('a', 2)")
            tx.query("SELECT count(*) FROM t_probe")  # the refusal surfaces here
    assert backend.pool.get_stats().get("connections_num", 0) == opened
    assert _keys(store) == ["held"]
