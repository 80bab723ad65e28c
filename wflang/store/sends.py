"""What a send task does on a store: in the transaction of the step that sends.

A ``send signal S to ID`` puts the signal in the inbox of instance ``ID`` (if it is
there, not finished, and its version declares ``S`` with a payload it takes); a ``send
message M correlate C`` publishes ``M`` as ``wflang.store.messages`` publishes any
message. Both are keyed by the send task's key, so that the send happens once with its
step: the step and its delivery commit together, or neither does. Each send is also an
outbox row (``signal.sent``, ``message.sent``) naming the instances it reached.
"""

from __future__ import annotations

from wflang.runtime import codec
from wflang.runtime import instance as rt
from wflang.runtime.keys import Delivery, delivery_key
from wflang.runtime.validate import fit_payload
from wflang.runtime.waiting import Wait
from wflang.store import inbox, messages, rows
from wflang.store.backend import Dialect, Tx
from wflang.store.catalog import Catalog
from wflang.store.status import FINISHED, OutboxKind

_SENT = {Wait.SIGNAL.value: OutboxKind.SIGNAL_SENT, Wait.MESSAGE.value: OutboxKind.MESSAGE_SENT}


def send(
    tx: Tx, dialect: Dialect, catalog: Catalog, *, now: int, sender: str, seq: int, c: rt.Send
) -> tuple[str, ...]:
    """Carry out a send of instance ``sender`` at its step ``seq``; the instances reached."""
    reason = f"sent by instance {sender}"
    if c.kind == Wait.SIGNAL.value:
        reached = _signal(tx, catalog, now, reason, c)
    else:
        published = messages.publish(
            tx,
            dialect,
            lambda t, iid, event, dedupe: inbox.written(
                inbox.put(t, iid, event, dedupe, at=now, reason=reason)
            ),
            lambda digest, name, data: catalog.message_taken(tx, digest, name, data),
            now=now,
            message=c.name,
            correlation=c.to,
            payload=c.payload,
            key=c.key,
            ttl_ms=0,
            actor=None,
        )
        reached = published.delivered
    payload = {"key": c.key, "name": c.name, "to": c.to, "payload": c.payload,
               "reached": list(reached)}  # fmt: skip
    tx.execute(
        "INSERT INTO wf_outbox (instance_id, seq, kind, payload, created_at) "
        "VALUES (?, ?, ?, ?, ?)",
        (sender, seq, _SENT[c.kind].value, codec.dumps(payload), now),
    )
    return reached


def _signal(tx: Tx, catalog: Catalog, now: int, reason: str, c: rt.Send) -> tuple[str, ...]:
    """The signal in the inbox of the instance it is sent to, if that one takes it."""
    found = tx.query("SELECT table_hash, status FROM wf_instance WHERE id = ?", (c.to,))
    if not found or rows.text(found[0][1]) in FINISHED:
        return ()
    data, problems = fit_payload(
        catalog.table_for(tx, rows.text(found[0][0])), Wait.SIGNAL.value, c.name, c.payload
    )
    if problems:  # its version does not declare the signal so: not delivered
        return ()
    event = rt.SignalReceived(c.name, data, c.key)
    dedupe = delivery_key(Delivery.SIGNAL, c.name, c.key)
    delivered = inbox.written(inbox.put(tx, c.to, event, dedupe, at=now, reason=reason))
    return (c.to,) if delivered else ()
