"""Message correlation: how a published message finds the instances waiting for it.

``wait NAME: message M correlate EXPR`` evaluates EXPR when the wait begins; the
token then waits for ``message:M:TEXT``, TEXT being the value as text (a string as
it is, an int in decimal). A message published for (M, TEXT) goes to every token
waiting for exactly that. The engine and the durable store both route with these
two functions, so they agree.
"""

from __future__ import annotations

from wflang.runtime import instance as rt
from wflang.runtime.ir import Value
from wflang.runtime.waiting import Wait, parse


def correlation_text(value: Value) -> str:
    """The text a correlation value is matched on; a ValueError for other types."""
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise ValueError(f"a correlation is a string or an integer, not {type(value).__name__}")
    return str(value)


def awaited_messages(instance: rt.Instance | None) -> dict[int, tuple[str, str]]:
    """The messages an instance waits for: subscription -> (message, correlation text).

    A subscription is numbered by its token's id for a wait, and by a negative number
    for a boundary message of the token's node (``catch_subscription``): a token at a
    task may catch several messages."""
    if instance is None or instance.status.finished:
        return {}
    found: dict[int, tuple[str, str]] = {}
    for t in instance.tokens:
        waiting = parse(t.waiting)
        if waiting.kind is Wait.MESSAGE:
            found[t.id] = (waiting.name, waiting.correlation or "")
        for k, text in enumerate(t.catching):
            caught = parse(text)
            if caught.kind is Wait.MESSAGE:
                found[catch_subscription(t.id, k)] = (caught.name, caught.correlation or "")
    return found


#: How many boundary events a node may have, as far as subscriptions number them.
_CATCHES_PER_TOKEN = 1 << 16


def catch_subscription(token: int, k: int) -> int:
    """The number of the subscription of the ``k``-th boundary message of a token's
    node: negative, so that it never meets a token's id."""
    return -1 - (token * _CATCHES_PER_TOKEN + k)
