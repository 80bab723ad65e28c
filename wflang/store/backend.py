"""What differs between SQLite and PostgreSQL, and nothing else.

The store's logic (``wflang.store``) is written once, with ``?``
placeholders and a handful of dialect words; a backend supplies connections,
write transactions and those words. SQLite: one connection per thread, WAL,
``synchronous=FULL``, ``BEGIN IMMEDIATE`` for every write transaction (a
deferred read-then-write upgrade can fail with SQLITE_BUSY without waiting).
PostgreSQL: a psycopg 3 connection pool, READ COMMITTED transactions,
``FOR UPDATE SKIP LOCKED`` for claims, a retry on deadlock or serialisation
failure, and pipelined write transactions (``Tx``: a worker's step costs two round
trips).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from typing import Protocol
from urllib.parse import unquote

from attrs import frozen

Param = str | int | float | bytes | None
Row = tuple[object, ...]
#: The rows of a query sent earlier (``Tx.send``), read when called.
Pending = Callable[[], list[Row]]


@frozen
class Dialect:
    name: str
    json: str  # column type of JSON documents
    autoid: str  # an auto-incrementing primary key column
    now: str  # the database clock in epoch milliseconds
    lock: str  # appended to a SELECT that locks rows, waiting
    skip_locked: str  # appended to a SELECT that locks rows, skipping locked ones
    #: A statement that wakes listening workers at commit, its one parameter the
    #: instance the work is for or "" ("" for none); a SELECT with no FROM, for an
    #: insert to send it with a FROM of its rows (``inbox.put``).
    notify: str
    single_writer: bool  # one writer at a time (SQLite): nothing to skip when claiming
    local_clock: bool  # the database runs on this machine: its clock is this process's
    without_rowid: str  # table option for tables keyed by their primary key alone
    key_lock: str = ""  # locks a text key until the transaction ends ("": one writer anyway)
    #: The transaction's start in epoch milliseconds, the same in each of its statements,
    #: for statements to compute the time themselves ("": the store reads it first).
    tx_now: str = ""
    #: Whether a statement may carry other writes as data-modifying ``WITH`` parts
    #: (``fused``): a sequential step's writes in one statement on PostgreSQL.
    fuses_writes: bool = False
    #: A call that fails the statement, and the transaction, with ``MOVED_SQLSTATE``
    #: (``wflang.store.carried``'s guard; "": the store checks the guard's answer itself).
    moved: str = ""
    #: A table name's suffix naming the index a query must use (``{}``: its name; "": the
    #: planner's statistics choose well enough)
    indexed_by: str = ""


#: The SQLSTATE of a carried step's guard failing (``wflang.store.carried``).
MOVED_SQLSTATE = "WF409"


class Tx(Protocol):
    """A write transaction: statements with ``?`` placeholders.

    In a pipelined transaction (PostgreSQL, ``Backend.transaction(pipelined=True)``)
    ``write``, ``executemany`` and ``send`` wait for nothing: their statements go to the
    server at once and their answers come back with the next statement that waits (a
    ``query``, an ``execute``, a ``Pending`` read, or the commit), so that a step's reads
    cost one round trip and its writes share the commit's. An error of such a statement
    is raised there, not where it was written. Elsewhere (SQLite, or not pipelined) every
    statement runs when it is called.
    """

    def execute(self, sql: str, params: Sequence[Param] = ()) -> int:
        """Run a statement and wait for it; the number of rows it changed."""
        ...

    def write(self, sql: str, params: Sequence[Param] = ()) -> None:
        """Run a statement whose answer nobody needs (see the class)."""
        ...

    def executemany(self, sql: str, rows: Sequence[Sequence[Param]]) -> None:
        """Run a statement for each of ``rows`` (see the class: it does not wait)."""
        ...

    def query(self, sql: str, params: Sequence[Param] = ()) -> list[Row]: ...

    def send(self, sql: str, params: Sequence[Param] = ()) -> Pending:
        """Send a query now and read its rows later, by calling the result: queries sent
        together are answered in one round trip."""
        ...

    def announce(self, instance_id: str = "") -> None:
        """Wake the idle workers on this store once this transaction commits (PostgreSQL
        NOTIFY; on SQLite the workers of this process): a hint, they poll anyway.
        ``instance_id``: the one instance the work is for, if so (a delivery): a worker
        woken by it reads that inbox with its first reads (PostgreSQL's payload)."""
        ...


class Backend(Protocol):
    dialect: Dialect
    url: str

    def transaction(self, *, pipelined: bool = False) -> AbstractContextManager[Tx]:
        """A write transaction, committed when the block ends, rolled back on an error;
        ``pipelined``: statements that need no answer do not wait for one (``Tx``), and
        the commit goes with them (PostgreSQL; SQLite runs each statement at once)."""
        ...

    def read(self) -> AbstractContextManager[Tx]:
        """A read-only snapshot for queries."""
        ...

    def migration_lock(self) -> AbstractContextManager[Tx]:
        """A transaction that holds the store-wide migration lock."""
        ...

    def retryable(self, err: BaseException) -> bool:
        """Whether a failed transaction may simply be run again (deadlock, busy)."""
        ...

    def unavailable(self, err: BaseException) -> bool:
        """Whether an error is the database's or the connection's (down, busy, full,
        corrupt) rather than a refusal of what one statement wrote: the first stops a
        whole transaction, the second only the instance that wrote it."""
        ...

    def close(self) -> None: ...


def placeholders(n: int) -> str:
    return ", ".join("?" * n)


def chunks(items: Sequence[str], size: int = 500) -> Iterator[Sequence[str]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


#: The password of a URL: after ``scheme://user:`` up to the last ``@`` (a password may
#: hold an unescaped ``@``, ``/`` or ``%``: whatever it holds, all of it is hidden).
_USERINFO = re.compile(r"^(?P<head>[A-Za-z][A-Za-z0-9+.-]*://[^:@/?#]*):(?P<secret>.*)@", re.S)
#: A password given as a query parameter (``?password=...``), which libpq accepts too.
_QUERY = re.compile(r"(?P<head>[?&]password=)(?P<secret>[^&#]*)", re.I)


def redact_url(url: str) -> str:
    """The URL with its password replaced by ``***``: for messages and logs. Works on
    any text, well-formed URL or not, and never raises."""
    url = _USERINFO.sub(lambda m: m["head"] + ":***@", url, count=1)
    return _QUERY.sub(lambda m: m["head"] + "***", url)


def url_secrets(url: str) -> list[str]:
    """The passwords in a URL as written and as decoded: what ``redact`` hides."""
    found = [m["secret"] for m in (_USERINFO.match(url), *_QUERY.finditer(url)) if m]
    return sorted({v for s in found for v in (s, unquote(s)) if v}, key=len, reverse=True)


def redact(text: str, secrets: Sequence[str]) -> str:
    """``text`` (a message, a traceback) with every one of ``secrets`` replaced by ``***``."""
    for secret in secrets:
        text = text.replace(secret, "***")
    return text


#: A named ``WITH`` query: (name, SQL, parameters).
Named = tuple[str, str, Sequence[Param]]


def fused(
    parts: Sequence[tuple[str, Sequence[Param]]],
    sql: str,
    params: Sequence[Param],
    head: Sequence[Named] = (),
) -> tuple[str, tuple[Param, ...]]:
    """``sql`` carrying the writes ``parts`` as data-modifying ``WITH`` queries: one
    statement (each costs the client ~45 us of CPU in psycopg, issue 18). The parts run
    once each, with the statement's snapshot, so they must touch other tables than
    each other and ``sql`` (``Dialect.fuses_writes``). ``head``: named queries before
    them, which they may refer to (a carried step's guard, ``wflang.store.carried``)."""
    if not parts and not head:
        return sql, tuple(params)
    ctes = ", ".join(
        [f"{name} AS ({part})" for name, part, _ in head]
        + [f"wf_write{i} AS ({part})" for i, (part, _) in enumerate(parts)]
    )
    return f"WITH {ctes} {sql}", (
        *(p for _, _, ps in head for p in ps),
        *(p for _, ps in parts for p in ps),
        *params,
    )
