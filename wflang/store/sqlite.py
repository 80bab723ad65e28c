"""The embedded store: one SQLite file, no server.

WAL lets readers run beside the single writer; ``synchronous=FULL`` makes a
committed transition survive a power loss, not only a crash of the process;
every write transaction starts with ``BEGIN IMMEDIATE`` so that it takes the
write lock up front and waits for it (``busy_timeout``) instead of failing
half-way. Each thread has its own connection.

A process that keeps writing gives the WAL file its working size at once
(``presize_wal``): while the file grows, each commit's ``fdatasync``
also commits the file's new size to the filesystem's journal, which made the first
~100 steps of a freshly opened store cost 1.5x a step once the file had grown.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

from wflang.store.backend import Dialect, Param, Pending, Row
from wflang.store.records import StoreError

DIALECT = Dialect(
    name="sqlite",
    json="text",
    autoid="integer PRIMARY KEY AUTOINCREMENT",
    now="CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)",
    lock="",
    local_clock=True,
    single_writer=True,
    without_rowid=" WITHOUT ROWID",
    notify="",
    skip_locked="",
    # Its planner picks an index by statistics that an un-ANALYZEd file lacks.
    indexed_by=" INDEXED BY {}",
)


def switch_to_wal(conn: sqlite3.Connection) -> None:
    """Switch the file to WAL once; it stays WAL for every later connection.

    Two connections switching a new file at the same moment can get "database is
    locked" from the pragma itself, without the busy timeout: try again a few times.
    """
    for attempt in range(50):
        try:
            mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
            if str(mode).lower() != "wal":
                conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as err:
            if "locked" not in str(err) or attempt == 49:
                raise
            time.sleep(0.002 * (attempt + 1))  # contention backoff while opening, not a test


log = logging.getLogger("wflang.store")

#: The write transactions of a backend after which it gives the WAL its working size:
#: a process that writes a few times (``wf signal``, a test) is not worth 4 MB written.
PRESIZE_AFTER = 16
#: Frames of room beyond the auto-checkpoint's threshold: the WAL passes it by the
#: frames of the commit that reaches it, before the checkpoint lets it start over.
PRESIZE_SLACK = 64
#: Written and synced a part at a time: written at once, the file's second half made
#: every later commit to it ~100 µs slower (measured on ext4 in a VM, bench/RESULTS.md).
PRESIZE_CHUNK = 1 << 20
WAL_HEADER, FRAME_HEADER = 32, 24
#: The ``synchronous`` settings under which each commit syncs the WAL.
SYNCED = ("FULL", "EXTRA")


#: ``fdatasync`` where the platform has it (not macOS, not Windows), else ``fsync``.
_datasync = getattr(os, "fdatasync", os.fsync)


def presize_wal(conn: sqlite3.Connection, wal: Path) -> bool:
    """Extend the WAL file to the size it reaches in steady use (the auto-checkpoint's
    threshold and some slack), with zeros written, not a hole or an ``fallocate``d
    range (both leave the filesystem blocks to convert at a commit's ``fdatasync``).
    ``conn`` must hold the write lock (``BEGIN IMMEDIATE``): no other connection
    writes frames, restarts or truncates the WAL meanwhile. Zeros are never read as
    frames: a header of zeros has no magic number (SQLite reads the WAL as empty and
    writes its header with the first commit), and a frame of zeros has page number 0
    and a salt and checksum that do not match the header's: recovery stops at the
    first, as at the stale frames SQLite leaves past the end after each checkpoint.
    Only bytes past the current end are written. Whether it wrote anything."""
    pages = conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0]
    size = conn.execute("PRAGMA page_size").fetchone()[0]
    if pages <= 0:  # no auto-checkpoint: the WAL grows without bound anyway
        return False
    want = WAL_HEADER + (pages + PRESIZE_SLACK) * (size + FRAME_HEADER)
    try:
        with open(wal, "r+b") as f:
            have = f.seek(0, 2)
            if have >= want:
                return False
            while have < want:
                n = min(PRESIZE_CHUNK, want - have)
                f.write(bytes(n))
                f.flush()
                _datasync(f.fileno())
                have += n
    except OSError:  # not there (nothing opened it in WAL mode), a full disk, a failed
        return False  # sync: it grows as it did; zeros written before a failure are harmless
    return True


#: The wake-up events of this process's workers, by store file (``SqliteBackend.woken``).
_WAKERS: dict[Path, set[threading.Event]] = {}
_WAKERS_LOCK = threading.Lock()


class _Tx:
    __slots__ = ("announced", "conn")

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.announced = False

    def announce(self, instance_id: str = "") -> None:
        self.announced = True  # the workers are woken after the commit (no read to spare)

    def execute(self, sql: str, params: Sequence[Param] = ()) -> int:
        return self.conn.execute(sql, params).rowcount

    def write(self, sql: str, params: Sequence[Param] = ()) -> None:
        self.conn.execute(sql, params)

    def send(self, sql: str, params: Sequence[Param] = ()) -> Pending:
        found = self.conn.execute(sql, params).fetchall()  # in-process: nothing to wait for
        return lambda: found

    def executemany(self, sql: str, rows: Sequence[Sequence[Param]]) -> None:
        if rows:
            self.conn.executemany(sql, rows)

    def query(self, sql: str, params: Sequence[Param] = ()) -> list[Row]:
        return self.conn.execute(sql, params).fetchall()


class SqliteBackend:
    """``sqlite:///path/state.db`` (relative) or ``sqlite:////abs/path.db``."""

    dialect = DIALECT

    def __init__(
        self, path: str | Path, *, synchronous: str = "FULL", create: bool = False
    ) -> None:
        self.path = Path(path)
        self.url = f"sqlite:///{self.path}"
        self.synchronous = synchronous
        if create:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        elif not self.path.parent.is_dir():  # a typo in the path, not a place to fill
            raise StoreError(
                f"no folder {str(self.path.parent)!r} for the store {self.url!r}: "
                "create it, or open the store with create=True (as `wf store migrate` does)"
            )
        self._key = self.path.resolve()  # one file, however it is named
        self._local = threading.local()
        self._all: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        self._writes = 0  # write transactions begun, until the WAL is presized

    def _conn(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(
                self.path, isolation_level=None, timeout=60.0, check_same_thread=False
            )
            conn.execute("PRAGMA busy_timeout=60000")
            switch_to_wal(conn)
            conn.execute(f"PRAGMA synchronous={self.synchronous}")
            conn.execute("PRAGMA foreign_keys=ON")
            self._local.conn = conn
            with self._lock:
                self._all.append(conn)
        return conn

    @contextmanager
    def transaction(self, *, pipelined: bool = False) -> Iterator[_Tx]:
        conn = self._conn()
        conn.execute("BEGIN IMMEDIATE")
        tx = _Tx(conn)
        try:
            # Only where each commit syncs the WAL (what growing it made cost more);
            # ``_writes`` is only read and changed under the write lock.
            if self._writes <= PRESIZE_AFTER and self.synchronous.upper() in SYNCED:
                self._writes += 1
                if self._writes > PRESIZE_AFTER:
                    self._presize(conn)
            yield tx
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
        if tx.announced:
            with _WAKERS_LOCK:
                wakers = list(_WAKERS.get(self._key, ()))
            for event in wakers:
                event.set()

    def _presize(self, conn: sqlite3.Connection) -> None:
        """``presize_wal`` on this store's WAL (beside the file a link points to, as
        SQLite puts it); it is only a saving: whatever fails in it is logged, and the
        transaction it rides in goes on."""
        try:
            presize_wal(conn, Path(f"{self._key}-wal"))
        except Exception:
            log.warning("could not presize the WAL of %s", self.url, exc_info=True)

    @contextmanager
    def woken(self, event: threading.Event) -> Iterator[None]:
        """While the block runs, set ``event`` each time a transaction of this process
        commits work for workers on this file (``Tx.announce``): a worker in the same
        process as the client (an application, the tests) wakes at once. A
        client in another process is not seen: its work waits for the worker's poll."""
        with _WAKERS_LOCK:
            _WAKERS.setdefault(self._key, set()).add(event)
        try:
            yield
        finally:
            with _WAKERS_LOCK:
                left = _WAKERS.get(self._key, set())
                left.discard(event)
                if not left:
                    _WAKERS.pop(self._key, None)

    @contextmanager
    def read(self) -> Iterator[_Tx]:
        conn = self._conn()
        conn.execute("BEGIN")
        try:
            yield _Tx(conn)
        finally:
            conn.execute("COMMIT")

    def migration_lock(self) -> AbstractContextManager[_Tx]:
        return self.transaction()  # BEGIN IMMEDIATE already excludes every other writer

    def retryable(self, err: BaseException) -> bool:
        return isinstance(err, sqlite3.OperationalError) and "locked" in str(err)

    def unavailable(self, err: BaseException) -> bool:
        # Locked, I/O, full, closed, corrupt; not a refused value (DataError,
        # IntegrityError, an int too large to bind, a type it cannot bind).
        return isinstance(err, sqlite3.OperationalError | sqlite3.InterfaceError) or (
            type(err) is sqlite3.DatabaseError
        )

    def close(self) -> None:
        with self._lock:
            for conn in self._all:
                conn.close()
            self._all.clear()
        self._local = threading.local()
