"""The ``wf`` command: a thin layer that reads files, calls the stages and prints.

Exit codes: 0 clean, 1 findings at or above ``--fail-on`` (or files that ``fmt
--check`` would change), 2 usage, I/O or internal error.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import BinaryIO, TextIO

from wflang import __version__
from wflang.compiler.check import check
from wflang.compiler.compile import compile_workflow
from wflang.compiler.config import Config, ConfigError, load_config, parse_config
from wflang.compiler.docs import (
    diff_rules_json,
    diff_rules_markdown,
    diff_rules_text,
    rules_json,
    rules_markdown,
    rules_text,
)
from wflang.compiler.program import load_program
from wflang.compiler.registry import Preset
from wflang.compiler.report import (
    FORMATS,
    Report,
    format_text,
    github_step_summary,
    json_schema,
    render,
    to_sarif,
)
from wflang.dsl import diagnostics as diag
from wflang.dsl.formatter import format_spec
from wflang.dsl.parser import ParseResult, parse_bytes
from wflang.dsl.source import MAX_SOURCE_BYTES, SourceError, read_source
from wflang.dsl.spec import WorkflowSpec
from wflang.durable import cli as durable_cli
from wflang.runtime.describe import describe
from wflang.runtime.table import Table, dumps, table_hash
from wflang.runtime.validate import InvalidValue
from wflang.store.records import StoreError

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2


class UsageError(Exception):
    """A problem with the command line or the files it names (exit 2)."""


# ----------------------------------------------------------------- utilities


def _expand(paths: Sequence[str]) -> list[str]:
    """Files named, and the .wf files under folders named, in a stable order; '-' is stdin."""
    out: list[str] = []
    for p in paths:
        if p == "-":
            out.append(p)
            continue
        path = Path(p)
        if path.is_dir():
            found = sorted(str(f) for f in path.rglob("*.wf") if f.is_file())
            if not found:
                raise UsageError(f"no .wf files under {p}")
            out.extend(found)
        elif path.is_file():
            out.append(p)
        else:
            raise UsageError(f"cannot read {p}: no such file or folder")
    return out


def _load(path: str, stdin_name: str | None = None) -> ParseResult:
    """A file parsed; ``-`` is standard input, named ``stdin_name`` (``--stdin-filename``:
    its imports are resolved from that file's folder, its findings carry that name)."""
    if path == "-":
        return parse_bytes(_bounded(sys.stdin.buffer), stdin_name or "<stdin>")
    try:
        data = read_source(path, regular_only=False)
    except SourceError as err:
        raise UsageError(f"cannot read {path}: {err}") from err
    return parse_bytes(data, path)


def _bounded(file: BinaryIO) -> bytes:
    """What a source file holds, read up to one byte past the limit (which the parser
    then refuses): ``/dev/zero`` or an endless pipe never fills the memory."""
    return file.read(MAX_SOURCE_BYTES + 1)


def _write(path: str, data: bytes) -> None:
    try:
        Path(path).write_bytes(data)
    except OSError as err:  # a folder, a missing folder, no permission, a full disk
        raise UsageError(f"cannot write {path}: {err.strerror or err}") from err


def _count(n: int, noun: str) -> str:
    """``1 comment``, ``2 comments``."""
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _use_color(choice: str, stream: TextIO) -> bool:
    if choice == "always":
        return True
    if choice == "never" or os.environ.get("NO_COLOR"):
        return False
    return stream.isatty()


def _print_report(report: Report, fmt: str, color: str) -> None:
    sys.stdout.write(render(fmt, report, color=_use_color(color, sys.stdout)))
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if fmt == "github" and summary:
        with open(summary, "a", encoding="utf-8") as out:
            out.write(github_step_summary(report) + "\n")


def _print_diagnostics(results: Sequence[ParseResult], fmt: str, color: str) -> None:
    diagnostics = tuple(d for r in results for d in r.diagnostics)
    sources = {r.file: r.text for r in results}
    _print_report(Report(diagnostics, sources, tuple(r.file for r in results)), fmt, color)


# ------------------------------------------------------------------ commands


def cmd_parse(args: argparse.Namespace) -> int:
    # --json and --format json mean the same: JSON out, the spec or the errors.
    as_json = args.json or args.format == "json"
    result = _load(args.file, args.stdin_filename)
    if result.spec is None:
        _print_diagnostics([result], "json" if as_json else args.format, args.color)
        return EXIT_FINDINGS
    if as_json:
        from wflang.dsl.serialize import unstructure  # its converter is costly to build

        print(json.dumps(unstructure(result.spec), indent=2))
    else:
        print(_summary(result.spec))
    return EXIT_OK


def _summary(spec: WorkflowSpec) -> str:
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


def cmd_fmt(args: argparse.Namespace) -> int:
    files = _expand(args.files)
    status = EXIT_OK
    for path in files:
        result = _load(path, args.stdin_filename)
        if result.spec is None:
            _print_diagnostics([result], "text", args.color)
            status = max(status, EXIT_FINDINGS)
            continue
        formatted = format_spec(result.spec, result.text)
        canonical = formatted == result.text and not result.normalized  # \n line breaks only
        if path == "-":
            if args.check:
                status = max(status, EXIT_OK if canonical else EXIT_FINDINGS)
            else:
                sys.stdout.write(formatted)
            continue
        if canonical:
            continue
        if args.check:
            print(f"would reformat {path}")
            status = max(status, EXIT_FINDINGS)
        else:
            Path(path).write_text(formatted, encoding="utf-8")
            print(f"reformatted {path}", file=sys.stderr)
    return status


def _config(args: argparse.Namespace) -> Config:
    try:
        if args.config:
            import tomllib

            data = tomllib.loads(Path(args.config).read_text(encoding="utf-8"))
            config = parse_config(data.get("tool", {}).get("wflang", {}), args.config)
        else:
            config = load_config()
    except (OSError, ValueError, ConfigError) as err:
        raise UsageError(f"configuration: {err}") from err
    if args.preset:
        config = Config(Preset(args.preset), config.severities, config.source)
    return config


def cmd_check(args: argparse.Namespace) -> int:
    config = _config(args)
    result = check([_load(p, args.stdin_filename) for p in _expand(args.paths)], config)
    report = Report(result.diagnostics, result.sources, result.files)
    _print_report(report, args.format, args.color)
    threshold = diag.Severity(args.fail_on).rank
    worst = max((d.severity.rank for d in result.diagnostics), default=0)
    return EXIT_FINDINGS if worst >= threshold else EXIT_OK


def _compiled(args: argparse.Namespace) -> Table:
    parsed = _load(args.file, args.stdin_filename)
    compiled = compile_workflow(parsed, _config(args))
    if compiled.table is None:
        result = compiled.check
        report = Report(result.diagnostics, result.sources, result.files)
        if parsed.spec is not None and parsed.spec.header is None:
            raise UsageError(
                f"{args.file} has no 'workflow NAME version N' header: nothing to compile"
            )
        _print_report(report, "text", args.color)
        raise _Refused
    return compiled.table


class _Refused(Exception):
    """The workflow has check errors; they were printed."""


def _compiled_file(args: argparse.Namespace, path: str) -> Table:
    return _compiled(argparse.Namespace(**{**vars(args), "file": path}))


def _imported_workflows(args: argparse.Namespace) -> list[Table]:
    """The workflows the file imports (the ones its ``call``s may start), compiled."""
    program = load_program([_load(args.file, args.stdin_filename)])
    return [
        _compiled_file(args, path)
        for path, module in sorted(program.modules.items())
        if path not in program.roots and module.spec is not None and module.spec.header
    ]


def cmd_compile(args: argparse.Namespace) -> int:
    try:
        table = _compiled(args)
    except _Refused:
        return EXIT_FINDINGS
    text = dumps(table)
    if args.output in (None, "-"):
        sys.stdout.write(text)
    else:
        _write(args.output, text.encode())
        print(f"wrote {args.output} ({table.workflow} version {table.version}, "
              f"sha256 {table_hash(table)[:12]})", file=sys.stderr)  # fmt: skip
    return EXIT_OK


def cmd_table(args: argparse.Namespace) -> int:
    try:
        table = _compiled(args)
    except _Refused:
        return EXIT_FINDINGS
    sys.stdout.write(describe(table))
    return EXIT_OK


def cmd_run(args: argparse.Namespace) -> int:
    from wflang.runtime import codec
    from wflang.runtime.engine import Engine, registered_handlers

    if args.handlers:
        durable_cli.import_handlers(args.handlers)
    input_data = durable_cli.json_arg(args.input, "--input")  # decimals stay exact
    try:
        main_table = _compiled(args)
        tables = [*_imported_workflows(args), *(_compiled_file(args, p) for p in args.uses)]
    except _Refused:
        return EXIT_FINDINGS
    tables.append(main_table)
    engine = Engine(tables, registered_handlers())
    try:
        iid = engine.start(main_table.workflow, input_data, version=main_table.version)
    except InvalidValue as err:  # refused as `wf start` refuses it (bad JSON is a usage error)
        print(f"wf: error: {err}", file=sys.stderr)
        return EXIT_FINDINGS
    while not engine.instance(iid).status.finished and engine.timers:
        next_due = min(due for due, _ in engine.timers.values())
        engine.advance(max(0, next_due - engine.now))
    for entry in engine.history(iid):
        event = "start" if entry.event is None else type(entry.event).__name__
        print(f"#{entry.seq:<3} t={entry.at / 1000:>9.3f}s  {event}")
        for decision in entry.decisions:
            print(f"       {decision}")
    inst = engine.instance(iid)
    print(f"status: {inst.status.value}")
    if inst.output is not None:
        print("output: " + codec.dumps(inst.output, sort_keys=True))  # decimals exact
    if inst.error:
        print(f"{durable_cli.outcome_label(inst.status.value)}: {inst.error}")
    waiting = sorted({t.waiting for t in inst.tokens if t.waiting})
    if not inst.status.finished and waiting:
        print("waiting for: " + ", ".join(waiting))
    return EXIT_OK if inst.status.value in ("completed", "running") else EXIT_FINDINGS


def cmd_render(args: argparse.Namespace) -> int:
    from wflang.render.command import RenderError, Request, render

    diff = tuple(args.diff) if args.diff else None
    fmt = args.format or _format_of(args.output)
    request = Request(args.file, fmt, args.check, diff, args.history)
    try:
        data = render(request)
    except RenderError as err:
        raise UsageError(str(err)) from err
    if args.output in (None, "-"):
        sys.stdout.flush()
        sys.stdout.buffer.write(data)
    else:
        _write(args.output, data)
    return EXIT_OK


#: The diagram format a file name asks for when ``--format`` is not given.
_RENDER_SUFFIXES = {".svg": "svg", ".png": "png", ".mmd": "mermaid", ".mermaid": "mermaid"}


def _format_of(output: str | None) -> str:
    """``out.png`` is drawn as PNG, ``out.svg`` as SVG, ``out.mmd`` as Mermaid; else DOT."""
    if output in (None, "-"):
        return "dot"
    return _RENDER_SUFFIXES.get(Path(output).suffix.lower(), "dot")


def cmd_schema(args: argparse.Namespace) -> int:
    print(json.dumps(json_schema(), indent=2))
    return EXIT_OK


def cmd_rules(args: argparse.Namespace) -> int:
    render_rules = {"text": rules_text, "json": rules_json, "markdown": rules_markdown}
    if args.diff:
        render_rules = {"text": diff_rules_text, "json": diff_rules_json,
                        "markdown": diff_rules_markdown}  # fmt: skip
    sys.stdout.write(render_rules[args.format]())
    return EXIT_OK


class _NewAtRevision(Exception):
    """``--against REV`` names a file that REV does not have: a new workflow."""


def _diff_source(args: argparse.Namespace) -> tuple[ParseResult, ParseResult]:
    """The old and the new version: two files, or a file and its text at a git revision."""
    if args.against is not None:
        if len(args.files) != 1:
            raise UsageError("with --against REV, name exactly one file")
        new_path = args.files[0]
        try:
            shown = subprocess.run(
                ["git", "show", f"{args.against}:./{Path(new_path).name}"],
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
            raise UsageError(f"git show {args.against}:{new_path} failed: {message}")
        new = _load(new_path, args.stdin_filename)
        return parse_bytes(shown.stdout, f"{args.against}:{new_path}"), new
    if len(args.files) != 2:
        raise UsageError("name two files (OLD NEW), or one file with --against REV")
    return _load(args.files[0], args.stdin_filename), _load(args.files[1], args.stdin_filename)


def cmd_diff(args: argparse.Namespace) -> int:
    from wflang.compiler.diff import DIFF_CODES, Level, diff_specs
    from wflang.compiler.diff.markdown import render_markdown

    if args.against is None and len(args.files) == 2 and all(Path(f).is_dir() for f in args.files):
        return _diff_folders(args)
    try:
        old, new = _diff_source(args)
    except _NewAtRevision:  # a workflow added by the change: nothing it could break
        new_file = args.files[0]
        print(f"{new_file}: not in {args.against}: a new workflow, nothing to compare",
              file=sys.stderr)  # fmt: skip
        if args.format in ("json", "sarif", "github"):
            _print_report(Report((), {}, (new_file,)), args.format, args.color)
        return EXIT_OK
    if old.spec is None or new.spec is None:
        broken = {r.file: r for r in (old, new) if r.spec is None}  # once if OLD is NEW
        _print_diagnostics(list(broken.values()), "text", args.color)
        return EXIT_USAGE
    if args.instances:
        from wflang.compiler.diff.migration import migrate, render_json, render_text

        if args.format not in ("text", "json"):
            raise UsageError(f"--instances prints text or json, not {args.format}")

        migration = migrate(old.spec, new.spec)
        if args.format == "json":
            sys.stdout.write(render_json(migration, old.file, new.file))
        else:
            sys.stdout.write(render_text(migration))
        return EXIT_OK if migration.can_continue else EXIT_FINDINGS
    result = diff_specs(old.spec, new.spec)
    sources = {old.file: old.text, new.file: new.text}
    report = Report(result.diagnostics, sources, (new.file,), result.fingerprints)
    if args.format == "markdown":
        sys.stdout.write(render_markdown(result, old.file, new.file))
    elif args.format == "text":  # grouped by level, with the old line beside the new
        from wflang.compiler.diff.text import render_text as render_diff_text

        sys.stdout.write(
            render_diff_text(result, sources, color=_use_color(args.color, sys.stdout))
        )
    elif args.format == "sarif":  # with the diff rules' metadata
        print(json.dumps(to_sarif(report, registry=DIFF_CODES), indent=2))
    else:
        _print_report(report, args.format, args.color)
    return EXIT_FINDINGS if result.fails(Level(args.fail_on)) else EXIT_OK


def _diff_folders(args: argparse.Namespace) -> int:
    """``wf diff OLD_DIR NEW_DIR``: workflows paired by name, each pair diffed."""
    from wflang.compiler.diff import DIFF_CODES, Level
    from wflang.compiler.diff.folders import diff_folders
    from wflang.compiler.diff.markdown import render_markdown
    from wflang.compiler.diff.markdown import summary as diff_summary

    if args.instances:
        raise UsageError("--instances compares two files, not two folders")
    old_dir, new_dir = (Path(f) for f in args.files)
    folders = diff_folders(old_dir, new_dir, _load)
    if folders.broken:
        _print_diagnostics(list(folders.broken), "text", args.color)
        return EXIT_USAGE
    result = folders.result
    sources = {r.file: r.text for r in (*folders.old_files, *folders.new_files)}
    files = tuple(r.file for r in folders.new_files)
    report = Report(result.diagnostics, sources, files, result.fingerprints)
    if args.format == "markdown":
        sys.stdout.write(render_markdown(result, args.files[0], args.files[1]))
    elif args.format == "text":
        color = _use_color(args.color, sys.stdout)
        for d in report.diagnostics:
            sys.stdout.write(format_text(d, report.sources.get(d.span.file), color=color) + "\n\n")
        both = len(folders.pairs)
        print(f"{both} workflow{'s' if both != 1 else ''} in both folders. " + diff_summary(result))
    elif args.format == "sarif":
        print(json.dumps(to_sarif(report, registry=DIFF_CODES), indent=2))
    else:
        _print_report(report, args.format, args.color)
    return EXIT_FINDINGS if result.fails(Level(args.fail_on)) else EXIT_OK


def _not_utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


# -------------------------------------------------------------------- parser


def _common(p: argparse.ArgumentParser) -> None:
    """Options of every command that reads .wf files."""
    p.add_argument(
        "--stdin-filename",
        metavar="PATH",
        help="the path of the file read from '-' (standard input): its imports are "
        "resolved from PATH's folder, and findings name it",
    )
    p.add_argument(
        "--color",
        choices=("auto", "always", "never"),
        default="auto",
        help="colour the text output: auto (only on a terminal, never with NO_COLOR)",
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
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    def diagnostics_format(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--format",
            choices=tuple(FORMATS),
            default="text",
            help="text (source snippets, default), concise (one line each), json, "
            "sarif (GitHub code scanning) or github (Actions annotations)",
        )

    p = sub.add_parser(
        "parse",
        help="parse a .wf file and print its typed spec",
        description="Parse a .wf file. Prints a summary, or the whole typed spec with --json; "
        "on syntax errors prints every error and exits 1.",
    )
    p.add_argument("file", help="the .wf file, or - for standard input")
    p.add_argument("--json", action="store_true", help="print the spec as JSON (through cattrs)")
    p.add_argument("--summary", action="store_true", help="print a one-paragraph summary (default)")
    diagnostics_format(p)
    _common(p)
    p.set_defaults(func=cmd_parse)

    p = sub.add_parser(
        "fmt",
        help="format .wf files in the canonical style",
        description="Rewrite .wf files in the canonical style (comments kept). "
        "Folders are searched for *.wf; '-' reads standard input and writes standard output.",
    )
    p.add_argument("files", nargs="+", metavar="FILE", help="files, folders, or -")
    p.add_argument(
        "--check", action="store_true",
        help="write nothing; exit 1 if any file would change (for CI and pre-commit)",
    )  # fmt: skip
    _common(p)
    p.set_defaults(func=cmd_fmt)

    p = sub.add_parser(
        "check",
        help="check .wf files and report problems for people or CI",
        description="Check .wf files and the files they import: syntax, names, graph "
        "soundness, types and policies (see 'wf rules'). Every finding of every file is "
        "reported in one run. Folders are searched for *.wf; '-' reads standard input. "
        "Rules are configured in [tool.wflang] of pyproject.toml.",
    )
    p.add_argument("paths", nargs="+", metavar="PATH", help="files, folders, or -")
    diagnostics_format(p)
    p.add_argument(
        "--fail-on", choices=("error", "warning", "info"), default="error",
        help="exit 1 when a finding is at least this severe (default: error)",
    )  # fmt: skip
    p.add_argument(
        "--preset",
        choices=[x.value for x in Preset],
        help="rule preset; overrides [tool.wflang] preset (default: recommended)",
    )
    p.add_argument(
        "--config",
        metavar="PYPROJECT",
        help="read [tool.wflang] from this file instead of the nearest pyproject.toml",
    )
    _common(p)
    p.set_defaults(func=cmd_check)

    p = sub.add_parser(
        "rules",
        help="list the rules of wf check (and of wf diff with --diff)",
        description="List every diagnostic code: its name, default severity, the preset "
        "that turns it on, and what it checks. docs/rules.md is '--format markdown'.",
    )
    p.add_argument("--format", choices=("text", "json", "markdown"), default="text")
    p.set_defaults(func=cmd_rules)
    _diff_parser(sub, rules=p, common=_common)

    for name, func, summary in (
        ("compile", cmd_compile, "compile a checked workflow to its transition table (JSON)"),
        ("table", cmd_table, "print the transition table of a workflow for people"),
    ):
        p = sub.add_parser(
            name,
            help=summary,
            description=summary[0].upper() + summary[1:] + ". A workflow with check "
            "errors is refused (exit 1). The same source always gives the same bytes.",
        )
        p.add_argument("file", help="the .wf file, or - for standard input")
        if name == "compile":
            p.add_argument("-o", "--output", help="write the table here (default: stdout)")
        p.add_argument("--preset", choices=[x.value for x in Preset], help=argparse.SUPPRESS)
        p.add_argument("--config", help=argparse.SUPPRESS)
        _common(p)
        p.set_defaults(func=func)

    p = sub.add_parser(
        "run",
        help="run a workflow in memory with Python handlers and print its history",
        description="Compile a workflow and run one instance in memory: service tasks call "
        "the handlers registered with @wflang.runtime.engine.handler in --handlers; timers "
        "fire on a virtual clock that jumps to the next one, so nothing sleeps. Prints the "
        "history, the final status and the output.",
    )
    p.add_argument("file", help="the .wf file")
    p.add_argument(
        "--input",
        default="{}",
        help=f"the input: a JSON object, or @FILE; {durable_cli.JSON_TYPES}",
    )
    p.add_argument(
        "--handlers",
        metavar="MODULE",
        help="import this module (a name on the Python path, or a .py file) to register handlers",
    )
    p.add_argument(
        "--uses",
        action="append",
        default=[],
        metavar="FILE",
        help="another workflow it calls and does not import (repeatable; imported "
        "workflows are registered anyway)",
    )
    p.add_argument("--preset", choices=[x.value for x in Preset], help=argparse.SUPPRESS)
    p.add_argument("--config", help=argparse.SUPPRESS)
    _common(p)
    p.set_defaults(func=cmd_run)

    p = sub.add_parser(
        "schema",
        help="print the JSON Schema of 'wf check --format json'",
        description="Print the JSON Schema (draft 2020-12) that the output of "
        "'wf check --format json' follows; the document carries its own version.",
    )
    p.set_defaults(func=cmd_schema)
    return _later_stages(sub, parser)


def _later_stages(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], parser: argparse.ArgumentParser
) -> argparse.ArgumentParser:
    """The commands of the stages after the checker: durable execution and diagrams."""
    durable_cli.register(sub, _compile_for_deploy)
    return _render_parser(sub, parser)


def _compile_for_deploy(path: str) -> Table | None:
    """Compile a file for ``wf deploy``; None (findings printed) when it has errors."""
    args = argparse.Namespace(
        file=path, config=None, preset=None, color="auto", stdin_filename=None
    )
    try:
        return _compiled(args)
    except _Refused:
        return None


def _render_parser(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], parser: argparse.ArgumentParser
) -> argparse.ArgumentParser:
    """``wf render`` and its options (returns ``parser``, to which ``sub`` belongs)."""
    p = sub.add_parser(
        "render",
        help="draw a workflow, its findings, a version diff or a recorded history",
        description="Draw a workflow as DOT (default), SVG or PNG (through Graphviz's "
        "'dot') or a Mermaid flowchart for Markdown. --check colours the checker's "
        "findings, --diff OLD NEW draws NEW with what changed since OLD, --history "
        "draws the path a recorded instance took. The same input gives the same DOT "
        "and Mermaid bytes.",
    )
    p.add_argument("file", nargs="?", help="the .wf file (omit with --diff)")
    p.add_argument(
        "--format",
        choices=("dot", "svg", "png", "mermaid"),
        help="default: from the name of --output (.svg, .png, .mmd or .mermaid), else dot",
    )
    p.add_argument("-o", "--output", help="write the diagram here (default: stdout)")
    p.add_argument("--check", action="store_true", help="colour the findings of wf check")
    p.add_argument("--diff", nargs=2, metavar=("OLD", "NEW"), help="draw NEW, changes marked")
    p.add_argument("--history", metavar="FILE.json", help="mark the path of a recorded history")
    p.set_defaults(func=cmd_render)
    return parser


def _diff_parser(
    sub: argparse._SubParsersAction[argparse.ArgumentParser],
    *,
    rules: argparse.ArgumentParser,
    common: Callable[[argparse.ArgumentParser], None],
) -> None:
    """``wf diff`` and its options, and ``wf rules --diff``."""
    rules.add_argument("--diff", action="store_true", help="list the rules of wf diff instead")
    p = sub.add_parser(
        "diff",
        help="report breaking changes between two versions of a workflow",
        description="Compare two versions of a workflow and report what breaks callers "
        "(inputs, signals), consumers (outcomes, outputs) and running instances (structure); "
        "see 'wf rules --diff'. Give OLD and NEW files, or one file with --against REV to "
        "compare it with its text at a git revision, or OLD and NEW folders: their "
        "workflows are paired by name and removed or added ones reported. A breaking "
        "change with a raised version is reported as accepted and does not fail.",
    )
    p.add_argument(
        "files",
        nargs="+",
        metavar="FILE",
        help="OLD NEW (files or folders), or one file with --against",
    )
    p.add_argument("--against", metavar="REV", help="compare FILE with 'git show REV:FILE'")
    p.add_argument(
        "--format",
        choices=(*FORMATS, "markdown"),
        default="text",
        help="text (default), concise, json, sarif, github, or markdown (a table for "
        "pull-request comments)",
    )
    p.add_argument(
        "--fail-on", choices=("breaking", "warning"), default="breaking",
        help="exit 1 when a change that is not accepted is at least this bad (default: breaking)",
    )  # fmt: skip
    p.add_argument(
        "--instances",
        action="store_true",
        help="instead of the changes, show for each node of OLD whether instances waiting "
        "there could continue on NEW (a table, or JSON with --format json); exit 1 when "
        "some cannot, so the old version must be drained",
    )
    _common(p)
    p.set_defaults(func=cmd_diff)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else argv
    for arg in argv:  # bytes that are not UTF-8 arrive as lone surrogates: no store takes them
        if not arg.isascii() and _not_utf8(arg):
            parser.error(f"argument {arg!r} is not valid UTF-8 text")
    args = parser.parse_args(argv)
    try:
        code: int = args.func(args)
    except (UsageError, durable_cli.CliUsage) as err:
        print(f"wf: error: {err}", file=sys.stderr)
        return EXIT_USAGE
    except StoreError as err:  # a refused request: nothing was changed
        print(f"wf: error: {err}", file=sys.stderr)
        return EXIT_FINDINGS
    except BrokenPipeError:  # pragma: no cover - e.g. `wf parse --json x | head`
        return EXIT_OK
    sys.stdout.flush()
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
