"""The states the store's rows are in, named once.

An instance's status is the runtime's (``wflang.runtime.instance.Status``),
or ``PENDING`` until a worker runs its start transition. A task row is a
service call or a human task (``TaskKind``) in one of the ``TaskStatus`` states;
an instance's task rows are those ``tasks_of`` finds.
The values are written into SQL as literals (``f"status = '{TaskStatus.READY}'"``):
the partial indexes of the schema name them, and only a literal lets the
database use them.
"""

from __future__ import annotations

import enum

from wflang.runtime.instance import Status
from wflang.runtime.keys import INSTANCE_END

#: An instance whose start transition has not run yet.
PENDING = "pending"

#: Every status an instance row can have.
INSTANCE_STATUSES = (PENDING, *(s.value for s in Status))


def one_of(column: str, values: tuple[str, ...]) -> str:
    """``column`` is one of ``values``, as SQL: comparisons joined by OR, not ``IN``. On
    SQLite an ``IN`` list of more than two values is a temporary table built each time
    it is evaluated: as the condition of a partial index, at every write of a row (a
    step's UPDATE of its instance cost 30-60 µs, not 6). A query that is to use such
    an index says the same words (the database matches the condition as written)."""
    return "(" + " OR ".join(f"{column} = '{v}'" for v in values) + ")"


#: Statuses of an instance that has not finished: what may be stuck (``wf list --stuck``,
#: the index ``wf_instance_still``).
ACTIVE = (PENDING, *(s.value for s in Status if not s.finished))
IS_ACTIVE = one_of("status", ACTIVE)

#: Statuses of an instance that has finished (a dead-lettered one included).
FINISHED = tuple(s.value for s in Status if s.finished)
IS_FINISHED = one_of("status", FINISHED)

#: Statuses of an instance that has ended for good: nothing left to do.
ENDED = tuple(s.value for s in Status if s.finished and s is not Status.DEAD_LETTERED)


def ended(status: Status) -> bool:
    """Whether an instance has ended: finished, and not dead-lettered (ops may retry it)."""
    return status.finished and status is not Status.DEAD_LETTERED


class TaskKind(enum.StrEnum):
    SERVICE = "service"  # a call a worker claims and runs
    HUMAN = "human"  # a person's (user or manual) task


class TaskStatus(enum.StrEnum):
    READY = "ready"  # a call due at ``run_at``, for any worker to claim
    RUNNING = "running"  # a call leased to a worker
    OPEN = "open"  # a human task waiting for its person
    DONE = "done"
    CANCELLED = "cancelled"
    INTERRUPTED = "interrupted"  # an at-most-once call whose worker vanished
    WAITING = "waiting"  # an async call handed off: the client completes or fails it

    @property
    def live(self) -> bool:
        return self in LIVE


#: A task still wanted: a step cancelling it, or the instance ending, closes it.
LIVE = (TaskStatus.READY, TaskStatus.RUNNING, TaskStatus.OPEN, TaskStatus.WAITING)
#: A live task, as SQL (``one_of``).
IS_LIVE = one_of("status", LIVE)


def tasks_of(instance: str) -> str:
    """The task rows of an instance, as SQL: a range of ``wf_task``'s primary key, every
    key being its instance's id and ``INSTANCE_END`` and more (``keys.task_key``), the
    keys compared by their bytes (migration 9); ``instance_id`` leaves out the tasks
    of an id that begins with this one and a colon. ``instance``: the id as an SQL
    expression, a column of another table or ``?``; ``OF_INSTANCE`` with a parameter."""
    past = chr(ord(INSTANCE_END) + 1)
    return (
        f"key >= {instance} || '{INSTANCE_END}' AND key < {instance} || '{past}' "
        f"AND instance_id = {instance}"
    )


#: ``tasks_of`` an instance whose id is a parameter: given three times, ``(id,) * 3``.
OF_INSTANCE = tasks_of("?")


class OutboxKind(enum.StrEnum):
    FINISHED = "instance.finished"  # once, when the instance ends
    DEAD_LETTERED = "instance.dead_lettered"  # each time it is dead-lettered
    # every status change (``runtime.lifecycle``): of the instance, of one of its tasks
    INSTANCE_STATUS = "instance.status"
    TASK_STATUS = "task.status"
    SIGNAL_SENT = "signal.sent"  # a send task signalled an instance
    MESSAGE_SENT = "message.sent"  # a send task published a message


class StatusRows(enum.StrEnum):
    """Which lifecycle events a worker also writes as outbox rows (its ``on_status``
    hooks hear them all, whatever it writes): every one (``all``), the instances' only
    (``instances``, the default: a few per instance, where the tasks' are two a step,
    a share of a durable step measured in bench/RESULTS.md), or ``none``."""

    ALL = "all"
    INSTANCES = "instances"
    NONE = "none"
