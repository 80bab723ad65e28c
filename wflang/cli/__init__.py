"""The ``wf`` command: a thin layer that reads arguments, calls a stage and prints.

Each command is a function from a typed request (a frozen attrs class whose fields
carry their command-line form) to a ``Result``: its exit code and what it prints.
``framework`` builds the argparse parser from the requests, ``app`` lists the
commands and runs one. The command modules import the stages they call only when
they run, so that a short command starts fast:

- ``source``: parse, fmt, check, rules, schema; ``diff``: diff;
- ``compile``: compile, table, run (in memory); ``render``: render;
- ``durable``: store, deploy, start, versions, outbox; ``instances``: signal,
  publish, tasks, status, history, list; ``ops``: ops; ``worker``: worker.

Exit codes: 0 clean, 1 findings (or a refused request), 2 usage, I/O or internal error.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from wflang import __version__

if TYPE_CHECKING:
    import argparse


def main(argv: Sequence[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else list(argv)
    if args[:1] == ["--version"]:  # as argparse would, before any command is imported
        print(f"wf {__version__}")
        raise SystemExit(0)
    if argv is None:  # the real command line: a warm server may answer it (docs/daemon.md)
        from wflang.cli.daemon_client import answered

        code = answered(args)
        if code is not None:
            return code
    from wflang.cli.app import run

    return run(args)


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``wf`` (for tools that read its commands and options)."""
    from wflang.cli.app import build_parser as build

    return build()


__all__ = ["build_parser", "main"]
