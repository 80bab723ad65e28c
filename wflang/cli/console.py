"""``wf console``: the operator console in the browser (docs/console.md).

Starlette, Jinja2 and uvicorn are an optional dependency (``pip install
'wflang[console]'``): the command says so when they are missing."""

from __future__ import annotations

import sys

from attrs import field, frozen

from wflang.cli.framework import Command, Out, Result, UsageError, arg, flag_field
from wflang.cli.stores import open_cli_store, store_field
from wflang.cli.values import bounded


@frozen(kw_only=True)
class Console:
    store: str | None = store_field()
    port: int = field(
        default=8080, metadata=arg("--port", type=bounded(1, 65535), help="the port (8080)")
    )
    bind: str = field(
        default="127.0.0.1",
        metadata=arg(
            "--bind",
            metavar="ADDRESS",
            help="the address to listen on (default 127.0.0.1: this machine only)",
        ),
    )
    token_file: str | None = field(
        default=None,
        metadata=arg(
            "--token-file",
            metavar="FILE",
            help="the operator token that signing in asks for (default: "
            "$WFLANG_CONSOLE_TOKEN; with neither, the console is read-only)",
        ),
    )
    operators: str | None = field(
        default=None,
        metadata=arg(
            "--operators",
            metavar="FILE",
            help="one token per operator: a line each, NAME HASH (HASH from --hash-token); "
            "the name signed in with is the one recorded (not with --token-file)",
        ),
    )
    hash_token: bool = flag_field(
        "--hash-token",
        help="read a token from standard input, print its hash for --operators, and exit",
    )


def console(req: Console) -> Result:
    if req.hash_token:
        return _hash_token()
    try:
        import jinja2  # noqa: F401
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError as err:
        raise UsageError(
            "wf console needs its web dependencies: pip install 'wflang[console]'"
        ) from err
    from wflang.console.security import Guard
    from wflang.console.serve import ConfigError, announce, operators, serve, token

    try:
        if req.operators is not None:
            if req.token_file is not None or token(None) is not None:
                raise ConfigError(
                    "--operators gives each operator a token: give no shared one beside it "
                    "(--token-file or $WFLANG_CONSOLE_TOKEN)"
                )
            guard = Guard.new(None, operators(req.operators))
        else:
            guard = Guard.new(token(req.token_file))
    except ConfigError as err:
        raise UsageError(str(err)) from None
    store = open_cli_store(req.store)
    for line in announce(req.bind, req.port, store.url, guard):
        print(line, file=sys.stderr, flush=True)  # before serving: the server blocks
    serve(store, guard, req.bind, req.port)
    return Out().done()


def _hash_token() -> Result:
    """``--hash-token``: the hash of the token on standard input's first line."""
    from wflang.console.security import hash_token

    given = sys.stdin.readline().strip()
    if not given:
        raise UsageError("give the token on standard input (an empty token is no credential)")
    print(hash_token(given))
    return Out().done()


CONSOLE = Command(
    ("console",),
    Console,
    console,
    help="the operator console in the browser: instances, diagrams, tasks, ops (docs/console.md)",
    description="Serve a web console over the store: instances with filters, one "
    "instance on its diagram with its history, human tasks, dead letters and ops "
    "actions, versions and metrics. Read-only unless an operator signs in with the "
    "token of --token-file or $WFLANG_CONSOLE_TOKEN, or with their own token of "
    "--operators (no default credentials); every action asks for a reason and is "
    "recorded with the operator's name. Binds to "
    "127.0.0.1 unless --bind says otherwise, and warns when it does.",
)

#: This module's commands (``app.HOMES`` orders them).
COMMANDS = (CONSOLE,)
