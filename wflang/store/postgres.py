"""The shared store: PostgreSQL through psycopg 3 and its connection pool.

Many workers on many machines claim work with ``FOR UPDATE SKIP LOCKED`` in
short READ COMMITTED transactions; a deadlock or serialisation failure rolls
back and the transaction is simply run again. Migrations take a transaction
advisory lock so that two ``wf store migrate`` at once are serialised.
"""

from __future__ import annotations

import contextlib
import logging
import time
import weakref
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import ClassVar

import psycopg
from psycopg import Pipeline, errors, pq, sql
from psycopg.conninfo import conninfo_to_dict
from psycopg_pool import ConnectionPool

from wflang.store.backend import Dialect, Param, Pending, Row, redact, redact_url, url_secrets
from wflang.store.records import StoreError

#: A store's notification channel, as SQL: one per schema, so that the workers of one
#: store are not woken by another's in the same database (a channel is database-wide; its
#: name is at most 63 bytes, a schema's may be as long: its digest names it).
CHANNEL = "'wflang_' || left(md5(current_schema()), 16)"

DIALECT = Dialect(
    name="postgresql",
    json="text",
    autoid="bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY",
    now="CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS bigint)",
    lock=" FOR UPDATE",
    local_clock=False,
    single_writer=False,
    without_rowid="",
    notify=f"SELECT pg_notify({CHANNEL}, ?)",
    skip_locked=" FOR UPDATE SKIP LOCKED",
    key_lock="SELECT pg_advisory_xact_lock(hashtext(?))",
    tx_now="CAST(EXTRACT(EPOCH FROM transaction_timestamp()) * 1000 AS bigint)",
    fuses_writes=True,
    moved="wf_moved()",  # created by migration 8
)

_MIGRATION_LOCK = 0x77666C616E67  # "wflang"
#: SQLSTATE classes of a database that cannot work now: connection exception, transaction
#: rollback (deadlock, serialisation), insufficient resources, object not in prerequisite
#: state (lock not available), operator intervention (shutdown, cancel), system error,
#: internal error.
_UNAVAILABLE = frozenset(("08", "40", "53", "55", "57", "58", "XX"))


def _pg(sql: str) -> str:
    """Our statements use ``?``; psycopg wants ``%s`` (none of ours has a literal %)."""
    return sql.replace("?", "%s")


Conn = psycopg.Connection[tuple[object, ...]]
#: A pooled connection used within this many seconds is not checked again before reuse:
#: the check is a round trip, as dear as a statement; a connection broken since fails its
#: transaction as one broken during it would (``unavailable``: the worker tries again).
_FRESH_S = 1.0


class _Tx:
    """Statements on one connection; in a pipeline (``pipe``), those that need no answer
    do not wait for one (``backend.Tx``)."""

    __slots__ = ("conn", "pipe")

    def __init__(self, conn: Conn, pipe: Pipeline | None = None) -> None:
        self.conn, self.pipe = conn, pipe

    def execute(self, sql: str, params: Sequence[Param] = ()) -> int:
        cur = self.conn.execute(_pg(sql), params, prepare=True)
        if self.pipe is not None:
            # Its row count comes with its answer: wait for it. A fetch asks with a
            # flush; a Sync would end the transaction (``PostgresBackend.transaction``).
            try:
                cur.fetchall()
            except psycopg.ProgrammingError:
                if cur.pgresult is None:  # the statement failed, not "no rows to fetch"
                    raise
        return cur.rowcount

    def write(self, sql: str, params: Sequence[Param] = ()) -> None:
        self.conn.execute(_pg(sql), params, prepare=True)

    def executemany(self, sql: str, rows: Sequence[Sequence[Param]]) -> None:
        if rows:
            # Not closed here: in a pipeline its answers are still to come.
            self.conn.cursor().executemany(_pg(sql), rows)

    def query(self, sql: str, params: Sequence[Param] = ()) -> list[Row]:
        return self.conn.execute(_pg(sql), params, prepare=True).fetchall()

    def send(self, sql: str, params: Sequence[Param] = ()) -> Pending:
        return self.conn.execute(_pg(sql), params, prepare=True).fetchall

    def announce(self, instance_id: str = "") -> None:
        self.write(DIALECT.notify, (instance_id,))  # delivered by the server at the commit


class _Redacting(logging.Filter):
    """Hides the passwords of the URLs opened in this process from log records (their
    messages and tracebacks): psycopg's pool logs libpq's words, which may quote them."""

    secrets: ClassVar[set[str]] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        secrets = sorted(self.secrets, key=len, reverse=True)
        if secrets:
            message = record.getMessage()
            if any(s in message for s in secrets):
                record.msg, record.args = redact(message, secrets), None
            if record.exc_info and not record.exc_text:
                record.exc_text = logging.Formatter().formatException(record.exc_info)
            if record.exc_text:
                record.exc_text = redact(record.exc_text, secrets)
        return True


_REDACTING = _Redacting()
#: The loggers that may see a URL or libpq's words about one.
for _name in ("psycopg", "psycopg.pool", "wflang.worker", "wflang.client"):
    logging.getLogger(_name).addFilter(_REDACTING)


def hide_in_logs(url: str) -> None:
    """Keep the password of ``url`` out of every later log record of this process
    (each URL a backend opens is hidden so)."""
    _Redacting.secrets.update(url_secrets(url))


