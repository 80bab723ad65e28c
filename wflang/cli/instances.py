"""The commands people use on running instances: ``wf signal``, ``wf publish``,
``wf tasks``, ``wf status``, ``wf history`` and ``wf list``."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from attrs import field, frozen

from wflang.cli.framework import Command, Group, Out, Result, UsageError, arg, flag_field, said
from wflang.cli.stores import (
    actor_field,
    client,
    json_field,
    json_text,
    listing,
    open_cli_store,
    reason_field,
    record,
    store_field,
)
from wflang.cli.values import json_arg, outcome_label, parse_age, positive, when

if TYPE_CHECKING:
    from wflang.runtime.ir import Value
    from wflang.store import Store
    from wflang.store.records import InstanceInfo, PendingCall, TaskInfo

#: The statuses ``wf list --status`` takes: ``pending`` and those of
#: ``runtime.instance.Status`` (a test keeps them equal).
LIST_STATUSES = ("pending", "running", "waiting", "compensating", "completed", "failed",
                 "cancelled", "compensated", "dead_lettered")  # fmt: skip


@frozen(kw_only=True)
class Signal:
    instance: str = field(metadata=arg(help="the instance id"))
    name: str = field(metadata=arg(help="the signal's name"))
    payload: str = field(
        default="{}", metadata=arg("--payload", help="the payload as JSON, or @file.json")
    )
    key: str | None = field(
        default=None,
        metadata=arg("--key", help="a deduplication key: a second signal with it is ignored"),
    )
    message: bool = flag_field("--message", help="send a message instead")
    store: str | None = store_field()
    reason: str | None = reason_field()
    actor: str | None = actor_field()


def signal(req: Signal) -> Result:
    from wflang.runtime.waiting import Wait

    durable = client(req.store, req.actor)
    payload = json_arg(req.payload, "--payload")
    kind = (Wait.MESSAGE if req.message else Wait.SIGNAL).value
    delivered = durable.signal(
        req.instance, req.name, payload, key=req.key, kind=kind, reason=req.reason
    )
    out = Out()
    if delivered:
        out.print(f"{kind} {req.name} sent to {req.instance}")
    else:
        out.print(f"{kind} {req.name} with key {req.key!r} was already sent: ignored")
    return out.done()


@frozen(kw_only=True)
class Publish:
    message: str = field(metadata=arg(help="the message's name"))
    correlation: str = field(
        metadata=arg("--correlation", required=True, help="the correlation value")
    )
    int: bool = flag_field("--int", help="the correlation is an integer (checked)")
    payload: str = field(
        default="{}", metadata=arg("--payload", help="the payload as JSON, or @file.json")
    )
    key: str | None = field(
        default=None,
        metadata=arg("--key", help="a deduplication key: publishing it again is ignored"),
    )
    ttl: str | None = field(
        default=None,
        metadata=arg("--ttl", metavar="DURATION", help="keep it for later waiters: 10m, 2h, 7d"),
    )
    reason: str | None = reason_field()
    actor: str | None = actor_field()
    store: str | None = store_field()


def publish(req: Publish) -> Result:
    durable = client(req.store, req.actor)
    payload = json_arg(req.payload, "--payload")
    ttl = 0 if req.ttl is None else parse_age(req.ttl, "--ttl")
    correlation: Value = req.correlation
    if req.int:
        if not re.fullmatch(r"[+-]?[0-9]+", req.correlation.strip()):
            raise UsageError(f"--correlation: '{req.correlation}' is not an integer")
        correlation = int(req.correlation)
    done = durable.publish(
        req.message, correlation, payload, key=req.key, ttl_ms=ttl, reason=req.reason
    )
    out = Out()
    what = f"message {done.message} (correlation {done.correlation!r})"
    if done.duplicate:
        out.print(f"{what} with key {req.key!r} was already published: ignored")
        return out.done()
    if done.delivered:
        out.print(f"{what} delivered to {len(done.delivered)} instance(s): "
                  + ", ".join(done.delivered))  # fmt: skip
    else:
        out.print(f"{what}: no instance waits for it now")
    if done.kept_until is not None:
        out.print(f"kept for instances that start waiting for it until {when(done.kept_until)}")
    elif not done.delivered:
        out.print("not kept (give --ttl to keep it for instances that wait later)")
    return out.done()


@frozen(kw_only=True)
class TasksList:
    kind: str | None = field(
        default=None,
        metadata=arg(
            "--kind",
            choices=("human", "async"),
            help="only human tasks, or only async calls waiting for their token (default: both)",
        ),
    )
    instance: str | None = field(
        default=None, metadata=arg("--instance", help="only this instance's")
    )
    workflow: str | None = field(
        default=None, metadata=arg("--workflow", help="only this workflow's instances'")
    )
    assignee: str | None = field(
        default=None,
        metadata=arg("--assignee", help="only human tasks assigned to this person or group"),
    )
    json: bool = json_field()
    store: str | None = store_field()


def tasks_list(req: TasksList) -> Result:
    """The open human tasks, then the async calls waiting for their token."""
    durable = client(req.store)
    items: list[TaskInfo | PendingCall] = []
    if req.kind in (None, "human"):
        tasks = durable.open_tasks(req.instance, assignee=req.assignee)
        if req.workflow is not None:
            ids = {t.instance_id for t in tasks}
            ours = {i for i in ids if durable.store.instance(i).workflow == req.workflow}
            tasks = [t for t in tasks if t.instance_id in ours]
        items += tasks
    if req.kind in (None, "async") and req.assignee is None:  # a call has no assignee
        items += durable.pending_calls(req.instance, workflow=req.workflow)
    empty = {"human": "no open human tasks", "async": "no pending async calls"}
    return listing(
        items,
        json=req.json,
        document=_task_document,
        empty=empty.get(req.kind or "", "no open human tasks or pending async calls"),
        lines=_task_lines,
    ).done()


def _task_document(item: TaskInfo | PendingCall) -> dict[str, Any]:
    from wflang.store.records import PendingCall

    return {"kind": "async", **record(item)} if isinstance(item, PendingCall) else record(item)


def _task_lines(items: Sequence[TaskInfo | PendingCall]) -> Iterator[str]:
    from wflang.store.records import PendingCall

    for t in items:
        if isinstance(t, PendingCall):
            yield (
                f"{t.key}  async call {t.service} at {t.node}  {t.workflow} v{t.version}  "
                f"{t.instance_id}  since {when(t.since)}  deadline {when(t.deadline)}"
            )
            continue
        who = f" for {t.assignee}" if t.assignee else ""
        form = f" form: {', '.join(t.form)}" if t.form else ""
        yield f"{t.key}  {t.service or 'user'} task {t.node}{who}{form}"


@frozen(kw_only=True)
class TasksComplete:
    key: str = field(metadata=arg(help="the task key (from 'wf tasks list')"))
    output: str | None = field(
        default=None, metadata=arg("--output", help="the form's values as JSON, or @file.json")
    )
    error: str | None = field(
        default=None,
        metadata=arg("--error", help="raise this error (one the task 'raises') instead"),
    )
    payload: str | None = field(
        default=None,
        metadata=arg("--payload", help="with --error: the error's payload as JSON, or @file.json"),
    )
    message: str = field(default="", metadata=arg("--message", help="with --error: its message"))
    store: str | None = store_field()
    reason: str | None = reason_field()
    actor: str | None = actor_field()


def tasks_complete(req: TasksComplete) -> Result:
    durable = client(req.store, req.actor)
    if req.error is None:
        if req.payload is not None or req.message:
            raise UsageError("--payload and --message go with --error")
        output = json_arg(req.output or "{}", "--output")
        task = durable.complete_task(req.key, output, reason=req.reason)
        return said(f"task {task.key} completed")
    if req.output is not None:
        raise UsageError("give the form (--output) or an error (--error), not both")
    payload = None if req.payload is None else json_arg(req.payload, "--payload")
    task = durable.raise_error(req.key, req.error, payload, message=req.message, reason=req.reason)
    return said(f"task {task.key} raised {req.error}")


@frozen(kw_only=True)
class TasksFail:
    key: str = field(metadata=arg(help="the task key: an async call's completion token"))
    error: str = field(metadata=arg("--error", help="the error (one the service raises)"))
    payload: str | None = field(
        default=None, metadata=arg("--payload", help="the error's payload as JSON, or @file.json")
    )
    message: str = field(default="", metadata=arg("--message", help="the error's message"))
    store: str | None = store_field()
    reason: str | None = reason_field()
    actor: str | None = actor_field()


def tasks_fail(req: TasksFail) -> Result:
    payload = None if req.payload is None else json_arg(req.payload, "--payload")
    durable = client(req.store, req.actor)
    task = durable.raise_error(req.key, req.error, payload, message=req.message, reason=req.reason)
    return said(f"task {task.key} failed with {req.error}")


@frozen(kw_only=True)
class TasksHeartbeat:
    key: str = field(metadata=arg(help="the task key: an async call's completion token"))
    store: str | None = store_field()
    actor: str | None = actor_field()


def tasks_heartbeat(req: TasksHeartbeat) -> Result:
    task = client(req.store, req.actor).heartbeat(req.key)
    return said(f"heartbeat of task {task.key} sent")


@frozen(kw_only=True)
class Status:
    instance: str = field(metadata=arg(help="the instance id"))
    json: bool = json_field()
    store: str | None = store_field()


def status(req: Status) -> Result:
    from wflang.runtime import codec
    from wflang.runtime.instance import Status as RunStatus
    from wflang.store.status import TaskStatus

    store = open_cli_store(req.store)
    info = store.instance(req.instance)
    out = Out()
    if req.json:
        out.print(json_text(_status_json(store, info)))
        return out.done()
    out.print(f"instance: {info.id}")
    out.print(f"workflow: {info.workflow} v{info.version} (sha256:{info.table_hash[:12]})")
    out.print(f"status:   {info.status}")
    out.print(f"created:  {when(info.created_at)}   updated: {when(info.updated_at)}")
    inst = info.instance
    if inst is not None:
        table = store.table_for(info.table_hash)
        dead = inst.status is RunStatus.DEAD_LETTERED
        if not inst.status.finished or dead:
            for t in inst.tokens:
                if dead:  # where it stopped; a failed compensation waits for an operator
                    note = " (compensation: retry, force-complete or skip it)" * t.compensating
                else:
                    note = f" (waiting for {t.waiting})" if t.waiting else ""
                    note += " (compensation)" * t.compensating
                out.print(f"at:       {table.states[t.state].name}{note}")
            if any(t.compensating for t in inst.tokens) and inst.compensations:
                rest = ", ".join(table.states[s].name for s in reversed(inst.compensations))
                out.print(f"then:     {rest} (the compensations still to run, in this order)")
        if not inst.status.finished:  # each as `wf ops fire-timers --timer` takes it
            for timer in sorted(inst.timers, key=lambda t: (t.due, t.id)):
                out.print(f"timer:    {timer.purpose} at {when(timer.due)} (id {timer.id})")
        if inst.output is not None:
            out.print("output:   " + codec.dumps(inst.output))
        if inst.error:
            out.print(f"{outcome_label(inst.status.value) + ':':10}{inst.error}")
        out.print(f"steps:    {inst.seq}")
    if info.unreadable:
        out.print(f"error:    {info.unreadable}")
    for task in store.tasks(instance_id=info.id, status=TaskStatus.OPEN):
        out.print(f"open task: {task.key} ({task.node})")
    return out.done()


def _status_json(store: Store, info: InstanceInfo) -> dict[str, Any]:
    from wflang.runtime import codec

    inst = info.instance
    table = store.table_for(info.table_hash)
    return {
        "instance": info.id,
        "workflow": info.workflow,
        "version": info.version,
        "table_hash": info.table_hash,
        "status": info.status,
        "created_at": info.created_at,
        "updated_at": info.updated_at,
        "current": [] if inst is None else codec.current_nodes(table, inst),
        "output": None if inst is None else inst.output,
        "error": info.unreadable if inst is None else inst.error,
        "steps": 0 if inst is None else inst.seq,
    }


@frozen(kw_only=True)
class History:
    instance: str = field(metadata=arg(help="the instance id"))
    json: bool = json_field("print the wflang.history/1 document")
    compact: bool = flag_field("--compact", help="the JSON document on one line")
    changes: bool = flag_field(
        "--changes", help="what each step changed in the context (old -> new), with its event"
    )
    store: str | None = store_field()


def history(req: History) -> Result:
    from wflang.cli.changes import change_lines, event_label, output_text, step_text
    from wflang.runtime import codec

    c = client(req.store)
    doc = c.history_document(req.instance)
    out = Out()
    if req.json or req.compact:  # --compact is the JSON document on one line
        out.print(codec.dumps(doc, indent=None if req.compact else 1))
        return out.done()
    table = c.store.table_for(doc["table_hash"])  # its times print for people
    if doc.get("compacted"):  # the steps before its checkpoint went (runtime.history)
        through, archived = doc["compacted"]["through"], doc["compacted"]["archived"]
        where = f", {archived} of them archived" if archived else ""
        out.print(f"steps 1 to {through} compacted{where}: kept from a checkpoint after {through}")
    for entry in doc["entries"]:
        event = entry["event"]
        label = "start" if event is None else event["type"]
        who = ""
        if entry.get("actor"):
            who = f"  by {entry['actor']}" + (f": {entry['reason']}" if entry.get("reason") else "")
        seq, at = entry["seq"], when(entry["at"])
        if req.changes:
            if entry.get("changes"):
                changed = change_lines(entry["changes"], table)
                out.print(step_text(seq, at, event_label(event) + who, changed))
            continue
        out.print(step_text(seq, at, label + who, entry["decisions"]))
    out.print(f"status: {doc['status']}")
    if doc.get("output") is not None:
        out.print("output: " + output_text(doc["output"], table))
    if doc.get("error"):
        out.print(f"{outcome_label(doc['status'])}: {doc['error']}")
    return out.done()


@frozen(kw_only=True)
class List:
    status: str | None = field(
        default=None,
        metadata=arg("--status", choices=LIST_STATUSES, help="only instances with this status"),
    )
    workflow: str | None = field(
        default=None, metadata=arg("--workflow", help="only this workflow")
    )
    limit: int = field(
        default=100,
        metadata=arg("--limit", type=positive, help="at most this many (default 100)"),
    )
    stuck: str | None = field(
        default=None,
        metadata=arg(
            "--stuck",
            metavar="AGE",
            help="only the unfinished instances that have not moved for AGE (1h, 2d, 90m), "
            "the longest still first, with what they wait on and since when",
        ),
    )
    waiting_on: str | None = field(
        default=None,
        metadata=arg(
            "--waiting-on",
            metavar="WAIT",
            help="only instances waiting on WAIT: signal:NAME, message:NAME, timer, person, "
            "task, retry or child",
        ),
    )
    json: bool = json_field()
    store: str | None = store_field()


def list_instances(req: List) -> Result:
    from wflang.runtime.waiting import wait_label

    still_for = None if req.stuck is None else parse_age(req.stuck, "--stuck")
    try:
        label = None if req.waiting_on is None else wait_label(req.waiting_on)
    except ValueError as err:
        raise UsageError(f"--waiting-on: {err}") from None
    found = open_cli_store(req.store).instances(
        status=req.status, workflow=req.workflow, limit=req.limit, waiting_on=label,
        still_for=still_for,
    )  # fmt: skip
    where = still_for is not None or label is not None
    return listing(
        found,
        json=req.json,
        document=lambda r: {
            "instance": r.id,
            "workflow": r.workflow,
            "version": r.version,
            "status": r.status,
            "created_at": r.created_at,
            "updated_at": r.updated_at,
            "waiting_on": list(r.waiting_on),
        },
        empty="no instances",
        lines=lambda rows: _instance_lines(rows, where),
    ).done()


def _instance_lines(rows: Sequence[InstanceInfo], where: bool = False) -> Iterator[str]:
    """One line per instance; ``where``: what it waits on, and since when (its last move)."""
    ids = max(len(r.id) for r in rows)
    flows = max(len(f"{r.workflow} v{r.version}") for r in rows)
    for r in rows:
        flow = f"{r.workflow} v{r.version}"
        if where:
            on = ", ".join(r.waiting_on) or "-"
            yield f"{r.id:{ids}}  {flow:{flows}}  {r.status:14} on {on}  since {when(r.updated_at)}"
        else:
            yield f"{r.id:{ids}}  {flow:{flows}}  {r.status:14} {when(r.updated_at)}"


SIGNAL = Command(
    ("signal",),
    Signal,
    signal,
    help="send a signal (or message) to an instance",
    description="Send a signal to an instance, after checking its name and payload "
    "against the workflow's declaration. With --key, sending the same key again is "
    "ignored; a signal sent before the instance waits for it is kept until it does.",
)
PUBLISH = Command(
    ("publish",),
    Publish,
    publish,
    help="publish a message to the instances waiting for it by correlation",
    description="Publish a message declared by a deployed workflow (its payload is "
    "checked against the declaration) to every instance waiting for it with "
    "`wait ...: message NAME correlate EXPR` where EXPR's value, when the wait began, "
    "equals --correlation (compared as text). With --ttl the message is also kept "
    "that long for instances that start waiting for it later; each instance gets it "
    "once. With --key, publishing the same key again is ignored. To send a message "
    "to one instance by its id, use 'wf signal ID NAME --message'.",
)
TASKS = Group(
    ("tasks",),
    help="list and complete human tasks",
    description="Human (user and manual) tasks waiting for a person.",
)
TASKS_LIST = Command(
    ("tasks", "list"),
    TasksList,
    tasks_list,
    help="open human tasks and async calls waiting for their token",
    description="Human tasks waiting for a person, oldest first, with their key (for "
    "'wf tasks complete'), node, instance, assignee and form fields; then the async "
    "service calls waiting for their completion token, with their service, node, "
    "workflow, instance, since when they wait and their deadline.",
)
TASKS_HEARTBEAT = Command(
    ("tasks", "heartbeat"),
    TasksHeartbeat,
    tasks_heartbeat,
    help="say an async service call is alive: its heartbeat timeout starts again",
    description="The handler of an async service call that declares a 'heartbeat' "
    "timeout is still at work (the task key is its completion token): the timeout starts "
    "again from now. A call that is not under way, or declares no heartbeat, is refused.",
)
TASKS_COMPLETE = Command(
    ("tasks", "complete"),
    TasksComplete,
    tasks_complete,
    help="complete a human task with its form's values, or an async call with its result",
    description="Complete an open human task (the output is checked against its form), "
    "or an async service call waiting for its completion token, the task key (the "
    "output is checked against the service's result).",
)
TASKS_FAIL = Command(
    ("tasks", "fail"),
    TasksFail,
    tasks_fail,
    help="fail an async service call (or a human task) with an error",
    description="Fail an async service call waiting for its completion token (the task "
    "key) with an error its service raises, as its handler would; or raise an error a "
    "human task 'raises'. A refused error or payload changes nothing.",
)
STATUS = Command(
    ("status",),
    Status,
    status,
    help="an instance's status, position and output",
    description="An instance's workflow and version, status, where its tokens are "
    "and what they wait for, its pending timers, and its output or error.",
)
HISTORY = Command(
    ("history",),
    History,
    history,
    help="an instance's history of events and decisions",
    description="Print an instance's committed transitions. --json prints the "
    "wflang.history/1 document that 'wf render --history' and replay read.",
)
LIST = Command(
    ("list",),
    List,
    list_instances,
    help="list instances",
    description="Instances, oldest first, with their workflow, version, status and "
    "last change; filter by status and workflow. --stuck AGE lists the unfinished ones "
    "that have not moved for AGE, the longest still first; --waiting-on WAIT those that "
    "wait on WAIT (signal:approval, message:paid, timer, person, task, retry, child); "
    "both show what each waits on and since when.",
)

#: This module's commands, groups before their actions (``app.HOMES`` orders them).
COMMANDS = (
    SIGNAL, PUBLISH, TASKS, TASKS_LIST, TASKS_COMPLETE, TASKS_FAIL, TASKS_HEARTBEAT, STATUS,
    HISTORY, LIST,
)  # fmt: skip
