"""Serving the console: where it binds, and the warning when that is beyond this
machine."""

from __future__ import annotations

import ipaddress
import os
from pathlib import Path

from wflang.console.app import create_app
from wflang.console.security import Guard
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
    lines.append(
        "read-only: no operator token configured (set "
        f"{TOKEN_ENV} or --token-file to allow actions)"
        if guard.token is None
        else "actions: sign in with the configured operator token"
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


def serve(store: Store, guard: Guard, bind: str, port: int) -> None:
    import uvicorn

    uvicorn.run(create_app(store, guard), host=bind, port=port, log_level="warning")