def _readable(url: str) -> None:
    """Refuse a URL that libpq cannot read, saying why without its password (libpq's
    own message quotes the part it stumbled on, which may be the password)."""
    try:
        conninfo_to_dict(url)
    except psycopg.Error as err:
        why = redact(str(err).strip(), url_secrets(url))
        raise StoreError(f"cannot read the store URL {redact_url(url)}: {why}") from None


class PostgresBackend:
    """``postgresql://user@host:port/dbname``."""

    dialect = DIALECT

    def __init__(
        self, url: str, *, min_size: int = 1, max_size: int = 8, timeout: float = 30.0
    ) -> None:
        _readable(url)
        hide_in_logs(url)
        self.url = url
        self._idle_since = weakref.WeakKeyDictionary()
        self.pool: ConnectionPool[psycopg.Connection[tuple[object, ...]]] = ConnectionPool(
            url,
            min_size=min_size,
            max_size=max_size,
            timeout=timeout,  # how long a request waits for a connection
            kwargs={"autocommit": True, "connect_timeout": max(1, int(timeout))},
            check=self._check,
            open=True,
            name="wflang",
        )

    #: When each pooled connection was last given back (for ``_check``).
    _idle_since: weakref.WeakKeyDictionary[Conn, float]

    @contextmanager
    def _borrowed(self) -> Iterator[Conn]:
        """A pooled connection, its return time noted here: a ``reset`` callback would
        have the pool return every connection through its worker thread, a thread
        wake-up per transaction (issue 18)."""
        with self.pool.connection() as conn:
            try:
                yield conn
            finally:
                self._idle_since[conn] = time.monotonic()

    def _check(self, conn: Conn) -> None:
        """Check a connection taken from the pool that has been idle a while (a
        restart or a network cut may have broken it meanwhile); one used a moment
        ago is taken as it is."""
        since = self._idle_since.get(conn)
        if since is None or time.monotonic() - since > _FRESH_S:
            ConnectionPool.check_connection(conn)

    @contextmanager
    def transaction(self, *, pipelined: bool = False) -> Iterator[_Tx]:
        if not pipelined:
            with self._borrowed() as conn, conn.transaction():
                yield _Tx(conn)
            return
        with self._borrowed() as conn:
            committed = False
            try:
                # No BEGIN and no COMMIT: the statements of a pipeline up to its Sync
                # are one implicit transaction, which the Sync at the pipeline's end
                # commits (or rolls back if a statement failed). Reads wait for their
                # answers with a flush, never a Sync (``_Tx``). Two statements fewer
                # per transaction, each ~45 us of the client's CPU (issue 18).
                with conn.pipeline() as pipe:
                    try:
                        yield _Tx(conn, pipe)
                    except BaseException:
                        self._abandon(conn)
                        raise
                committed = True
            finally:
                if not committed:
                    self._roll_back(conn)

    @staticmethod
    def _abandon(conn: Conn) -> None:
        """Undo what a pipelined transaction wrote before the Sync of its pipeline can
        commit it: a ROLLBACK in an implicit transaction rolls back the statements
        before it (with a warning, "there is no transaction in progress"). A
        connection that cannot send it is closed, and the server rolls back. A pipeline
        that a failed statement aborted needs none: the server skips all up to the Sync,
        and the Sync rolls back (a deadlock or a refused row keeps its connection)."""
        if conn.pgconn.pipeline_status == pq.PipelineStatus.ABORTED:
            return
        try:
            conn.execute("ROLLBACK")
        except Exception:
            with contextlib.suppress(Exception):
                conn.close()

    @staticmethod
    def _roll_back(conn: Conn) -> None:
        """End a pipelined transaction that failed; a connection that cannot is closed
        (the pool then replaces it)."""
        try:
            conn.execute("ROLLBACK")  # "no transaction in progress" after a failed COMMIT
        except Exception:
            with contextlib.suppress(Exception):
                conn.close()

    @contextmanager
    def read(self) -> Iterator[_Tx]:
        with self._borrowed() as conn, conn.transaction():
            yield _Tx(conn)

    @contextmanager
    def migration_lock(self) -> Iterator[_Tx]:
        with self.transaction() as tx:
            tx.execute("SELECT pg_advisory_xact_lock(?)", (_MIGRATION_LOCK,))
            yield tx

    def retryable(self, err: BaseException) -> bool:
        return isinstance(err, errors.DeadlockDetected | errors.SerializationFailure)

    def unavailable(self, err: BaseException) -> bool:
        if not isinstance(err, psycopg.Error):
            return False
        # No SQLSTATE: the client's side (connection lost, pool timeout). Else the
        # classes of a server or connection in trouble, not of a refused row.
        return err.sqlstate is None or err.sqlstate[:2] in _UNAVAILABLE

    def listen(self, name: str = "wflang listen") -> psycopg.Connection[tuple[object, ...]]:
        """A dedicated autocommit connection, outside the pool, listening on the store's
        channel (``listen_on``); ``name`` is its ``application_name`` (what
        ``pg_stat_activity`` shows)."""
        conn = psycopg.connect(self.url, autocommit=True, application_name=name[:63])
        listen_on(conn)
        return conn

    def close(self) -> None:
        self.pool.close()


def listen_on(conn: psycopg.Connection[tuple[object, ...]]) -> str:
    """``LISTEN`` on the channel of ``conn``'s schema (``CHANNEL``), and its name."""
    row = conn.execute(f"SELECT {CHANNEL}").fetchone()
    assert row is not None
    channel = str(row[0])
    conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(channel)))
    return channel
