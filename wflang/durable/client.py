"""What people and operators do to durable workflows: the logic behind the CLI.

Every request is checked before anything is written: the instance or task must
exist, the action must be legal in its current status, and every value from
outside (start input, signal payload, task output, forced step output) must fit
the declared types of the version the instance runs on. A refused request
raises a ``StoreError`` whose message says why, and the store is unchanged.
Accepted ops actions travel through the instance's inbox with who asked and
why, and a worker records them in the history like any other event.
"""

from __future__ import annotations

import getpass
import logging
import os
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from attrs import frozen

from wflang.durable import pending
from wflang.durable.operations import LONGEST_MS, InvalidValue, Operations, refuse_finished
from wflang.runtime import codec, validate
from wflang.runtime import instance as rt
from wflang.runtime.correlation import correlation_text
from wflang.runtime.ir import Value
from wflang.runtime.keys import delivery_key
from wflang.runtime.table import CallEntry, Table, table_hash
from wflang.runtime.validate import (
    fit_input,
    fit_output,
    fit_payload,
    publication_problems,
    raised_on_task,
)
from wflang.runtime.waiting import Wait
from wflang.store.messages import Published
from wflang.store.records import (
    Deployed,
    IllegalAction,
    InstanceInfo,
    TaskInfo,
    UnknownInstance,
    UnknownWorkflow,
)
from wflang.store.sql import Store
from wflang.store.status import TaskKind, TaskStatus

log = logging.getLogger("wflang.client")


@frozen
class Deployment:
    name: str
    version: int
    hash: str
    new: bool


def default_actor() -> str:
    """Who is acting: ``$WF_ACTOR``, else the login name."""
    try:
        return os.environ.get("WF_ACTOR") or getpass.getuser()
    except (KeyError, OSError):  # no passwd entry (containers)
        return f"uid:{os.getuid()}"


#: The longest instance id given to ``start``: ids are primary keys (an index entry
#: of PostgreSQL holds at most about 2,700 bytes), printed everywhere, and the ids of
#: an instance's children are made from it.
MAX_ID_CHARS = 200


def check_id(instance_id: object) -> None:
    """Refuse an instance id that is not 1 to ``MAX_ID_CHARS`` characters of text."""
    if not isinstance(instance_id, str):
        problem = f"must be a string, not {type(instance_id).__name__}"
    elif not 0 < len(instance_id) <= MAX_ID_CHARS:
        problem = f"must be 1 to {MAX_ID_CHARS} characters long, not {len(instance_id)}"
    elif not instance_id.isprintable():
        problem = "must be printable text (no control characters or lone surrogates)"
    else:
        return
    raise InvalidValue("the instance id", [problem])


def start_input(deployed: Deployed, input: Mapping[str, Value]) -> dict[str, Value]:
    """A start's input as it is stored (``fit_input``: ISO-8601 text of times as ms);
    ``InvalidValue`` if it does not fit the version's declared input."""
    fitted, problems = fit_input(deployed.table, input)
    if problems:
        raise InvalidValue(f"the input of {deployed.name} v{deployed.version}", problems)
    return fitted


