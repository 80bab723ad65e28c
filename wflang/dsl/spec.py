"""The typed spec: what a .wf file says, as frozen attrs values with a span on each.

One class per declaration (in ``decls``, re-exported here) and per node kind;
sequences are tuples. The spec is built by ``wflang.dsl.build`` and read by every later
stage; nothing mutates it.
"""

from __future__ import annotations

import enum
from decimal import Decimal

from attrs import field, frozen

from wflang.dsl.decls import (
    Comment,
    ContextDecl,
    Declaration,
    EnumDecl,
    ErrorDecl,
    Field,
    Header,
    Ident,
    ImportDecl,
    InputDecl,
    MessageDecl,
    OutputDecl,
    ServiceDecl,
    SignalDecl,
    StartDecl,
    Suppression,
    TypeDecl,
)
from wflang.dsl.expr import DurationLit, Expr
from wflang.dsl.span import Span, span_field

#: The names and declarations, defined in ``decls`` and read as ``sp.NAME`` everywhere.
__all__ = [
    "Comment",
    "ContextDecl",
    "Declaration",
    "EnumDecl",
    "ErrorDecl",
    "Field",
    "Header",
    "Ident",
    "ImportDecl",
    "InputDecl",
    "MessageDecl",
    "OutputDecl",
    "ServiceDecl",
    "SignalDecl",
    "StartDecl",
    "Suppression",
    "TypeDecl",
]

# ---------------------------------------------------------------------- clauses


@frozen
class Entry:
    """``name: expr`` in an ``args`` or ``output`` mapping; ``local.name: expr``
    (``local``) in an ``output`` writes a variable of the map item the node runs in."""

    name: Ident
    value: Expr
    span: Span = span_field()
    local: bool = False


@frozen
class Retry:
    """Retry policy: attempts, exponential backoff between delays, jitter, exclusions."""

    attempts: int | None = None
    initial_delay: DurationLit | None = None
    max_delay: DurationLit | None = None
    factor: Decimal | None = None
    jitter: Decimal | None = None
    non_retryable: tuple[Ident, ...] | None = None
    span: Span = span_field()


@frozen
class Cycle:
    """How a repeating boundary timer repeats: at most ``times`` firings (None: no
    bound), written ``every EXPR, at most N`` or, ``iso``, as BPMN's ``R3/PT10M``."""

    times: int | None = None
    iso: bool = False
    span: Span = span_field()


@frozen
class Timeout:
    """A boundary timer: after ``after``, go to ``target``.

    Interrupting timers cancel the node; non-interrupting ones start ``target``
    beside it (a reminder, an escalation) and let the node go on. A ``cycle``
    (``every 10m, at most 3 -> remind``) is non-interrupting and fires again every
    ``after`` while the node is active, up to its bound.
    """

    after: Expr
    target: Ident
    interrupting: bool = True
    span: Span = span_field()
    cycle: Cycle | None = None

    @property
    def when(self) -> str:
        """When it fires, as written: ``30s``, ``every 10m, at most 3``, ``R3/PT10M``."""
        from wflang.dsl.expr_format import format_expr

        after = format_expr(self.after)
        c = self.cycle
        if c is None:
            return after
        if c.iso:
            return f"R{'' if c.times is None else c.times}/{after}"
        return f"every {after}" + ("" if c.times is None else f", at most {c.times}")


@frozen
class OnError:
    """A boundary error handler; ``errors`` is empty for the catch-all ``on any``."""

    errors: tuple[Ident, ...]
    target: Ident
    span: Span = span_field()

    @property
    def catch_all(self) -> bool:
        return not self.errors


# ------------------------------------------------------------------------ nodes


@frozen
class ServiceWork:
    """A task that calls a registered service handler. ``asynchronous`` (``async``): the
    handler is handed a completion token and the task waits until the client completes
    or fails it with that token (Step Functions' task tokens, Camunda's external tasks)."""

    service: Ident
    span: Span = span_field()
    asynchronous: bool = False


@frozen
class ScriptWork:
    """A task that only computes its ``output`` mapping from expressions."""

    span: Span = span_field()


@frozen
class UserWork:
    """A human task with a typed ``form``, optionally assigned to a person or group: a
    ``string`` expression, evaluated when the task is entered."""

    assignee: Expr | None = None
    span: Span = span_field()


@frozen
class ManualWork:
    """Work done outside the system and only marked done, optionally with a form; its
    assignee as a user task's."""

    assignee: Expr | None = None
    span: Span = span_field()


class SendKind(enum.Enum):
    SIGNAL = "signal"
    MESSAGE = "message"

    @property
    def target_keyword(self) -> str:
        """The word before the target: ``to`` an instance, ``correlate`` a message."""
        return "to" if self is SendKind.SIGNAL else "correlate"


