"""What every page of the console shares: the templates (autoescaped), the page
answer with its CSRF cookie, reading a form, and turning a refusal into a page.

The console holds no logic of its own about instances: it reads through the store and
acts through ``wflang.durable.client.Client``, the code behind ``wf ops`` and the other
commands, so a refusal here is the refusal the command line prints.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode

import jinja2
from attrs import frozen
from markupsafe import Markup
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from wflang.cli.values import when
from wflang.console.security import CSRF_COOKIE, SESSION_SECONDS, Guard, Refused, set_cookie
from wflang.runtime import codec
from wflang.store import Store

TEMPLATES = Path(__file__).parent / "templates"
#: What an action did, said on the page it returns to (by code: a link cannot put
#: words of its own on a page).
NOTICES = {
    "retry": "Retry requested: a worker resumes the instance from the failed step.",
    "replay": "Replay requested: a worker runs the instance again from that step.",
    "force-complete": "Force-complete requested: a worker completes the step with that output.",
    "cancel": "Cancel requested.",
    "skip": "The compensation will be skipped; the remaining ones then run.",
    "fire-timers": "The pending timers will fire now.",
    "signal": "Sent.",
    "signal-duplicate": "A signal with that key was already sent: ignored.",
    "publish": "Published.",
    "task": "Task completed.",
    "task-error": "The error was raised on the task.",
}
#: The largest form accepted (a typed output or payload fits well within it).
MAX_FORM_BYTES = 1024 * 1024


@frozen
class Console:
    """What the pages are given: the store, the guard and the templates."""

    store: Store
    guard: Guard
    env: jinja2.Environment


def json_text(value: object, indent: int | None = None) -> str:
    """A value as JSON text (decimals exact); escaped by the template like any text."""
    return codec.dumps(value, indent=indent)


def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=True,  # every value is text unless a template marks it safe
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["when"] = when
    env.filters["json"] = json_text
    env.globals["query"] = lambda **params: urlencode(
        {k: v for k, v in params.items() if v not in (None, "")}
    )
    return env


def page(
    console: Console,
    request: Request,
    template: str,
    context: Mapping[str, Any],
    *,
    status: int = 200,
) -> HTMLResponse:
    """A page from ``template``, with what the layout needs: the operator signed in (or
    why nobody can act), and the CSRF token of its forms."""
    token, fresh = console.guard.csrf(request)
    operator = console.guard.operator(request)
    html = console.env.get_template(template).render(
        {
            "request": request,
            "operator": operator,
            "read_only": console.guard.why_read_only,
            "can_act": operator is not None,
            "csrf": token,
            "notice": NOTICES.get(request.query_params.get("done", "")),
            **context,
        }
    )
    response = HTMLResponse(html, status_code=status)
    if fresh is not None:
        set_cookie(response, request, CSRF_COOKIE, fresh, SESSION_SECONDS)
    return response


def refusal(console: Console, request: Request, refused: Refused) -> HTMLResponse:
    return page(
        console, request, "refused.html", {"message": refused.message}, status=refused.status
    )


async def form_of(request: Request) -> dict[str, str]:
    """A URL-encoded form (the only kind the pages send): each field's last value."""
    kind = request.headers.get("content-type", "").split(";")[0].strip()
    if kind != "application/x-www-form-urlencoded":
        raise Refused(415, "Send the form as application/x-www-form-urlencoded.")
    body = await request.body()
    if len(body) > MAX_FORM_BYTES:
        raise Refused(413, f"The form is longer than {MAX_FORM_BYTES:,} bytes.")
    try:
        text = body.decode("utf-8")
        return dict(parse_qsl(text, keep_blank_values=True, max_num_fields=200))
    except (UnicodeDecodeError, ValueError) as err:
        raise Refused(400, f"The form cannot be read: {err}") from None


def safe(markup: str) -> Markup:
    """Text already made safe by its producer (the sanitised SVG), for a template."""
    return Markup(markup)


def redirect(url: str) -> RedirectResponse:
    return RedirectResponse(url, status_code=303)


async def in_thread(fn: Callable[[], Any]) -> Any:
    """Blocking store work off the event loop."""
    return await run_in_threadpool(fn)


def with_headers(response: Response, headers: Mapping[str, str]) -> Response:
    for name, value in headers.items():
        response.headers.setdefault(name, value)
    return response
