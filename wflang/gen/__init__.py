"""Code generated from checked workflows: ``wf gen python`` (typed handlers, issue 17).

One job: a checked program in, source text out. It reads the spec (``dsl``) and the
program (``compiler``); nothing imports it but ``cli``. The generated code imports
``wflang.handlers`` (the registry and the conversions at the boundary) at run time.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from attrs import frozen

from wflang.compiler.check import CheckResult, check
from wflang.compiler.program import load_program
from wflang.dsl.diagnostics import Severity
from wflang.dsl.parser import ParseResult
from wflang.gen.names import GenError
from wflang.gen.python import INIT, GeneratedFile, generate

__all__ = ["INIT", "GenError", "GeneratedFile", "Generated", "python_package", "stale"]


@frozen
class Generated:
    """The files of the package, or (None) the check that refused the program."""

    files: tuple[GeneratedFile, ...] | None
    check: CheckResult


def python_package(parsed: Sequence[ParseResult], folder: str | None = None) -> Generated:
    """The typed Python package of the files and what they import, if they check clean
    (a file with errors has no types to give), to be written in ``folder``."""
    checked = check(parsed)
    if any(d.severity is Severity.ERROR for d in checked.diagnostics):
        return Generated(None, checked)
    return Generated(tuple(generate(load_program(parsed), folder)), checked)


def stale(files: Sequence[GeneratedFile], folder: Path) -> list[str]:
    """The files of ``folder`` that differ from (or lack) what is generated, by name."""
    found = []
    for f in files:
        target = folder / f.name
        try:
            current = target.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            current = None
        if current != f.text:
            found.append(f.name)
    return found
