"""``wf compile``, ``wf table`` and ``wf run``: a checked workflow lowered to its
transition table, printed, or run in memory with Python handlers."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from attrs import field, frozen

from wflang.cli.files import (
    color_field,
    config_field,
    load,
    load_config,
    preset_field,
    report_text,
    stdin_filename_field,
    write,
)
from wflang.cli.framework import EXIT_FINDINGS, EXIT_OK, Command, Out, Result, UsageError, arg
from wflang.cli.values import (
    JSON_TYPES,
    allow_missing_field,
    allow_unused_field,
    json_arg,
    limit_field,
    limits,
    load_handlers,
    outcome_label,
)

if TYPE_CHECKING:
    from wflang.runtime.limits import Limits
    from wflang.runtime.table import Table


class Refused(Exception):
    """The workflow has check errors: ``report`` is what to print."""

    def __init__(self, report: str) -> None:
        super().__init__("the workflow has check errors")
        self.report = report


def compiled(
    file: str,
    *,
    stdin_filename: str | None = None,
    config: str | None = None,
    preset: str | None = None,
    color: bool = False,
) -> Table:
    """The table of a workflow file; ``Refused`` (with its findings) when it has errors."""
    from wflang.compiler.compile import compile_workflow
    from wflang.compiler.report import Report

    parsed = load(file, stdin_filename)
    result = compile_workflow(parsed, load_config(config, preset))
    if result.table is None:
        check = result.check
        report = Report(check.diagnostics, check.sources, check.files)
        if parsed.spec is not None and parsed.spec.header is None:
            raise UsageError(f"{file} has no 'workflow NAME version N' header: nothing to compile")
        raise Refused(report_text(report, "text", color))
    return result.table


class _Compiles(Protocol):
    """A request that compiles its workflow file under a check configuration."""

    @property
    def file(self) -> str: ...
    @property
    def stdin_filename(self) -> str | None: ...
    @property
    def config(self) -> str | None: ...
    @property
    def preset(self) -> str | None: ...
    @property
    def color(self) -> bool: ...


def _compiled_as(req: _Compiles, path: str) -> Table:
    """``compiled`` for a file of the request, under its configuration."""
    return compiled(
        path,
        stdin_filename=req.stdin_filename,
        config=req.config,
        preset=req.preset,
        color=req.color,
    )


def _table_or_findings(req: _Compiles, out: Out) -> Table | None:
    """The table of the request's file; None once its findings are written to ``out``."""
    try:
        return _compiled_as(req, req.file)
    except Refused as refused:
        out.write(refused.report)
        return None


@frozen(kw_only=True)
class Compile:
    file: str = field(metadata=arg(help="the .wf file, or - for standard input"))
    output: str | None = field(
        default=None,
        metadata=arg("-o", "--output", help="write the table here (default: stdout)"),
    )
    preset: str | None = preset_field()
    config: str | None = config_field()
    stdin_filename: str | None = stdin_filename_field()
    color: bool = color_field()


def compile_table(req: Compile) -> Result:
    from wflang.runtime.table import dumps, table_hash

    out = Out()
    table = _table_or_findings(req, out)
    if table is None:
        return out.done(EXIT_FINDINGS)
    text = dumps(table)
    if req.output in (None, "-"):
        out.write(text)
    else:
        write(req.output, text.encode())
        out.print(
            f"wrote {req.output} ({table.workflow} version {table.version}, "
            f"sha256 {table_hash(table)[:12]})",
            err=True,
        )
    return out.done()


@frozen(kw_only=True)
class ShowTable:
    file: str = field(metadata=arg(help="the .wf file, or - for standard input"))
    preset: str | None = preset_field()
    config: str | None = config_field()
    stdin_filename: str | None = stdin_filename_field()
    color: bool = color_field()


def show_table(req: ShowTable) -> Result:
    from wflang.runtime.describe import describe

    out = Out()
    table = _table_or_findings(req, out)
    if table is None:
        return out.done(EXIT_FINDINGS)
    out.write(describe(table))
    return out.done()


@frozen(kw_only=True)
class Run:
    file: str = field(metadata=arg(help="the .wf file"))
    input: str = field(
        default="{}",
        metadata=arg("--input", help=f"the input: a JSON object, or @FILE; {JSON_TYPES}"),
    )
    handlers: str | None = field(
        default=None,
        metadata=arg(
            "--handlers",
            metavar="MODULE",
            help="import this module (a name on the Python path, or a .py file) to register "
            "handlers",
        ),
    )
    allow_missing_handlers: bool = allow_missing_field()
    allow_unused_handlers: bool = allow_unused_field()
    uses: tuple[str, ...] = field(
        default=(),
        metadata=arg(
            "--uses",
            action="append",
            metavar="FILE",
            help="another workflow it calls and does not import (repeatable; imported "
            "workflows are registered anyway)",
        ),
    )
    max_string_chars: int = limit_field("string_chars")
    max_list_items: int = limit_field("list_items")
    max_list_elements: int = limit_field("list_elements")
    max_context_chars: int = limit_field("context_chars")
    preset: str | None = preset_field()
    config: str | None = config_field()
    stdin_filename: str | None = stdin_filename_field()
    color: bool = color_field()


