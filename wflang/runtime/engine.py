"""The in-memory engine: applies the commands of the step function.

It calls Python handlers registered by service name (sync or async), keeps
timers as records fired by ``advance`` of its clock (nothing sleeps), delivers
signals, starts child workflows, and keeps every instance's append-only history
of events and decisions. Durable stores and workers (SQLite, PostgreSQL) build
on the same step function; this engine is the reference and the test kit's base.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any

from attrs import define, field, frozen

from wflang.runtime import instance as rt
from wflang.runtime import step as st
from wflang.runtime.correlation import awaited_messages, correlation_text
from wflang.runtime.ids import child_id, delivery_key
from wflang.runtime.instance import Status
from wflang.runtime.ir import Value
from wflang.runtime.limits import DEFAULT as DEFAULT_LIMITS
from wflang.runtime.limits import Limits
from wflang.runtime.table import Table
from wflang.runtime.validate import check_handler_result, exact, validate_signal

Result = Mapping[str, Value] | None
Handler = Callable[..., Result | Awaitable[Result]]


class TaskError(Exception):
    """Raised by a handler to fail its task with a named (declared) error.

    ``transient`` errors are retried by the step's retry policy; permanent ones
    are not.
    """

    def __init__(self, error: str, message: str = "", *, transient: bool = False) -> None:
        super().__init__(message or error)
        self.error, self.message, self.transient = error, message, transient


@frozen(slots=False)  # built for every call: a dict-based frozen class builds faster
class TaskCall:
    """What a handler receives besides its arguments."""

    instance: str
    node: str
    attempt: int
    idempotency_key: str


_REGISTRY: dict[str, Handler] = {}
_AT_MOST_ONCE: set[str] = set()


def handler(service: str, *, at_most_once: bool = False) -> Callable[[Handler], Handler]:
    """Register a function as the handler of a service: ``@handler("inventory.reserve")``.

    ``at_most_once=True`` is for effects that must never repeat (and cannot be
    made idempotent by key): a durable worker records that the call started
    before making it, and if the worker dies during the call, the step fails
    with ``Interrupted`` instead of being run again.
    """

    def register(fn: Handler) -> Handler:
        _REGISTRY[service] = fn
        if at_most_once:
            _AT_MOST_ONCE.add(service)
        else:
            _AT_MOST_ONCE.discard(service)
        return fn

    return register


def registered_handlers() -> dict[str, Handler]:
    return dict(_REGISTRY)


def at_most_once_services() -> frozenset[str]:
    """The services registered with ``at_most_once=True``."""
    return frozenset(_AT_MOST_ONCE)


@frozen(slots=False)  # one per step: a dict-based frozen class builds faster
class HistoryEntry:
    """One committed transition: the event, the decisions taken and the commands emitted."""

    seq: int
    at: int
    event: rt.Event | None  # None for the start
    input: dict[str, Value] | None
    decisions: tuple[str, ...]
    commands: tuple[rt.Command, ...]


@define
class Record:
    """An instance as the engine keeps it: table, current value, history, links."""

    table: Table
    instance: rt.Instance
    history: list[HistoryEntry] = field(factory=list)
    parent: tuple[str, str] | None = None  # (parent instance, call key) for a child workflow
    tasks: dict[str, rt.ScheduleTask | rt.CreateHumanTask] = field(factory=dict)
    children: dict[str, str] = field(factory=dict)  # call key -> child instance id


@define
class KeptMessage:
    """A message published with a TTL, kept for instances that wait for it later."""

    id: int
    message: str
    correlation: str
    payload: dict[str, Value]
    key: str
    expires_at: int
    taken_by: set[str] = field(factory=set)  # each instance gets it once

    def event(self) -> rt.SignalReceived:
        return rt.SignalReceived(self.message, self.payload, self.key, "message", self.correlation)


class Engine:
    """Runs workflows in memory with a clock you move."""

    def __init__(
        self,
        tables: list[Table] | None = None,
        handlers: Mapping[str, Handler] | None = None,
        now: int = 0,
        seed: int = 0,
        limits: Limits = DEFAULT_LIMITS,
    ) -> None:
        self.limits = limits
        self.tables: dict[tuple[str, int], Table] = {}
        for t in tables or []:
            self.register(t)
        self.handlers: dict[str, Handler] = dict(handlers if handlers is not None else _REGISTRY)
        self.now = now
        self.seed = seed
        self.records: dict[str, Record] = {}
        self.timers: dict[str, tuple[int, str]] = {}  # timer id -> (due, instance)
        self.queue: deque[tuple[str, rt.Event]] = deque()
        self._ids = 0
        self.kept: list[KeptMessage] = []  # published with a TTL, for later waiters
        self._published = 0
        self._message_keys: set[tuple[str, str]] = set()  # (message, key) published

    # -- registration --------------------------------------------------------------

    def register(self, table: Table) -> None:
        self.tables[table.workflow, table.version] = table

    def table(self, workflow: str, version: int | None = None) -> Table:
        versions = [v for (w, v) in self.tables if w == workflow]
        if not versions:
            raise KeyError(f"no workflow '{workflow}' is registered")
        chosen = max(versions) if version is None else version
        if (workflow, chosen) not in self.tables:
            raise KeyError(f"workflow '{workflow}' has no version {chosen}")
        return self.tables[workflow, chosen]

    # -- driving ---------------------------------------------------------------------

    def start(
        self,
        workflow: str,
        input: Mapping[str, Value],
        *,
        version: int | None = None,
        instance_id: str | None = None,
    ) -> str:
        """Start an instance (the input in the runtime's form: ``_outside``)."""
        table = self.table(workflow, version)
        data = _outside(input, "the input")
        instance_id = self._start(table, data, instance_id, parent=None)
        self.run()
        return instance_id

    def _start(
        self,
        table: Table,
        input: dict[str, Value],
        instance_id: str | None,
        parent: tuple[str, str] | None,
    ) -> str:
        """Create an instance and apply its first commands; the caller runs the queue.

        A child started while its parent's commands are applied must not run the
        queue there: the parent's remaining commands (its call's timers) come first.
        """
        if instance_id is None:
            self._ids += 1
            instance_id = f"{table.workflow}-{self._ids}"
        if instance_id in self.records:
            raise ValueError(f"instance '{instance_id}' already exists")
        result = st.start(table, instance_id, input, self.now, self.seed + self._ids, self.limits)
        record = Record(table, result.instance, parent=parent)
        self.records[instance_id] = record
        record.history.append(
            HistoryEntry(
                result.instance.seq, self.now, None, input, result.decisions, result.commands
            )
        )
        self._apply(record, result.commands)
        if self.kept:
            self._hand_kept(record)
        return instance_id

    def send(self, instance_id: str, event: rt.Event) -> None:
        """Deliver an event to an instance and run until everything waits."""
        if instance_id not in self.records:
            raise KeyError(f"unknown instance '{instance_id}'")
        self.queue.append((instance_id, event))
        self.run()

    def signal(
        self, instance_id: str, name: str, payload: Mapping[str, Value] | None = None, key: str = ""
    ) -> None:
        data = _outside(payload or {}, f"the signal '{name}'")
        self.send(instance_id, rt.SignalReceived(name, data, key))

    def cancel(self, instance_id: str, *, compensate: bool = False) -> None:
        self.send(instance_id, rt.CancelRequested(compensate))

    # -- ops: what an operator does to a dead-lettered instance -----------------------

    def retry(self, instance_id: str, step: str | None = None) -> None:
        """Resume a dead-lettered instance from its failed step (a failed compensation
        included), or from ``step``."""
        self.send(instance_id, rt.RetryFrom(step))

    def complete_step(self, instance_id: str, step: str, output: Mapping[str, Value]) -> None:
        """Finish a waiting or failed step (a compensation too) as if it had completed."""
        self.send(instance_id, rt.CompleteStep(step, dict(output)))

    def skip_compensation(self, instance_id: str, step: str, *, reason: str) -> None:
        """Give up on the failed compensation at ``step`` (why is recorded); the
        remaining compensations run."""
        if not reason.strip():
            raise ValueError("skipping a compensation needs a reason")
        self.send(instance_id, rt.SkipCompensation(step, reason))

    def publish(
        self,
        message: str,
        correlation: Value,
        payload: Mapping[str, Value] | None = None,
        *,
        key: str = "",
        ttl_ms: int = 0,
    ) -> list[str]:
        """Give a message to every instance waiting for it with this correlation (see
        ``wflang.runtime.correlation``); with ``ttl_ms``, also to instances that start
        waiting for it before it expires, each once. The instances it reached now.

        As a durable store does: the payload must fit a registered declaration of the
        message (a ValueError says why not) and reaches only instances whose version's
        declaration it fits; a second publication with the same ``key`` is ignored.
        """
        data = _outside(payload or {}, f"the message '{message}'")
        if ttl_ms < 0:
            raise ValueError("ttl_ms must not be negative")
        _check_publishable(self.tables.values(), message, data)
        text = correlation_text(correlation)
        if key:
            if (message, key) in self._message_keys:
                return []
            self._message_keys.add((message, key))
        self._published += 1
        kept = KeptMessage(self._published, message, text, data, key, self.now + ttl_ms)
        if ttl_ms > 0:
            self.kept.append(kept)
        taken = delivery_key("message", message, key) if key else None
        reached = sorted(
            iid
            for iid, r in self.records.items()
            if (message, text) in awaited_messages(r.instance).values()
            and not validate_signal(r.table, "message", message, data)
            and taken not in r.instance.seen_keys  # it would drop it: not reached
        )
        for iid in reached:
            kept.taken_by.add(iid)
            self.queue.append((iid, kept.event()))
        self.run()
        return reached

    def _hand_kept(self, record: Record) -> None:
        """Queue the kept messages an instance has just started waiting for."""
        self.kept = [k for k in self.kept if k.expires_at > self.now]
        iid = record.instance.id
        for message, text in awaited_messages(record.instance).values():
            for k in self.kept:
                if (
                    (k.message, k.correlation) == (message, text)
                    and iid not in k.taken_by
                    and not validate_signal(record.table, "message", message, k.payload)
                ):
                    k.taken_by.add(iid)
                    self.queue.append((iid, k.event()))

    def complete_task(self, key: str, output: Mapping[str, Value]) -> None:
        """Finish a human task (user or manual) with its form's values."""
        data = _outside(output, f"the output of task '{key}'")
        iid, _ = self._open_task(key)
        self.send(iid, rt.TaskCompleted(key, data))

    def fail_task(
        self, key: str, error: str, *, transient: bool = False, message: str = ""
    ) -> None:
        """Fail an open task (a delayed service call or a human task) with a named error."""
        iid, _ = self._open_task(key)
        self.send(iid, rt.TaskFailed(key, error, transient, message))

    def _open_task(self, key: str) -> tuple[str, rt.ScheduleTask | rt.CreateHumanTask]:
        for iid, record in self.records.items():
            task = record.tasks.pop(key, None)
            if task is not None:
                return iid, task
        raise KeyError(f"no open task '{key}'")

    def human_tasks(self) -> list[rt.CreateHumanTask]:
        return [
            t
            for r in self.records.values()
            for t in r.tasks.values()
            if isinstance(t, rt.CreateHumanTask)
        ]

    def advance(self, ms: int) -> None:
        """Move the clock forward, firing exactly the timers due, in order."""
        until = self.now + ms
        while True:
            due = sorted((d, tid, iid) for tid, (d, iid) in self.timers.items() if d <= until)
            if not due:
                break
            when, tid, iid = due[0]
            del self.timers[tid]
            self.now = max(self.now, when)
            self.send(iid, rt.TimerFired(tid))
        self.now = until

    def run(self) -> None:
        """Deliver queued events until none is left, firing the timers already due.

        A timer due now or earlier (a `wait until` a past instant) fires at once,
        not at the next move of the clock.
        """
        while True:
            while self.queue:
                iid, event = self.queue.popleft()
                record = self.records[iid]
                result = st.step(record.table, record.instance, event, self.now, self.limits)
                record.instance = result.instance
                record.history.append(
                    HistoryEntry(
                        result.instance.seq,
                        self.now,
                        event,
                        None,
                        result.decisions,
                        result.commands,
                    )
                )
                self._apply(record, result.commands)
                if self.kept:
                    self._hand_kept(record)
            due = min(
                ((d, tid, iid) for tid, (d, iid) in self.timers.items() if d <= self.now),
                default=None,
            )
            if due is None:
                return
            _, tid, iid = due
            del self.timers[tid]
            self.queue.append((iid, rt.TimerFired(tid)))

    # -- commands ---------------------------------------------------------------------

    def _apply(self, record: Record, commands: tuple[rt.Command, ...]) -> None:
        iid = record.instance.id
        for c in commands:
            if isinstance(c, rt.ScheduleTask):
                record.tasks[c.key] = c
                self._call(record, c)
            elif isinstance(c, rt.CreateHumanTask):
                record.tasks[c.key] = c
            elif isinstance(c, rt.CancelTask):
                record.tasks.pop(c.key, None)
            elif isinstance(c, rt.StartTimer):
                self.timers[c.id] = (c.due, iid)
            elif isinstance(c, rt.CancelTimer):
                self.timers.pop(c.id, None)
            elif isinstance(c, rt.StartChild):
                child = self._start(
                    self.table(c.workflow, c.version),
                    dict(c.input),
                    child_id(iid, c.key),
                    parent=(iid, c.key),
                )
                record.children[c.key] = child
            elif isinstance(c, rt.CancelChild):
                child_iid = record.children.pop(c.key, None)
                if child_iid is not None:
                    self.queue.append((child_iid, rt.CancelRequested(True, "parent cancelled it")))
            elif isinstance(c, rt.Finish):
                record.tasks.clear()
                # A dead letter is no outcome (ops may retry it): the parent waits on.
                if record.parent is not None and c.status is not Status.DEAD_LETTERED:
                    parent_id, call_key = record.parent
                    if c.status is Status.COMPLETED:
                        event: rt.Event = rt.ChildCompleted(call_key, dict(c.output or {}))
                    else:
                        event = rt.ChildFailed(call_key, c.error or c.status.value)
                    self.queue.append((parent_id, event))

    def _call(self, record: Record, task: rt.ScheduleTask) -> None:
        fn = self.handlers.get(task.service)
        iid = record.instance.id
        if fn is None:
            event: rt.Event = rt.TaskFailed(
                task.key,
                "NoHandler",
                False,
                f"no handler for service '{task.service}'",
            )
            self.queue.append((iid, event))
            return
        call = TaskCall(iid, task.node, task.attempt, task.key)
        try:
            result = _invoke(fn, task.args, call)
        except TaskError as err:
            event = rt.TaskFailed(task.key, err.error, err.transient, err.message)
        except Exception as err:  # a handler that crashes fails its attempt, transiently
            event = rt.TaskFailed(task.key, type(err).__name__, True, str(err))
        else:
            if result is _PENDING:
                return  # the test kit delivers it later
            event = _checked(record.table, task, result)
        record.tasks.pop(task.key, None)
        self.queue.append((iid, event))

    # -- reading -----------------------------------------------------------------------

    def instance(self, instance_id: str) -> rt.Instance:
        try:
            return self.records[instance_id].instance
        except KeyError:
            raise KeyError(f"unknown instance '{instance_id}'") from None

    def history(self, instance_id: str) -> list[HistoryEntry]:
        return list(self.records[instance_id].history)


def _check_publishable(tables: Iterable[Table], message: str, payload: Mapping[str, Value]) -> None:
    """A ValueError unless some declaration of the message takes the payload."""
    declaring = [t for t in tables if any(m.name == message for m in t.types.messages)]
    if not declaring:
        raise ValueError(f"no registered workflow declares a message '{message}'")
    refusals = [validate_signal(t, "message", message, payload) for t in declaring]
    if all(refusals):
        problems = sorted({p for r in refusals for p in r})
        raise ValueError(f"the message '{message}' does not fit: " + "; ".join(problems))


def _outside(data: Mapping[str, Value], what: str) -> dict[str, Value]:
    """A value given from outside in the runtime's form (``validate.exact``): a copy,
    with floats as exact decimals; a ValueError for what is no JSON value."""
    value, problems = exact(dict(data), what)
    if problems:
        raise ValueError(f"{what} is not a JSON value: " + "; ".join(problems))
    assert isinstance(value, dict)
    return value


def _checked(table: Table, task: rt.ScheduleTask, result: object) -> rt.Event:
    """A handler's answer as an event: a result that is not an object or does not fit the
    service's declared result fails the attempt for good (a bug in the handler), so a
    wrong value never reaches the context."""
    if result is not None and not isinstance(result, Mapping):
        problem = f"the handler of {task.service} returned {type(result).__name__}, not an object"
        return rt.TaskFailed(task.key, "InvalidResult", False, problem)
    output, problems = check_handler_result(table, task.node, result or {})
    if problems:
        return rt.TaskFailed(task.key, "InvalidResult", False, "; ".join(problems))
    return rt.TaskCompleted(task.key, output)


class _Pending:
    """A handler result that means 'the answer comes later' (the test kit's ``delay``)."""


_PENDING: Any = _Pending()


def pending() -> Any:
    return _PENDING


def _invoke(fn: Handler, args: Mapping[str, Value], call: TaskCall) -> Result:
    """Call a handler with the task's arguments as keywords (and ``task=`` if it asks)."""
    kwargs: dict[str, Any] = dict(args)
    if _wants_task(fn):
        kwargs["task"] = call
    result = fn(**kwargs)
    if result is not None and type(result) is not dict and inspect.isawaitable(result):
        result = asyncio.run(_await(result))
    return result


@functools.lru_cache(maxsize=1024)
def _wants_task(fn: Handler) -> bool:
    """Whether a handler takes ``task`` (by name or through ``**kwargs``): asked once."""
    params = inspect.signature(fn).parameters
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    return "task" in params or takes_any


async def _await(aw: Awaitable[Result]) -> Result:
    return await aw
