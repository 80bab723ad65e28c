"""The registry of ``wf diff`` rules, separate from the checker's ``RULES``.

A diff rule is a small pure function over a ``Pairing`` (the old and the new
workflow's elements paired once) that yields ``Finding``s. Each has a stable
code (``WF6xx``), a kebab-case name, a level (``breaking``, ``warning``,
``safe``) and a category: who the change may break (``callers``: inputs and
signals; ``consumers``: outcomes and outputs; ``instances``: the structure that
running instances are in). Codes live in their own ``CodeRegistry``, so
``wf check`` neither runs nor lists them.
"""

from __future__ import annotations

import enum
import inspect
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING

from attrs import frozen

from wflang.compiler.registry import Finding
from wflang.dsl.diagnostics import Code, CodeRegistry, Severity

if TYPE_CHECKING:
    from wflang.compiler.diff.pairing import Pairing


class Level(enum.Enum):
    """How much a change matters to those who depend on the workflow."""

    BREAKING = "breaking"
    WARNING = "warning"
    SAFE = "safe"

    @property
    def severity(self) -> Severity:
        """The diagnostic severity a finding of this level is reported with."""
        return {
            "breaking": Severity.ERROR,
            "warning": Severity.WARNING,
            "safe": Severity.INFO,
        }[self.value]


class Category(enum.Enum):
    """Who a change may break."""

    CALLERS = "callers"  # inputs, signals: stricter breaks
    CONSUMERS = "consumers"  # outcomes, outputs: looser breaks
    INSTANCES = "instances"  # structure that running instances are in


DiffRuleFn = Callable[["Pairing"], Iterable[Finding]]


@frozen
class DiffRule:
    """A registered diff rule; ``check`` is None for rules the runner computes itself."""

    code: Code
    level: Level
    category: Category
    check: DiffRuleFn | None

    @property
    def id(self) -> str:
        return self.code.id


DIFF_CODES = CodeRegistry()
"""Every ``wf diff`` code; disjoint from ``wflang.dsl.diagnostics.CODES``."""

DIFF_RULES: dict[str, DiffRule] = {}


def diff_rule(
    id: str, name: str, *, level: Level, category: Category, summary: str
) -> Callable[[DiffRuleFn], DiffRuleFn]:
    """Register a diff rule; its docstring (an old and a new example) documents it."""

    def register(fn: DiffRuleFn) -> DiffRuleFn:
        _register(id, name, level, category, summary, inspect.cleandoc(fn.__doc__ or ""), fn)
        return fn

    return register


def _register(
    id: str,
    name: str,
    level: Level,
    category: Category,
    summary: str,
    doc: str,
    fn: DiffRuleFn | None,
) -> DiffRule:
    code = DIFF_CODES.register(Code(id, name, category.value, level.severity, summary, doc))
    rule = DiffRule(code, level, category, fn)
    DIFF_RULES[id] = rule
    return rule


def meta_rule(
    id: str, name: str, *, level: Level, category: Category, summary: str, doc: str
) -> DiffRule:
    """Register a rule that judges the other findings (computed by the runner)."""
    return _register(id, name, level, category, summary, inspect.cleandoc(doc), None)


def diff_rules_in_order() -> Iterator[DiffRule]:
    """Every diff rule by code."""
    yield from sorted(DIFF_RULES.values(), key=lambda r: r.id)
