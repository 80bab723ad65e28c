"""``wf compile``: check a workflow, and only if it has no errors, lower it to a table."""

from __future__ import annotations

from attrs import frozen

from wflang.compiler.check import CheckResult, check, module_model
from wflang.compiler.config import Config
from wflang.compiler.lower import lower
from wflang.compiler.program import load_program
from wflang.compiler.registry import blocking_rules
from wflang.dsl.diagnostics import Severity
from wflang.dsl.parser import ParseResult
from wflang.runtime.table import Table


@frozen
class Compiled:
    """The table (None when the checker found errors) and the check that allowed it."""

    table: Table | None
    check: CheckResult


def compile_workflow(parsed: ParseResult, config: Config | None = None) -> Compiled:
    result = check([parsed], _enforcing_blockers(config or Config()))
    errors = any(d.severity is Severity.ERROR for d in result.diagnostics)
    if errors or parsed.spec is None or parsed.spec.header is None:
        return Compiled(None, result)
    program = load_program([parsed])
    return Compiled(lower(module_model(program, parsed.file)), result)


def _enforcing_blockers(config: Config) -> Config:
    """``config`` with the blocking rules (``Rule.blocks``) back at their default severity
    (error): they may be silenced for ``wf check``, but compiling reports them instead of
    failing."""
    blocking = blocking_rules()
    severities = {k: v for k, v in config.severities.items() if k not in blocking}
    return Config(config.preset, severities, config.source)
