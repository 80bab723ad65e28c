"""``wf diff``: breaking changes between two versions of a workflow (two files, a file
and its text at a git revision, or two folders of workflows paired by name)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

from attrs import field, frozen

from wflang.cli.files import (
    REPORT_FORMATS,
    color_field,
    diagnostics_text,
    load,
    report_text,
    stdin_filename_field,
)
from wflang.cli.framework import (
    EXIT_FINDINGS,
    EXIT_OK,
    EXIT_USAGE,
    Command,
    Out,
    Result,
    UsageError,
    arg,
    flag_field,
)

if TYPE_CHECKING:
    from wflang.dsl.parser import ParseResult


@frozen(kw_only=True)
class Diff:
    files: tuple[str, ...] = field(
        metadata=arg(
            nargs="+", metavar="FILE", help="OLD NEW (files or folders), or one file with --against"
        )
    )
    against: str | None = field(
        default=None,
        metadata=arg("--against", metavar="REV", help="compare FILE with 'git show REV:FILE'"),
    )
    format: str = field(
        default="text",
        metadata=arg(
            "--format",
            choices=(*REPORT_FORMATS, "markdown"),
            help="text (default), concise, json, sarif, github, or markdown (a table for "
            "pull-request comments)",
        ),
    )
    fail_on: str = field(
        default="breaking",
        metadata=arg(
            "--fail-on",
            choices=("breaking", "warning"),
            help="exit 1 when a change that is not accepted is at least this bad "
            "(default: breaking)",
        ),
    )
    instances: bool = flag_field(
        "--instances",
        help=(
            "instead of the changes, show for each node of OLD whether instances "
            "waiting there could continue on NEW (a table, or JSON with --format json); "
            "exit 1 when some cannot, so the old version must be drained"
        ),
    )
    stdin_filename: str | None = stdin_filename_field()
    color: bool = color_field()


class _NewAtRevision(Exception):
    """``--against REV`` names a file that REV does not have: a new workflow."""


def _sources(req: Diff) -> tuple[ParseResult, ParseResult]:
    """The old and the new version: two files, or a file and its text at a git revision."""
    from wflang.dsl.parser import parse_bytes

    if req.against is not None:
        if len(req.files) != 1:
            raise UsageError("with --against REV, name exactly one file")
        new_path = req.files[0]
        try:
            shown = subprocess.run(
                ["git", "show", f"{req.against}:./{Path(new_path).name}"],
                capture_output=True,
                check=False,
                cwd=str(Path(new_path).resolve().parent),
            )
        except OSError as err:
            raise UsageError(f"cannot run git: {err.strerror or err}") from err
        if shown.returncode != 0:
            message = shown.stderr.decode("utf-8", errors="replace").strip()
            if "exists on disk, but not in" in message or "does not exist in" in message:
                raise _NewAtRevision
            raise UsageError(f"git show {req.against}:{new_path} failed: {message}")
        new = load(new_path, req.stdin_filename)
        return parse_bytes(shown.stdout, f"{req.against}:{new_path}"), new
    if len(req.files) != 2:
        raise UsageError("name two files (OLD NEW), or one file with --against REV")
    return load(req.files[0], req.stdin_filename), load(req.files[1], req.stdin_filename)


def diff(req: Diff) -> Result:
    from wflang.compiler.diff import DIFF_CODES, Level, diff_specs
    from wflang.compiler.diff.markdown import render_markdown
    from wflang.compiler.report import Report, to_sarif

    if req.against is None and len(req.files) == 2 and all(Path(f).is_dir() for f in req.files):
        return _folders(req)
    out = Out()
    try:
        old, new = _sources(req)
    except _NewAtRevision:  # a workflow added by the change: nothing it could break
        new_file = req.files[0]
        out.print(f"{new_file}: not in {req.against}: a new workflow, nothing to compare",
                  err=True)  # fmt: skip
        if req.format in ("json", "sarif", "github"):
            out.write(report_text(Report((), {}, (new_file,)), req.format, req.color))
        return out.done()
    if old.spec is None or new.spec is None:
        broken = {r.file: r for r in (old, new) if r.spec is None}  # once if OLD is NEW
        out.write(diagnostics_text(list(broken.values()), "text", req.color))
        return out.done(EXIT_USAGE)
    if req.instances:
        from wflang.compiler.diff.migration import migrate, render_json, render_text

        if req.format not in ("text", "json"):
            raise UsageError(f"--instances prints text or json, not {req.format}")
        migration = migrate(old.spec, new.spec)
        if req.format == "json":
            out.write(render_json(migration, old.file, new.file))
        else:
            out.write(render_text(migration))
        return out.done(EXIT_OK if migration.can_continue else EXIT_FINDINGS)
    result = diff_specs(old.spec, new.spec)
    from wflang.gen.signatures import regenerate_notes

    for note in regenerate_notes(old.spec, new.spec):  # beside the report, not in it
        out.print(f"note: {note}", err=True)
    sources = {old.file: old.text, new.file: new.text}
    report = Report(result.diagnostics, sources, (new.file,), result.fingerprints)
    if req.format == "markdown":
        out.write(render_markdown(result, old.file, new.file))
    elif req.format == "text":  # grouped by level, with the old line beside the new
        from wflang.compiler.diff.text import render_text as render_diff_text

        out.write(render_diff_text(result, sources, color=req.color))
    elif req.format == "sarif":  # with the diff rules' metadata
        out.print(json.dumps(to_sarif(report, registry=DIFF_CODES), indent=2))
    else:
        out.write(report_text(report, req.format, req.color))
    return out.done(EXIT_FINDINGS if result.fails(Level(req.fail_on)) else EXIT_OK)


def _folders(req: Diff) -> Result:
    """``wf diff OLD_DIR NEW_DIR``: workflows paired by name, each pair diffed."""
    from wflang.compiler.diff import DIFF_CODES, Level
    from wflang.compiler.diff.folders import diff_folders
    from wflang.compiler.diff.markdown import render_markdown
    from wflang.compiler.diff.markdown import summary as diff_summary
    from wflang.compiler.report import Report, format_text, to_sarif

    if req.instances:
        raise UsageError("--instances compares two files, not two folders")
    old_dir, new_dir = (Path(f) for f in req.files)
    folders = diff_folders(old_dir, new_dir, load)
    out = Out()
    if folders.broken:
        out.write(diagnostics_text(list(folders.broken), "text", req.color))
        return out.done(EXIT_USAGE)
    result = folders.result
    sources = {r.file: r.text for r in (*folders.old_files, *folders.new_files)}
    files = tuple(r.file for r in folders.new_files)
    report = Report(result.diagnostics, sources, files, result.fingerprints)
    if req.format == "markdown":
        out.write(render_markdown(result, req.files[0], req.files[1]))
    elif req.format == "text":
        for d in report.diagnostics:
            text = format_text(d, report.sources.get(d.span.file), color=req.color)
            out.write(text + "\n\n")
        both = len(folders.pairs)
        out.print(f"{both} workflow{'s' if both != 1 else ''} in both folders. "
                  + diff_summary(result))  # fmt: skip
    elif req.format == "sarif":
        out.print(json.dumps(to_sarif(report, registry=DIFF_CODES), indent=2))
    else:
        out.write(report_text(report, req.format, req.color))
    return out.done(EXIT_FINDINGS if result.fails(Level(req.fail_on)) else EXIT_OK)


DIFF = Command(
    ("diff",),
    Diff,
    diff,
    help="report breaking changes between two versions of a workflow",
    description="Compare two versions of a workflow and report what breaks callers "
    "(inputs, signals), consumers (outcomes, outputs) and running instances (structure); "
    "see 'wf rules --diff'. Give OLD and NEW files, or one file with --against REV to "
    "compare it with its text at a git revision, or OLD and NEW folders: their "
    "workflows are paired by name and removed or added ones reported. A breaking "
    "change with a raised version is reported as accepted and does not fail.",
)

#: This module's commands, groups before their actions (``app.HOMES`` orders them).
COMMANDS = (DIFF,)
