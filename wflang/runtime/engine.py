"""The in-memory engine: applies the commands of the step function.

It calls Python handlers registered by service name (sync or async), keeps
timers as records fired by ``advance`` of its clock (nothing sleeps), delivers
signals, starts child workflows, and keeps every instance's append-only history
of events and decisions. Durable stores and workers (SQLite, PostgreSQL) build
on the same step function; this engine is the reference and the test kit's base.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping, Sequence

from attrs import define, evolve, field, frozen

from wflang.runtime import instance as rt
from wflang.runtime import keys
from wflang.runtime import step as st
from wflang.runtime.changes import Change
from wflang.runtime.commands import PARENT_CANCEL, ChildOutcome, interpret, not_deployed
from wflang.runtime.correlation import awaited_messages, correlation_text
from wflang.runtime.history import DEFAULT as DEFAULT_HISTORY
from wflang.runtime.history import HistoryPolicy, base, compact
from wflang.runtime.ir import Value
from wflang.runtime.lifecycle import StatusHook, lifecycle, notify
from wflang.runtime.limits import DEFAULT as DEFAULT_LIMITS
from wflang.runtime.limits import Limits
from wflang.runtime.outcome import (
    Handler,
    Result,
    TaskCall,
    TaskError,
    call_handler,
    checked,
    no_handler,
    pending,
)
from wflang.runtime.registered import (
    at_most_once_services,
    handler,
    registered_handlers,
    unregister,
)
from wflang.runtime.table import Table, asynchronous, heartbeat_refused
from wflang.runtime.validate import (
    InvalidValue,
    exact,
    fit_forced,
    fit_input,
    fit_output,
    fit_payload,
    publication_problems,
    raised_on_task,
    taken,
)
from wflang.runtime.waiting import Wait, completable
from wflang.runtime.waiting import waiting_on as labels_of

__all__ = [
    "Engine",
    "EngineEffects",
    "Handler",
    "HistoryEntry",
    "Result",
    "TaskCall",
    "TaskError",
    "at_most_once_services",
    "handler",
    "pending",
    "registered_handlers",
    "unregister",
]


@frozen(slots=False)  # one per step: a dict-based frozen class builds faster
class HistoryEntry:
    """One committed transition: the event, the decisions taken and the commands emitted."""

    seq: int
    at: int
    event: rt.Event | None  # None for the start
    input: dict[str, Value] | None
    decisions: tuple[str, ...]
    commands: tuple[rt.Command, ...]
    #: What the step changed in the context (``Step.changes``).
    changes: tuple[Change, ...] = ()


@define
class Record:
    """An instance as the engine keeps it: table, current value, history, links."""

    table: Table
    instance: rt.Instance
    history: list[HistoryEntry] = field(factory=list)  # the steps kept (``runtime.history``)
    checkpoints: list[rt.Instance] = field(factory=list)  # the last two, oldest first
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

    def event(self, payload: dict[str, Value]) -> rt.SignalReceived:
        """The message as one instance takes it (``payload`` as its version reads it)."""
        return rt.SignalReceived(
            self.message, payload, self.key, Wait.MESSAGE.value, self.correlation
        )


class Engine:
    """Runs workflows in memory with a clock you move."""

    def __init__(
        self,
        tables: list[Table] | None = None,
        handlers: Mapping[str, Handler] | None = None,
        now: int = 0,
        seed: int = 0,
        limits: Limits = DEFAULT_LIMITS,
        history: HistoryPolicy | None = DEFAULT_HISTORY,
    ) -> None:
        self.limits = limits
        self.history_policy = history  # None: every step is kept
        self.tables: dict[tuple[str, int], Table] = {}
        for t in tables or []:
            self.register(t)
        self.handlers: dict[str, Handler] = dict(
            handlers if handlers is not None else registered_handlers()
        )
        self.status_hooks: list[StatusHook] = []
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

    def on_status(self, hook: StatusHook) -> StatusHook:
        """Call ``hook`` with every status change of an instance and of its tasks
        (``lifecycle.StatusEvent``), after the step that made it; a hook that raises is
        logged and the step stands. Returns the hook (a decorator)."""
        self.status_hooks.append(hook)
        return hook

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
        """Start an instance (the input in the runtime's form: ``_outside``); an input
        that does not fit the workflow's declared input is refused (``InvalidValue``, as
        the durable client refuses it) and nothing is started."""
        table = self.table(workflow, version)
        input, problems = fit_input(table, input)  # ISO-8601 text of time fields as ms
        if problems:
            raise InvalidValue(f"the input of {workflow} v{table.version}", problems)
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
        seed: int | None = None,
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
        if seed is None:  # a top-level instance: the engine's seed (a child's is its id's)
            seed = self.seed + self._ids
        result = st.start(table, instance_id, input, self.now, seed, self.limits)
        record = Record(table, result.instance, parent=parent)
        self.records[instance_id] = record
        r = result
        entry = HistoryEntry(r.instance.seq, self.now, None, input, r.decisions, r.commands)
        record.history.append(evolve(entry, changes=r.changes) if r.changes else entry)
        self._apply(record, result.commands)
        if self.status_hooks:
            notify(self.status_hooks, lifecycle(table, None, result.instance, None, self.now))
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
        """Send a signal; a payload that does not fit its declaration is refused
        (``InvalidValue``, as the durable client refuses it) and nothing is sent."""
        table = self._record(instance_id).table
        data = _outside(payload or {}, f"the signal '{name}'")
        data, problems = fit_payload(table, Wait.SIGNAL, name, data)  # ISO-8601 text as ms
        if problems:
            raise InvalidValue(f"the signal '{name}'", problems)
        self.send(instance_id, rt.SignalReceived(name, data, key))

    def _record(self, instance_id: str) -> Record:
        record = self.records.get(instance_id)
        if record is None:
            raise KeyError(f"unknown instance '{instance_id}'")
        return record

    def cancel(self, instance_id: str, *, compensate: bool = False) -> None:
        self.send(instance_id, rt.CancelRequested(compensate))

    # -- ops: what an operator does to a dead-lettered instance -----------------------

    def retry(self, instance_id: str, step: str | None = None) -> None:
        """Resume a dead-lettered instance from its failed step (a failed compensation
        included), or from ``step``."""
        self.send(instance_id, rt.RetryFrom(step))

    def complete_step(self, instance_id: str, step: str, output: Mapping[str, Value]) -> None:
        """Finish a waiting or failed step (a compensation too) as if it had completed;
        an output that does not fit what the step waits for is refused (``InvalidValue``)."""
        data = _outside(output, f"the output of {step}")
        record = self._record(instance_id)
        waiting = [
            t.waiting
            for t in record.instance.tokens
            if record.table.states[t.state].name == step and completable(t.waiting)
        ]
        if waiting:
            data, problems = fit_forced(record.table, step, waiting[0], data)
            if problems:
                raise InvalidValue(f"the output of {step}", problems)
        self.send(instance_id, rt.CompleteStep(step, data))

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
        reached = self._publish(message, correlation_text(correlation), data, key, ttl_ms)
        self.run()
        return reached

    def _publish(
        self, message: str, text: str, data: dict[str, Value], key: str, ttl_ms: int
    ) -> list[str]:
        """Queue a message for the instances waiting for it (a send task's too); whom."""
        if key:
            if (message, key) in self._message_keys:
                return []
            self._message_keys.add((message, key))
        self._published += 1
        kept = KeptMessage(self._published, message, text, data, key, self.now + ttl_ms)
        if ttl_ms > 0:
            self.kept.append(kept)
        seen = keys.delivery_key(keys.Delivery.MESSAGE, message, key) if key else None
        reached = []
        for iid in sorted(self.records):
            r = self.records[iid]
            if (message, text) not in awaited_messages(r.instance).values():
                continue
            if seen in r.instance.seen_keys:  # it would drop it: not reached
                continue
            # It takes the payload as its own version declares it (time text read so).
            as_taken = taken(r.table, message, data)
            if as_taken is not None:
                reached.append(iid)
                kept.taken_by.add(iid)
                self.queue.append((iid, kept.event(as_taken)))
        return reached

    def _hand_kept(self, record: Record) -> None:
        """Queue the kept messages an instance has just started waiting for."""
        self.kept = [k for k in self.kept if k.expires_at > self.now]
        iid = record.instance.id
        for message, text in awaited_messages(record.instance).values():
            for k in self.kept:
                if (k.message, k.correlation) != (message, text) or iid in k.taken_by:
                    continue
                payload = taken(record.table, message, k.payload)
                if payload is not None:  # else kept for another version's declaration
                    k.taken_by.add(iid)
                    self.queue.append((iid, k.event(payload)))

    def complete_task(self, key: str, output: Mapping[str, Value]) -> None:
        """Finish a human task (user or manual) with its form's values, or answer a
        delayed service call with its result. A form that does not fit is refused
        (``InvalidValue``) and the task stays open; a result is checked as a handler's."""
        data = _outside(output, f"the output of task '{key}'")
        iid, task = self._find_task(key)
        table = self.records[iid].table
        event: rt.TaskCompleted | rt.TaskFailed
        if isinstance(task, rt.CreateHumanTask):
            form, problems = fit_output(table, task.node, data, fill=True)
            if problems:
                raise InvalidValue(f"the output of task '{key}'", problems)
            event = rt.TaskCompleted(key, form)
        else:
            event = checked(table, task.node, rt.TaskCompleted(key, data))
        self._open_task(key)
        self.send(iid, event)

    def fail_task(
        self,
        key: str,
        error: str,
        *,
        transient: bool = False,
        message: str = "",
        payload: Mapping[str, Value] | None = None,
    ) -> None:
        """Fail an open task with a named error and the payload it declares. A person
        raising an error on a human task is checked like a form: one the task does not
        raise, or a payload that does not fit, is refused (``InvalidValue``) and the task
        stays open; a delayed service call is checked as a handler's failure (one that
        does not fit is an invalid result)."""
        iid, task = self._find_task(key)
        table = self.records[iid].table
        given = None if payload is None else dict(payload)
        event: rt.TaskCompleted | rt.TaskFailed = rt.TaskFailed(
            key, error, transient, message, given
        )
        if isinstance(task, rt.CreateHumanTask):
            fitted, problems = raised_on_task(table, task.node, error, given)
            if problems:
                raise InvalidValue(f"the error raised on task '{key}'", problems)
            event = rt.TaskFailed(key, error, False, message, fitted)
        else:
            event = checked(table, task.node, event)
        self._open_task(key)
        self.send(iid, event)

    def _find_task(self, key: str) -> tuple[str, rt.ScheduleTask | rt.CreateHumanTask]:
        for iid, record in self.records.items():
            task = record.tasks.get(key)
            if task is not None:
                return iid, task
        raise KeyError(f"no open task '{key}'")

    def _open_task(self, key: str) -> tuple[str, rt.ScheduleTask | rt.CreateHumanTask]:
        """The open task ``key``, taken off its instance's open tasks."""
        iid, task = self._find_task(key)
        del self.records[iid].tasks[key]
        return iid, task

    def human_tasks(self) -> list[rt.CreateHumanTask]:
        tasks = (t for r in self.records.values() for t in r.tasks.values())
        return [t for t in tasks if isinstance(t, rt.CreateHumanTask)]

    def heartbeat(self, key: str) -> None:
        """An async call is alive: its heartbeat timeout restarts (or ``heartbeat_refused``)."""
        iid, task = self._find_task(key)
        human = isinstance(task, rt.CreateHumanTask)
        problem = heartbeat_refused(self.records[iid].table, key, task.node, human=human)
        if problem is not None:
            raise ValueError(problem)
        self.send(iid, rt.TaskHeartbeat(key))

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
                before = record.instance
                result = st.step(record.table, before, event, self.now, self.limits)
                record.instance = result.instance
                r, kept = result, record.history
                kept.append(HistoryEntry(r.instance.seq, self.now, event, None, r.decisions,
                                         r.commands, r.changes))  # fmt: skip
                compact(self.history_policy, record.checkpoints, kept, before.seq, r.instance)
                self._apply(record, result.commands)
                if self.status_hooks:
                    changes = lifecycle(record.table, before, result.instance, event, self.now)
                    notify(self.status_hooks, changes)
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
        parent_key = None if record.parent is None else record.parent[1]
        # (made for each step: kept on the record, it would tie the engine in a cycle)
        interpret(EngineEffects(self, record), record.instance.id, parent_key, commands)

    # -- reading -----------------------------------------------------------------------

    def instance(self, instance_id: str) -> rt.Instance:
        try:
            return self.records[instance_id].instance
        except KeyError:
            raise KeyError(f"unknown instance '{instance_id}'") from None

    def history(self, instance_id: str) -> list[HistoryEntry]:
        """The steps kept: all of them, or those after ``checkpoint(instance_id)``."""
        return list(self.records[instance_id].history)

    def checkpoint(self, instance_id: str) -> rt.Instance | None:
        """The instance as it was right before its first kept step (None: its start)."""
        return base(self.records[instance_id].checkpoints)

    def stuck(self, still_for: int = 0, waiting_on: str | None = None) -> list[str]:
        """The unfinished instances that have not moved (taken a step) for ``still_for``
        ms, the longest still first; ``waiting_on``: only those that wait on that label
        (``waiting.waiting_on``), as ``wf list --stuck`` and ``--waiting-on`` find them."""
        found = [
            (r.history[-1].at, iid)
            for iid, r in self.records.items()
            if not r.instance.status.finished
            and self.now - r.history[-1].at >= still_for
            and (waiting_on is None or waiting_on in labels_of(r.instance.tokens))
        ]
        return [iid for _, iid in sorted(found)]


class EngineEffects:
    """The engine's ``commands.Effects`` for one instance: it keeps the tasks, timers
    and children in memory and queues the events they cause."""

    def __init__(self, engine: Engine, record: Record) -> None:
        self.engine, self.record = engine, record

    def schedule_task(self, task: rt.ScheduleTask) -> None:
        """Call the handler now; its outcome is the instance's next event."""
        record, queue = self.record, self.engine.queue
        record.tasks[task.key] = task
        fn = self.engine.handlers.get(task.service)
        iid = record.instance.id
        if fn is None:
            queue.append((iid, no_handler(task)))
            return
        call = TaskCall(iid, task.node, task.attempt, task.key)
        outcome = call_handler(fn, task.args, call, task.service)
        if outcome is None or (
            asynchronous(record.table, task.node) and outcome.__class__ is rt.TaskCompleted
        ):
            return  # pending, or async: complete_task or fail_task with its key answers it
        record.tasks.pop(task.key, None)
        queue.append((iid, checked(record.table, task.node, outcome)))

    def open_human_task(self, task: rt.CreateHumanTask) -> None:
        self.record.tasks[task.key] = task

    def cancel_task(self, key: str) -> None:
        self.record.tasks.pop(key, None)

    def start_timer(self, timer_id: str, due: int) -> None:
        self.engine.timers[timer_id] = (due, self.record.instance.id)

    def cancel_timer(self, timer_id: str) -> None:
        self.engine.timers.pop(timer_id, None)

    def start_child(self, instance_id: str, seed: int, call: rt.StartChild) -> None:
        engine, parent = self.engine, self.record.instance.id
        try:
            table = engine.table(call.workflow, call.version)
        except KeyError:  # not registered: the call fails, as on a store
            engine.queue.append((parent, not_deployed(call)))
            return
        engine._start(table, dict(call.input), instance_id, (parent, call.key), seed)
        self.record.children[call.key] = instance_id

    def cancel_child(self, call_key: str, instance_ids: Sequence[str]) -> None:
        if self.record.children.pop(call_key, None) is None:
            return
        child = next((i for i in instance_ids if i in self.engine.records), None)
        if child is not None:
            self.engine.queue.append((child, PARENT_CANCEL))

    def send(self, send: rt.Send) -> None:
        engine = self.engine
        if send.kind == Wait.MESSAGE.value:
            engine._publish(send.name, send.to, send.payload, send.key, 0)
            return
        to = engine.records.get(send.to)
        if to is None or to.instance.status.finished:
            return
        data, problems = fit_payload(to.table, Wait.SIGNAL, send.name, send.payload)
        if not problems:  # else its version does not take it: not reached, as on a store
            engine.queue.append((send.to, rt.SignalReceived(send.name, data, send.key)))

    def finish(self, end: rt.Finish) -> None:
        self.record.tasks.clear()

    def tell_parent(self, event: ChildOutcome) -> None:
        assert self.record.parent is not None
        self.engine.queue.append((self.record.parent[0], event))


def _check_publishable(tables: Iterable[Table], message: str, payload: Mapping[str, Value]) -> None:
    """A ValueError unless some declaration of the message takes the payload."""
    problems = publication_problems(tables, message, payload)
    if problems is None:
        raise ValueError(f"no registered workflow declares a message '{message}'")
    if problems:
        raise ValueError(f"the message '{message}' does not fit: " + "; ".join(problems))


def _outside(data: Mapping[str, Value], what: str) -> dict[str, Value]:
    """A value given from outside in the runtime's form (``validate.exact``): a copy,
    with floats as exact decimals; a ValueError for what is no JSON value."""
    value, problems = exact(dict(data), what)
    if problems:
        raise ValueError(f"{what} is not a JSON value: " + "; ".join(problems))
    assert isinstance(value, dict)
    return value
