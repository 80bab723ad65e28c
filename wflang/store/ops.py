"""The store's writes outside ``advance``: creating instances, delivering events,
closing human tasks, renewing leases, acknowledging the outbox, migrating.

Each is a function of a transaction (and the dialect where it differs) that the
store runs in one write transaction; none steps an instance: what they deliver
goes through the instance's inbox, and a worker steps it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from wflang.runtime import codec
from wflang.runtime import instance as rt
from wflang.runtime.ids import instance_seed
from wflang.runtime.ir import Value
from wflang.runtime.keys import task_delivery
from wflang.runtime.table import Table
from wflang.runtime.values import identical
from wflang.store import inbox, rows
from wflang.store.backend import Dialect, Param, Pending, Tx, placeholders
from wflang.store.records import IllegalAction, UnknownInstance, UnknownTask
from wflang.store.schema import Migration
from wflang.store.status import FINISHED, PENDING, TaskKind, TaskStatus

INT64_MAX = 2**63 - 1


def migrate(tx: Tx, dialect: Dialect, m: Migration, now: int) -> bool:
    """Apply one migration unless it was; whether it was applied now."""
    tx.execute(
        "CREATE TABLE IF NOT EXISTS wf_schema (version integer PRIMARY KEY, "
        "name text NOT NULL, applied_at bigint NOT NULL)"
    )
    if tx.query("SELECT 1 FROM wf_schema WHERE version = ?", (m.version,)):
        return False
    extra = m.postgresql if dialect.name == "postgresql" else ()
    for statement in (*m.statements, *extra):
        tx.execute(
            statement.format(
                json=dialect.json, autoid=dialect.autoid, without_rowid=dialect.without_rowid
            )
        )
    tx.execute(
        "INSERT INTO wf_schema (version, name, applied_at) VALUES (?, ?, ?)",
        (m.version, m.name, now),
    )
    return True


def create(
    tx: Tx,
    dialect: Dialect,
    *,
    workflow: str,
    version: int,
    table_hash: str,
    input_text: str,
    instance_id: str,
    now: int | str,
    actor: str | None,
    reason: str | None,
    announce: bool = True,
) -> Pending:
    """Insert an instance for a worker to start, unless its id is taken; the answer
    (``Tx.send``), which may come with the commit, is a row if it was written, its last
    column the time it was created at. One statement, which announces the instance where
    the database notifies (``Dialect.notify``): on PostgreSQL one round trip in all.
    ``now``: the time, or the database's clock as SQL. An id that was taken is
    ``existing``'s to judge, after. Not ``announce``d: started in the same transaction."""
    clock, at = (now, ()) if isinstance(now, str) else ("?", (now,))
    sql = (
        "INSERT INTO wf_instance (id, workflow, version, table_hash, status, input, "
        "seed, wake_at, created_at, updated_at, created_by, created_reason) "
        f"VALUES (?, ?, ?, ?, ?, ?, ?, {clock}, {clock}, {clock}, ?, ?) "
        "ON CONFLICT (id) DO NOTHING RETURNING id, created_at"
    )
    params: tuple[Param, ...] = (
        instance_id, workflow, version, table_hash, PENDING, input_text,
        instance_seed(instance_id), *at, *at, *at, actor, reason,
    )  # fmt: skip
    if dialect.notify and announce:  # a worker is woken only if the row was written
        sql = f"WITH wf_new AS ({sql}) {dialect.notify}, wf_new.created_at FROM wf_new"
        params = (*params, "")
    return tx.send(sql, params)


def existing(tx: Tx, instance_id: str, workflow: str, input: Mapping[str, Value]) -> None:
    """A start whose id was taken (``create``): the same start again if the instance has
    this workflow and input (whichever version it was pinned to), else refused."""
    found = tx.query("SELECT workflow, input FROM wf_instance WHERE id = ?", (instance_id,))
    if found:
        stored_workflow, stored_input = (rows.text(x) for x in found[0])
        given = codec.loads(codec.dumps(dict(input)))  # as stored: 1 is not 1.0
        if stored_workflow == workflow and identical(codec.loads(stored_input), given):
            return
    raise IllegalAction(f"instance '{instance_id}' already exists with another workflow or input")


#: Decides, in the delivering transaction with the instance row locked, the event to
#: deliver from the instance's status and its version's table (``deliver``); raises to
#: refuse it, and then nothing is written.
Admit = Callable[[str, Table], rt.Event]


def deliver(
    tx: Tx,
    dialect: Dialect,
    instance_id: str,
    event: rt.Event | Admit,
    *,
    dedupe_key: str | None,
    now: int | str,
    actor: str | None,
    reason: str | None,
    unless_pending: Callable[[rt.Event, str | None], None] | None,
    table_for: Callable[[str], Table],
) -> Pending:
    """Put an event in an instance's inbox, the instance row locked, and announce it
    where the insert can (``Dialect.notify``); the answer says whether it was written
    (no row: its dedupe key was already there). ``event`` may be
    an ``Admit``, given the instance's status and table; ``unless_pending`` sees each
    event still waiting in the inbox and raises to refuse the delivery. ``now``: the
    time, or the database's clock as SQL, read with the lock.

    The lock (with the inbox rows ``unless_pending`` reads) is one round trip on
    PostgreSQL, with BEGIN; the insert goes with the COMMIT, its answer read after it:
    two in all, and a third only for a table this process has not read.
    """
    clock = now if isinstance(now, str) else "?"
    locked = tx.send(
        f"SELECT status, table_hash, {clock} FROM wf_instance WHERE id = ?{dialect.lock}",
        (instance_id,) if isinstance(now, str) else (now, instance_id),
    )
    waiting = (
        tx.send(
            "SELECT event, actor FROM wf_inbox WHERE instance_id = ? "
            "AND consumed_seq IS NULL ORDER BY id",
            (instance_id,),
        )
        if unless_pending is not None
        else None
    )
    found = locked()
    if not found:
        raise UnknownInstance(instance_id)
    status, digest, at = found[0]
    if callable(event):
        event = event(rows.text(status), table_for(rows.text(digest)))
    if unless_pending is not None and waiting is not None:
        for text, by in waiting():
            unless_pending(codec.load_event(rows.text(text)), rows.maybe_text(by))
    # The row announces itself where the database notifies (one statement fewer than
    # ``inbox.hint``); a duplicate wakes no worker.
    return inbox.put(tx, instance_id, event, dedupe_key, at=rows.integer(at), actor=actor,
                     reason=reason, announce=dialect.notify)  # fmt: skip


