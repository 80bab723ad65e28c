"""Rows to typed records: each query's columns named next to the function that reads
them, so that no code reads a row by position.

A database hands back ``object``s (SQLite ints and strs, psycopg the same for
these columns); ``integer`` and ``text`` say what each column holds, once.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import NamedTuple

from wflang.runtime import codec
from wflang.runtime import instance as rt
from wflang.runtime.engine import HistoryEntry
from wflang.runtime.outcome import bounded
from wflang.store.records import HistoryRow, InstanceInfo, OutboxEvent, TaskInfo, VersionInfo

Row = Sequence[object]


def integer(x: object) -> int:
    """An integer column (a count, a time, a sequence number)."""
    return x if type(x) is int else int(str(x))


#: A text column (builtin ``str``: a column read per row of every advance, at C speed).
text: Callable[[object], str] = str


def maybe_integer(x: object) -> int | None:
    return None if x is None else integer(x)


def maybe_text(x: object) -> str | None:
    return None if x is None else text(x)


def scalar(rows: Sequence[Row]) -> int:
    """The one integer of a one-row, one-column answer (``count(*)``)."""
    return integer(rows[0][0])


INSTANCE_COLUMNS = (
    "id, workflow, version, table_hash, status, input, state, parent_id, wake_at, "
    "created_at, updated_at, waiting_on"
)


#: The error of an instance whose stored state cannot be decoded.
UNREADABLE = "the stored state cannot be read"


def instance_info(row: Row) -> InstanceInfo:
    (iid, workflow, version, digest, status, input, state, parent, wake, created, updated,
     waits) = row  # fmt: skip
    instance, unreadable = None, None
    if state is not None:
        try:
            instance = codec.load_instance(text(state))
        except Exception as err:  # shown, not raised: one bad row never hides the others
            unreadable = f"{UNREADABLE}: {bounded(err)}"
    return InstanceInfo(
        id=text(iid),
        workflow=text(workflow),
        version=integer(version),
        table_hash=text(digest),
        status=text(status),
        input=codec.loads(text(input)),
        instance=instance,
        unreadable=unreadable,
        parent_id=maybe_text(parent),
        wake_at=maybe_integer(wake),
        created_at=integer(created),
        updated_at=integer(updated),
        waiting_on=tuple(text(waits).split()) if waits is not None else (),
    )


TASK_COLUMNS = (
    "key, instance_id, node, kind, service, args, attempt, form, assignee, status, "
    "claims, lease_owner, lease_epoch, created_at, updated_at"
)


def task_info(row: Row) -> TaskInfo:
    (key, iid, node, kind, service, args, attempt, form, assignee, status, claims, owner,
     epoch, created, updated) = row  # fmt: skip
    return TaskInfo(
        key=text(key),
        instance_id=text(iid),
        node=text(node),
        kind=text(kind),
        service=maybe_text(service),
        args=codec.loads(text(args)),
        attempt=integer(attempt),
        form=tuple(codec.loads(text(form))) if form is not None else (),
        assignee=maybe_text(assignee),
        status=text(status),
        claims=integer(claims),
        lease_owner=maybe_text(owner),
        lease_epoch=integer(epoch),
        created_at=integer(created),
        updated_at=integer(updated),
    )


HISTORY_COLUMNS = (
    "seq, at, event, input, decisions, commands, changes, idempotency_key, actor, reason, worker"
)


def history_row(row: Row) -> HistoryRow:
    seq, at, event, input, decisions, commands, changes, key, actor, reason, worker = row
    entry = HistoryEntry(
        integer(seq),
        integer(at),
        None if event is None else codec.load_event(text(event)),
        None if input is None else codec.loads(text(input)),
        tuple(codec.loads(text(decisions))),
        codec.structure_commands(codec.loads(text(commands))),
        () if changes is None else codec.structure_changes(codec.loads(text(changes))),
    )
    return HistoryRow(entry, text(key), maybe_text(actor), maybe_text(reason), maybe_text(worker))


OUTBOX_COLUMNS = "id, instance_id, seq, kind, payload, created_at"


def outbox_event(row: Row) -> OutboxEvent:
    oid, iid, seq, kind, payload, created = row
    return OutboxEvent(
        id=integer(oid),
        instance_id=text(iid),
        seq=integer(seq),
        kind=text(kind),
        payload=codec.loads(text(payload)),
        created_at=integer(created),
    )


def version_info(row: Row, latest: Mapping[str, int]) -> VersionInfo:
    """A row of ``versions`` (name, version, hash, deployed_at, running, finished), given
    the latest version of each workflow."""
    name, version, digest, at, running, finished = row
    return VersionInfo(
        text(name),
        integer(version),
        text(digest),
        integer(at),
        integer(running or 0),
        integer(finished or 0),
        latest[text(name)] == integer(version),
    )


#: The columns of an instance row an ``advance`` locks (``Locked``).
LOCKED_COLUMNS = (
    "id, table_hash, seq, state, input, seed, parent_id, parent_key, created_by, created_reason, "
    "status, wake_at, waiting_on, updated_at"
)


class Locked(NamedTuple):
    """An instance row an ``advance`` holds, as read (its state not decoded yet)."""

    id: str
    hash: str
    seq: int
    state: str | None
    input_text: str
    seed: int
    parent_id: str | None
    parent_key: str | None
    created_by: str | None
    created_reason: str | None
    #: the columns a step may leave as they are (``advance``: only changed ones are set)
    status: str
    wake_at: int | None
    waiting_on: str | None
    updated_at: int


def locked(row: Row) -> Locked:
    iid, digest, seq, state, inp, seed, pid, pkey, by, why, status, wake, waits, moved = row
    # Inline, not through maybe_text: this runs for every instance of every advance.
    return Locked(
        str(iid), str(digest), integer(seq), None if state is None else str(state), str(inp),
        integer(seed), None if pid is None else str(pid), None if pkey is None else str(pkey),
        None if by is None else str(by), None if why is None else str(why),
        str(status), None if wake is None else integer(wake),
        None if waits is None else str(waits), integer(moved),
    )  # fmt: skip


#: The inbox rows an ``advance`` gathers (``inbox_event``).
INBOX_COLUMNS = "id, instance_id, event, actor, reason, available_at"


class InboxRow(NamedTuple):
    id: int
    instance_id: str
    event: rt.Event
    actor: str | None
    reason: str | None
    available_at: int


def inbox_row(row: Row) -> InboxRow:
    rid, iid, event, actor, reason, at = row
    return InboxRow(
        integer(rid),
        text(iid),
        codec.load_event(text(event)),
        maybe_text(actor),
        maybe_text(reason),
        integer(at),
    )


#: The columns of a call a worker leases (``leased``).
LEASED_COLUMNS = "key, instance_id, node, service, args, attempt, lease_epoch, claims, at_most_once"


class Leased(NamedTuple):
    """A call as its lease returned it: how often it has been claimed, and whether it was
    started as at-most-once (its arguments still as stored)."""

    key: str
    instance_id: str
    node: str
    service: str
    args_json: str
    attempt: int
    epoch: int
    claims: int
    at_most_once: bool


def leased(row: Row) -> Leased:
    key, iid, node, service, args, attempt, epoch, claims, once = row
    return Leased(
        text(key),
        text(iid),
        text(node),
        text(service),
        text(args),
        integer(attempt),
        integer(epoch),
        integer(claims),
        bool(integer(once)),
    )
