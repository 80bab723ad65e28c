"""``wf compile``: check a workflow, and only if it has no errors, lower it to a table."""

from __future__ import annotations

from attrs import frozen

from wflang.compiler.check import CheckResult, check, module_model
from wflang.compiler.config import Config
from wflang.compiler.lower import lower
from wflang.compiler.program import load_program
from wflang.dsl.diagnostics import Severity
from wflang.dsl.parser import ParseResult
from wflang.runtime.table import Table


@frozen
class Compiled:
    """The table (None when the checker found errors) and the check that allowed it."""

    table: Table | None
    check: CheckResult


def compile_workflow(parsed: ParseResult, config: Config | None = None) -> Compiled:
    result = check([parsed], config)
    errors = any(d.severity is Severity.ERROR for d in result.diagnostics)
    if errors or parsed.spec is None or parsed.spec.header is None:
        return Compiled(None, result)
    program = load_program([parsed])
    return Compiled(lower(module_model(program, parsed.file)), result)