@frozen
class SendWork:
    """A task that sends, in its step: ``send signal S to EXPR`` signals the instance
    whose id ``EXPR`` is; ``send message M correlate EXPR`` publishes ``M`` to the
    instances waiting for it with that correlation. The task's ``args`` are the payload."""

    kind: SendKind
    name: Ident
    target: Expr
    span: Span = span_field()


TaskWork = ServiceWork | ScriptWork | UserWork | ManualWork | SendWork


@frozen
class TaskNode:
    name: Ident
    work: TaskWork
    args: tuple[Entry, ...] = ()
    output: tuple[Entry, ...] = ()
    form: tuple[Field, ...] | None = None
    retry: Retry | None = None
    timeouts: tuple[Timeout, ...] = ()
    handlers: tuple[OnError, ...] = ()
    compensate: Ident | None = None
    next: Ident | None = None
    renamed_from: Ident | None = None  # `renamed from old`: the same node, renamed
    #: A user or manual task: the declared errors the person may raise (``raises``).
    raises: tuple[Ident, ...] = ()
    #: An async service task: the longest it may go without a heartbeat (a duration).
    heartbeat: Expr | None = None
    span: Span = span_field()
    #: Boundary signals and messages (``on signal S -> NODE``), in source order.
    events: tuple[OnEvent, ...] = ()


@frozen
class ChoiceArm:
    """``when guard -> target``, or ``else -> target`` when ``guard`` is None."""

    guard: Expr | None
    target: Ident
    span: Span = span_field()


@frozen
class ChoiceNode:
    name: Ident
    arms: tuple[ChoiceArm, ...]
    renamed_from: Ident | None = None  # `renamed from old`: the same node, renamed
    span: Span = span_field()


@frozen
class SignalTrigger:
    signal: Ident
    span: Span = span_field()


@frozen
class MessageTrigger:
    message: Ident
    correlation: Expr
    span: Span = span_field()


@frozen
class UntilTrigger:
    at: Expr
    span: Span = span_field()


WaitTrigger = SignalTrigger | MessageTrigger | UntilTrigger


@frozen
class OnEvent:
    """A boundary signal or message (``on signal cancel -> cancelled``): when it arrives
    while the node is active, an interrupting one cancels the node and goes on at
    ``target``; a non-interrupting one starts ``target`` beside the node, which goes on.
    ``output`` writes what arrived (``signal.x``, ``message.x``) as a wait's does."""

    trigger: SignalTrigger | MessageTrigger
    target: Ident
    interrupting: bool = True
    output: tuple[Entry, ...] = ()
    span: Span = span_field()

    @property
    def kind(self) -> str:
        """``signal`` or ``message``: the root its ``output`` reads the payload from."""
        return "signal" if isinstance(self.trigger, SignalTrigger) else "message"

    @property
    def name(self) -> Ident:
        """The signal or message it waits for."""
        t = self.trigger
        return t.signal if isinstance(t, SignalTrigger) else t.message


@frozen
class WaitNode:
    name: Ident
    trigger: WaitTrigger
    output: tuple[Entry, ...] = ()
    timeouts: tuple[Timeout, ...] = ()
    next: Ident | None = None
    renamed_from: Ident | None = None  # `renamed from old`: the same node, renamed
    span: Span = span_field()


@frozen
class AfterTrigger:
    """A timer arm of a ``first``: fires ``after`` (a duration) once the node begins."""

    after: Expr
    span: Span = span_field()


#: The timer arms of a ``first``: ``after`` a duration, ``until`` an instant.
TimerTrigger = AfterTrigger | UntilTrigger
#: What an arm of a ``first`` waits for.
ArmTrigger = SignalTrigger | MessageTrigger | AfterTrigger | UntilTrigger


@frozen
class EventArm:
    """``on signal S -> NODE``, ``on message M correlate EXPR -> NODE`` (each with an
    optional ``{ output { ... } }`` that reads the payload), ``after EXPR -> NODE`` or
    ``until EXPR -> NODE`` (a timer: a duration from the node's start, or an instant)."""

    trigger: ArmTrigger
    target: Ident
    output: tuple[Entry, ...] = ()
    span: Span = span_field()


@frozen
class FirstNode:
    """An event-based choice: goes on along the arm whose event comes first."""

    name: Ident
    arms: tuple[EventArm, ...]
    renamed_from: Ident | None = None  # `renamed from old`: the same node, renamed
    span: Span = span_field()

    @property
    def output(self) -> tuple[Entry, ...]:
        """Every arm's ``output`` entries: what the node may write, for the analyses that
        read a node's ``output`` (reads, writes, references); each arm writes only its own."""
        return tuple(e for arm in self.arms for e in arm.output)


