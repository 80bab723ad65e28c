"""The rows a step writes for its own instance (``wflang.store.advance``): the
instance's row, its history, and its status changes as outbox rows."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from itertools import compress

from wflang.runtime import codec
from wflang.runtime.ir import Value
from wflang.runtime.lifecycle import INSTANCE, StatusEvent
from wflang.store.backend import Param
from wflang.store.status import OutboxKind

#: The columns of an instance row that a step may leave as they were, in this order.
MOVING = ("status", "wake_at", "waiting_on", "updated_at")


@functools.cache
def update_instance(changed: tuple[bool, ...]) -> str:
    """The UPDATE of an instance's state and seq and of the ``MOVING`` columns that
    ``changed`` says."""
    sets = "".join(f", {column} = ?" for column in compress(MOVING, changed))
    return f"UPDATE wf_instance SET state = ?, seq = ?{sets} WHERE id = ?"


HISTORY_INSERT = (
    "INSERT INTO wf_history (instance_id, seq, at, event, input, decisions, commands, "
    "changes, idempotency_key, actor, reason, worker) VALUES "
)
HISTORY_ROW = "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
#: The most history rows written as one part of a fused statement: each count of rows is
#: a statement of its own for the server to prepare; more go a row at a time.
FUSED_HISTORY = 8


OUTBOX_INSERT = (
    "INSERT INTO wf_outbox (instance_id, seq, kind, payload, created_at) VALUES (?, ?, ?, ?, ?)"
)
#: An inbox row a step took: its ``consumed_seq`` set (if no step took it already).
CONSUME = "UPDATE wf_inbox SET consumed_seq = ? WHERE id = ? AND consumed_seq IS NULL"
#: The most outbox rows written as one part of a fused statement (as ``FUSED_HISTORY``).
FUSED_OUTBOX = 4


def fusable(
    consumed: list[tuple[Param, ...]], outbox: list[tuple[Param, ...]]
) -> list[tuple[str, Sequence[Param]]]:
    """The parts of a fused statement (``backend.fused``) that write one step's consumed
    inbox rows and its outbox rows, taken out of ``consumed`` and ``outbox`` (those left
    there, too many to fuse, go as statements of their own): on PostgreSQL the step of a
    delivery (a signal's) sends two statements fewer, each ~45 us of the client's CPU.
    Each consumed row is a part of its own: distinct rows of ``wf_inbox``, which no
    other part touches."""
    parts: list[tuple[str, Sequence[Param]]] = []
    if len(consumed) <= FUSED_HISTORY:
        parts += [(CONSUME, row) for row in consumed]
        consumed.clear()
    if 0 < len(outbox) <= FUSED_OUTBOX:
        values = ", ".join(["(?, ?, ?, ?, ?)"] * len(outbox))
        parts.append((f"{OUTBOX_INSERT.removesuffix('(?, ?, ?, ?, ?)')}{values}",
                      [x for row in outbox for x in row]))  # fmt: skip
        outbox.clear()
    return parts


def outbox_row(e: StatusEvent) -> tuple[Param, ...]:
    """A status change as an ``instance.status`` or ``task.status`` outbox row."""
    payload: dict[str, Value] = {"workflow": e.workflow, "version": e.version, "status": e.status}
    if e.subject == INSTANCE:
        kind = OutboxKind.INSTANCE_STATUS.value
    else:
        kind = OutboxKind.TASK_STATUS.value
        payload.update(node=e.node, key=e.key, attempt=e.attempt)
    if e.error is not None:
        payload["error"] = e.error
    return (e.instance_id, e.seq, kind, codec.dumps(payload), e.at)
