"""The reads of an ``advance`` transaction (``wflang.store.advance``), sent together.

Each function sends its statements and returns their answers to read later
(``Tx.send``): on PostgreSQL they go to the server in one pipeline and come back in
one round trip, with ``BEGIN`` and the database's clock. The time in them is given as
``At``: SQL and its parameters, so that a statement can compute the database's clock
itself while the store has not read it yet.
"""

from __future__ import annotations

from collections.abc import Sequence

from wflang.store import rows
from wflang.store.backend import Dialect, Pending, Tx, chunks, placeholders
from wflang.store.status import TaskStatus

#: The time in a statement: its SQL (``?`` or an expression) and its parameters.
At = tuple[str, tuple[int, ...]]

#: Closes calls whose results hold their lease (``send_fence``): the head of the statement.
_FENCE = (
    f"UPDATE wf_task SET status = '{TaskStatus.DONE}', lease_owner = NULL, "
    "lease_expires_at = NULL, updated_at = {now} WHERE (key, lease_epoch, instance_id) IN "
)
_FENCE_TAIL = (
    f" AND status = '{TaskStatus.RUNNING}' AND lease_expires_at >= {{now}} "
    "RETURNING key, lease_epoch, node"
)


def send_lock(tx: Tx, d: Dialect, ids: Sequence[str]) -> list[Pending]:
    """Lock these instances, waiting for them, in id order (no deadlocks)."""
    return [
        tx.send(
            f"SELECT {rows.LOCKED_COLUMNS} FROM wf_instance "
            f"WHERE id IN ({placeholders(len(part))}) ORDER BY id{d.lock}",
            tuple(part),
        )
        for part in chunks(ids)
    ]


def send_fence(tx: Tx, at: At, results: Sequence[tuple[str, int, str | None]]) -> list[Pending]:
    """Close the calls (key, epoch, instance) whose results still hold their lease, a
    statement per chunk (``fenced`` reads which did)."""
    pending = [(key, epoch, iid) for key, epoch, iid in results if iid is not None]
    now, params = at
    sent = []
    for i in range(0, len(pending), 300):
        part = pending[i : i + 300]
        values = ", ".join("(?, ?, ?)" for _ in part)
        sent.append(
            tx.send(
                f"{_FENCE}(VALUES {values}){_FENCE_TAIL}".format(now=now),
                (*params, *(x for row in part for x in row), *params),
            )
        )
    return sent


def fenced(sent: Sequence[Pending]) -> dict[tuple[str, int], str]:
    """The (key, epoch) pairs whose calls were closed, with their node; any other
    result is stale."""
    return {
        (rows.text(key), rows.integer(epoch)): rows.text(node)
        for answer in sent
        for key, epoch, node in answer()
    }


def send_ready(tx: Tx, d: Dialect, at: At, limit: int, held: int) -> list[Pending]:
    """Lock up to ``limit`` more instances with something due, skipping locked ones.

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
    queries: list[tuple[str, tuple[int, ...]]]
    if d.single_writer:  # nothing to skip: one statement finds both kinds
        queries = [(f"WHERE wake_at <= {now} OR {due_inbox} LIMIT ?", (*params, *params))]
    else:
        queries = [
            (f"WHERE wake_at <= {now} ORDER BY wake_at LIMIT ?", params),
            (f"WHERE {due_inbox} LIMIT ?", params),
        ]
    return [
        tx.send(
            f"SELECT {rows.LOCKED_COLUMNS} FROM wf_instance {where}{d.skip_locked}",
            (*where_params, limit + held),
        )
        for where, where_params in queries
    ]


def send_inbox(tx: Tx, at: At, ids: Sequence[str]) -> list[Pending]:
    """Ask for the due inbox rows of these instances, in the order they came."""
    now, params = at
    return [
        tx.send(
            f"SELECT {rows.INBOX_COLUMNS} FROM wf_inbox "
            f"WHERE instance_id IN ({placeholders(len(part))}) AND consumed_seq IS NULL "
            f"AND available_at <= {now} ORDER BY id",
            (*part, *params),
        )
        for part in chunks(sorted(ids))
    ]
