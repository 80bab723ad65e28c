"""A sequential step carried over from the transaction before it: no first reads.

A worker that committed an instance's step, and with it leased the call that step
scheduled, knows when the handler answers all that the first reads of the next
``advance`` would tell it: the instance as it committed it and its row's columns
(``InstanceCache.carried``), and its lease. That next step then reads nothing first
(issue 18: on PostgreSQL one round trip a step instead of two). Its guard
(``send_guard``), sent before anything else it writes, makes the whole transaction fail
unless nothing moved meanwhile: the call is still leased under the same epoch (and it
closes it, as the fence does), the instance row has the same ``seq`` and status (locked,
as the lock does), no inbox row is due for the instance, and the time the step was
computed at is within a second before the database's. With the database's clock,
"due" is by that clock, not by the step's estimated time: no inbox row, no timer that
the general path, stepping at the database's time, would take before the result. On
PostgreSQL the guard rides as ``WITH`` queries of the statement that writes the step
(``Guarded``): one statement, one round trip. If anything moved the transaction rolls
back whole (``Moved``) and the general ``advance`` runs instead, reads first: one of the
two commits, never both, and what commits is what the general path would have written.

Three kinds of step qualify (``carry``). One result of an instance this process
stepped last (not an asynchronous call's handing-off, and not with instances announced
by their ids alone, ``hinted``: the general path reads those inboxes). The start of the
one instance this process created and nobody has stepped yet (``InstanceCache.created``),
when no result comes: an application that starts a workflow and runs it (the embedded
worker) starts it without reading back the row it has just written; its guard has no
call to fence. And a lone inbox row announced with its content (``inbox.announcing``:
PostgreSQL's notification carries it) for an instance this process stepped last: an
idle worker woken by a signal steps it without reading it (one round trip, not two),
its guard checking that the row is there as announced, unconsumed and the only one due.
The general path also finds other instances' due work, which a carried step does not
look for: ``Carrying`` lets a worker carry steps for a short while at a time only
(``CARRY_MS``), so none waits long for it.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence

from attrs import frozen

from wflang.runtime import instance as rt
from wflang.runtime.keys import parse_task_key
from wflang.runtime.table import asynchronous
from wflang.store import inbox, rows
from wflang.store.backend import MOVED_SQLSTATE, Dialect, Named, Param, Pending, Row, Tx, fused
from wflang.store.catalog import Catalog
from wflang.store.instance_cache import InstanceCache
from wflang.store.records import TaskResult
from wflang.store.status import TaskStatus

#: How long after its last general ``advance`` a store carries steps (in the store's
#: clock): the longest that another instance's due timer or unannounced inbox row waits
#: for a worker that only carries steps.
CARRY_MS = 100
#: The most steps carried in a row, whatever the clock says (a virtual clock stands still).
CARRY_STEPS = 64
#: How far before the database's clock a carried step's time may be (``Carrying.now``).
CLOCK_SLACK_MS = 1_000
#: How much the clock offset a general advance measures may overstate the database's
#: clock: its time is rounded to the millisecond (``CAST`` rounds), this machine's
#: floored. Without it about 3% of carried steps were a millisecond ahead of the
#: database and failed their guard (issue 18).
ROUNDING_MS = 2


#: An instance row's columns that a step may leave as they were (``step_rows.MOVING``).
Moving = tuple[str, int | None, str | None, int]


class Moved(Exception):
    """The guard of a carried step found that something moved: the transaction rolled
    back, and the general ``advance`` steps the result instead."""


@frozen
class Carry:
    """A result whose step can be carried: the instance as this process committed it;
    or, with no result, an inbox row announced with its content (``delivery``, in
    ``rows.INBOX_COLUMNS``; the instance as this process committed it), or the start of
    an instance this process created (``instance`` None, its row as created)."""

    result: TaskResult | None
    row: rows.Locked
    instance: rt.Instance | None
    node: str
    delivery: inbox.Announced | None = None


def carry(
    cache: InstanceCache,
    catalog: Catalog,
    results: Sequence[TaskResult],
    hinted: Sequence[str],
    delivered: Sequence[inbox.Announced] = (),
) -> Carry | None:
    """The ``Carry`` of ``results``, or of the inbox rows ``delivered`` (announced with
    their content: ``inbox.announced``) if its step can be carried (see the module)."""
    if not results and delivered:
        return _delivery(cache, catalog, hinted, delivered)
    if not results and not hinted:
        fresh = cache.fresh()
        if fresh is None or catalog.cached(fresh.hash) is None:
            return None
        return Carry(None, fresh, None, "")
    if len(results) != 1 or hinted:
        return None
    (result,) = results
    iid = result.instance_id
    parsed = parse_task_key(result.key)
    if iid is None or parsed is None or parsed.instance != iid:
        return None
    held = cache.carried(iid)
    if held is None:
        return None
    row, instance = held
    table = catalog.cached(row.hash)
    if table is None:
        return None
    if result.event.__class__ is rt.TaskCompleted and asynchronous(table, parsed.node):
        return None  # handed off to wait for its client: the general path
    return Carry(result, row, instance, parsed.node)


def _delivery(
    cache: InstanceCache,
    catalog: Catalog,
    hinted: Sequence[str],
    delivered: Sequence[inbox.Announced],
) -> Carry | None:
    """A lone inbox row announced for the lone instance announced, of an instance this
    process stepped last: its step is carried; anything more goes the general way."""
    if len(hinted) != 1 or len(delivered) != 1 or delivered[0][1] != hinted[0]:
        return None
    held = cache.carried(hinted[0])
    if held is None:
        return None
    row, instance = held
    if catalog.cached(row.hash) is None:
        return None
    return Carry(None, row, instance, "", delivered[0])


class Carrying:
    """When a store carries steps, and the time it steps them at (``now``)."""

    def __init__(self) -> None:
        self.general_at: int | None = None  # the store's clock at the last general advance
        self.in_a_row = 0
        #: the database's clock minus this machine's, as the last general advance read it
        self.offset: int | None = None

    def general(self, at: int, offset: int | None) -> None:
        """A general ``advance`` committed at ``at`` (its clock ``offset``, if it read it)."""
        self.general_at, self.in_a_row = at, 0
        if offset is not None:
            self.offset = offset - ROUNDING_MS

    def time_for(self, c: Carry, own: int | None) -> int | None:
        """The time to step ``c`` at: ``own``, the store's own clock, if it has one; else
        the database's clock as the last general advance found it (not before the row's
        last change, nor before the inbox row it steps was due). None: it is not to be
        carried now. A delivery is carried whenever it comes: an idle worker woken by it
        looks for other work right after it (``Advanced.more``, or its probe), as a worker
        that carries a chain's steps does only once ``CARRY_MS`` have passed."""
        if own is not None:
            at = own
        elif self.offset is None:
            return None
        else:
            at = max(time.time_ns() // 1_000_000 + self.offset, c.row.updated_at)
            if c.delivery is not None:
                at = max(at, c.delivery[5])
        return at if c.delivery is not None or self.allows(at) else None

    def allows(self, now: int) -> bool:
        """Whether a step may be carried at ``now``."""
        at = self.general_at
        return at is not None and now - at <= CARRY_MS and self.in_a_row < CARRY_STEPS

    def carried(self) -> None:
        self.in_a_row += 1


def written(
    locked: Mapping[str, rows.Locked],
    columns: Mapping[str, Moving],
    decoded: Mapping[str, rt.Instance],
) -> dict[str, rows.Locked]:
    """The rows of the instances an ``advance`` stepped, as it left them (their state not
    kept): what a carried step starts from, once committed. ``locked``: the rows as it
    read them; ``columns``: their moving columns as it wrote them."""
    found: dict[str, rows.Locked] = {}
    for iid, inst in decoded.items():
        row, moving = locked.get(iid), columns.get(iid)
        if row is not None and moving is not None:
            status, wake_at, waiting_on, updated_at = moving
            found[iid] = row._replace(seq=inst.seq, state=None, status=status, wake_at=wake_at,
                                      waiting_on=waiting_on, updated_at=updated_at)  # fmt: skip
    return found


def send_guard(tx: Tx, d: Dialect, c: Carry, now: int, clock_sql: str) -> list[Named]:
    """The guard of a carried step (see the module): where the database runs it
    (``Dialect.moved``: it raises ``MOVED_SQLSTATE`` in the server), its named queries
    for the step's first write to carry (``GUARDED``, ``alone``); elsewhere checked at
    once, raising ``Moved`` (nothing to carry). ``clock_sql``: the database's clock,
    which ``now`` (the step's time, estimated) must be within ``CLOCK_SLACK_MS`` before
    ("": ``now`` is the store's clock itself)."""
    r, row = c.result, c.row
    fence = (
        f"UPDATE wf_task SET status = '{TaskStatus.DONE}', lease_owner = NULL, "
        "lease_expires_at = NULL, updated_at = ? WHERE key = ? AND lease_epoch = ? "
        f"AND instance_id = ? AND (status = '{TaskStatus.RUNNING}' "
        f"AND lease_expires_at >= {clock_sql or '?'}) IS TRUE"
    )
    fence_params: tuple[Param, ...] = ()
    if r is not None:
        fence_params = (now, r.key, r.epoch, row.id, *(() if clock_sql else (now,)))
    inbox_due = (
        "EXISTS (SELECT 1 FROM wf_inbox WHERE instance_id = ? AND consumed_seq IS NULL "
        "AND available_at <= ?)"
    )
    # The step is not before the row's last change (a start: its creation, whose time
    # this process may not know).
    same = "seq = ? AND status = ? AND updated_at <= ?"
    if not d.moved:  # one writer: checked at once, with the fence if there is a call
        if c.delivery is not None:  # (announced only where the database notifies)
            raise Moved(f"an inbox row of {row.id} announced where none is")
        unmoved = f"EXISTS (SELECT 1 FROM wf_instance WHERE id = ? AND {same}) AND NOT {inbox_due}"
        checks = (row.id, row.seq, row.status, now, row.id, now)
        if r is None:
            if not rows.scalar(tx.query(f"SELECT {unmoved}", checks)):
                raise Moved(f"instance {row.id} was stepped, set aside or sent an event")
        elif tx.execute(f"{fence} AND {unmoved}", (*fence_params, *checks)) != 1:
            raise Moved(f"the call {r.key} lost its lease, or its instance moved")
        return []
    clock = f" AND ? BETWEEN {clock_sql} - {CLOCK_SLACK_MS} AND {clock_sql}" if clock_sql else ""
    # With the database's clock, ``now`` is an estimate a little behind it: nothing may be
    # due by the database's clock, as the general path (which steps at it) would take it
    # first: no inbox row (a signal sent just before the result, by the handler itself,
    # was missed) and no timer (the step fires those due at ``now`` itself).
    due_at, at = (clock_sql, ()) if clock_sql else ("?", (now,))
    unmoved = same
    if clock_sql and c.instance is not None:  # (a start's ``wake_at`` is its creation)
        unmoved += f" AND (wake_at IS NULL OR wake_at > {clock_sql})"
    fenced: list[Named] = (
        [] if r is None else [("wf_fenced", f"{fence} RETURNING key", fence_params)]
    )
    holds = f"EXISTS (SELECT 1 FROM wf_held WHERE {unmoved})"
    params: tuple[Param, ...] = (row.seq, row.status, now)
    if fenced:
        holds += " AND EXISTS (SELECT 1 FROM wf_fenced)"
    unconsumed = f"instance_id = ? AND consumed_seq IS NULL AND available_at <= {due_at}"
    others: tuple[Param, ...] = ()
    if c.delivery is not None:  # the row announced is there, as announced, and alone due
        rid, _, event, actor, reason, available_at = c.delivery
        holds += (
            f" AND EXISTS (SELECT 1 FROM wf_inbox WHERE id = ? AND {unconsumed} AND "
            "event = ? AND actor IS NOT DISTINCT FROM ? AND reason IS NOT DISTINCT FROM ? "
            "AND available_at = ?)"
        )
        params = (*params, rid, row.id, *at, event, actor, reason, available_at)
        unconsumed, others = f"{unconsumed} AND id <> ?", (rid,)
    due = f"EXISTS (SELECT 1 FROM wf_inbox WHERE {unconsumed})"
    params = (*params, row.id, *at, *others)
    return [
        (
            "wf_held",
            f"SELECT seq, status, updated_at, wake_at FROM wf_instance WHERE id = ?{d.lock}",
            (row.id,),
        ),
        *fenced,
        (
            "wf_guard",
            f"SELECT {d.moved} AS moved WHERE NOT ({holds} AND NOT {due}{clock})",
            (*params, *((now,) if clock_sql else ())),
        ),
    ]


#: The tail of a write that carries the guard's queries (``send_guard``): it reads the
#: guard, so that the guard runs, and raises there if anything moved.
GUARDED = " AND NOT EXISTS (SELECT 1 FROM wf_guard)"


def alone(guard: Sequence[Named]) -> tuple[str, tuple[Param, ...]]:
    """The guard's queries as a statement of their own (no write to carry them)."""
    *head, (_, sql, params) = guard
    return fused((), sql, params, head)


class Guarded:
    """A transaction whose first statement is a carried step's guard (``send_guard``):
    the step's first write carries it (``take``), unless another statement goes first,
    which then sends it alone before itself: nothing a step writes (a call it cancels,
    a row of its inbox) may go before the guard has checked what it checks."""

    def __init__(self, tx: Tx, guard: Sequence[Named]) -> None:
        self.tx = tx
        self.guard = list(guard)

    def take(self) -> list[Named]:
        """The guard, if no statement has sent it yet: the caller's to send."""
        guard, self.guard = self.guard, []
        return guard

    def _before(self) -> None:
        if self.guard:
            self.tx.write(*alone(self.take()))

    def execute(self, sql: str, params: Sequence[Param] = ()) -> int:
        self._before()
        return self.tx.execute(sql, params)

    def write(self, sql: str, params: Sequence[Param] = ()) -> None:
        self._before()
        self.tx.write(sql, params)

    def executemany(self, sql: str, rows: Sequence[Sequence[Param]]) -> None:
        if rows:
            self._before()
            self.tx.executemany(sql, rows)

    def query(self, sql: str, params: Sequence[Param] = ()) -> list[Row]:
        self._before()
        return self.tx.query(sql, params)

    def send(self, sql: str, params: Sequence[Param] = ()) -> Pending:
        self._before()
        return self.tx.send(sql, params)

    def announce(self, instance_id: str = "") -> None:
        self._before()
        self.tx.announce(instance_id)


def moved(err: BaseException) -> bool:
    """Whether ``err`` (or what caused it) is a carried step's guard failing."""
    seen: BaseException | None = err
    while seen is not None:
        if isinstance(seen, Moved) or getattr(seen, "sqlstate", None) == MOVED_SQLSTATE:
            return True
        seen = seen.__cause__ or seen.__context__
    return False
