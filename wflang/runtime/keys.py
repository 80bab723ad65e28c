"""Every key and id the runtime derives, each formatted (and, where read back, parsed)
here only: the step function, the engine, the stores and the client all call these.

- a task's or call's idempotency key, ``INSTANCE:NODE:VISIT:TOKEN:ATTEMPT``;
- a timer's id, ``TASK_KEY:PURPOSE``, and its purpose (``sleep``, ``until``,
  ``retry`` or ``boundary:K``);
- a child instance's id, ``ROOT/HASH`` (``ids.child_id``, with the instance seeds);
- the inbox keys that make a delivery unique: ``signal:NAME:KEY``,
  ``message:NAME:KEY``, ``timer:TIMER_ID``, ``msg:PUBLICATION``.

Node names are identifiers (no ``:``) and the numbers are decimal, so a key parses
from the right whatever the instance id holds.
"""

from __future__ import annotations

from attrs import frozen

from wflang.runtime.ids import child_id, delivery_key

__all__ = [
    "END_OF_SCOPE",
    "RETRY",
    "SLEEP",
    "UNTIL",
    "TaskKey",
    "boundary",
    "boundary_index",
    "child_id",
    "delivery_key",
    "key_token",
    "parse_task_key",
    "publication_delivery",
    "task_key",
    "timer_delivery",
    "timer_id",
]

#: The node name in the keys of a token that left its scope (it has no node).
END_OF_SCOPE = "(end of scope)"


@frozen
class TaskKey:
    """The parts of a task's or call's idempotency key."""

    instance: str
    node: str
    visit: int
    token: int
    attempt: int


def task_key(instance: str, node: str, visit: int, token: int, attempt: int) -> str:
    """The idempotency key of the task or call a token starts at a node: it names the
    instance, the node, the step its visit began, the token and the attempt, so an
    answer for an earlier attempt or visit, or for a cancelled task, is recognised."""
    return f"{instance}:{node}:{visit}:{token}:{attempt}"


def key_token(key: str) -> int | None:
    """The token a task key names (what a step looks up first); None if malformed."""
    try:
        return int(key.rsplit(":", 2)[-2])
    except (IndexError, ValueError):
        return None


def parse_task_key(key: str) -> TaskKey | None:
    """The parts of a key made by ``task_key``; None for anything else."""
    parts = key.rsplit(":", 4)
    if len(parts) != 5:
        return None
    instance, node, visit, token, attempt = parts
    try:
        return TaskKey(instance, node, int(visit), int(token), int(attempt))
    except ValueError:
        return None


# ------------------------------------------------------------------ timers

SLEEP, UNTIL, RETRY = "sleep", "until", "retry"
_BOUNDARY = "boundary:"


def boundary(k: int) -> str:
    """The purpose of a node's ``k``-th boundary timer (``timeout`` in its source order)."""
    return f"{_BOUNDARY}{k}"


def boundary_index(purpose: str) -> int | None:
    """``k`` of a boundary timer's purpose; None for any other purpose."""
    if not purpose.startswith(_BOUNDARY):
        return None
    try:
        return int(purpose[len(_BOUNDARY) :])
    except ValueError:
        return None


def timer_id(task_key: str, purpose: str) -> str:
    """A timer's id: the key its token has at its node (see ``task_key``), and why."""
    return f"{task_key}:{purpose}"


# ------------------------------------------------------------ children, inboxes


def timer_delivery(timer: str) -> str:
    """The inbox key of a timer's firing: it fires once, however often it is asked to."""
    return f"timer:{timer}"


def publication_delivery(message_id: int) -> str:
    """The inbox key of a message published without a key: its publication's own."""
    return f"msg:{message_id}"
