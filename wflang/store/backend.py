"""What differs between SQLite and PostgreSQL, and nothing else.

The store's logic (``wflang.store``) is written once, with ``?``
placeholders and a handful of dialect words; a backend supplies connections,
write transactions and those words. SQLite: one connection per thread, WAL,
``synchronous=FULL``, ``BEGIN IMMEDIATE`` for every write transaction (a
deferred read-then-write upgrade can fail with SQLITE_BUSY without waiting).
PostgreSQL: a psycopg 3 connection pool, READ COMMITTED transactions,
``FOR UPDATE SKIP LOCKED`` for claims and a retry on deadlock or serialisation
failure.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from typing import Protocol
from urllib.parse import unquote

from attrs import frozen

Param = str | int | float | bytes | None
Row = tuple[object, ...]


@frozen
class Dialect:
    name: str
    json: str  # column type of JSON documents
    autoid: str  # an auto-incrementing primary key column
    now: str  # the database clock in epoch milliseconds
    lock: str  # appended to a SELECT that locks rows, waiting
    skip_locked: str  # appended to a SELECT that locks rows, skipping locked ones
    notify: str  # a statement that wakes listening workers at commit ("" for none)
    single_writer: bool  # one writer at a time (SQLite): nothing to skip when claiming
    local_clock: bool  # the database runs on this machine: its clock is this process's
    without_rowid: str  # table option for tables keyed by their primary key alone
    key_lock: str = ""  # locks a text key until the transaction ends ("": one writer anyway)


class Tx(Protocol):
    """A write transaction: statements with ``?`` placeholders."""

    def execute(self, sql: str, params: Sequence[Param] = ()) -> int:
        """Run a statement; the number of rows it changed."""
        ...

    def executemany(self, sql: str, rows: Sequence[Sequence[Param]]) -> None: ...

    def query(self, sql: str, params: Sequence[Param] = ()) -> list[Row]: ...


class Backend(Protocol):
    dialect: Dialect
    url: str

    def transaction(self) -> AbstractContextManager[Tx]:
        """A write transaction, committed when the block ends, rolled back on an error."""
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
