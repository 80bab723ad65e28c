"""The test kit: run workflows in process with a virtual clock and scripted handlers.

    env = WorkflowEnv.from_files("examples/order_saga.wf", handlers={
        "inventory.reserve": succeed({"reservation_id": "r-1"}),
        "payments.charge": [transient("Timeout"), succeed({"charge_id": "c-1"})],
    })
    order = env.start("order_saga", {...})
    env.advance(hours=48)             # fires exactly the timers due, in order
    assert env.status(order) == "completed"

A handler script is one outcome, or a list of outcomes by attempt (the last one
repeats): ``succeed``, ``transient``/``permanent`` failures, ``delay`` (the
answer comes when the test gives it) and ``duplicate`` (the handler's answer is
delivered twice, as a retried callback would). Nothing sleeps.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from attrs import frozen

from wflang.compiler.compile import compile_workflow
from wflang.dsl.parser import parse_file
from wflang.handlers.load import load
from wflang.handlers.registry import Registered, Registry, typed
from wflang.handlers.verify import verify
from wflang.runtime import instance as rt
from wflang.runtime.engine import Engine, HistoryEntry
from wflang.runtime.history import DEFAULT as DEFAULT_HISTORY
from wflang.runtime.history import HistoryPolicy
from wflang.runtime.ir import Value
from wflang.runtime.lifecycle import StatusHook
from wflang.runtime.limits import DEFAULT as DEFAULT_LIMITS
from wflang.runtime.limits import Limits
from wflang.runtime.outcome import Handler, TaskCall, TaskError, invoke, pending
from wflang.runtime.replay import Replayed, replay
from wflang.runtime.table import Table
from wflang.runtime.validate import fit_payload
from wflang.runtime.waiting import Wait, wait_label

MINUTE, HOUR, DAY = 60_000, 3_600_000, 86_400_000


@frozen
class Outcome:
    """What a scripted handler does on one attempt."""

    kind: str  # succeed | transient | permanent | delay | duplicate
    result: Mapping[str, Value] | None = None
    error: str = ""
    message: str = ""
    payload: Mapping[str, Value] | None = None  # of an error declared with one


def succeed(result: Mapping[str, Value] | None = None) -> Outcome:
    return Outcome("succeed", dict(result or {}))


def transient(error: str = "Unavailable") -> Outcome:
    return Outcome("transient", error=error)


def permanent(error: str, message: str = "", payload: Mapping[str, Value] | None = None) -> Outcome:
    """Fail for good with a named error (its message, and its payload if it declares one)."""
    return Outcome("permanent", error=error, message=message, payload=payload)


def delay() -> Outcome:
    """The handler accepts the work; the test answers later with ``env.complete``."""
    return Outcome("delay")


def duplicate(result: Mapping[str, Value] | None = None) -> Outcome:
    """Succeed, and deliver the same completion a second time."""
    return Outcome("duplicate", dict(result or {}))


Script = Outcome | Sequence[Outcome] | Handler
#: The handlers of a ``WorkflowEnv``: scripts by service, a ``Registry``, or a module of
#: ``@handler`` functions (by name, by file, or the module itself).
Handlers = Mapping[str, Script] | str | Path | ModuleType


class CompileError(Exception):
    """A workflow given to the test kit has check errors."""


class WorkflowEnv:
    """An engine with a virtual clock and scripted handlers, for tests."""

    def __init__(self, tables: Iterable[Table], handlers: Handlers | None = None,
                 *, now: int = 0, seed: int = 0, limits: Limits = DEFAULT_LIMITS,
                 allow_missing: bool = False, allow_unused: bool = False,
                 history: HistoryPolicy | None = DEFAULT_HISTORY) -> None:  # fmt: skip
        """``history``: how many steps each instance keeps (``runtime.history``; None:
        all). Refused (``HandlersRefused``, before anything runs) when a service the tables
        call has no handler (unless ``allow_missing``: its calls then fail with
        ``NoHandler``), when a handler serves a service no table calls (unless
        ``allow_unused``), or when a function's parameters cannot take its service's
        arguments."""
        self.calls: list[tuple[str, dict[str, Value], TaskCall]] = []
        self.delayed: dict[str, tuple[str, int, int]] = {}  # key -> (instance, token, attempt)
        self._duplicates: list[tuple[str, rt.Event]] = []
        tables = list(tables)
        scripts = _scripts(handlers)
        verify(tables, _registry(scripts), allow_missing=allow_missing, allow_unused=allow_unused)
        scripted = {name: self._handler(name, script) for name, script in scripts.items()}
        self.engine = Engine(tables, scripted, now=now, seed=seed, limits=limits, history=history)

    @classmethod
    def from_files(cls, *paths: str | Path, handlers: Handlers | None = None,
                   now: int = 0, seed: int = 0, limits: Limits = DEFAULT_LIMITS,
                   allow_missing: bool = False,
                   allow_unused: bool = False) -> WorkflowEnv:  # fmt: skip
        tables = []
        for path in paths:
            compiled = compile_workflow(parse_file(str(path)))
            if compiled.table is None:
                shown = "; ".join(f"{d.span}: {d.message}" for d in compiled.check.diagnostics)
                raise CompileError(f"{path} does not compile: {shown}")
            tables.append(compiled.table)
        return cls(tables, handlers, now=now, seed=seed, limits=limits,
                   allow_missing=allow_missing, allow_unused=allow_unused)  # fmt: skip

    # -- handlers --------------------------------------------------------------------

    def _handler(self, service: str, script: Script) -> Handler:
        if callable(script) and not isinstance(script, Outcome):
            fn = typed(script)  # its arguments as it annotates them (``wflang.handlers``)

            def recorded(task: TaskCall, **args: Value) -> Any:
                self.calls.append((service, args, task))  # a function is recorded too
                return invoke(fn, args, task)

            return recorded
        outcomes = [script] if isinstance(script, Outcome) else list(script)

        def scripted(task: TaskCall, **args: Value) -> Any:
            self.calls.append((service, args, task))
            outcome = outcomes[min(task.attempt, len(outcomes)) - 1]
            if outcome.kind in ("transient", "permanent"):
                raise TaskError(
                    outcome.error,
                    outcome.message,
                    transient=outcome.kind == "transient",
                    payload=outcome.payload,
                )
            if outcome.kind == "delay":
                return pending()
            if outcome.kind == "duplicate":
                self._duplicate(task, outcome.result)
            return outcome.result

        return scripted

    def _duplicate(self, task: TaskCall, result: Mapping[str, Value] | None) -> None:
        event = rt.TaskCompleted(task.idempotency_key, dict(result or {}))
        self._duplicates.append((task.instance, event))

    def _flush_duplicates(self) -> None:
        while self._duplicates:
            iid, event = self._duplicates.pop(0)
            self.engine.send(iid, event)

    # -- driving --------------------------------------------------------------------------

    def start(self, workflow: str, input: Mapping[str, Value], *, version: int | None = None,
              instance_id: str | None = None) -> str:  # fmt: skip
        iid = self.engine.start(workflow, input, version=version, instance_id=instance_id)
        self._flush_duplicates()
        return iid

    def advance(self, *, ms: int = 0, seconds: float = 0, minutes: float = 0, hours: float = 0,
                days: float = 0) -> None:  # fmt: skip
        total = ms + int(seconds * 1000 + minutes * MINUTE + hours * HOUR + days * DAY)
        self.engine.advance(total)
        self._flush_duplicates()

    def signal(self, instance_id: str, name: str, payload: Mapping[str, Value] | None = None,
               key: str = "") -> None:  # fmt: skip
        """Send a signal, checked against its declaration (``Engine.signal``)."""
        self.engine.signal(instance_id, name, payload, key)
        self._flush_duplicates()

    def message(self, instance_id: str, name: str, payload: Mapping[str, Value] | None = None,
                key: str = "") -> None:  # fmt: skip
        """Send a message to this instance (no correlation), checked like a signal."""
        payload = self._check(instance_id, Wait.MESSAGE, name, payload)
        event = rt.SignalReceived(name, payload, key, Wait.MESSAGE.value)
        self.engine.send(instance_id, event)
        self._flush_duplicates()

    def _check(
        self, instance_id: str, kind: str, name: str, payload: Mapping[str, Value] | None
    ) -> dict[str, Value]:
        """The payload, its time fields' text read as milliseconds, if it fits."""
        table = (
            self.engine.records[instance_id].table if instance_id in self.engine.records else None
        )
        if table is None:
            raise KeyError(f"unknown instance '{instance_id}'")
        data, problems = fit_payload(table, kind, name, payload or {})
        if problems:
            raise ValueError(f"the {kind} '{name}' does not fit: " + "; ".join(problems))
        return data

    def publish(self, message: str, correlation: Value,
                payload: Mapping[str, Value] | None = None, *, key: str = "",
                ttl_ms: int = 0) -> list[str]:  # fmt: skip
        """Publish a message by correlation (``Engine.publish``); the instances reached."""
        reached = self.engine.publish(message, correlation, payload, key=key, ttl_ms=ttl_ms)
        self._flush_duplicates()
        return reached

    def cancel(self, instance_id: str, *, compensate: bool = False) -> None:
        self.engine.cancel(instance_id, compensate=compensate)

    def retry(self, instance_id: str, step: str | None = None) -> None:
        """Ops: resume a dead-lettered instance from its failed step (or ``step``)."""
        self.engine.retry(instance_id, step)
        self._flush_duplicates()

    def force_complete(self, instance_id: str, step: str,
                       output: Mapping[str, Value] | None = None) -> None:  # fmt: skip
        """Ops: finish a waiting or failed step (a compensation too) with ``output``."""
        self.engine.complete_step(instance_id, step, dict(output or {}))
        self._flush_duplicates()

    def skip_compensation(self, instance_id: str, step: str, *, reason: str) -> None:
        """Ops: give up on the failed compensation at ``step``; the rest run."""
        self.engine.skip_compensation(instance_id, step, reason=reason)
        self._flush_duplicates()

    def complete(self, key: str, result: Mapping[str, Value] | None = None) -> None:
        """Answer a delayed service call or a human task."""
        self.engine.complete_task(key, dict(result or {}))
        self._flush_duplicates()

    def complete_task(self, key: str, output: Mapping[str, Value]) -> None:
        """``complete``, named as the durable client names it (the generated helpers
        ``complete_STEP`` call either)."""
        self.complete(key, output)

    def fail(
        self,
        key: str,
        error: str,
        *,
        transient: bool = False,
        message: str = "",
        payload: Mapping[str, Value] | None = None,
    ) -> None:
        """Fail a delayed service call or a human task (with the error's payload)."""
        self.engine.fail_task(key, error, transient=transient, message=message, payload=payload)
        self._flush_duplicates()

    def heartbeat(self, key: str) -> None:
        """The handler of an async call says it is alive, with the call's token."""
        self.engine.heartbeat(key)
        self._flush_duplicates()

    def send(self, instance_id: str, event: rt.Event) -> None:
        self.engine.send(instance_id, event)
        self._flush_duplicates()

    # -- reading ----------------------------------------------------------------------------

    @property
    def now(self) -> int:
        return self.engine.now

    def instance(self, instance_id: str) -> rt.Instance:
        return self.engine.instance(instance_id)

    def status(self, instance_id: str) -> str:
        return self.engine.instance(instance_id).status.value

    def context(self, instance_id: str) -> dict[str, Value]:
        return dict(self.engine.instance(instance_id).context)

    def history(self, instance_id: str) -> list[HistoryEntry]:
        """The steps kept: all, or those after ``checkpoint(instance_id)``."""
        return self.engine.history(instance_id)

    def checkpoint(self, instance_id: str) -> rt.Instance | None:
        """The instance right before its first kept step (None: the history is whole)."""
        return self.engine.checkpoint(instance_id)

    def on_status(self, hook: StatusHook) -> StatusHook:
        """Call ``hook`` with every status change of an instance and of its tasks, after
        the step that made it (``Engine.on_status``); a hook that raises is logged."""
        return self.engine.on_status(hook)

    def stuck(self, *, still_for: int = 0, waiting_on: str | None = None) -> list[str]:
        """The unfinished instances that have not moved for ``still_for`` ms (by the
        virtual clock), the longest still first; ``waiting_on``: only those waiting on it
        (``signal:approval``, ``message:paid``, ``timer``, ``person``, ``task``, ``retry``,
        ``child``; a ValueError names them)."""
        label = None if waiting_on is None else wait_label(waiting_on)
        return self.engine.stuck(still_for, label)

    def decisions(self, instance_id: str) -> list[str]:
        return [d for entry in self.history(instance_id) for d in entry.decisions]

    def open_tasks(self, instance_id: str) -> list[str]:
        """Keys of the service calls and human tasks an instance waits for."""
        return list(self.engine.records[instance_id].tasks)

    def services_called(self) -> list[str]:
        return [service for service, _, _ in self.calls]

    def replay(self, instance_id: str, table: Table | None = None) -> Replayed:
        """Replay an instance's history on its table (or on another version of it)."""
        record = self.engine.records[instance_id]
        return replay(
            table or record.table,
            instance_id,
            record.history,
            record.instance.seed,
            self.engine.limits,
            self.engine.checkpoint(instance_id),
        )


def _scripts(handlers: Handlers | None) -> Mapping[str, Script]:
    """Scripts by service: a module (or its name or file) gives its handlers."""
    if handlers is None:
        return {}
    if isinstance(handlers, str | Path | ModuleType):
        return load([handlers])
    return handlers


def _registry(scripts: Mapping[str, Script]) -> Registry:
    """The scripts as a registry to verify: a function where it is written; an outcome
    as a handler that takes anything."""
    if isinstance(scripts, Registry):
        return scripts
    registry = Registry()
    for service, script in scripts.items():
        if callable(script) and not isinstance(script, Outcome):
            registry.add(service, script)
        else:
            registry.entries[service] = Registered(
                service, _takes_anything, False, "a scripted outcome", 0, _takes_anything
            )
    return registry


def _takes_anything(**_: Value) -> None:
    return None


def by_attempt(*outcomes: Outcome) -> list[Outcome]:
    """A script of outcomes, one per attempt (the last repeats): readable at call sites."""
    return list(outcomes)
