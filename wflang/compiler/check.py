"""``wf check``: the passes over every file, the findings of all of them, sorted.

Pass order follows mypy: parse -> resolve names -> graph -> types, then the
suppressions judge the rest. A syntax error blocks the later passes of its file
only. After a broken name every rule still runs, as mypy goes on after an error:
the flow rules leave out only the scopes whose flow a broken name makes unknown
(``Model.unsure_scopes``), so one pass reports everything else.
"""

from __future__ import annotations

import gc
from collections.abc import Iterable, Mapping

from attrs import field, frozen

from wflang.compiler import rules as _rules  # noqa: F401  (registers every rule)
from wflang.compiler import suppress
from wflang.compiler.config import Config
from wflang.compiler.model import Model, build_model
from wflang.compiler.program import Program, Reader, load_program, read_file
from wflang.compiler.registry import RULES, rules_in_order
from wflang.dsl.diagnostics import CODES, Diagnostic, sorted_diagnostics
from wflang.dsl.parser import ParseResult


@frozen
class CheckResult:
    """Every finding of every file asked for, and what was needed to show them."""

    diagnostics: tuple[Diagnostic, ...]
    sources: dict[str, str]
    files: tuple[str, ...]
    suppressed: int
    #: What the check read and built, for tools that answer more than findings (the
    #: language server's hover, definitions and completion read the same models).
    program: Program | None = field(default=None, eq=False)
    models: Mapping[str, Model] = field(factory=dict, eq=False)


def check(parsed: Iterable[ParseResult], config: Config | None = None,
          reader: Reader = read_file) -> CheckResult:  # fmt: skip
    """Check parsed files (and what they import) under ``config``."""
    gc_was_enabled = gc.isenabled()
    gc.disable()  # the checker makes many short-lived objects and no garbage cycles
    try:
        return _check(parsed, config or Config(), reader)
    finally:
        if gc_was_enabled:
            gc.enable()


def _check(parsed: Iterable[ParseResult], config: Config, reader: Reader) -> CheckResult:
    program = load_program(list(parsed), reader)
    found: list[Diagnostic] = []
    models: dict[str, Model] = {}
    suppressed = 0
    # Meta-rules always judge suppressions that name them; parser and loader codes always run.
    active = {r.id for r in RULES.values() if r.check is None or config.severity(r) is not None}
    active |= {c.id for c in CODES.all() if c.id not in RULES}
    for path in program.roots:
        module = program.modules[path]
        own = [d for d in program.diagnostics if d.span.file == path]
        if module.spec is None:
            found.extend(module.parsed.diagnostics)
            continue
        model = models[path] = module_model(program, path)
        file_findings = [*module.parsed.diagnostics, *own, *run_rules(model, config)]
        applied = suppress.apply(module.spec, module.parsed.text, file_findings, active)
        found.extend(applied.kept)
        found.extend(_configured(applied.findings, config))
        suppressed += applied.suppressed
    sources = {p: m.parsed.text for p, m in program.modules.items()}
    return CheckResult(
        sorted_diagnostics(found), sources, program.roots, suppressed, program, models
    )


def module_model(program: Program, path: str) -> Model:
    return build_model(program.modules[path], program)


def run_rules(model: Model, config: Config) -> list[Diagnostic]:
    """Run every enabled rule on one workflow, pass by pass."""
    found: list[Diagnostic] = []
    for rule in rules_in_order():
        severity = config.severity(rule)
        if severity is None or rule.check is None:
            continue
        found.extend(
            Diagnostic(rule.id, rule.code.name, severity, f.message, f.span, f.hint, f.related)
            for f in rule.check(model)
        )
    return found


def _configured(findings: Iterable[Diagnostic], config: Config) -> list[Diagnostic]:
    """Apply the configuration to the meta-rules' findings (about the suppressions)."""
    out = []
    for d in findings:
        level = config.severity(RULES[d.code])
        if level is not None:
            out.append(Diagnostic(d.code, d.name, level, d.message, d.span, d.hint, d.related))
    return out
