"""The operator's actions: retry, replay from a step, force-complete with a typed
output, cancel, fire timers, send a signal and publish a message.

Each one is a POST that carries the page's CSRF token, needs a signed-in operator and
a reason, and calls the durable client (``wflang.durable.client.Client``) exactly as
the matching ``wf ops`` / ``wf signal`` / ``wf publish`` command does, acting as the
operator; the client checks it (unknown ids, illegal actions, values of the wrong
type) and a refusal is shown with its message, nothing changed. Values are read as the
command line reads them (``cli.values``), except that a form cannot name a file.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from wflang.cli.framework import UsageError
from wflang.cli.values import json_arg, parse_age
from wflang.console.security import Refused
from wflang.console.web import Console, form_of, in_thread, redirect
from wflang.durable.client import Client, InvalidValue
from wflang.runtime.ir import Value
from wflang.runtime.waiting import Wait
from wflang.store.records import StoreError, UnknownInstance, UnknownTask, UnknownWorkflow

Form = dict[str, str]


def json_field(form: Form, name: str, what: str) -> dict[str, Value]:
    """A JSON object from a form field, read as ``wf`` reads ``--output``; a form may not
    name a file (``@path`` reads one on the command line)."""
    text = form.get(name, "").strip() or "{}"
    if text.startswith("@"):
        raise Refused(400, f"{what} must be a JSON object (a form cannot name a file)")
    try:
        return json_arg(text, what)
    except UsageError as err:
        raise Refused(400, str(err)) from None


def reason_of(form: Form) -> str:
    reason = form.get("reason", "").strip()
    if not reason:
        raise Refused(400, "Say why (the reason is recorded in the history with your name).")
    return reason


def status_of(err: StoreError) -> int:
    if isinstance(err, (UnknownInstance, UnknownTask, UnknownWorkflow)):
        return 404
    return 400 if isinstance(err, InvalidValue) else 409


Act = Callable[[Client, Form, str], str]


def action(
    console: Console, act: Act, back: Callable[[Form], str]
) -> Callable[[Request], Awaitable[Response]]:
    """The endpoint of an action: CSRF, operator and reason checked, then ``act`` with
    the operator's client, the form and the reason (it returns a ``NOTICES`` code);
    ``back`` is the page to return to."""

    async def endpoint(request: Request) -> Response:
        form = await form_of(request)
        console.guard.check_csrf(request, form)
        actor = console.guard.actor(request)
        reason = reason_of(form)
        client = Client(console.store, actor)
        try:
            code = await in_thread(lambda: act(client, form, reason))
        except StoreError as err:
            raise Refused(status_of(err), f"Refused, nothing was changed: {err}") from None
        url = back(form)
        return redirect(url + ("&" if "?" in url else "?") + urlencode({"done": code}))

    return endpoint


def to_instance(form: Form) -> str:
    return "/instance?" + urlencode({"id": form.get("id", "")})


def retry(client: Client, form: Form, reason: str) -> str:
    client.retry(form.get("id", ""), reason=reason)
    return "retry"


def replay(client: Client, form: Form, reason: str) -> str:
    given = form.get("input", "").strip()
    data = json_field(form, "input", "the new input") if given else None
    client.replay_from(form.get("id", ""), form.get("step", ""), input=data, reason=reason)
    return "replay"


def force_complete(client: Client, form: Form, reason: str) -> str:
    output = json_field(form, "output", "the output")
    client.force_complete(form.get("id", ""), form.get("step", ""), output, reason=reason)
    return "force-complete"


def cancel(client: Client, form: Form, reason: str) -> str:
    client.cancel(form.get("id", ""), compensate=form.get("compensate") == "on", reason=reason)
    return "cancel"


def skip(client: Client, form: Form, reason: str) -> str:
    client.skip_compensation(form.get("id", ""), form.get("step", ""), reason=reason)
    return "skip"


def fire_timers(client: Client, form: Form, reason: str) -> str:
    client.fire_timers(form.get("id", ""), timer=form.get("timer") or None, reason=reason)
    return "fire-timers"


def signal(client: Client, form: Form, reason: str) -> str:
    payload = json_field(form, "payload", "the payload")
    kind = Wait.MESSAGE.value if form.get("kind") == Wait.MESSAGE.value else Wait.SIGNAL.value
    sent = client.signal(
        form.get("id", ""), form.get("name", ""), payload, key=form.get("key") or None,
        kind=kind, reason=reason,
    )  # fmt: skip
    return "signal" if sent else "signal-duplicate"


def publish(client: Client, form: Form, reason: str) -> str:
    payload = json_field(form, "payload", "the payload")
    text = form.get("correlation", "")
    correlation: Value = text
    if form.get("integer") == "on":  # as `wf publish --int`
        if not re.fullmatch(r"[+-]?[0-9]+", text.strip()):
            raise Refused(400, f"the correlation '{text}' is not an integer")
        correlation = int(text)
    ttl_text = form.get("ttl", "").strip()
    try:
        ttl = parse_age(ttl_text, "keep for") if ttl_text else 0
    except UsageError as err:
        raise Refused(400, str(err)) from None
    client.publish(
        form.get("message", ""), correlation, payload, key=form.get("key") or None,
        ttl_ms=ttl, reason=reason,
    )  # fmt: skip
    return "publish"


def routes(console: Console) -> list[Route]:
    acts: dict[str, Act] = {
        "retry": retry,
        "replay": replay,
        "force-complete": force_complete,
        "cancel": cancel,
        "skip": skip,
        "fire-timers": fire_timers,
        "signal": signal,
    }
    found = [
        Route(f"/instance/{name}", action(console, act, to_instance), methods=["POST"])
        for name, act in acts.items()
    ]
    found.append(
        Route("/publish", action(console, publish, lambda _: "/dead-letters"), methods=["POST"])
    )
    return found
