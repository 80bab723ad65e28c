"""One instance's page: its diagram with the history overlay and where it is now, the
timeline of its history with each step's context changes, what it waits for (timers,
signals and messages, tasks), its children and its parent, and the ops actions."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from wflang.cli.changes import change_lines, event_label
from wflang.console.drawing import drawing
from wflang.console.security import Refused
from wflang.console.web import Console, page, safe
from wflang.durable.client import Client
from wflang.runtime import codec
from wflang.runtime.table import Table
from wflang.runtime.waiting import completable
from wflang.store.browse import InstanceQuery
from wflang.store.records import InstanceInfo, StoreError, UnknownInstance
from wflang.store.status import FINISHED


def timeline(doc: dict[str, Any], table: Table | None) -> list[dict[str, Any]]:
    """The history's entries as the page shows them: the event in words and its
    fields, the decisions, the context's changes in words as ``wf history --changes``
    prints them (times as ISO-8601, by the types of ``table``), and who asked and why."""
    shown = []
    for entry in doc["entries"]:
        event = entry["event"]
        fields = {k: v for k, v in (event or {}).items() if k != "type"}
        shown.append(
            {
                "seq": entry["seq"],
                "at": entry["at"],
                "event": event_label(event),
                "kind": "start" if event is None else event["type"],
                "fields": fields,
                "decisions": entry["decisions"],
                "changes": list(change_lines(entry.get("changes") or [], table)),
                "actor": entry.get("actor"),
                "reason": entry.get("reason"),
            }
        )
    return shown


def position(console: Console, info: InstanceInfo) -> list[dict[str, Any]]:
    """Where its tokens are, what each waits for, and whether an operator can
    force-complete the step (its wait is one that can be completed)."""
    inst = info.instance
    if inst is None:
        return []
    table = console.store.table_for(info.table_hash)
    return [
        {
            "node": table.states[t.state].name,
            "waiting": t.waiting,
            "compensating": t.compensating,
            "completable": completable(t.waiting),
        }
        for t in inst.tokens
    ]


def pending(console: Console, iid: str) -> list[dict[str, Any]]:
    """The events delivered and not taken by a step yet, as the timeline shows events."""
    shown = []
    for p in console.store.pending(iid):
        event = codec.unstructure_event(p.event)
        shown.append(
            {
                "event": event_label(event),
                "fields": {k: v for k, v in event.items() if k != "type"},
                "actor": p.actor,
                "reason": p.reason,
                "at": p.available_at,
            }
        )
    return shown


def instance(console: Console, request: Request) -> Response:
    iid = request.query_params.get("id", "")
    store = console.store
    try:
        info = store.instance(iid)
    except UnknownInstance as err:
        raise Refused(404, str(err)) from None
    doc: dict[str, Any] | None = None
    history_problem = None
    try:
        doc = Client(store, actor="console").history_document(iid)
    except StoreError as err:  # not started yet, or its state cannot be read
        history_problem = str(err)
    at_text = request.query_params.get("at", "")
    if at_text and not at_text.isdigit():
        raise Refused(400, f"at: '{at_text[:40]}' is not a step number")
    at = int(at_text) if at_text and doc is not None else None
    drawn = drawing(store, info.table_hash, doc, at)
    table = store.table_for(info.table_hash)
    inst = info.instance
    context = {
        "info": info,
        "doc": doc,
        "history_problem": history_problem,
        "svg": None if drawn.svg is None else safe(drawn.svg),
        "diagram_problem": drawn.problem,
        "timeline": [] if doc is None else timeline(doc, table),
        "position": position(console, info),
        "at": at,
        "pending": pending(console, iid),
        "timers": [] if inst is None else sorted(inst.timers, key=lambda t: (t.due, t.id)),
        "tasks": store.tasks(instance_id=iid, limit=1000),
        "children": store.browse(InstanceQuery(parent_id=iid, limit=200)).instances,
        "steps": [s.name for s in table.states],
        "signals": [shape.name for shape in table.types.signals],
        "messages": [shape.name for shape in table.types.messages],
        "running": info.status not in FINISHED,
        "dead": info.status == "dead_lettered",
    }
    return page(console, request, "instance.html", context)


def routes(console: Console) -> list[Route]:
    return [Route("/instance", lambda r: instance(console, r), name="instance")]
