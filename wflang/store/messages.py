"""Messages published by correlation, durably.

A workflow waits for a message with ``wait NAME: message M correlate EXPR``; the
step function evaluates EXPR when the wait begins and the token then waits for
``message:M:TEXT`` (``wflang.runtime.correlation``). Whoever publishes M does not
know which instances wait: they give the correlation value, and the store finds them.

* Each step keeps ``wf_subscription`` in line with the instance's tokens, in the
  step's transaction: a row per token waiting for a message.
* ``publish`` delivers the message to every instance subscribed to (M, TEXT) at
  that moment, through its inbox (a worker steps it as for a signal). With a TTL
  the message is also kept in ``wf_message`` until it expires, and an instance that
  starts waiting for (M, TEXT) before then gets it when its subscription is made.
  Each instance gets a given publication at most once (its inbox's dedupe key), and
  one with a key at most once whichever way it came (published, or sent by id with
  ``wf signal --message --key``): the instances it reached are those that take it.
* With a ``key``, publishing the same message again is recognised and ignored
  while the first publication is kept (its TTL, and until it is purged).

Both paths take a lock on (M, TEXT) first (an advisory lock on PostgreSQL; SQLite
has one writer anyway), so a publication and a subscription made at the same
moment always meet: whichever commits second sees the other.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from attrs import frozen

from wflang.runtime import codec
from wflang.runtime import instance as rt
from wflang.runtime.ir import Value
from wflang.runtime.keys import Delivery, delivery_key, publication_delivery
from wflang.runtime.waiting import Wait
from wflang.store import rows
from wflang.store.backend import Dialect, Tx

#: Puts an event in an instance's inbox (the store's ``_inbox``); False if its dedupe
#: key was already there.
Inbox = Callable[[Tx, str, rt.Event, str | None], bool]
#: A payload as the version with this table hash declares the message (its time text
#: read as milliseconds), None when it does not fit there: (table hash, message, payload).
#: A message is kept as published; each instance takes it as its own version reads it.
Taken = Callable[[str, str, Mapping[str, Value]], dict[str, Value] | None]


@frozen
class Published:
    """What a ``publish`` did."""

    message: str
    correlation: str
    delivered: tuple[str, ...]  # the instances it was given to now
    kept_until: int | None  # kept for later subscribers until then (a TTL was given)
    duplicate: bool = False  # the key was published before: nothing was done


def _dedupe(message_id: int, message: str, key: str | None) -> str:
    """The inbox key of a publication: with a key, the one a message sent by id with
    that key has too (``delivery_key``), so an instance that took it either way is not
    given it again, nor counted as reached; without, the publication's own."""
    return (
        publication_delivery(message_id)
        if key is None
        else delivery_key(Delivery.MESSAGE, message, key)
    )


def lock(tx: Tx, dialect: Dialect, message: str, correlation: str) -> None:
    """Serialise publications and subscriptions of one (message, correlation)."""
    if dialect.key_lock:
        tx.execute(dialect.key_lock, (f"{message}\x1f{correlation}",))


def publish(
    tx: Tx,
    dialect: Dialect,
    inbox: Inbox,
    taken: Taken,
    *,
    now: int,
    message: str,
    correlation: str,
    payload: Mapping[str, Value],
    key: str | None,
    ttl_ms: int,
    actor: str | None,
) -> Published:
    lock(tx, dialect, message, correlation)
    if key is not None and tx.query(
        "SELECT 1 FROM wf_message WHERE message = ? AND dedupe_key = ?", (message, key)
    ):
        return Published(message, correlation, (), None, duplicate=True)
    kept_until = now + ttl_ms if ttl_ms > 0 else None
    dedupe: str | None = None
    if key is not None or kept_until is not None:
        published = tx.query(
            "INSERT INTO wf_message (message, correlation, payload, dedupe_key, actor, "
            "published_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id",
            (message, correlation, codec.dumps(dict(payload)), key, actor, now,
             kept_until if kept_until is not None else now),
        )  # fmt: skip
        dedupe = _dedupe(rows.scalar(published), message, key)
    delivered = []
    for iid, digest in tx.query(
        "SELECT DISTINCT s.instance_id, i.table_hash FROM wf_subscription s "
        "JOIN wf_instance i ON i.id = s.instance_id "
        "WHERE s.message = ? AND s.correlation = ? ORDER BY s.instance_id",
        (message, correlation),
    ):
        # Each instance gets it only if its own version's declaration takes the payload.
        data = taken(rows.text(digest), message, payload)
        if data is None:
            continue
        event = rt.SignalReceived(message, data, key or "", Wait.MESSAGE.value, correlation)
        if inbox(tx, rows.text(iid), event, dedupe):
            delivered.append(rows.text(iid))
    return Published(message, correlation, tuple(delivered), kept_until)


def resubscribe(
    tx: Tx,
    dialect: Dialect,
    inbox: Inbox,
    taken: Taken,
    *,
    now: int,
    instance_id: str,
    table_hash: str,
    before: Mapping[int, tuple[str, str]],
    after: Mapping[int, tuple[str, str]],
) -> int:
    """Bring an instance's subscriptions from ``before`` to ``after`` (its steps in this
    transaction) and hand it the kept messages its new ones match; how many."""
    gone = [tid for tid, sub in before.items() if after.get(tid) != sub]
    new = sorted((sub, tid) for tid, sub in after.items() if before.get(tid) != sub)
    for part in range(0, len(gone), 500):
        ids = gone[part : part + 500]
        tx.execute(
            "DELETE FROM wf_subscription WHERE instance_id = ? AND token IN "
            f"({', '.join('?' for _ in ids)})",
            (instance_id, *ids),
        )
    handed = 0
    for (message, correlation), tid in new:
        lock(tx, dialect, message, correlation)
        tx.execute(
            "INSERT INTO wf_subscription (instance_id, token, message, correlation, "
            "created_at) VALUES (?, ?, ?, ?, ?)",
            (instance_id, tid, message, correlation, now),
        )
        for msg_id, payload, dedupe_key in tx.query(
            "SELECT id, payload, dedupe_key FROM wf_message WHERE message = ? "
            "AND correlation = ? AND expires_at > ? ORDER BY id",
            (message, correlation, now),
        ):
            data = taken(table_hash, message, codec.loads(rows.text(payload)))
            if data is None:  # kept for another version's declaration
                continue
            key = rows.maybe_text(dedupe_key)
            event = rt.SignalReceived(message, data, key or "", Wait.MESSAGE.value, correlation)
            handed += inbox(tx, instance_id, event, _dedupe(rows.integer(msg_id), message, key))
    return handed