class Client(Operations):
    """The requests of people and operators (``Operations``: the operators' own)."""

    def __init__(self, store: Store, actor: str | None = None) -> None:
        self.store = store
        self.actor = actor or default_actor()

    # -- versions ----------------------------------------------------------------

    def _check_callees(self, tables: Sequence[Table]) -> None:
        """Refuse versions that call a workflow version which is neither deployed nor
        among ``tables``: their instances would dead-letter at the call."""
        have = {(t.workflow, t.version) for t in tables}
        have |= {(v.name, v.version) for v in self.store.versions()}
        names = {name for name, _ in have}
        missing = sorted(
            {
                f"{t.workflow} v{t.version} calls {e.workflow}"
                + ("" if e.version is None else f" v{e.version}")
                for t in tables
                for e in (s.entry for s in t.states)
                if isinstance(e, CallEntry)
                and (
                    e.workflow not in names
                    if e.version is None
                    else (e.workflow, e.version) not in have
                )
            }
        )
        if missing:
            raise UnknownWorkflow(
                "not deployed: " + "; ".join(missing) + " (deploy the called workflows first, "
                "or in the same command)"
            )

    def deploy_all(self, tables: Sequence[tuple[Table, str | None]]) -> list[Deployment]:
        """Deploy versions together, all or none: refused if one conflicts with a
        deployed version or calls a workflow that is neither deployed nor among them."""
        self._check_callees([t for t, _ in tables])
        news = self.store.deploy_all(tables, [_source_text(path) for _, path in tables])
        return [self._deployment(t, new) for (t, _), new in zip(tables, news, strict=True)]

    def deploy(self, table: Table, source: str | None = None) -> Deployment:
        new = self.store.deploy_all([(table, source)], [_source_text(source)])[0]
        return self._deployment(table, new)

    def _deployment(self, table: Table, new: bool) -> Deployment:
        """What was deployed; for a version that was there already, the hash of the one
        deployed (the same table, maybe compiled from text that differs in comments)."""
        digest = (
            table_hash(table) if new else self.store.deployed(table.workflow, table.version).hash
        )
        return Deployment(table.workflow, table.version, digest, new)

    # -- instances ---------------------------------------------------------------

    def start(
        self,
        workflow: str,
        input: Mapping[str, Value],
        *,
        version: int | None = None,
        instance_id: str | None = None,
        reason: str | None = None,
    ) -> InstanceInfo:
        if instance_id is not None:
            check_id(instance_id)
        deployed = self.store.deployed(workflow, version)
        input = start_input(deployed, input)
        iid = instance_id or f"{workflow}-{uuid.uuid4().hex[:12]}"
        self.store.create(deployed, input, iid, actor=self.actor, reason=reason)
        return self.store.instance(iid)

    def signal(
        self,
        instance_id: str,
        name: str,
        payload: Mapping[str, Value],
        *,
        key: str | None = None,
        kind: str = Wait.SIGNAL.value,
        reason: str | None = None,
    ) -> bool:
        """Send a signal; False when a signal with the same key was already taken."""

        def admit(status: str, table: Table) -> rt.Event:  # in the delivering transaction
            refuse_finished(instance_id, status, f"take the {kind} '{name}'")
            fitted, problems = fit_payload(table, kind, name, payload)  # ISO-8601 text as ms
            if problems:
                raise InvalidValue(f"the {kind} '{name}'", problems)
            return rt.SignalReceived(name, dict(fitted), key or "", kind)

        dedupe = None if key is None else delivery_key(kind, name, key)
        return self.store.deliver(instance_id, admit, dedupe_key=dedupe, actor=self.actor,
                                  reason=reason, admits_unfinished=True)  # fmt: skip

    def publish(
        self,
        message: str,
        correlation: Value,
        payload: Mapping[str, Value],
        *,
        key: str | None = None,
        ttl_ms: int = 0,
        reason: str | None = None,
    ) -> Published:
        """Publish a message to the instances waiting for it with this correlation
        (see ``wflang.store.messages``), after checking its payload against every
        deployed version that declares the message."""
        try:
            text = correlation_text(correlation)
        except ValueError as err:
            raise InvalidValue("the correlation", [str(err)]) from err
        if not 0 <= ttl_ms <= LONGEST_MS:
            raise InvalidValue("the TTL", ["must be between 0 and 100 years"])
        # It goes only to instances whose own version's declaration it fits, each taking
        # it as that declaration reads it (``store.messages``): it is kept as given.
        problems = publication_problems(self.store.tables(), message, payload)
        if problems is None:
            raise UnknownWorkflow(f"no deployed workflow declares a message '{message}'")
        if problems:
            raise InvalidValue(f"the message '{message}'", problems)
        return self.store.publish(
            message, text, payload, key=key, ttl_ms=ttl_ms, actor=self.actor, reason=reason
        )

    # -- human tasks ---------------------------------------------------------------

    def open_tasks(
        self, instance_id: str | None = None, *, assignee: str | None = None
    ) -> list[TaskInfo]:
        """The open human tasks (of one instance; assigned to ``assignee``: the inbox of
        a person or a group, as each task's assignee was when it was entered)."""
        tasks = self.store.tasks(
            kind=TaskKind.HUMAN, status=TaskStatus.OPEN, instance_id=instance_id
        )
        return tasks if assignee is None else [t for t in tasks if t.assignee == assignee]

    def pending_calls(
        self, instance_id: str | None = None, *, workflow: str | None = None
    ) -> list[pending.PendingCall]:  # async calls waiting for their token
        return pending.pending_calls(self.store, instance_id, workflow)

    def heartbeat(self, key: str) -> TaskInfo:  # an async call's handler is alive
        return pending.heartbeat(self.store, key, self.actor)

    def _open_human_task(self, key: str) -> tuple[TaskInfo, Table]:
        """An open human task, or an async call waiting for its token, and the table of
        its instance's version; or a refusal."""
        task = self.store.task(key)
        called = (TaskStatus.READY, TaskStatus.RUNNING)  # a call a worker runs or will run
        if task.kind != TaskKind.HUMAN and task.status in called:
            raise IllegalAction(
                f"task '{key}' is a service call; only human tasks and async calls waiting "
                "for their token are completed by hand (an operator can use "
                f"`wf ops force-complete {task.instance_id} {task.node}`)"
            )
        if task.status not in (TaskStatus.OPEN, TaskStatus.WAITING):
            raise IllegalAction(f"task '{key}' is {task.status}, not open")
        info = self.store.instance(task.instance_id)
        return task, self.store.table_for(info.table_hash)

    def raise_error(
        self,
        key: str,
        error: str,
        payload: Mapping[str, Value] | None = None,
        *,
        message: str = "",
        reason: str | None = None,
    ) -> TaskInfo:
        """A person raises a declared error on a human task instead of filling its form:
        one the task ``raises``, with the payload the error declares (checked like a
        form; a refusal stores nothing)."""
        task, table = self._open_human_task(key)
        if task.kind == TaskKind.SERVICE:  # an async call: failed as its handler would
            given = None if payload is None else dict(payload)
            event = _answer(table, task, rt.TaskFailed(key, error, False, message, given))
        else:
            fitted, problems = raised_on_task(table, task.node, error, payload)
            if problems:
                raise InvalidValue(f"the error raised on task '{key}'", problems)
            event = rt.TaskFailed(key, error, False, message, fitted)
        self.store.close_human_task(key, event, actor=self.actor, reason=reason)
        return self.store.task(key)

    def complete_task(
        self, key: str, output: Mapping[str, Value], *, reason: str | None = None
    ) -> TaskInfo:
        task, table = self._open_human_task(key)
        if task.kind == TaskKind.SERVICE:  # an async call: its result, as its handler's
            done = _answer(table, task, rt.TaskCompleted(key, dict(output)))
            self.store.close_human_task(key, done, actor=self.actor, reason=reason)
            return self.store.task(key)
        form, problems = fit_output(table, task.node, output, fill=True)  # ISO-8601 as ms
        if problems:
            raise InvalidValue(f"the output of task '{key}'", problems)
        self.store.close_human_task(
            key, rt.TaskCompleted(key, form), actor=self.actor, reason=reason
        )
        return self.store.task(key)

    # -- reading -------------------------------------------------------------------------

    def history_document(self, instance_id: str) -> dict[str, Any]:
        info = self.store.instance(instance_id)
        kept = self.store.kept_history(instance_id)  # and its checkpoint, if compacted
        table = self.store.table_for(info.table_hash)
        if info.unreadable:
            raise IllegalAction(f"instance '{instance_id}': {info.unreadable}")
        if info.instance is None:
            raise IllegalAction(
                f"instance '{instance_id}' has not started yet: no worker has taken it"
            )
        extra = [
            {"idempotency_key": r.idempotency_key, "actor": r.actor, "reason": r.reason}
            for r in kept.rows
        ]
        entries, part = [r.entry for r in kept.rows], kept.compacted()
        return codec.history_document(table, info.table_hash, info.instance, entries, extra, part)


