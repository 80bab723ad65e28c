"""Code generated from checked workflows (issue 17): ``wf gen python`` (typed handlers),
``wf gen json-schema`` and ``wf gen typescript`` (the payloads, for other languages).

One job: a checked program in, source text out. It reads the spec (``dsl``) and the
program (``compiler``); nothing imports it but ``cli``. The generated code imports
``wflang.handlers`` (the registry and the conversions at the boundary) at run time.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from attrs import frozen

from wflang.compiler.check import CheckResult, check
from wflang.compiler.program import Program, load_program
from wflang.dsl.diagnostics import Severity
from wflang.dsl.parser import ParseResult
from wflang.gen.names import GenError
from wflang.gen.python import INIT, GeneratedFile, generate

__all__ = [
    "INIT",
    "GenError",
    "GeneratedFile",
    "Generated",
    "json_schemas",
    "python_package",
    "stale",
    "typescript_package",
]


@frozen
class Generated:
    """The files of the package, or (None) the check that refused the program."""

    files: tuple[GeneratedFile, ...] | None
    check: CheckResult


def python_package(parsed: Sequence[ParseResult], folder: str | None = None) -> Generated:
    """The typed Python package of the files and what they import, if they check clean
    (a file with errors has no types to give), to be written in ``folder``."""
    return _generated(parsed, lambda program: generate(program, folder))


def _generated(
    parsed: Sequence[ParseResult], make: Callable[[Program], list[GeneratedFile]]
) -> Generated:
    """What ``make`` writes for the program of the files, if they check clean."""
    checked = check(parsed)
    if any(d.severity is Severity.ERROR for d in checked.diagnostics):
        return Generated(None, checked)
    return Generated(tuple(make(load_program(parsed))), checked)


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


def json_schemas(parsed: Sequence[ParseResult], folder: str | None = None) -> Generated:
    """A JSON Schema of each value the workflows take from outside (``gen.json_schema``)."""
    from wflang.gen import json_schema

    return _generated(parsed, lambda program: json_schema.generate(program, folder))


def typescript_package(parsed: Sequence[ParseResult], folder: str | None = None) -> Generated:
    """TypeScript declarations of the same values (``gen.typescript``)."""
    from wflang.gen import typescript

    return _generated(parsed, lambda program: typescript.generate(program, folder))
