"""An instance's inbox: the events a worker steps it with next.

Everything that reaches an instance from outside its own step (a signal, a
message, a human task's result, an operator's action, a child's outcome, a
parent's cancel, an interrupted call) is a row here, written in the
transaction of whatever caused it. A dedupe key makes a delivery happen once:
a second row with the same key for the same instance is not written.
"""

from __future__ import annotations

from wflang.runtime import codec
from wflang.runtime import instance as rt
from wflang.store.backend import Param, Pending, Tx

_PUT = (
    "INSERT INTO wf_inbox (instance_id, event, dedupe_key, actor, reason, available_at) "
    "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (instance_id, dedupe_key) DO NOTHING"
)


def put(
    tx: Tx,
    instance_id: str,
    event: rt.Event,
    dedupe_key: str | None,
    *,
    at: int,
    actor: str | None = None,
    reason: str | None = None,
    announce: str = "",
) -> Pending:
    """Put an event in an instance's inbox, due at ``at``. The answer, read by calling
    the result (``Tx.send``: on PostgreSQL it may come with a later statement, the
    COMMIT), is a row if it was written, none if its dedupe key was already there
    (nothing is written): ``written`` says which. ``announce``: the dialect's
    notification (``Dialect.notify``), sent by the same statement with the instance's
    id if the row is written (as ``hint`` would, one statement fewer)."""
    sql = _PUT + " RETURNING id"
    params: tuple[Param, ...] = (instance_id, codec.dump_event(event), dedupe_key, actor,
                                 reason, at)  # fmt: skip
    if announce:
        sql, params = f"WITH wf_put AS ({sql}) {announce} FROM wf_put", (*params, instance_id)
    return tx.send(sql, params)


def written(answer: Pending) -> bool:
    """Whether ``put`` wrote its row (waiting for the answer if it has not come)."""
    return bool(answer())


def post(
    tx: Tx,
    instance_id: str,
    event: rt.Event,
    dedupe_key: str | None,
    *,
    at: int,
) -> None:
    """``put``, not waiting to know whether the row was written (``Tx.write``)."""
    tx.write(_PUT, (instance_id, codec.dump_event(event), dedupe_key, None, None, at))


def hint(tx: Tx, instance_id: str = "") -> None:
    """Wake idle workers when this transaction commits (a hint only: workers poll anyway);
    ``instance_id``: the one instance whose inbox it wrote, if so (``Tx.announce``)."""
    tx.announce(instance_id)
