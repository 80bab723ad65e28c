"""Diagnostics are values: every stage reports problems as ``Diagnostic`` records.

Each diagnostic names a ``Code`` from one registry. Codes are stable (``WF001``)
and never reused; messages are for people and may change wording.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable

from attrs import frozen

from wflang.dsl.span import Span


class Severity(enum.Enum):
    """How much a finding matters; ``error`` fails ``wf check`` by default."""

    ERROR = "error"
    WARNING = "warning"
    INFO = "info"

    @property
    def rank(self) -> int:
        """Higher is more severe; used for ``--fail-on`` thresholds."""
        return {"error": 3, "warning": 2, "info": 1}[self.value]


@frozen
class Code:
    """A registered diagnostic code: ``id`` is stable, ``name`` is kebab-case."""

    id: str
    name: str
    category: str
    severity: Severity
    summary: str
    doc: str = ""


class CodeRegistry:
    """All codes of the project, keyed by id and by name; duplicates are refused."""

    def __init__(self) -> None:
        self._by_id: dict[str, Code] = {}
        self._by_name: dict[str, Code] = {}

    def register(self, code: Code) -> Code:
        if code.id in self._by_id or code.name in self._by_name:
            raise ValueError(f"diagnostic code registered twice: {code.id} {code.name}")
        self._by_id[code.id] = code
        self._by_name[code.name] = code
        return code

    def lookup(self, key: str) -> Code | None:
        """Find a code by id (``WF201``) or by name (``unreachable-node``)."""
        return self._by_id.get(key.upper()) or self._by_name.get(key.lower())

    def all(self) -> tuple[Code, ...]:
        """Every code, ordered by id."""
        return tuple(sorted(self._by_id.values(), key=lambda c: c.id))


CODES = CodeRegistry()


def _code(id: str, name: str, summary: str, doc: str, *, category: str = "syntax") -> Code:
    return CODES.register(Code(id, name, category, Severity.ERROR, summary, doc))


SYNTAX_ERROR = _code(
    "WF001",
    "syntax-error",
    "Checks that the file follows the grammar of the language.",
    "Bad:\n\n    task charge: service payments.charge { timout 30s -> failed }\n\n"
    "Good:\n\n    task charge: service payments.charge { timeout 30s -> failed }",
)
INVALID_LITERAL = _code(
    "WF002",
    "invalid-literal",
    "Checks that durations, timestamps, numbers and string escapes are valid.",
    "Bad:\n\n    wait w: until 2026-02-30T09:00:00Z { next done }\n\n"
    "Good:\n\n    wait w: until 2026-02-28T09:00:00Z { next done }",
)
MISPLACED_CLAUSE = _code(
    "WF003",
    "misplaced-clause",
    "Checks that each clause is one the node kind accepts, and given at most once.",
    "Bad:\n\n    choice c { when x -> a }\n    sleep s 10s { retry { attempts: 2 } next a }\n\n"
    "Good:\n\n    sleep s 10s next a",
)
UNKNOWN_FUNCTION = _code(
    "WF004",
    "unknown-function",
    "Checks that expressions only call the language's pure builtins.",
    "Workflows are deterministic, so there is no `random()` or `uuid()` (`now()` is the "
    "time of the event the step is processing, recorded in the history).\n\n"
    "Bad:\n\n    when random() > 0.5 -> audit\n\n"
    "Good:\n\n    when input.sample > 0.5 -> audit",
)
INVALID_SOURCE = _code(
    "WF005",
    "invalid-source",
    "Checks that a file is UTF-8, within the size limit and not nested too deeply.",
    "A file must be valid UTF-8 text of at most 16 MiB whose blocks and expressions "
    "nest at most 64 levels deep.",
)


@frozen
class Related:
    """A secondary location of a diagnostic, such as 'first defined here'."""

    span: Span
    message: str


@frozen
class Diagnostic:
    """One finding: which code, how severe, where, what and what to do about it."""

    code: str
    name: str
    severity: Severity
    message: str
    span: Span
    hint: str | None = None
    related: tuple[Related, ...] = ()

    @classmethod
    def of(
        cls,
        code: Code,
        message: str,
        span: Span,
        *,
        hint: str | None = None,
        related: tuple[Related, ...] = (),
        severity: Severity | None = None,
    ) -> Diagnostic:
        return cls(code.id, code.name, severity or code.severity, message, span, hint, related)

    def sort_key(self) -> tuple[str, int, int, str]:
        return (self.span.file, self.span.line, self.span.column, self.code)


def sorted_diagnostics(diagnostics: Iterable[Diagnostic]) -> tuple[Diagnostic, ...]:
    """Diagnostics in a stable order: by file, line, column, then code."""
    return tuple(sorted(diagnostics, key=Diagnostic.sort_key))
