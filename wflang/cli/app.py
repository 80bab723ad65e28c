"""The ``wf`` command: its commands in order, the parser built from them, and the run
of one command (exit codes, errors, printing).

Exit codes: 0 clean, 1 findings at or above ``--fail-on`` (or files that ``fmt
--check`` would change, or a refused request), 2 usage, I/O or internal error.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from wflang import __version__
from wflang.cli.framework import (
    EXIT_FINDINGS,
    EXIT_OK,
    EXIT_USAGE,
    Command,
    Group,
    UsageError,
    command_scope,
    emit,
    request_of,
)
from wflang.cli.framework import (
    build_parser as add_commands,
)

#: The first word of every command, in the order ``wf --help`` lists them, and the
#: module of ``wflang.cli`` whose ``COMMANDS`` declare it. ``wf check`` imports
#: ``source`` alone: the other modules' requests cost more to import than the check.
HOMES: dict[str, str] = {
    "init": "scaffold",
    "parse": "source",
    "fmt": "source",
    "check": "source",
    "rules": "source",
    "diff": "diff",
    "compile": "compile",
    "table": "compile",
    "run": "compile",
    "gen": "gen",
    "schema": "source",
    "store": "durable",
    "deploy": "durable",
    "start": "durable",
    "versions": "durable",
    "worker": "worker",
    "signal": "instances",
    "publish": "instances",
    "tasks": "instances",
    "status": "instances",
    "history": "instances",
    "list": "instances",
    "ops": "ops",
    "outbox": "durable",
    "render": "render",
    "console": "console",
    "daemon": "daemon",
    "lsp": "lsp",
    "completion": "completion",
}


def commands(*words: str) -> tuple[Command | Group, ...]:
    """The entries of the commands named by their first word (every command when none
    is named), in ``HOMES`` order, groups before their actions."""
    chosen = words or tuple(HOMES)
    found: list[Command | Group] = []
    for word in chosen:
        module = importlib.import_module(f"wflang.cli.{HOMES[word]}")
        found.extend(e for e in module.COMMANDS if e.path[0] == word)
    return tuple(found)


def build_parser(*words: str) -> argparse.ArgumentParser:
    """The parser of ``wf``, with every command or only those named (``run`` builds
    the one it is given: its options, help and errors are the same)."""
    parser = argparse.ArgumentParser(
        prog="wf",
        description=(
            "wflang: write a workflow in a typed .wf file, check it like code, format it, "
            "diff its versions for breaking changes, compile it to a transition table and "
            "run it in memory or durably (SQLite or PostgreSQL) with workers, and draw it."
        ),
        epilog="Exit codes: 0 clean, 1 findings (or a refused request: an unknown id, a "
        "value of the wrong type, an action the instance's status does not allow), "
        "2 usage or I/O error. "
        "Run 'wf COMMAND --help' for a command's options.",
    )
    parser.add_argument("--version", action="version", version=f"wf {__version__}")
    return add_commands(parser, commands(*words))


def _not_utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _refused(err: Exception) -> bool:
    """A store's refusal (exit 1); the store module is only loaded by commands that use it."""
    records = sys.modules.get("wflang.store.records")
    return records is not None and isinstance(err, records.StoreError)


def run(argv: Sequence[str]) -> int:
    named = argv[:1] if argv and argv[0] in HOMES else ()
    parser = build_parser(*named)  # no command named: every one, for the usage or help
    for arg in argv:  # bytes that are not UTF-8 arrive as lone surrogates: no store takes them
        if not arg.isascii() and _not_utf8(arg):
            parser.error(f"argument {arg!r} is not valid UTF-8 text")
    parsed, unknown = parser.parse_known_args(argv)
    if unknown:  # the usage of the command they were given to, not of wf
        parsed.command_parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    entry: Command = parsed.command_entry
    try:
        with command_scope():
            result = entry.run(request_of(entry.request, parsed))
            emit(result.printed)
    except BrokenPipeError:  # pragma: no cover - e.g. `wf parse --json x | head`
        return EXIT_OK
    except Exception as err:
        if not isinstance(err, UsageError) and not _refused(err):
            raise
        emit(getattr(err, "printed_before", ()))
        print(f"wf: error: {err}", file=sys.stderr)
        return EXIT_USAGE if isinstance(err, UsageError) else EXIT_FINDINGS  # nothing changed
    sys.stdout.flush()
    return result.code
