"""Runtime values: an instance, its tokens and timers; the events that move it and the
commands it asks for.

Everything here is a frozen attrs value that serialises to JSON (``wflang.runtime.codec``):
an instance can be stored after any step and a history replayed from its events.

The classes keep a ``__dict__`` (``slots=False``): attrs builds a frozen dict-based
value with plain dict stores, a slotted one with a call of ``object.__setattr__`` per
field, and the step function builds several of them on every step (about 0.4 µs saved
on a six-field command).
"""

from __future__ import annotations

import enum

from attrs import field, frozen

from wflang.runtime.ir import Value

NO_TOKEN = -1


class Status(enum.Enum):
    RUNNING = "running"  # working: a service task's call or its retry is under way
    # every token waits for the world: a signal, a message, a timer, a person, a called
    # workflow (``waiting.at_rest``); the step that ends that wait makes it running again
    WAITING = "waiting"
    COMPENSATING = "compensating"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"
    COMPENSATED = "compensated"
    DEAD_LETTERED = "dead_lettered"

    @property
    def finished(self) -> bool:
        return self not in (Status.RUNNING, Status.WAITING, Status.COMPENSATING)


@frozen(slots=False)
class Token:
    """A place in the flow: the state it is at, and what it waits for there."""

    id: int
    state: int
    parent: int = NO_TOKEN  # the token of the parallel or map node whose body this runs in
    index: int = 0  # its branch or item index in the parent
    attempt: int = 1
    # what it waits for, as stored: see ``wflang.runtime.waiting``
    waiting: str = ""
    side: bool = False  # started by a non-interrupting timer: its end ends only itself
    compensating: bool = False  # runs a compensation of the saga
    # the map item, bound to its alias, and its variables (``table.LOCALS``), as a record
    locals: tuple[tuple[str, Value], ...] = ()
    # The step at which the token entered its state: part of the keys of the task,
    # call and timers it starts there, so that a loop's second visit of a node gets
    # keys of its own and a late answer to the first visit is recognised as stale.
    visit: int = 0
    # The boundary signals and messages of its node it listens for while the node is
    # active (as ``waiting`` says them: ``signal:NAME``, ``message:NAME:CORRELATION``),
    # by the index of the node's ``catches``; gone when it leaves the node.
    catching: tuple[str, ...] = ()


@frozen(slots=False)
class Timer:
    """A scheduled record the engine fires; nothing sleeps."""

    id: str
    token: int
    purpose: str  # boundary:K | retry | sleep | until | after (``wflang.runtime.keys``)
    due: int  # milliseconds since the epoch


@frozen(slots=False)
class Join:
    """What a parallel or map token has heard from its children."""

    token: int
    total: int
    completed: int = 0
    failed: int = 0
    started: int = 0  # map: items started so far
    results: tuple[tuple[int, Value], ...] = ()  # map: (item index, body output)
    # map: (item index, the value of each ``collect``) of each item that completed
    collected: tuple[tuple[int, tuple[Value, ...]], ...] = ()


@frozen(slots=False)
class Signal:
    """A signal or message that arrived before a wait was there to take it."""

    kind: str  # signal | message
    name: str
    payload: Value
    key: str
    correlation: str | None = None  # a published message's correlation text


@frozen(slots=False)
class Instance:
    """One run of one workflow version.

    A frozen attrs class with a ``__dict__`` (not slots): it builds about twice as
    fast, and the step function keeps an index of the tokens, timers and joins
    beside the fields for the next step (``runtime.step.build``). Serialise it
    through its attrs fields (cattrs, ``attrs.asdict``), never through ``__dict__``.
    """

    id: str
    workflow: str
    version: int
    status: Status
    input: dict[str, Value]
    context: dict[str, Value]
    tokens: tuple[Token, ...] = ()
    timers: tuple[Timer, ...] = ()
    joins: tuple[Join, ...] = ()
    compensations: tuple[int, ...] = ()  # states to run, in the order their steps completed
    buffered: tuple[Signal, ...] = ()
    seen_keys: tuple[str, ...] = ()  # signals and messages taken by key (keys.delivery_key)
    seq: int = 0  # history sequence number of the last step
    next_token: int = 0
    seed: int = 0  # for jitter: no randomness in the step function
    output: dict[str, Value] | None = None
    error: str | None = None
    outcome_after_compensation: str = "compensated"
    # The error the saga ends with, kept while a failed compensation has the instance
    # dead-lettered (its ``error`` then says which compensation failed).
    error_after_compensation: str | None = None
    snapshot: dict[str, Value] | None = field(default=None)  # context when dead-lettered


