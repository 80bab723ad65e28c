"""Who may act, and proof that a form was ours: sign-in, sessions and CSRF tokens.

The console reads without signing in; every action needs a signed-in operator. The
one credential is the token the operator configured (``WFLANG_CONSOLE_TOKEN`` or
``wf console --token-file``): with none, nobody can sign in and every action is
disabled, saying why. There are no default credentials.

A session is a cookie holding the operator's name and an expiry, signed with a key
made from this process's random secret and the token (a new token, or a restart,
ends every session). Every form carries a CSRF token, the HMAC of a random per-browser
nonce kept in a cookie: a page of another site can neither read it nor compute it, and
each POST is refused unless the two agree. Both cookies are ``HttpOnly`` and
``SameSite=Strict``.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time
from collections.abc import Mapping

from attrs import frozen
from starlette.requests import Request
from starlette.responses import Response

SESSION_COOKIE = "wf_session"
CSRF_COOKIE = "wf_csrf"
CSRF_FIELD = "csrf"
#: How long a sign-in lasts.
SESSION_SECONDS = 12 * 3600
#: The longest operator name: it is recorded as the actor of every action.
MAX_NAME = 100


class Refused(Exception):
    """A request the console refuses (its status code and the message shown)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@frozen
class Guard:
    """The configured token (None: nobody can sign in) and this process's secret."""

    token: str | None
    secret: bytes

    @staticmethod
    def new(token: str | None) -> Guard:
        return Guard(token or None, secrets.token_bytes(32))

    @property
    def why_read_only(self) -> str | None:
        """Why nobody can act at all, or None when signing in is possible."""
        if self.token is None:
            return (
                "No operator token is configured, so the console is read-only: set "
                "WFLANG_CONSOLE_TOKEN or start it with `wf console --token-file FILE` "
                "to allow signing in."
            )
        return None

    def _key(self, purpose: str) -> bytes:
        return hmac.new(self.secret, f"{purpose}\0{self.token}".encode(), hashlib.sha256).digest()

    def _mac(self, purpose: str, data: str) -> str:
        return hmac.new(self._key(purpose), data.encode(), hashlib.sha256).hexdigest()

    # -- sign-in ------------------------------------------------------------------

    def sign_in(self, name: str, token: str) -> str:
        """The session cookie's value for ``name`` if ``token`` is the configured one."""
        if self.token is None:
            raise Refused(403, self.why_read_only or "")
        name = name.strip()
        if not name or len(name) > MAX_NAME or not name.isprintable():
            raise Refused(400, f"Give your name (1 to {MAX_NAME} printable characters).")
        if not hmac.compare_digest(token.encode(), self.token.encode()):
            raise Refused(403, "That token is not the configured one.")
        body = json.dumps({"name": name, "until": int(time.time()) + SESSION_SECONDS})
        data = base64.urlsafe_b64encode(body.encode()).decode()
        return f"{data}.{self._mac('session', data)}"

    def operator(self, request: Request) -> str | None:
        """The signed-in operator's name, or None."""
        if self.token is None:
            return None
        data, _, mac = request.cookies.get(SESSION_COOKIE, "").partition(".")
        if not data or not hmac.compare_digest(mac, self._mac("session", data)):
            return None
        try:
            body = json.loads(base64.urlsafe_b64decode(data.encode()))
        except ValueError:
            return None
        name, until = body.get("name"), body.get("until")
        if not isinstance(name, str) or not isinstance(until, int) or until < time.time():
            return None
        return name

    def actor(self, request: Request) -> str:
        """The operator who acts, or a refusal."""
        name = self.operator(request)
        if name is None:
            raise Refused(403, self.why_read_only or "Sign in to act: the console is read-only.")
        return name

    # -- CSRF ---------------------------------------------------------------------

    def csrf(self, request: Request) -> tuple[str, str | None]:
        """The token a page's forms carry, and a new nonce to set as a cookie (None:
        the browser has one)."""
        nonce = request.cookies.get(CSRF_COOKIE, "")
        fresh = None
        if len(nonce) != 32:
            nonce = fresh = secrets.token_hex(16)
        return self._mac("csrf", nonce), fresh

    def check_csrf(self, request: Request, form: Mapping[str, str]) -> None:
        nonce = request.cookies.get(CSRF_COOKIE, "")
        given = form.get(CSRF_FIELD, "")
        if not nonce or not hmac.compare_digest(given, self._mac("csrf", nonce)):
            raise Refused(
                403,
                "The form's CSRF token is missing or wrong: reload the page and try again.",
            )


def set_cookie(response: Response, request: Request, name: str, value: str, age: int) -> None:
    response.set_cookie(
        name,
        value,
        max_age=age,
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )


#: Headers of every answer: no script but our own (there is none), no framing.
HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; "
        "frame-ancestors 'none'; base-uri 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "X-Frame-Options": "DENY",
}