def _tables(req: Run) -> list[Table]:
    """The workflow's table last, after those of the workflows it imports or uses."""
    from wflang.compiler.program import load_program

    main = _compiled_as(req, req.file)
    program = load_program([load(req.file, req.stdin_filename)])
    imported = [
        _compiled_as(req, path)
        for path, module in sorted(program.modules.items())
        if path not in program.roots and module.spec is not None and module.spec.header
    ]
    return [*imported, *(_compiled_as(req, p) for p in req.uses), main]


def _over_limits(tables: list[Table], bounds: Limits) -> str | None:
    """Why a table cannot be loaded under the limits (a list literal too long), if so."""
    from wflang.runtime.ir import compile_ir

    for table in tables:
        try:
            for expression in table.expressions:
                compile_ir(expression, bounds)
        except ValueError as err:
            return f"{table.workflow} version {table.version} does not fit the limits: {err}"
    return None


def run(req: Run) -> Result:
    from wflang.cli.changes import step_text
    from wflang.handlers.verify import problems
    from wflang.runtime import codec
    from wflang.runtime.engine import Engine
    from wflang.runtime.instance import Status
    from wflang.runtime.validate import InvalidValue

    handlers = load_handlers([req.handlers] if req.handlers else [])
    input_data = json_arg(req.input, "--input")  # decimals stay exact
    out = Out()
    try:
        tables = _tables(req)
    except Refused as refused:
        out.write(refused.report)
        return out.done(EXIT_FINDINGS)
    main_table = tables[-1]
    bounds = limits(
        req.max_string_chars, req.max_list_items, req.max_context_chars, req.max_list_elements
    )
    over = _over_limits(tables, bounds)
    if over:  # refused when loaded, before anything runs (as a worker's store would)
        out.print(f"wf: error: {over}", err=True)
        return out.done(EXIT_FINDINGS)
    unfit = problems(
        tables,
        handlers,
        allow_missing=req.allow_missing_handlers,
        allow_unused=req.allow_unused_handlers,
    )
    if unfit:  # before anything runs: a typo or a missing handler is no dead letter
        for problem in unfit:
            out.print(f"wf: error: {problem}", err=True)
        return out.done(EXIT_FINDINGS)
    engine = Engine(tables, handlers, limits=bounds)
    try:
        iid = engine.start(main_table.workflow, input_data, version=main_table.version)
    except InvalidValue as err:  # refused as `wf start` refuses it (bad JSON is a usage error)
        out.print(f"wf: error: {err}", err=True)
        return out.done(EXIT_FINDINGS)
    while not engine.instance(iid).status.finished and engine.timers:
        next_due = min(due for due, _ in engine.timers.values())
        engine.advance(max(0, next_due - engine.now))
    for entry in engine.history(iid):
        event = "start" if entry.event is None else type(entry.event).__name__
        out.print(step_text(entry.seq, f"t={entry.at / 1000:>9.3f}s", event, entry.decisions))
    inst = engine.instance(iid)
    out.print(f"status: {inst.status.value}")
    if inst.output is not None:
        out.print("output: " + codec.dumps(inst.output, sort_keys=True))  # decimals exact
    if inst.error:
        out.print(f"{outcome_label(inst.status.value)}: {inst.error}")
    waiting = sorted({t.waiting for t in inst.tokens if t.waiting})
    if not inst.status.finished and waiting:
        out.print("waiting for: " + ", ".join(waiting))
    ok = inst.status in (Status.COMPLETED, Status.RUNNING, Status.WAITING)
    return out.done(EXIT_OK if ok else EXIT_FINDINGS)


def _summary(what: str) -> str:
    return (
        what[0].upper()
        + what[1:]
        + (
            ". A workflow with check errors is refused (exit 1). "
            "The same source always gives the same bytes."
        )
    )


_COMPILE = "compile a checked workflow to its transition table (JSON)"
_TABLE = "print the transition table of a workflow for people"
COMPILE = Command(
    ("compile",), Compile, compile_table, help=_COMPILE, description=_summary(_COMPILE)
)
TABLE = Command(("table",), ShowTable, show_table, help=_TABLE, description=_summary(_TABLE))
RUN = Command(
    ("run",),
    Run,
    run,
    help="run a workflow in memory with Python handlers and print its history",
    description="Compile a workflow and run one instance in memory: service tasks call "
    "the handlers of --handlers (@wflang.handlers.handler functions, or a Registry); they "
    "are checked first: a service without a handler, a handler for a service nothing "
    "calls, or one whose parameters do not fit is refused (exit 1). Timers "
    "fire on a virtual clock that jumps to the next one, so nothing sleeps. Prints the "
    "history, the final status and the output.",
)

#: This module's commands, groups before their actions (``app.HOMES`` orders them).
COMMANDS = (COMPILE, TABLE, RUN)
