"""An instance's inbox: the events a worker steps it with next.

Everything that reaches an instance from outside its own step (a signal, a
message, a human task's result, an operator's action, a child's outcome, a
parent's cancel, an interrupted call) is a row here, written in the
transaction of whatever caused it. A dedupe key makes a delivery happen once:
a second row with the same key for the same instance is not written.
"""

from __future__ import annotations

import json

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
    notification (``Dialect.notify``), sent by the same statement with the row itself
    if it is written (``announcing``; as ``hint`` would, one statement fewer)."""
    params: tuple[Param, ...] = (instance_id, codec.dump_event(event), dedupe_key, actor,
                                 reason, at)  # fmt: skip
    if announce:
        return tx.send(f"WITH wf_put AS ({_PUT} {RETURNING}) {announcing(announce)}", params)
    return tx.send(_PUT + " RETURNING id", params)


#: What an inbox row written in a ``wf_put`` query returns for ``announcing``.
RETURNING = "RETURNING id, instance_id, event, actor, reason, available_at"
#: An inbox row as a notification carries it (``announcing``): ``rows.INBOX_COLUMNS``,
#: its event as text.
Announced = tuple[int, str, str, str | None, str | None, int]
#: The first character of a notification that carries the inbox row it announces.
ROW_MARK = "\x1e"
#: The longest notification PostgreSQL sends is 7,999 bytes; a longer row is announced
#: by its instance's id alone.
_LONGEST_PAYLOAD = 7_900


def announcing(notify: str) -> str:
    """The query (over ``wf_put``, an inbox row written with ``RETURNING``) that sends
    ``notify`` (``Dialect.notify``: one parameter, the payload) with the row it wrote, in
    ``inbox_row``'s columns: the worker it wakes can step the instance with it without
    reading it first (``wflang.store.carried``), its guard checking that the row is as
    announced. A row too long for a notification is announced by its instance's id."""
    row = (
        "chr(30) || json_build_array(wf_put.id, wf_put.instance_id, wf_put.event, "
        "wf_put.actor, wf_put.reason, wf_put.available_at)::text"
    )
    payload = (
        f"CASE WHEN octet_length(wf_row.p) <= {_LONGEST_PAYLOAD} THEN wf_row.p "
        "ELSE wf_put.instance_id END"
    )
    return f"{notify.replace('?', payload)} FROM wf_put, LATERAL (SELECT {row} AS p) AS wf_row"


def announced(payload: str) -> tuple[str, Announced | None]:
    """A notification's payload read: the instance announced and the inbox row it
    carries (``announcing``), if it carries one; anything else is an instance's id. A
    payload not as ``announcing`` writes it (anyone may notify the channel) is read as
    an id: neither a parse error nor a row no statement could take (a NUL in its text)
    may stop the worker's listener or fail its step."""
    if payload.startswith(ROW_MARK):
        try:
            row = json.loads(payload[1:])
        except (ValueError, RecursionError):  # (deep nesting: "[[[[...")
            return payload, None
        texts = (1, 2, 3, 4)
        if (
            isinstance(row, list)
            and len(row) == 6
            and type(row[0]) is int
            and isinstance(row[1], str)
            and isinstance(row[2], str)
            and all(x is None or isinstance(x, str) for x in row[3:5])
            and type(row[5]) is int
            and not any(row[i] is not None and "\x00" in row[i] for i in texts)
        ):
            rid, iid, event, actor, reason, at = row
            return iid, (rid, iid, event, actor, reason, at)
    return payload, None


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