@frozen
class SleepNode:
    name: Ident
    duration: Expr
    next: Ident | None = None
    renamed_from: Ident | None = None  # `renamed from old`: the same node, renamed
    span: Span = span_field()


class JoinKind(enum.Enum):
    ALL = "all"
    ANY = "any"
    N_OF_M = "n"


@frozen
class Join:
    """How a parallel node waits for its branches: all, any, or ``n [of m]``."""

    kind: JoinKind
    count: int | None = None
    of: int | None = None
    span: Span = span_field()


@frozen
class Branch:
    """One branch of a ``parallel``: a sub-flow that starts at its first node."""

    name: Ident
    nodes: tuple[Node, ...]
    span: Span = span_field()


@frozen
class ParallelNode:
    name: Ident
    branches: tuple[Branch, ...]
    join: Join | None = None
    timeouts: tuple[Timeout, ...] = ()
    handlers: tuple[OnError, ...] = ()
    next: Ident | None = None
    renamed_from: Ident | None = None  # `renamed from old`: the same node, renamed
    span: Span = span_field()
    #: Boundary signals and messages (``on signal S -> NODE``), in source order.
    events: tuple[OnEvent, ...] = ()


@frozen
class Tolerance:
    """How many items of a map may fail: a count, or a percentage."""

    value: int
    percent: bool = False
    span: Span = span_field()


@frozen
class Collect:
    """``collect EXPR into context.FIELD``: the value of ``EXPR`` for each item that
    completed, in item order, written into the context field once the map finished."""

    value: Expr
    target: Ident
    span: Span = span_field()


@frozen
class MapNode:
    """Runs its body once per item of a list, in parallel (bounded) or in sequence.

    ``locals``: each item's own variables (``local { tries: int = 0 }``), which its
    body reads as ``local.NAME`` and writes with ``output { local.NAME: … }``."""

    name: Ident
    items: Expr
    alias: Ident
    nodes: tuple[Node, ...]
    concurrency: int | None = None
    sequential: bool = False
    tolerate: Tolerance | None = None
    output: tuple[Entry, ...] = ()
    timeouts: tuple[Timeout, ...] = ()
    handlers: tuple[OnError, ...] = ()
    next: Ident | None = None
    renamed_from: Ident | None = None  # `renamed from old`: the same node, renamed
    locals: tuple[Field, ...] = ()
    collects: tuple[Collect, ...] = ()
    span: Span = span_field()
    #: Boundary signals and messages (``on signal S -> NODE``), in source order.
    events: tuple[OnEvent, ...] = ()


@frozen
class CallNode:
    """Starts a sub-workflow pinned to a version and waits for its outcome."""

    name: Ident
    workflow: Ident
    version: int | None = None
    args: tuple[Entry, ...] = ()
    output: tuple[Entry, ...] = ()
    retry: Retry | None = None
    timeouts: tuple[Timeout, ...] = ()
    handlers: tuple[OnError, ...] = ()
    compensate: Ident | None = None
    next: Ident | None = None
    renamed_from: Ident | None = None  # `renamed from old`: the same node, renamed
    span: Span = span_field()
    #: Boundary signals and messages (``on signal S -> NODE``), in source order.
    events: tuple[OnEvent, ...] = ()


class Outcome(enum.Enum):
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"
    COMPENSATED = "compensated"


@frozen
class EndNode:
    """A terminal node; in a branch or map body it ends that sub-flow."""

    name: Ident
    outcome: Outcome
    output: tuple[Entry, ...] = ()
    error: Ident | None = None
    next: Ident | None = None
    renamed_from: Ident | None = None  # `renamed from old`: the same node, renamed
    span: Span = span_field()


Node = (
    TaskNode | ChoiceNode | WaitNode | FirstNode | SleepNode | ParallelNode | MapNode | CallNode
    | EndNode
)  # fmt: skip
NODE_CLASSES = (
    TaskNode, ChoiceNode, WaitNode, FirstNode, SleepNode, ParallelNode, MapNode, CallNode, EndNode,
)  # fmt: skip
Item = Declaration | Node


@frozen
class WorkflowSpec:
    """A parsed .wf file: its header (absent in a library of shared declarations)
    and its declarations and nodes in source order."""

    file: str
    header: Header | None
    items: tuple[Item, ...]
    suppressions: tuple[Suppression, ...] = ()
    comments: tuple[Comment, ...] = field(default=(), eq=False)
    span: Span = span_field()

    @property
    def nodes(self) -> tuple[Node, ...]:
        return tuple(i for i in self.items if isinstance(i, NODE_CLASSES))

    @property
    def declarations(self) -> tuple[Declaration, ...]:
        return tuple(i for i in self.items if not isinstance(i, NODE_CLASSES))
