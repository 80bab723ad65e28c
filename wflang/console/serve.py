"""Serving the console: where it binds, and the warning when that is beyond this
machine."""

from __future__ import annotations

import ipaddress
import os
from pathlib import Path

from wflang.console.app import create_app
from wflang.console.security import MAX_NAME, Guard, hashed_form
from wflang.store import Store

#: The environment variable holding the operator token (or use ``--token-file``).
TOKEN_ENV = "WFLANG_CONSOLE_TOKEN"


class ConfigError(Exception):
    """The console's configuration is unusable; the message says why."""


def loopback(bind: str) -> bool:
    """Whether ``bind`` only listens on this machine."""
    if bind == "localhost":
        return True
    try:
        return ipaddress.ip_address(bind.strip("[]")).is_loopback
    except ValueError:
        return False


def announce(bind: str, port: int, store_url: str, guard: Guard) -> list[str]:
    """What ``wf console`` prints before it serves."""
    host = f"[{bind}]" if ":" in bind and not bind.startswith("[") else bind
    lines = [f"wf console: serving {store_url} on http://{host}:{port}/"]
    if not loopback(bind):
        lines.append(
            f"warning: bound to {bind}, beyond this machine: anyone who reaches it can read "
            "every instance, payload and history (put it behind TLS and a firewall)"
        )
    if guard.operators:
        n = len(guard.operators)
        lines.append(f"actions: {n} operators, each signs in with their own token")
    elif guard.token is not None:
        lines.append("actions: sign in with the configured operator token")
    else:
        lines.append(
            f"read-only: no operator token configured (set {TOKEN_ENV}, --token-file or "
            "--operators to allow actions)"
        )
    return lines


def token(token_file: str | None) -> str | None:
    """The operator token: the file's first line, else ``$WFLANG_CONSOLE_TOKEN``."""
    if token_file is not None:
        try:
            text = Path(token_file).read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as err:
            raise ConfigError(f"cannot read the token file {token_file}: {err}") from None
        if not text:
            raise ConfigError(f"the token file {token_file} is empty: no empty credentials")
        return text
    given = os.environ.get(TOKEN_ENV, "").strip()
    return given or None


def operators(path: str) -> dict[str, str]:
    """The operators of an operators file: a line each, ``NAME HASH`` (the name may hold
    spaces; the hash is ``wf console --hash-token``'s), blank lines and ``#`` comments
    skipped. Anything else is refused, by its line, and nothing is served."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise ConfigError(f"cannot read the operators file {path}: {err}") from None
    found: dict[str, str] = {}
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        name, _, hashed = line.rpartition(" ")
        name = name.strip()
        where = f"{path}:{n}"
        if not name or len(name) > MAX_NAME or not name.isprintable():
            raise ConfigError(
                f"{where}: write an operator as NAME HASH, the name 1 to {MAX_NAME} "
                "printable characters"
            )
        if not hashed_form(hashed):
            raise ConfigError(
                f"{where}: {name}'s credential is not a hashed token: make one with "
                "`wf console --hash-token` (a token itself never goes in this file)"
            )
        if name in found:
            raise ConfigError(f"{where}: the operator {name!r} is given twice")
        found[name] = hashed
    if not found:
        raise ConfigError(f"the operators file {path} names no operator: no empty credentials")
    return found


def serve(store: Store, guard: Guard, bind: str, port: int) -> None:
    import uvicorn

    uvicorn.run(create_app(store, guard), host=bind, port=port, log_level="warning")
