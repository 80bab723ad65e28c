"""Who may act, and proof that a form was ours: sign-in, sessions and CSRF tokens.

The console reads without signing in; every action needs a signed-in operator. The
credential is either one token shared by the operators, each typing a name
(``WFLANG_CONSOLE_TOKEN`` or ``wf console --token-file``), or one token per operator
(``wf console --operators FILE``: a name and the hash of its token a line, made by
``wf console --hash-token``), where the name signed in with is the one recorded as
the actor and nobody can act under another's name. With neither, nobody can sign in
and every action is disabled, saying why. There are no default credentials.

A session is a cookie holding the operator's name and an expiry, signed with a key
made from this process's random secret and the credentials (a new token, or a restart,
ends every session). Every form carries a CSRF token, the HMAC of a random per-browser
nonce kept in a cookie: a page of another site can neither read it nor compute it, and
each POST is refused unless the two agree. Both cookies are ``HttpOnly`` and
``SameSite=Strict``.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import hmac
import json
import secrets
import time
from collections.abc import Mapping

from attrs import field, frozen
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


#: scrypt's cost for an operator's token (~50 ms a sign-in): a token chosen by a person
#: may be guessable, and the operators file may be read by more than its operators.
_SCRYPT = {"n": 2**14, "r": 8, "p": 1}
_SCHEME = "scrypt"


def hash_token(token: str) -> str:
    """An operator's credential as an operators file keeps it: ``scrypt$SALT$HASH``
    (base64), never the token itself."""
    salt = secrets.token_bytes(16)
    digest = hashlib.scrypt(token.encode(), salt=salt, **_SCRYPT)
    return "$".join((_SCHEME, _b64(salt), _b64(digest)))


def hashed_form(text: str) -> bool:
    """Whether ``text`` is a credential ``hash_token`` writes."""
    scheme, _, rest = text.partition("$")
    salt, _, digest = rest.partition("$")
    try:
        return scheme == _SCHEME and len(_unb64(salt)) == 16 and len(_unb64(digest)) == 64
    except ValueError:
        return False


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _matches(token: str, hashed: str) -> bool:
    _, salt, digest = hashed.split("$")
    got = hashlib.scrypt(token.encode(), salt=_unb64(salt), **_SCRYPT)
    return hmac.compare_digest(got, _unb64(digest))


@functools.cache
def _nobody() -> str:
    """A credential no token matches, checked for a name that is not an operator's: a
    sign-in takes as long whether the name is known or not."""
    return hash_token(secrets.token_hex(32))


@frozen
class Guard:
    """The configured credentials (a shared token, or each operator's hashed one; neither:
    nobody can sign in) and this process's secret."""

    token: str | None
    secret: bytes
    operators: Mapping[str, str] = field(factory=dict)  # name -> ``hash_token``'s form

    @staticmethod
    def new(token: str | None, operators: Mapping[str, str] | None = None) -> Guard:
        return Guard(token or None, secrets.token_bytes(32), dict(operators or {}))

    @property
    def why_read_only(self) -> str | None:
        """Why nobody can act at all, or None when signing in is possible."""
        if self.token is None and not self.operators:
            return (
                "No operator token is configured, so the console is read-only: set "
                "WFLANG_CONSOLE_TOKEN or start it with `wf console --token-file FILE` "
                "(or `--operators FILE`) to allow signing in."
            )
        return None

    def _key(self, purpose: str) -> bytes:
        operators = json.dumps(sorted(self.operators.items()))
        credentials = operators if self.operators else self.token
        return hmac.new(self.secret, f"{purpose}\0{credentials}".encode(), hashlib.sha256).digest()

    def _mac(self, purpose: str, data: str) -> str:
        return hmac.new(self._key(purpose), data.encode(), hashlib.sha256).hexdigest()

    # -- sign-in ------------------------------------------------------------------

    def sign_in(self, name: str, token: str) -> str:
        """The session cookie's value for ``name`` if ``token`` is the configured one (with
        operators: ``name``'s own)."""
        if self.why_read_only is not None:
            raise Refused(403, self.why_read_only)
        name = name.strip()
        if not name or len(name) > MAX_NAME or not name.isprintable():
            raise Refused(400, f"Give your name (1 to {MAX_NAME} printable characters).")
        if self.operators:
            hashed = self.operators.get(name)
            if not _matches(token, hashed or _nobody()) or hashed is None:
                raise Refused(403, "That name and token are not a configured operator's.")
        elif self.token is None or not hmac.compare_digest(token.encode(), self.token.encode()):
            raise Refused(403, "That token is not the configured one.")
        body = json.dumps({"name": name, "until": int(time.time()) + SESSION_SECONDS})
        data = base64.urlsafe_b64encode(body.encode()).decode()
        return f"{data}.{self._mac('session', data)}"

    def operator(self, request: Request) -> str | None:
        """The signed-in operator's name, or None."""
        if self.why_read_only is not None:
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
        if self.operators and name not in self.operators:
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
