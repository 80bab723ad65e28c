"""The console's web application: its routes, one module per page area, and what
every answer gets (the security headers; a refusal as a page)."""

from __future__ import annotations

from pathlib import Path

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from wflang.console import (
    actions,
    dead_letters,
    instance,
    instances,
    metrics,
    tasks,
    versions,
)
from wflang.console.security import (
    HEADERS,
    SESSION_COOKIE,
    SESSION_SECONDS,
    Guard,
    Refused,
    set_cookie,
)
from wflang.console.web import Console, environment, form_of, page, redirect, refusal
from wflang.store import Store

CSS = Path(__file__).parent / "static" / "console.css"


class SecurityHeaders:
    """Adds ``security.HEADERS`` to every answer, pages, files and errors alike."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                have = {k.lower() for k, _ in message.get("headers", [])}
                extra = [
                    (k.lower().encode(), v.encode())
                    for k, v in HEADERS.items()
                    if k.lower().encode() not in have
                ]
                message["headers"] = [*message.get("headers", []), *extra]
            await send(message)

        await self.app(scope, receive, sending)


def _sign_in_routes(console: Console) -> list[BaseRoute]:
    def form(request: Request) -> Response:
        return page(console, request, "signin.html", {"error": None})

    async def sign_in(request: Request) -> Response:
        fields = await form_of(request)
        console.guard.check_csrf(request, fields)
        try:
            cookie = console.guard.sign_in(fields.get("name", ""), fields.get("token", ""))
        except Refused as refused:
            return page(console, request, "signin.html", {"error": refused.message},
                        status=refused.status)  # fmt: skip
        response = redirect("/instances")
        set_cookie(response, request, SESSION_COOKIE, cookie, SESSION_SECONDS)
        return response

    async def sign_out(request: Request) -> Response:
        console.guard.check_csrf(request, await form_of(request))
        response = redirect("/instances")
        response.delete_cookie(SESSION_COOKIE)
        return response

    return [
        Route("/signin", form, methods=["GET"], name="signin"),
        Route("/signin", sign_in, methods=["POST"]),
        Route("/signout", sign_out, methods=["POST"], name="signout"),
    ]


def create_app(store: Store, guard: Guard) -> ASGIApp:
    """The console over ``store``; ``guard`` says who may act."""
    console = Console(store, guard, environment())

    async def refused(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, Refused)
        return refusal(console, request, exc)

    routes: list[BaseRoute] = [
        Route("/", lambda _: RedirectResponse("/instances", status_code=307)),
        Route("/static/console.css", lambda _: FileResponse(CSS, media_type="text/css")),
        *_sign_in_routes(console),
        *instances.routes(console),
        *instance.routes(console),
        *actions.routes(console),
        *dead_letters.routes(console),
        *tasks.routes(console),
        *versions.routes(console),
        *metrics.routes(console),
    ]
    app = Starlette(routes=routes, exception_handlers={Refused: refused})
    return SecurityHeaders(app)