# ------------------------------------------------------------------------ events


@frozen(slots=False)
class TaskCompleted:
    """A handler (or a person) finished the task with this idempotency key."""

    key: str
    result: dict[str, Value] = field(factory=dict)


@frozen(slots=False)
class TaskFailed:
    """A task failed with a named error; ``payload``: the fields of an error declared
    with a payload (``error InsufficientFunds { missing: decimal }``)."""

    key: str
    error: str
    transient: bool = True
    message: str = ""
    payload: dict[str, Value] | None = None


@frozen(slots=False)
class TaskHeartbeat:
    """The handler of the async task with this key (its completion token) is alive:
    its heartbeat timeout starts again."""

    key: str


@frozen(slots=False)
class TimerFired:
    timer: str


@frozen(slots=False)
class SignalReceived:
    name: str
    payload: dict[str, Value] = field(factory=dict)
    key: str = ""
    kind: str = "signal"  # or message
    # A message published by correlation: only a wait whose correlation has this text
    # takes it. None: sent to this instance, any wait for its name takes it.
    correlation: str | None = None


@frozen(slots=False)
class ChildCompleted:
    key: str  # the call's key
    output: dict[str, Value] = field(factory=dict)


@frozen(slots=False)
class ChildFailed:
    key: str
    error: str
    payload: dict[str, Value] | None = None  # of an error that carries one (``Finish``)


@frozen(slots=False)
class CancelRequested:
    compensate: bool = False
    reason: str = "cancelled"


@frozen(slots=False)
class RetryFrom:
    """Ops: put a dead-lettered instance back to work at a state (default: where it failed)."""

    state: str | None = None
    input: dict[str, Value] | None = None  # fields of the workflow input to change first


@frozen(slots=False)
class ForceComplete:
    """Ops: finish an instance as completed with this output."""

    output: dict[str, Value] = field(factory=dict)


@frozen(slots=False)
class CompleteStep:
    """Ops: finish a waiting or dead-lettered step as if it had completed with ``output``."""

    state: str
    output: dict[str, Value] = field(factory=dict)


@frozen(slots=False)
class SkipCompensation:
    """Ops: give up on a failed (or waiting) compensation at ``state``; the rest run."""

    state: str
    reason: str


Event = (
    TaskCompleted
    | TaskFailed
    | TaskHeartbeat
    | TimerFired
    | SignalReceived
    | ChildCompleted
    | ChildFailed
    | CancelRequested
    | RetryFrom
    | ForceComplete
    | CompleteStep
    | SkipCompensation
)

# ---------------------------------------------------------------------- commands


@frozen(slots=False)
class ScheduleTask:
    """Call a service handler. ``key`` is stable for (instance, node, token, attempt)."""

    key: str
    token: int
    node: str
    service: str
    args: dict[str, Value]
    attempt: int


@frozen(slots=False)
class CreateHumanTask:
    key: str
    token: int
    node: str
    kind: str  # user | manual
    assignee: str | None
    form: tuple[str, ...]
    args: dict[str, Value]


@frozen(slots=False)
class CancelTask:
    key: str


@frozen(slots=False)
class StartTimer:
    id: str
    due: int


@frozen(slots=False)
class CancelTimer:
    id: str


@frozen(slots=False)
class StartChild:
    key: str
    token: int
    workflow: str
    version: int | None
    input: dict[str, Value]


@frozen(slots=False)
class CancelChild:
    key: str


@frozen(slots=False)
class Send:
    """A send task signals the instance ``to`` or publishes a message to the instances
    waiting for it with the correlation text ``to``; ``key`` (the task's) makes it
    happen once."""

    key: str
    kind: str  # signal | message
    name: str
    to: str
    payload: dict[str, Value]


@frozen(slots=False)
class Finish:
    """The instance reached a final status (completed, failed, cancelled, …)."""

    status: Status
    output: dict[str, Value] | None = None
    error: str | None = None
    #: The payload of ``error`` when the instance failed with an error that carries one
    #: (an end re-raising the error it handles): a caller's ``on`` route reads it.
    payload: dict[str, Value] | None = None


Command = (
    ScheduleTask
    | CreateHumanTask
    | CancelTask
    | StartTimer
    | CancelTimer
    | StartChild
    | CancelChild
    | Send
    | Finish
)
