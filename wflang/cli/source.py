"""``wf parse``, ``wf fmt``, ``wf check``, ``wf rules`` and ``wf schema``: the commands
of the language's front end and checker."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

from attrs import asdict, evolve, field, frozen

from wflang.cli import check_cache
from wflang.cli.files import (
    color_field,
    config_field,
    diagnostics_text,
    expand,
    load,
    load_config,
    preset_field,
    quiet_field,
    report_format_field,
    report_text,
    rules_field,
    stdin_filename_field,
)
from wflang.cli.framework import (
    EXIT_FINDINGS,
    EXIT_OK,
    Command,
    Out,
    Result,
    UsageError,
    arg,
    emit,
    flag_field,
)

if TYPE_CHECKING:
    from wflang.compiler.config import Config
    from wflang.compiler.report import Report
    from wflang.dsl.parser import ParseResult
    from wflang.dsl.spec import WorkflowSpec


@frozen(kw_only=True)
class Parse:
    file: str = field(metadata=arg(help="the .wf file, or - for standard input"))
    json: bool = flag_field("--json", help="print the spec as JSON (through cattrs)")
    summary: bool = flag_field("--summary", help="print a one-paragraph summary (default)")
    format: str = report_format_field()
    stdin_filename: str | None = stdin_filename_field()
    color: bool = color_field()


def parse(req: Parse) -> Result:
    out = Out()
    as_json = req.json or req.format == "json"  # --json and --format json mean the same
    result = load(req.file, req.stdin_filename)
    if result.spec is None:
        out.write(diagnostics_text([result], "json" if as_json else req.format, req.color))
        return out.done(EXIT_FINDINGS)
    if as_json:
        from wflang.dsl.serialize import unstructure  # its converter is costly to build

        out.print(json.dumps(unstructure(result.spec), indent=2))
    else:
        out.print(summary(result.spec))
    return out.done()


def _count(n: int, noun: str) -> str:
    """``1 comment``, ``2 comments``."""
    return f"{n} {noun}" + ("" if n == 1 else "s")


def summary(spec: WorkflowSpec) -> str:
    """The paragraph ``wf parse`` prints: the header, and what the file holds."""
    header = (
        f"workflow {spec.header.name.text} version {spec.header.version}"
        if spec.header
        else "library (no workflow header)"
    )
    kinds: dict[str, int] = {}
    for node in spec.nodes:
        kind = type(node).__name__.removesuffix("Node").lower()
        kinds[kind] = kinds.get(kind, 0) + 1
    nodes = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items())) or "no nodes"
    return (
        f"{spec.file}: {header}\n"
        f"  {_count(len(spec.declarations), 'declaration')}; top-level nodes: {nodes}\n"
        f"  {_count(len(spec.comments), 'comment')}, "
        f"{_count(len(spec.suppressions), 'suppression')}"
    )


@frozen(kw_only=True)
class Fmt:
    files: tuple[str, ...] = field(
        metadata=arg(nargs="+", metavar="FILE", help="files, folders, or -")
    )
    check: bool = flag_field(
        "--check",
        help=(
            "write nothing; name each file that would change and show how (a diff); "
            "exit 1 if any would (for CI and pre-commit)"
        ),
    )
    diff: bool = flag_field(
        "--diff",
        help="write nothing; print how each file would change as a unified diff; "
        "exit 1 if any would",
    )
    quiet: bool = quiet_field("print no file names (reformatted, would reformat) nor diffs")
    stdin_filename: str | None = stdin_filename_field()
    color: bool = color_field()


def fmt(req: Fmt) -> Result:
    from wflang.dsl.formatter import format_spec

    out = Out()
    status = EXIT_OK
    with out.kept_on_error():  # files already rewritten are said to be
        for path in expand(req.files):
            result = load(path, req.stdin_filename)
            if result.spec is None:
                out.write(diagnostics_text([result], "text", req.color))
                status = max(status, EXIT_FINDINGS)
                continue
            formatted = format_spec(result.spec, result.text)
            canonical = formatted == result.text and not result.normalized  # \n breaks only
            name = (req.stdin_filename or "<stdin>") if path == "-" else path
            if req.check or req.diff:  # write nothing, say what would change
                if not canonical:
                    status = EXIT_FINDINGS
                    if not req.quiet and req.check and path != "-":
                        out.print(f"would reformat {path}")
                    if not req.quiet or req.diff:
                        out.write(unified_diff(result.text, formatted, name, req.color))
            elif path == "-":
                out.write(formatted)
            elif not canonical:
                Path(path).write_text(formatted, encoding="utf-8")
                if not req.quiet:
                    out.print(f"reformatted {path}", err=True)
    return out.done(status)


def unified_diff(before: str, after: str, name: str, color: bool, change: str = "formatted") -> str:
    """How formatting (or ``change``) changes a file, as ``diff -u`` shows it (in colour
    on a terminal)."""
    import difflib

    lines = difflib.unified_diff(
        before.splitlines(keepends=True),
        after.splitlines(keepends=True),
        fromfile=name,
        tofile=f"{name} ({change})",
    )
    out = []
    for line in lines:
        text = line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"
        if color and line[:1] in "+-@" and not line.startswith(("+++", "---")):
            code = {"+": "32", "-": "31", "@": "36"}[line[0]]
            text = f"\x1b[{code}m{text.rstrip(chr(10))}\x1b[0m\n"
        out.append(text)
    return "".join(out)


@frozen(kw_only=True)
class Check:
    paths: tuple[str, ...] = field(
        metadata=arg(nargs="+", metavar="PATH", help="files, folders, or -")
    )
    format: str = report_format_field()
    fail_on: str = field(
        default="error",
        metadata=arg(
            "--fail-on",
            choices=("error", "warning", "info"),
            help="exit 1 when a finding is at least this severe (default: error)",
        ),
    )
    preset: str | None = preset_field()
    config: str | None = config_field()
    select: tuple[str, ...] = rules_field(
        "--select", "check only these rules (codes, names or code prefixes such as WF2)"
    )
    extend_select: tuple[str, ...] = rules_field(
        "--extend-select", "check these rules too, beside those the configuration turns on"
    )
    ignore: tuple[str, ...] = rules_field(
        "--ignore", "do not check these rules (wins over --select)"
    )
    quiet: bool = quiet_field("print the findings only: no summary line, nothing when clean")
    statistics: bool = flag_field(
        "--statistics", help="print how many findings each rule has, instead of the findings"
    )
    fix: bool = flag_field(
        "--fix",
        help=(
            "apply the safe fixes (a misspelt name the check knows the spelling of), "
            "say each change, then report what is left"
        ),
    )
    diff: bool = flag_field(
        "--diff", help="write nothing: show the safe fixes as a unified diff (exit 1 if any)"
    )
    watch: bool = flag_field(
        "--watch",
        help="check, then check again each time a .wf file under the paths changes (Ctrl-C stops)",
    )
    stdin_filename: str | None = stdin_filename_field()
    color: bool = color_field()
    no_cache: bool = flag_field(
        "--no-cache",
        help=(
            "neither read nor write the cache of results (also: WFLANG_NO_CACHE=1); "
            "the cache answers a repeated check of unchanged files, imports, configuration "
            "and wflang"
        ),
    )


def check(req: Check) -> Result:
    if req.statistics and req.format != "text":
        raise UsageError("--statistics prints a table for people: it takes no --format but text")
    if req.watch:
        from wflang.cli import watch

        if "-" in req.paths:
            raise UsageError("--watch watches files: standard input ('-') cannot be watched")
        expand(req.paths)  # a path that does not exist is an error now, not a silent wait
        once = evolve(req, watch=False)
        return watch.watch(lambda: check(once), watch.polled_changes(req.paths), emit)
    if req.fix and "-" in req.paths:
        raise UsageError("--fix rewrites files: standard input ('-') cannot be (try --diff)")
    files = expand(req.paths)
    options = {k: v for k, v in asdict(req).items() if k != "no_cache"}
    uncached = req.no_cache or req.fix or req.diff  # they act on the files, not only report
    entry = check_cache.lookup(options, files, no_cache=uncached, fmt=req.format)
    if entry is not None:
        cached = entry.cached()
        if cached is not None:
            return cached  # the parser and the checker are never imported
    result = _check(req, files, entry)
    if entry is not None:
        entry.store(result)
    return result


def _check(req: Check, files: list[str], entry: check_cache.Lookup | None) -> Result:
    from wflang.compiler.check import check as check_files
    from wflang.compiler.program import import_targets, read_file
    from wflang.compiler.report import Report, summary_line
    from wflang.dsl.diagnostics import Severity

    if entry is not None:  # what the configuration and the import scope will look at
        entry.look_above(".")
        for path in files:
            entry.look_above(os.path.dirname(path) or ".")
        if req.config:
            entry.look("read", req.config)
    config = selected_rules(load_config(req.config, req.preset), req)
    data = entry.data if entry is not None else {}
    parsed = [load(p, req.stdin_filename, data.get(p)) for p in files]
    if entry is not None:
        entry.look_at_import_paths(files)
    imported: list[ParseResult] = []
    reader = read_file if entry is None else entry.reader(imported)
    result = check_files(parsed, config, reader)
    if entry is not None:  # imports not read (outside the project, or read as a root)
        for module in (*parsed, *imported):
            for target in import_targets(module):
                entry.look("realpath", target)
                entry.look("read", target)
    out = Out()
    if req.fix or req.diff:
        from wflang.cli import fixing

        fixed = fixing.fix(parsed, result, check_files, config, reader)
        originals = {p.file: p.text for p in parsed}
        fixing.report(fixed, originals, diff=req.diff, color=req.color, out=out)
        if req.diff:
            return out.done(EXIT_FINDINGS if fixed.changes else EXIT_OK)
        result = fixed.result
    report = Report(result.diagnostics, result.sources, result.files)
    if req.statistics:
        out.write(statistics(report))
    else:
        text = report_text(report, req.format, req.color)
        out.write(text.removesuffix(summary_line(report) + "\n") if req.quiet else text)
    if req.statistics and not req.quiet:
        out.print(summary_line(report))
    threshold = Severity(req.fail_on).rank
    worst = max((d.severity.rank for d in result.diagnostics), default=0)
    return out.done(EXIT_FINDINGS if worst >= threshold else EXIT_OK)


def selected_rules(config: Config, req: Check) -> Config:
    """The configuration with the rules of ``--select``, ``--extend-select``, ``--ignore``."""
    from wflang.compiler.config import ConfigError, selected

    try:
        return selected(
            config, select=req.select, extend_select=req.extend_select, ignore=req.ignore
        )
    except ConfigError as err:
        raise UsageError(str(err)) from err


def statistics(report: Report) -> str:
    """``    3  WF201  unreachable-node  error``: each rule's count, the most found first."""
    counts: dict[tuple[str, str, str], int] = {}
    for d in report.diagnostics:
        key = (d.code, d.name, d.severity.value)
        counts[key] = counts.get(key, 0) + 1
    rows = sorted(counts.items(), key=lambda row: (-row[1], row[0][0]))
    width = max((len(name) for (_, name, _), _ in rows), default=0)
    return "".join(
        f"{n:>5}  {code}  {name:<{width}}  {severity}\n" for (code, name, severity), n in rows
    )


