"""The rule registry: every check is a small pure function registered with its code.

A rule receives the ``Model`` of one workflow (spec, symbols, graph, types) and
yields ``Finding``s; the registry attaches the rule's code and severity. Codes
are stable and never reused; ``docs/rules.md`` is generated from this registry.
Meta-rules (the WF9xx suppression findings) are registered here too, without a
check of their own: the suppression pass computes them from the other findings.
What a rule is (its preset, whether its errors block compiling) is said here
and nowhere else.
"""

from __future__ import annotations

import enum
import inspect
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING

from attrs import frozen

from wflang.dsl.diagnostics import CODES, Code, Related, Severity
from wflang.dsl.span import Span

if TYPE_CHECKING:
    from wflang.compiler.model import Model


class Pass(enum.IntEnum):
    """The passes, in order (as mypy runs them); a syntax error blocks the rest."""

    NAMES = 1  # resolve names; the graph rules leave out scopes with broken names
    GRAPH = 2  # the flow graph of each workflow (compiler/graphs.py)
    TYPES = 3  # expressions, mappings, bounds
    SUPPRESSIONS = 4  # runs last: it judges the other findings (the meta-rules)


class Preset(enum.Enum):
    """The first preset that turns a rule on: ``recommended`` ⊂ ``strict`` ⊂ ``all``."""

    RECOMMENDED = "recommended"
    STRICT = "strict"
    ALL = "all"


@frozen
class Finding:
    """What a rule found; the registry turns it into a ``Diagnostic`` with the rule's code."""

    message: str
    span: Span
    hint: str | None = None
    related: tuple[Related, ...] = ()
    key: str | None = None
    """What ``wf diff`` fingerprints instead of the line: ``element path:arguments``."""


RuleFn = Callable[["Model"], Iterable[Finding]]


@frozen
class Rule:
    code: Code
    check: RuleFn | None  # None: a meta-rule, computed by the suppression pass
    pass_: Pass
    preset: Preset
    blocks: bool = False
    """Its errors leave nothing to lower: ``wf compile`` reports them as errors
    whatever the configuration says."""

    @property
    def id(self) -> str:
        return self.code.id


RULES: dict[str, Rule] = {}


def rule(
    id: str,
    name: str,
    *,
    category: str,
    severity: Severity,
    summary: str,
    pass_: Pass,
    preset: Preset = Preset.RECOMMENDED,
    blocks: bool = False,
) -> Callable[[RuleFn], RuleFn]:
    """Register a rule: its docstring (with a bad and a good example) becomes its documentation."""

    def register(fn: RuleFn) -> RuleFn:
        doc = inspect.cleandoc(fn.__doc__ or "")
        code = CODES.register(Code(id, name, category, severity, summary, doc))
        RULES[id] = Rule(code, fn, pass_, preset, blocks)
        return fn

    return register


def meta_rule(
    id: str,
    name: str,
    *,
    category: str,
    severity: Severity,
    summary: str,
    doc: str,
    preset: Preset = Preset.RECOMMENDED,
) -> Code:
    """Register a rule that judges the other findings (computed by the suppression pass)."""
    code = CODES.register(Code(id, name, category, severity, summary, inspect.cleandoc(doc)))
    RULES[id] = Rule(code, None, Pass.SUPPRESSIONS, preset)
    return code


def rules_in_order() -> Iterator[Rule]:
    """Rules by pass, then by code."""
    yield from sorted(RULES.values(), key=lambda r: (r.pass_, r.id))


def blocking_rules() -> frozenset[str]:
    """The codes whose errors leave nothing to compile (``Rule.blocks``)."""
    return frozenset(r.id for r in RULES.values() if r.blocks)
