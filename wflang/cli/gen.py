"""``wf gen python``: typed Python for the handlers of checked workflows (issue 17)."""

from __future__ import annotations

from attrs import field, frozen

from wflang.cli.files import color_field, expand, load, report_text
from wflang.cli.framework import EXIT_FINDINGS, Command, Group, Out, Result, UsageError, arg


@frozen(kw_only=True)
class GenPython:
    paths: tuple[str, ...] = field(
        metadata=arg(nargs="+", metavar="PATH", help=".wf files or folders (their imports too)")
    )
    output: str = field(
        metadata=arg(
            "-o", "--output", metavar="DIR", required=True, help="the package folder to write"
        )
    )
    check: bool = field(
        default=False,
        metadata=arg(
            "--check",
            action="store_true",
            help="write nothing: exit 1 if a generated file is missing or stale (for CI)",
        ),
    )
    color: bool = color_field()


def gen_python(req: GenPython) -> Result:
    from pathlib import Path

    from wflang.compiler.report import Report
    from wflang.gen import GenError, python_package, stale

    paths = expand(req.paths)
    if "-" in paths:
        raise UsageError("wf gen python reads files, not standard input")
    out = Out()
    try:
        generated = python_package([load(p) for p in paths], req.output)
    except GenError as err:
        raise UsageError(f"cannot generate Python: {err}") from err
    if generated.files is None:
        c = generated.check
        out.write(report_text(Report(c.diagnostics, c.sources, c.files), "text", req.color))
        return out.done(EXIT_FINDINGS)
    folder = Path(req.output)
    changed = stale(generated.files, folder)
    if req.check:
        for name in changed:
            out.print(f"{folder / name} is stale: run 'wf gen python' again")
        if changed:
            return out.done(EXIT_FINDINGS)
        out.print(f"{len(generated.files)} files in {folder} are up to date")
        return out.done()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for f in generated.files:
            if f.name in changed:
                (folder / f.name).write_text(f.text, encoding="utf-8")
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

#: This module's commands, groups before their actions (``app.HOMES`` orders them).
COMMANDS = (GEN, GEN_PYTHON)
