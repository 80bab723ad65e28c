"""The dead letters page: the instances parked after a step failed for good, with
their error, each a retry away (or open it to replay, force-complete or cancel); and
publishing a message to the instances waiting for it."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from wflang.console.web import Console, page
from wflang.durable.client import Client


def dead_letters(console: Console, request: Request) -> Response:
    workflow = request.query_params.get("workflow") or None
    found = Client(console.store, actor="console").dead_letters(workflow)
    messages = sorted(
        {shape.name for table in console.store.tables() for shape in table.types.messages}
    )
    return page(
        console,
        request,
        "dead_letters.html",
        {"rows": found, "workflow": workflow or "", "messages": messages},
    )


def routes(console: Console) -> list[Route]:
    return [Route("/dead-letters", lambda r: dead_letters(console, r), name="dead_letters")]
