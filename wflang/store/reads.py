"""The reads of an ``advance`` transaction (``wflang.store.advance``), sent together.

Each function sends its statements and returns their answers to read later
(``Tx.send``): on PostgreSQL they go to the server in one pipeline and come back in
one round trip, the database's clock read by one of them (``Clocked``). The time in
them is given as ``At``: SQL and its parameters, so that a statement can compute the
database's clock itself while the store has not read it yet.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from wflang.store import rows
from wflang.store.backend import Dialect, Param, Pending, Row, Tx, chunks, placeholders
from wflang.store.status import TaskStatus

#: The time in a statement: its SQL (``?`` or an expression) and its parameters.
At = tuple[str, tuple[int, ...]]
#: The most instances locked, or whose inbox is read, in one statement.
_CHUNK = 500
#: The most results fenced in one statement.
_FENCE_CHUNK = 300

#: Closes calls whose results hold their lease (``send_fence``): the head of the statement.
_FENCE = (
    f"UPDATE wf_task SET status = '{TaskStatus.DONE}', lease_owner = NULL, "
    "lease_expires_at = NULL, updated_at = {now} WHERE (key, lease_epoch, instance_id) IN "
)
#: Its tail: the lease held. ``IS TRUE`` keeps the planner on the primary key: plain, the
#: conditions match ``wf_task_leased``, whose scan walks every task leased within the
#: lease window, dead versions included (0.5 ms and 1,780 buffers against 0.01 ms).
_FENCE_TAIL = (
    f" AND (status = '{TaskStatus.RUNNING}' AND lease_expires_at >= {{now}}) IS TRUE "
    "RETURNING key, lease_epoch, node"
)


class Clocked:
    """A statement's rows with the database's clock read in the same statement: one
    statement fewer per transaction (each costs the client ~45 us of CPU in psycopg,
    issue 18). Its SQL puts the time in front of each row, and answers one row of the
    time alone (NULLs after it) when it finds none."""

    __slots__ = ("answer", "now_sql", "rows")

    def __init__(self, now_sql: str) -> None:
        self.now_sql = now_sql
        self.answer: Pending | None = None
        self.rows: list[Row] | None = None

    def send(self, tx: Tx, sql: str, params: Sequence[Param]) -> Pending:
        """Send ``sql`` with the clock; its rows, to read later (as ``Tx.send``)."""
        assert self.answer is None, "the clock is read once"
        self.answer = tx.send(
            f"SELECT {self.now_sql}, q.* FROM (VALUES (0)) AS one LEFT JOIN ({sql}) AS q ON 1 = 1",
            params,
        )
        return self._found

    def _read(self) -> list[Row]:
        if self.rows is None:
            assert self.answer is not None, "sent before read"
            self.rows = self.answer()
        return self.rows

    def now(self) -> int:
        return rows.integer(self._read()[0][0])

    def _found(self) -> list[Row]:
        return [row[1:] for row in self._read() if row[1] is not None]


def _lock_query(d: Dialect, ids: Sequence[str]) -> tuple[str, tuple[Param, ...]]:
    sql = (
        f"SELECT {rows.LOCKED_COLUMNS} FROM wf_instance "
        f"WHERE id IN ({placeholders(len(ids))}) ORDER BY id{d.lock}"
    )
    return sql, tuple(ids)


def send_lock(
    tx: Tx, d: Dialect, ids: Sequence[str], clocked: Clocked | None = None
) -> list[Pending]:
    """Lock these instances, waiting for them, in id order (no deadlocks); ``clocked``:
    the first statement reads the database's clock too."""
    sent: list[Pending] = []
    for part in chunks(ids, _CHUNK):
        sql, args = _lock_query(d, part)
        if clocked is not None and not sent:
            sent.append(clocked.send(tx, sql, args))
        else:
            sent.append(tx.send(sql, args))
    return sent


def _fence_query(
    at: At, results: Sequence[tuple[str, int, str | None]]
) -> tuple[str, tuple[Param, ...]]:
    now, params = at
    values = ", ".join("(?, ?, ?)" for _ in results)
    return (
        f"{_FENCE}(VALUES {values}){_FENCE_TAIL}".format(now=now),
        (*params, *(x for row in results for x in row), *params),
    )


def send_fence(tx: Tx, at: At, results: Sequence[tuple[str, int, str | None]]) -> list[Pending]:
    """Close the calls (key, epoch, instance) whose results still hold their lease, a
    statement per chunk (``fenced`` reads which did)."""
    pending = [(key, epoch, iid) for key, epoch, iid in results if iid is not None]
    return [
        tx.send(*_fence_query(at, pending[i : i + _FENCE_CHUNK]))
        for i in range(0, len(pending), _FENCE_CHUNK)
    ]


