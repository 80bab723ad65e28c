"""The human tasks' inbox, by assignee, and each task's form, rendered from the form
the task declares; completing it goes through ``Client.complete_task``, the code behind
``wf tasks complete``, so a value of the wrong type is refused with the same message.

A field's text is read by its declared type only as far as JSON reads it (``5`` an
int, ``2.50`` a decimal, ``true`` a bool, ``[1, 2]`` a list); text that is not JSON is
given as a string, and the client's check says what it should have been. A text field
(``string`` or an enum) is always a string. An empty field is left out: its default,
if it has one, applies, and a required one is reported missing.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from wflang.console.actions import Form, json_field, status_of
from wflang.console.security import Refused
from wflang.console.web import Console, form_of, in_thread, page, redirect
from wflang.durable.client import Client
from wflang.runtime import codec
from wflang.runtime.ir import Value
from wflang.runtime.shapes import shapes, type_ref
from wflang.store.records import StoreError, TaskInfo, UnknownTask
from wflang.store.status import TaskKind

#: The kinds a text box gives as they are typed.
TEXT_KINDS = ("string",)
#: The kinds typed in one line (a number, a time); the rest (lists, maps, records) in JSON.
LINE_KINDS = ("int", "decimal", "duration", "timestamp", "string")


def widgets(console: Console, task: TaskInfo) -> list[dict[str, Any]]:
    """Each field of the task's declared form and how it is typed in."""
    info = console.store.instance(task.instance_id)
    table = console.store.table_for(info.table_hash)
    found = shapes(table)
    declared = found.results.get(task.node)
    shown = []
    for f in () if declared is None else declared.fields:
        ref = type_ref(f.type)
        if ref.kind == "bool":
            widget, choices = "select", ["true", "false"]
        elif ref.kind in found.enums:
            widget, choices = "select", list(found.enums[ref.kind])
        elif ref.kind in LINE_KINDS:
            widget, choices = "line", []
        else:
            widget, choices = "json", []
        shown.append(
            {
                "name": f.name,
                "type": f.type,
                "widget": widget,
                "choices": choices,
                "text": ref.kind in TEXT_KINDS or ref.kind in found.enums,
                "required": not (f.has_default or ref.optional),
            }
        )
    return shown


def output_of(fields: list[dict[str, Any]], form: Form) -> dict[str, Value]:
    """The form's values as the output to check (see the module's docstring)."""
    if form.get("output_json", "").strip():  # the whole output as JSON, as `--output`
        return json_field(form, "output_json", "the output")
    output: dict[str, Value] = {}
    for f in fields:
        text = form.get(f"field.{f['name']}", "")
        if text == "":
            continue
        if f["text"]:
            output[f["name"]] = text
            continue
        try:
            output[f["name"]] = codec.loads(text)
        except ValueError:  # not JSON: given as text, for the check to say what it wants
            output[f["name"]] = text
    return output


def inbox(console: Console, request: Request) -> Response:
    assignee = request.query_params.get("assignee") or None
    client = Client(console.store, actor="console")
    every = client.open_tasks()
    shown = every if assignee is None else [t for t in every if t.assignee == assignee]
    assignees = sorted({t.assignee for t in every if t.assignee})
    return page(console, request, "tasks.html",
                {"tasks": shown, "assignee": assignee or "", "assignees": assignees})  # fmt: skip


def _open_task(console: Console, key: str) -> TaskInfo:
    try:
        task = console.store.task(key)
    except UnknownTask as err:
        raise Refused(404, str(err)) from None
    if task.kind != TaskKind.HUMAN:
        raise Refused(404, f"task '{key}' is no human task: it has no form")
    return task


def raises(console: Console, task: TaskInfo) -> tuple[str, ...]:
    """The errors a person may raise on the task instead of filling its form."""
    info = console.store.instance(task.instance_id)
    table = console.store.table_for(info.table_hash)
    entry = next((s.entry for s in table.states if s.name == task.node), None)
    found = getattr(entry, "raises", None)
    return tuple(found) if found else ()


def task_page(
    console: Console,
    request: Request,
    key: str,
    *,
    values: Form | None = None,
    error: str | None = None,
    status: int = 200,
) -> Response:
    task = _open_task(console, key)
    context = {
        "task": task,
        "fields": widgets(console, task),
        "raises": raises(console, task),
        "values": values or {},
        "error": error,
    }
    return page(console, request, "task.html", context, status=status)


#: A person's answer to their open task: complete it, or raise one of its errors.
Answer = Callable[[Client, TaskInfo, Form], None]


def answering(
    console: Console, answer: Answer, done: str
) -> Callable[[Request], Awaitable[Response]]:
    """The endpoint of an answer to the task the form names: CSRF and the person checked,
    then ``answer`` with their client; a refused answer shows the form again with what
    was typed and why (nothing changed), a taken one the task's instance (``done`` is its
    notice)."""

    async def endpoint(request: Request) -> Response:
        form = await form_of(request)
        console.guard.check_csrf(request, form)
        actor = console.guard.actor(request)
        key = form.get("key", "")

        def run() -> Response:
            task = _open_task(console, key)
            client = Client(console.store, actor)
            try:
                answer(client, task, form)
            except (StoreError, Refused) as err:
                status = err.status if isinstance(err, Refused) else status_of(err)
                message = err.message if isinstance(err, Refused) else str(err)
                return task_page(console, request, key, values=form, error=message,
                                 status=status)  # fmt: skip
            return redirect("/instance?" + _query(id=task.instance_id, done=done))

        response: Response = await in_thread(run)
        return response

    return endpoint


def routes(console: Console) -> list[Route]:
    def one(request: Request) -> Response:
        return task_page(console, request, request.query_params.get("key", ""))

    def complete(client: Client, task: TaskInfo, form: Form) -> None:
        output = output_of(widgets(console, task), form)
        client.complete_task(task.key, output, reason=form.get("reason") or None)

    def raise_error(client: Client, task: TaskInfo, form: Form) -> None:
        given = form.get("payload", "").strip()
        payload = json_field(form, "payload", "the payload") if given else None
        client.raise_error(task.key, form.get("error", ""), payload,
                           message=form.get("message", ""),
                           reason=form.get("reason") or None)  # fmt: skip

    return [
        Route("/tasks/raise", answering(console, raise_error, "task-error"), methods=["POST"]),
        Route("/tasks", lambda r: inbox(console, r), name="tasks"),
        Route("/tasks/task", one, name="task"),
        Route("/tasks/complete", answering(console, complete, "task"), methods=["POST"]),
    ]


def _query(**params: str) -> str:
    from urllib.parse import urlencode

    return urlencode(params)