def _source_text(path: str | None) -> str | None:
    """The text of the file a version was compiled from, kept with it to draw it (None:
    no file, or one that cannot be read now: the version deploys all the same)."""
    if path is None:
        return None
    try:
        with open(path, encoding="utf-8") as file:
            return file.read()
    except (OSError, UnicodeDecodeError):
        return None


__all__ = ["Client", "Deployment", "InvalidValue", "UnknownInstance", "default_actor"]


def _answer(
    table: Table, task: TaskInfo, given: rt.TaskCompleted | rt.TaskFailed
) -> rt.TaskCompleted | rt.TaskFailed:
    """The client's answer to an async call, checked as its handler's would be: one that
    does not fit (a result, an error the service does not raise, a payload) is refused
    and nothing is stored."""
    from wflang.runtime.failures import INVALID_RESULT
    from wflang.runtime.outcome import checked

    problems: list[str] = []
    if isinstance(given, rt.TaskFailed):
        state = next(i for i, s in enumerate(table.states) if s.name == task.node)
        problem = validate.undeclared_error(table, state, given.error)
        problems += [] if problem is None else [problem]
    answer = checked(table, task.node, given)
    if isinstance(answer, rt.TaskFailed) and answer.error == INVALID_RESULT != _given_error(given):
        problems.append(answer.message)
    if problems:
        raise InvalidValue(f"the answer to task '{task.key}'", problems)
    return answer


def _given_error(event: rt.TaskCompleted | rt.TaskFailed) -> str | None:
    return event.error if isinstance(event, rt.TaskFailed) else None