def fenced(sent: Sequence[Pending]) -> dict[tuple[str, int], str]:
    """The (key, epoch) pairs whose calls were closed, with their node; any other
    result is stale."""
    return {
        (rows.text(key), rows.integer(epoch)): rows.text(node)
        for answer in sent
        for key, epoch, node in answer()
    }


def _ready_query(d: Dialect, at: At, limit: int, held: int) -> tuple[str, tuple[Param, ...]]:
    """Up to ``limit`` more instances with something due, locked, skipping locked ones
    (their rows in the order found, an instance twice if due for both reasons).

    Each query locks as it selects (``SKIP LOCKED``), so workers running it at the same
    time share the queue out instead of all picking its head and then skipping it. Rows
    the transaction already holds (``held`` of them) come back too: they are asked for
    on top of the limit and left out. Both queries go in the round trip of the lock:
    the second may lock rows the first made unnecessary, which are then not stepped
    (other workers skip them until the commit).
    """
    now, params = at
    due_inbox = (
        "id IN (SELECT instance_id FROM wf_inbox WHERE consumed_seq IS NULL "
        f"AND available_at <= {now})"
    )
    head = f"SELECT {rows.LOCKED_COLUMNS} FROM wf_instance WHERE"
    n = limit + held
    if d.single_writer:  # nothing to skip: one query finds both kinds
        return f"{head} wake_at <= {now} OR {due_inbox} LIMIT ?", (*params, *params, n)
    # two queries, each locking as it selects, in turn; one statement all the same
    by_time = f"{head} wake_at <= {now} ORDER BY wake_at LIMIT ?{d.skip_locked}"
    by_inbox = f"{head} {due_inbox} LIMIT ?{d.skip_locked}"
    sql = (
        f"WITH by_time AS ({by_time}), by_inbox AS ({by_inbox}) "
        "SELECT * FROM by_time UNION ALL SELECT * FROM by_inbox"
    )
    return sql, (*params, n, *params, n)


def send_ready(
    tx: Tx, d: Dialect, at: At, limit: int, held: int, clocked: Clocked | None = None
) -> list[Pending]:
    """Lock up to ``limit`` more ready instances (``_ready_query``) in one statement
    (``clocked``: which reads the database's clock too)."""
    sql, args = _ready_query(d, at, limit, held)
    return [tx.send(sql, args) if clocked is None else clocked.send(tx, sql, args)]


def _inbox_query(at: At, ids: Sequence[str]) -> tuple[str, tuple[Param, ...]]:
    """Which inbox rows of these instances are due: a WHERE clause and its parameters."""
    now, params = at
    return (
        f"instance_id IN ({placeholders(len(ids))}) AND consumed_seq IS NULL "
        f"AND available_at <= {now}",
        (*ids, *params),
    )


def send_inbox(tx: Tx, at: At, ids: Sequence[str]) -> list[Pending]:
    """Ask for the due inbox rows of these instances, in the order they came."""
    sent = []
    for part in chunks(sorted(ids), _CHUNK):
        where, args = _inbox_query(at, part)
        sent.append(
            tx.send(f"SELECT {rows.INBOX_COLUMNS} FROM wf_inbox WHERE {where} ORDER BY id", args)
        )
    return sent


class Tagged:
    """One statement's answer made of parts (``UNION ALL`` of queries): each row's first
    column is the number of its part."""

    __slots__ = ("answer", "rows")

    def __init__(self, answer: Pending) -> None:
        self.answer = answer
        self.rows: list[Row] | None = None

    def _read(self) -> list[Row]:
        if self.rows is None:
            self.rows = self.answer()
        return self.rows

    def part(self, tag: int, order: tuple[int, ...] | None = None) -> Pending:
        """The rows of part ``tag``, without the tag (their columns in ``order``)."""
        if order is None:
            return lambda: [row[1:] for row in self._read() if row[0] == tag]
        at = [i + 1 for i in order]
        return lambda: [tuple(row[i] for i in at) for row in self._read() if row[0] == tag]


class Reads(NamedTuple):
    """The answers of an ``advance``'s first reads (``send_reads``)."""

    locking: list[Pending]
    fencing: list[Pending]
    ready: list[Pending]
    inboxes: list[Pending]
    due: list[Pending]


#: The columns of a locked instance (``rows.LOCKED_COLUMNS``): a due call's key stands in
#: the first, NULLs in the others, where a statement carries both (``send_reads``).
_KEY_AS_LOCKED = "key" + ", NULL" * (len(rows.LOCKED_COLUMNS.split(",")) - 1)


