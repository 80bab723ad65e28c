"""``wf gen``: typed Python for the handlers of checked workflows, JSON Schema and
TypeScript declarations of what they take from outside (issue 17)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from attrs import field, frozen

from wflang.cli.files import color_field, expand, load, report_text
from wflang.cli.framework import (
    EXIT_FINDINGS,
    Command,
    Group,
    Out,
    Result,
    UsageError,
    arg,
    flag_field,
)

if TYPE_CHECKING:
    from wflang.dsl.parser import ParseResult
    from wflang.gen import Generated


@frozen(kw_only=True)
class GenPython:
    paths: tuple[str, ...] = field(
        metadata=arg(nargs="+", metavar="PATH", help=".wf files or folders (their imports too)")
    )
    output: str = field(
        metadata=arg("-o", "--output", metavar="DIR", required=True, help="the folder to write")
    )
    check: bool = flag_field(
        "--check", help="write nothing: exit 1 if a generated file is missing or stale (for CI)"
    )
    color: bool = color_field()


@frozen(kw_only=True)
class GenJsonSchema(GenPython):
    pass


@frozen(kw_only=True)
class GenTypescript(GenPython):
    pass


def gen_python(req: GenPython) -> Result:
    from wflang.gen import python_package

    return _gen(req, "python", "Python", python_package)


def gen_json_schema(req: GenJsonSchema) -> Result:
    from wflang.gen import json_schemas

    return _gen(req, "json-schema", "JSON Schema", json_schemas)


def gen_typescript(req: GenTypescript) -> Result:
    from wflang.gen import typescript_package

    return _gen(req, "typescript", "TypeScript", typescript_package)


def _gen(
    req: GenPython,
    command: str,
    language: str,
    make: Callable[[list[ParseResult], str], Generated],
) -> Result:
    """Check the files, then write what ``make`` generates (or, with ``--check``, say
    which files are stale): the same for every ``wf gen`` command."""
    from pathlib import Path

    from wflang.compiler.report import Report
    from wflang.gen import GenError, stale

    paths = expand(req.paths)
    if "-" in paths:
        raise UsageError(f"wf gen {command} reads files, not standard input")
    out = Out()
    try:
        generated = make([load(p) for p in paths], req.output)
    except GenError as err:
        raise UsageError(f"cannot generate {language}: {err}") from err
    if generated.files is None:
        c = generated.check
        out.write(report_text(Report(c.diagnostics, c.sources, c.files), "text", req.color))
        return out.done(EXIT_FINDINGS)
    folder = Path(req.output)
    changed = stale(generated.files, folder)
    if req.check:
        for name in changed:
            out.print(f"{folder / name} is stale: run 'wf gen {command}' again")
        if changed:
            return out.done(EXIT_FINDINGS)
        out.print(f"{len(generated.files)} files in {folder} are up to date")
        return out.done()
    try:
        for f in generated.files:
            if f.name in changed:
                target = folder / f.name
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(f.text, encoding="utf-8")
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise UsageError(f"cannot write {folder}: {err}") from err
    out.print(
        f"wrote {len(changed)} of {len(generated.files)} files in {folder}"
        + ("" if changed else " (all were up to date)")
    )
    return out.done()


GEN = Group(("gen",), help="generate code from checked workflows")
GEN_PYTHON = Command(
    ("gen", "python"),
    GenPython,
    gen_python,
    help="generate typed Python (classes, a Protocol of the services, helpers) for handlers",
    description="Check the workflows and write a Python package to DIR: per .wf file (and "
    "per file it imports) a module of frozen attrs classes for its records, enums, input, "
    "context, output, payloads, forms and each service's arguments and result; per "
    "workflow a Protocol with one method per service it calls, register() and typed "
    "helpers to start, signal, publish and complete tasks. The output passes mypy "
    "--strict and ruff. --check writes nothing and exits 1 when a file is stale. A "
    "workflow with check errors is refused (exit 1).",
)

GEN_JSON_SCHEMA = Command(
    ("gen", "json-schema"),
    GenJsonSchema,
    gen_json_schema,
    help="generate JSON Schemas of what workflows take from outside (input, payloads, forms)",
    description="Check the workflows and write to DIR, per workflow file, a JSON Schema "
    "(draft 2020-12) of each value the runtime takes from outside: the input, each "
    "signal's and message's payload, each human task's form, each error's payload and "
    "each called service's result, as JSON (decimals are JSON numbers; timestamps and "
    "durations integer milliseconds or ISO-8601 text). --check writes nothing and exits "
    "1 when a file is stale. A workflow with check errors is refused (exit 1).",
)
GEN_TYPESCRIPT = Command(
    ("gen", "typescript"),
    GenTypescript,
    gen_typescript,
    help="generate TypeScript declarations (.d.ts) of what workflows take from outside",
    description="Check the workflows and write to DIR a .d.ts file per .wf file (and per "
    "file it imports): an interface per record type, input, signal and message payload, "
    "form, error payload and service result, a union of string literals per enum, as the "
    "runtime takes them as JSON (timestamps and durations: string | number). --check "
    "writes nothing and exits 1 when a file is stale. A workflow with check errors is "
    "refused (exit 1).",
)

#: This module's commands, groups before their actions (``app.HOMES`` orders them).
COMMANDS = (GEN, GEN_PYTHON, GEN_JSON_SCHEMA, GEN_TYPESCRIPT)