def deliver_at_once(
    write: Callable[[Callable[[Tx], Pending]], Pending],
    dialect: Dialect,
    instance_id: str,
    admit: Admit,
    tables: Mapping[str, Table],
    *,
    dedupe_key: str | None,
    now: int | str,
    actor: str | None,
    reason: str | None,
) -> bool | None:
    """``deliver`` as one statement (PostgreSQL: one round trip with its commit), run by
    ``write`` (a write transaction), for an ``admit`` that refuses the finished statuses
    and judges the others by the table alone (a signal's). It is asked first of each of
    ``tables`` (those this process has read); the row goes in if the instance, locked,
    is unfinished and of one of the versions that admitted the same event. The answer:
    whether the row was written (False: its dedupe key was there); None if this could
    not tell (no version, or not one event, admitted; the instance finished, or of
    another version): ``deliver`` then decides, and says why if it refuses."""
    admitted: dict[str, set[str]] = {}
    for digest, table in tables.items():
        try:
            event = admit(rt.Status.RUNNING.value, table)
        except Exception:  # not this version's: ``deliver`` says why, if it is its
            continue
        admitted.setdefault(codec.dump_event(event), set()).add(digest)
    if len(admitted) != 1:
        return None
    ((text, digests),) = admitted.items()
    clock, at = (now, ()) if isinstance(now, str) else ("?", (now,))
    finished = ", ".join(f"'{s}'" for s in FINISHED)
    sql = (
        f"WITH wf_target AS (SELECT status, table_hash FROM wf_instance WHERE id = ?"
        f"{dialect.lock}), wf_put AS (INSERT INTO wf_inbox (instance_id, event, dedupe_key, "
        f"actor, reason, available_at) SELECT ?, ?, ?, ?, ?, {clock} FROM wf_target WHERE "
        f"status NOT IN ({finished}) AND table_hash IN ({placeholders(len(digests))}) "
        f"ON CONFLICT (instance_id, dedupe_key) DO NOTHING {inbox.RETURNING}) "
        "SELECT status, table_hash, (SELECT count(*) FROM wf_put)"
        f"{f', ({inbox.announcing(dialect.notify)})' if dialect.notify else ''} FROM wf_target"
    )
    params = (instance_id, instance_id, text, dedupe_key, actor, reason, *at, *sorted(digests))
    found = write(lambda tx: tx.send(sql, params))()
    if not found:
        raise UnknownInstance(instance_id)
    state, version, written = found[0][:3]
    if rows.integer(written):
        return True
    if rows.text(state) in FINISHED or rows.text(version) not in digests:
        return None
    return False  # its dedupe key was there


#: What a person or the client may close: an open human task, a waiting async call.
_CLOSABLE = ((TaskKind.HUMAN, TaskStatus.OPEN), (TaskKind.SERVICE, TaskStatus.WAITING))


def close_human_task(
    tx: Tx,
    key: str,
    event: rt.TaskCompleted | rt.TaskFailed,
    *,
    now: int,
    actor: str | None,
    reason: str | None,
) -> None:
    """Finish an open human task, or an async service call waiting for the client: the
    task closes and its event is delivered, together."""
    found = tx.query("SELECT instance_id, status, kind FROM wf_task WHERE key = ?", (key,))
    if not found:
        raise UnknownTask(f"no task '{key}'")
    iid, status, kind = (rows.text(x) for x in found[0])
    if (kind, status) not in _CLOSABLE:
        raise IllegalAction(f"task '{key}' is a {kind} task that is {status}, not open")
    tx.execute(
        f"UPDATE wf_task SET status = '{TaskStatus.DONE}', updated_at = ? WHERE key = ?",
        (now, key),
    )
    inbox.put(tx, iid, event, task_delivery(key), at=now, actor=actor, reason=reason)


def heartbeat(tx: Tx, leases: Sequence[tuple[str, int]], lease_ms: int, now: int) -> list[str]:
    """Extend the leases still held; the keys of those that were lost."""
    lost = []
    for key, epoch in leases:
        # An expired lease is lost even if nobody took the call over yet: it cannot
        # be revived, so a worker that was paused past it never commits.
        n = tx.execute(
            "UPDATE wf_task SET lease_expires_at = ? WHERE key = ? AND lease_epoch = ? "
            f"AND status = '{TaskStatus.RUNNING}' AND lease_expires_at >= ?",
            (now + lease_ms, key, epoch, now),
        )
        if n == 0:
            lost.append(key)
    return lost


def mark_published(tx: Tx, ids: Sequence[int], now: int) -> int:
    """Acknowledge outbox events; how many were still unpublished."""
    done = 0
    for i in range(0, len(ids), 500):
        part = [int(x) for x in ids[i : i + 500] if 0 < int(x) <= INT64_MAX]
        if part:
            done += tx.execute(
                f"UPDATE wf_outbox SET published_at = ? WHERE id IN "
                f"({placeholders(len(part))}) AND published_at IS NULL",
                (now, *part),
            )
    return done
