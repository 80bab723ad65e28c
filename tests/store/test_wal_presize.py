"""The SQLite store gives its WAL file the working size once it keeps writing
(``wflang.store.sqlite.presize_wal``): nothing committed is lost, a crash's files
recover, and a process that writes a few times does not pay for it."""

from __future__ import annotations

import errno
import logging
import shutil
import sqlite3
from pathlib import Path

import pytest

from wflang.store import sqlite as sq
from wflang.store.sqlite import PRESIZE_AFTER, SqliteBackend, presize_wal


def wal_of(db: Path) -> Path:
    return Path(f"{db}-wal")


def working_size(conn: sqlite3.Connection) -> int:
    pages = conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0]
    page = conn.execute("PRAGMA page_size").fetchone()[0]
    return int(sq.WAL_HEADER + (pages + sq.PRESIZE_SLACK) * (page + sq.FRAME_HEADER))


def backend_with_rows(
    folder: Path, writes: int, *, db: Path | None = None, synchronous: str = "FULL"
) -> tuple[SqliteBackend, Path]:
    """A backend on ``db`` (``folder``/state.db) that has committed ``writes`` write
    transactions: a table, then a row each."""
    db = db or folder / "state.db"
    backend = SqliteBackend(db, synchronous=synchronous, create=True)
    with backend.transaction() as tx:
        tx.write("CREATE TABLE t (n integer PRIMARY KEY, body text NOT NULL)")
    for n in range(writes - 1):
        with backend.transaction() as tx:
            tx.write("INSERT INTO t VALUES (?, ?)", (n, f"row {n}"))
    return backend, db


def wal_connection(db: Path, *pragmas: str) -> sqlite3.Connection:
    """A plain connection in WAL mode with a table ``t`` (and ``pragmas`` first)."""
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    for pragma in pragmas:
        conn.execute(pragma)
    conn.execute("CREATE TABLE t (n integer PRIMARY KEY)")
    return conn


def crash_copy(db: Path, folder: Path) -> sqlite3.Connection:
    """The files as a crash would leave them (the WAL not checkpointed, no -shm),
    opened by a new connection: SQLite recovers the WAL from the file alone."""
    folder.mkdir()
    shutil.copy(db, folder / db.name)
    shutil.copy(wal_of(db), wal_of(folder / db.name))
    return sqlite3.connect(folder / db.name)


def test_a_store_that_keeps_writing_gets_a_wal_of_working_size(tmp_path: Path) -> None:
    backend, db = backend_with_rows(tmp_path, PRESIZE_AFTER + 1)
    try:
        conn = backend._conn()
        assert wal_of(db).stat().st_size >= working_size(conn)
    finally:
        backend.close()


def test_a_process_that_writes_a_few_times_does_not_presize(tmp_path: Path) -> None:
    backend, db = backend_with_rows(tmp_path, PRESIZE_AFTER)
    try:
        assert wal_of(db).stat().st_size < working_size(backend._conn()) // 4
    finally:
        backend.close()


def test_what_was_committed_around_the_presizing_survives_a_crash(tmp_path: Path) -> None:
    writes = PRESIZE_AFTER + 40
    backend, db = backend_with_rows(tmp_path / "live", writes)
    try:
        # the WAL holds frames not yet checkpointed, then the zeros written past them
        data = wal_of(db).read_bytes()
        assert data[:4] != bytes(4) and data.endswith(bytes(4096))
        copy = crash_copy(db, tmp_path / "crashed")
        try:
            assert copy.execute("PRAGMA integrity_check").fetchone() == ("ok",)
            got = copy.execute("SELECT n, body FROM t ORDER BY n").fetchall()
            assert got == [(n, f"row {n}") for n in range(writes - 1)]
        finally:
            copy.close()
    finally:
        backend.close()
    again = sqlite3.connect(db)  # and closed cleanly: the same rows
    try:
        assert again.execute("SELECT count(*) FROM t").fetchone() == (writes - 1,)
    finally:
        again.close()