@frozen(kw_only=True)
class Rules:
    rule: str | None = field(
        default=None,
        metadata=arg(
            nargs="?",
            metavar="RULE",
            help="explain this rule (a code such as WF201, or a name): its entry of "
            "docs/rules.md, with a bad and a good example",
        ),
    )
    format: str = field(
        default="text",
        metadata=arg(
            "--format",
            choices=("text", "json", "markdown"),
            help="text (default), json, or markdown (docs/rules.md is this)",
        ),
    )
    diff: bool = flag_field("--diff", help="list the rules of wf diff instead")


def rules(req: Rules) -> Result:
    from wflang.compiler import docs

    if req.rule is not None:
        entry = docs.explain(req.rule, req.format)
        if entry is None:
            from wflang.compiler.suggest import NearNames

            hint = NearNames(docs.rule_names()).hint(req.rule)
            raise UsageError(
                f"unknown rule {req.rule!r} (see 'wf rules' for the list)"
                + (f"; {hint}" if hint else "")
            )
        out = Out()
        out.write(entry)
        return out.done()
    if req.diff:
        render = {"text": docs.diff_rules_text, "json": docs.diff_rules_json,
                  "markdown": docs.diff_rules_markdown}  # fmt: skip
    else:
        render = {"text": docs.rules_text, "json": docs.rules_json,
                  "markdown": docs.rules_markdown}  # fmt: skip
    out = Out()
    out.write(render[req.format]())
    return out.done()