def send_reads(
    tx: Tx,
    d: Dialect,
    at: At,
    ids: Sequence[str],
    results: Sequence[tuple[str, int, str | None]],
    limit: int,
    clocked: Clocked | None,
    inboxes_of: Sequence[str] = (),
    due: Sequence[tuple[str, tuple[Param, ...]]] = (),
) -> Reads:
    """Send the first reads of an ``advance``, in this order: lock the instances ``ids``
    (waiting), fence ``results`` (``send_fence``), lock up to ``limit`` more ready
    instances (skipping), the queries ``due`` (of the due calls' keys, skipping locked
    ones), read the inbox of ``ids`` and ``inboxes_of``; ``clocked``: one of them reads
    the database's clock. Where the database can (``Dialect.fuses_writes``), the usual
    case is two statements: the locks and the due calls with the clock, then the fence
    with the inboxes (each statement costs the client ~45 us of CPU in psycopg, issue
    18), each part in that order. The inbox is read in a statement after the lock's: one
    of the lock's would see the rows as they were before it waited for the lock."""
    fence_rows = [row for row in results if row[2] is not None]
    read = sorted(set(ids).union(inboxes_of))
    if not d.fuses_writes or len(read) > _CHUNK or len(fence_rows) > _FENCE_CHUNK:
        # a statement per kind (and per chunk), the clock read with the ready instances,
        # else with the lock
        by_lock = clocked if limit <= 0 else None
        if by_lock is not None and not ids:  # nothing else to read it with
            by_lock.send(tx, "SELECT NULL", ())
            by_lock = None
        locking = send_lock(tx, d, ids, by_lock)
        fencing = send_fence(tx, at, fence_rows)
        ready = send_ready(tx, d, at, limit, len(ids), clocked) if limit > 0 else []
        if ready and d.single_writer:
            # SQLite answered the ready query already (it has no pipeline to wait for):
            # when it found fewer than it asked for, it found every instance with a row
            # due, and the others' inboxes need no query (a chain's step reads none).
            answered = ready[0]()
            if len(answered) < limit + len(ids):
                due_now = {rows.text(r[0]) for r in answered}
                read = [iid for iid in read if iid in due_now]
        return Reads(
            locking,
            fencing,
            ready,
            send_inbox(tx, at, read),
            [tx.send(sql, args) for sql, args in due],
        )
    # (tag, query, its columns, its parameters), each part of the first statement
    parts: list[tuple[int, str, str, tuple[Param, ...]]] = []
    if ids:
        sql, args = _lock_query(d, ids)
        parts.append((0, sql, "*", args))
    if limit > 0:
        sql, args = _ready_query(d, at, limit, len(ids))
        parts.append((1, sql, "*", args))
    parts += [(2, sql, _KEY_AS_LOCKED, args) for sql, args in due]
    locking, ready, found = [], [], []
    if len(parts) > 1:
        ctes = ", ".join(f"wf_p{i} AS ({sql})" for i, (_, sql, _, _) in enumerate(parts))
        union = " UNION ALL ".join(
            f"SELECT {tag} AS wf_part, {columns} FROM wf_p{i}"
            for i, (tag, _, columns, _) in enumerate(parts)
        )
        sql, args = f"WITH {ctes} {union}", tuple(p for *_, ps in parts for p in ps)
        tagged = Tagged(clocked.send(tx, sql, args) if clocked else tx.send(sql, args))
        locking = [tagged.part(0)] if ids else []
        ready = [tagged.part(1)] if limit > 0 else []
        found = [tagged.part(2, (0,))] if due else []
    elif parts:
        tag, sql, _, args = parts[0]
        answer = clocked.send(tx, sql, args) if clocked else tx.send(sql, args)
        (locking, ready, found)[tag].append(answer)
    elif clocked is not None:
        clocked.send(tx, "SELECT NULL", ())
    fencing, inboxes = _send_fence_with_inboxes(tx, at, fence_rows, read)
    return Reads(locking, fencing, ready, inboxes, found)


def _send_fence_with_inboxes(
    tx: Tx, at: At, results: Sequence[tuple[str, int, str | None]], read: Sequence[str]
) -> tuple[list[Pending], list[Pending]]:
    """The second statement of ``send_reads``: the fence of ``results`` and the inbox rows
    due of the instances ``read``, each when there are any (the fence, then the inboxes)."""
    fence = _fence_query(at, results) if results else None
    inbox = _inbox_query(at, read) if read else None
    if fence is not None and inbox is not None:
        # the fence's columns where the inbox row's of the same type are
        sql = (
            f"WITH wf_fenced AS ({fence[0]}) SELECT 0 AS wf_part, lease_epoch, key, node, "
            f"NULL, NULL, NULL FROM wf_fenced UNION ALL SELECT 1, {rows.INBOX_COLUMNS} "
            f"FROM wf_inbox WHERE {inbox[0]}"
        )
        tagged = Tagged(tx.send(sql, (*fence[1], *inbox[1])))
        return [tagged.part(0, (1, 0, 2))], [tagged.part(1)]
    if fence is not None:
        return [tx.send(*fence)], []
    if inbox is not None:
        where, args = inbox
        return [], [tx.send(f"SELECT {rows.INBOX_COLUMNS} FROM wf_inbox WHERE {where}", args)]
    return [], []