def test_an_empty_wal_extended_with_zeros_is_read_as_empty(tmp_path: Path) -> None:
    """A WAL presized before its first frame: its header is zeros, which SQLite reads
    as no WAL at all, and it writes its own header with the first commit."""
    db = tmp_path / "state.db"
    conn = wal_connection(db)
    try:
        conn.execute("INSERT INTO t VALUES (1)")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        assert wal_of(db).stat().st_size == 0
        conn.execute("BEGIN IMMEDIATE")
        assert presize_wal(conn, wal_of(db))
        conn.execute("COMMIT")
        assert wal_of(db).stat().st_size == working_size(conn)
        crashed = crash_copy(db, tmp_path / "before")
        assert crashed.execute("SELECT n FROM t").fetchall() == [(1,)]
        crashed.close()
        conn.execute("INSERT INTO t VALUES (2)")
        crashed = crash_copy(db, tmp_path / "after")
        assert crashed.execute("SELECT n FROM t ORDER BY n").fetchall() == [(1,), (2,)]
        crashed.close()
        conn.execute("BEGIN IMMEDIATE")
        assert not presize_wal(conn, wal_of(db))  # already of working size: left alone
        conn.execute("ROLLBACK")
    finally:
        conn.close()


def test_no_auto_checkpoint_no_presizing(tmp_path: Path) -> None:
    db = tmp_path / "state.db"
    conn = wal_connection(db, "PRAGMA wal_autocheckpoint=0")
    try:
        conn.execute("BEGIN IMMEDIATE")
        assert not presize_wal(conn, wal_of(db))
        conn.execute("ROLLBACK")
        assert wal_of(db).stat().st_size < 4096 * 4
    finally:
        conn.close()


def test_a_failed_presizing_loses_no_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The presizing is a saving: whatever fails in it (a full disk; no ``fdatasync``
    on the platform was one) is logged, the transaction it rides in goes on and
    commits, and the WAL grows as it always did."""
    # (heard on its own logger: a worker's log set-up in another test may stop propagation)
    monkeypatch.setattr(sq.log, "handlers", [caplog.handler])
    monkeypatch.setattr(sq.log, "level", logging.WARNING)
    monkeypatch.setattr(sq.log, "propagate", False)
    for error in (OSError(errno.ENOSPC, "No space left on device"), AttributeError("fdatasync")):
        folder = tmp_path / type(error).__name__
        datasync = sq._datasync

        def fails(fd: int, error: Exception = error) -> None:
            raise error

        monkeypatch.setattr(sq, "_datasync", fails)
        backend, db = backend_with_rows(folder, PRESIZE_AFTER + 3)
        try:
            monkeypatch.setattr(sq, "_datasync", datasync)
            with backend.read() as tx:
                assert tx.query("SELECT count(*) FROM t") == [(PRESIZE_AFTER + 2,)]
            conn = backend._conn()
            assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
            assert wal_of(db).stat().st_size < working_size(conn)  # given up after a part
        finally:
            backend.close()
    warned = [r for r in caplog.records if "could not presize the WAL" in r.getMessage()]
    assert len(warned) == 1  # the OSError is presize_wal's to swallow; the other is logged


def test_a_store_that_does_not_sync_its_commits_is_not_presized(tmp_path: Path) -> None:
    backend, db = backend_with_rows(tmp_path, PRESIZE_AFTER + 3, synchronous="OFF")
    try:
        assert wal_of(db).stat().st_size < working_size(backend._conn()) // 4
    finally:
        backend.close()


def test_the_wal_of_a_linked_store_is_presized_where_sqlite_keeps_it(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    link = tmp_path / "link.db"
    link.symlink_to(tmp_path / "real" / "state.db")
    backend, _ = backend_with_rows(tmp_path, PRESIZE_AFTER + 3, db=link)
    try:
        real_wal = wal_of(tmp_path / "real" / "state.db")
        assert real_wal.stat().st_size >= working_size(backend._conn())
        assert not wal_of(link).exists()
    finally:
        backend.close()
