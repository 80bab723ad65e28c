"""The ``wf`` command: its commands in order, the parser built from them, and the run
of one command (exit codes, errors, printing).

Exit codes: 0 clean, 1 findings at or above ``--fail-on`` (or files that ``fmt
--check`` would change, or a refused request), 2 usage, I/O or internal error.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from wflang import __version__
from wflang.cli import compile, diff, durable, instances, ops, render, source, worker
from wflang.cli.framework import (
    EXIT_FINDINGS,
    EXIT_OK,
    EXIT_USAGE,
    Command,
    Group,
    UsageError,
    emit,
    request_of,
)
from wflang.cli.framework import (
    build_parser as add_commands,
)

#: Every command, in the order ``wf --help`` lists them (groups before their actions).
COMMANDS: tuple[Command | Group, ...] = (
    source.PARSE,
    source.FMT,
    source.CHECK,
    source.RULES,
    diff.DIFF,
    compile.COMPILE,
    compile.TABLE,
    compile.RUN,
    source.SCHEMA,
    durable.STORE,
    durable.STORE_MIGRATE,
    durable.STORE_INFO,
    durable.DEPLOY,
    durable.START,
    durable.VERSIONS,
    worker.WORKER,
    instances.SIGNAL,
    instances.PUBLISH,
    instances.TASKS,
    instances.TASKS_LIST,
    instances.TASKS_COMPLETE,
    instances.STATUS,
    instances.HISTORY,
    instances.LIST,
    *ops.COMMANDS,
    durable.OUTBOX,
    render.RENDER,
)


def build_parser() -> argparse.ArgumentParser:
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
    return add_commands(parser, COMMANDS)


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
    parser = build_parser()
    for arg in argv:  # bytes that are not UTF-8 arrive as lone surrogates: no store takes them
        if not arg.isascii() and _not_utf8(arg):
            parser.error(f"argument {arg!r} is not valid UTF-8 text")
    parsed = parser.parse_args(argv)
    entry: Command = parsed.command_entry
    try:
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