@frozen
class Schema:
    pass


def schema(req: Schema) -> Result:
    from wflang.compiler.report import json_schema

    out = Out()
    out.print(json.dumps(json_schema(), indent=2))
    return out.done()


PARSE = Command(
    ("parse",),
    Parse,
    parse,
    help="parse a .wf file and print its typed spec",
    description="Parse a .wf file. Prints a summary, or the whole typed spec with --json; "
    "on syntax errors prints every error and exits 1.",
)
FMT = Command(
    ("fmt",),
    Fmt,
    fmt,
    help="format .wf files in the canonical style",
    description="Rewrite .wf files in the canonical style (comments kept). "
    "Folders are searched for *.wf; '-' reads standard input and writes standard output.",
)
CHECK = Command(
    ("check",),
    Check,
    check,
    help="check .wf files and report problems for people or CI",
    description="Check .wf files and the files they import: syntax, names, graph "
    "soundness, types and policies (see 'wf rules'). Every finding of every file is "
    "reported in one run. Folders are searched for *.wf; '-' reads standard input. "
    "Rules are configured in [tool.wflang] of pyproject.toml.",
)
RULES = Command(
    ("rules",),
    Rules,
    rules,
    help="list the rules of wf check (and of wf diff with --diff)",
    description="List every diagnostic code: its name, default severity, the preset "
    "that turns it on, and what it checks. docs/rules.md is '--format markdown'.",
)
SCHEMA = Command(
    ("schema",),
    Schema,
    schema,
    help="print the JSON Schema of 'wf check --format json'",
    description="Print the JSON Schema (draft 2020-12) that the output of "
    "'wf check --format json' follows; the document carries its own version.",
)

#: This module's commands, groups before their actions (``app.HOMES`` orders them).
COMMANDS = (PARSE, FMT, CHECK, RULES, SCHEMA)
