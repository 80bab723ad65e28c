"""Expressions as written: literals, references, member access, operators and builtins.

Guards and mappings are parsed by the grammar into these frozen values and later
type-checked and evaluated by the project's own evaluator, never by ``eval``.
"""

from __future__ import annotations

from decimal import Decimal

from attrs import frozen

from wflang.dsl.span import Span, span_field

#: The pure builtins an expression may call, with their arity (min, max).
#: ``now()`` is the time of the event the step is processing (recorded with the step in
#: the history, so a replay gives the same value); there is no ``random()``.
BUILTINS: dict[str, tuple[int, int]] = {
    "len": (1, 1),
    "lower": (1, 1),
    "upper": (1, 1),
    "trim": (1, 1),
    "contains": (2, 2),
    "starts_with": (2, 2),
    "ends_with": (2, 2),
    "coalesce": (2, 8),
    "min": (1, 8),
    "max": (1, 8),
    "abs": (1, 1),
    "round": (1, 2),
    "sum": (1, 1),
    "keys": (1, 1),
    "string": (1, 1),
    "now": (0, 0),
    "any": (2, 2),
    "all": (2, 2),
    "filter": (2, 2),
    "map": (2, 2),
}

#: The builtins whose second argument is a ``Lambda`` over the items of their first
#: (a predicate for ``any``, ``all`` and ``filter``, a value for ``map``); no other
#: place takes a lambda.
LAMBDA_BUILTINS: frozenset[str] = frozenset({"any", "all", "filter", "map"})
#: Of those, the ones whose lambda is a predicate (its body is a ``bool``).
PREDICATE_BUILTINS: frozenset[str] = frozenset({"any", "all", "filter"})

#: Binary operators, loosest binding first; operators on one line bind equally.
BINARY_PRECEDENCE: dict[str, int] = {
    "or": 1,
    "and": 2,
    "==": 4, "!=": 4, "<": 4, "<=": 4, ">": 4, ">=": 4, "in": 4, "not in": 4,
    "+": 5, "-": 5,
    "*": 6, "/": 6, "%": 6,
}  # fmt: skip
UNARY_PRECEDENCE: dict[str, int] = {"not": 3, "-": 7, "+": 7}
LAMBDA_PRECEDENCE = 0  # ``x => body`` takes everything to its right
ATOM_PRECEDENCE = 9


@frozen
class IntLit:
    value: int
    span: Span = span_field()


@frozen
class DecimalLit:
    value: Decimal
    span: Span = span_field()


@frozen
class StringLit:
    value: str
    span: Span = span_field()


@frozen
class BoolLit:
    value: bool
    span: Span = span_field()


@frozen
class NullLit:
    span: Span = span_field()


@frozen
class DurationLit:
    """A fixed duration; ``text`` keeps how it was written (``90s``, ``PT1H30M``)."""

    text: str
    millis: int
    span: Span = span_field()


@frozen
class TimestampLit:
    """An RFC 3339 instant with an explicit offset, kept as written."""

    text: str
    span: Span = span_field()


@frozen
class Ref:
    """A bare name: a root such as ``input``, a map item alias, or a type name."""

    name: str
    span: Span = span_field()


@frozen
class Member:
    """``target.name``."""

    target: Expr
    name: str
    span: Span = span_field()


@frozen
class Index:
    """``target[index]``."""

    target: Expr
    index: Expr
    span: Span = span_field()


@frozen
class Call:
    """A call of one of the ``BUILTINS``."""

    function: str
    args: tuple[Expr, ...]
    span: Span = span_field()


@frozen
class Project:
    """``target[*].a.b``: the field ``a.b`` of every item of the list ``target``."""

    target: Expr
    fields: tuple[str, ...]
    span: Span = span_field()


@frozen
class Lambda:
    """``param => body``: an argument of one of the ``LAMBDA_BUILTINS``, whose body
    sees each item of the list as ``param``."""

    param: str
    body: Expr
    span: Span = span_field()


@frozen
class Unary:
    op: str
    operand: Expr
    span: Span = span_field()


@frozen
class Binary:
    op: str
    left: Expr
    right: Expr
    span: Span = span_field()


@frozen
class ListLit:
    items: tuple[Expr, ...]
    span: Span = span_field()


Literal = IntLit | DecimalLit | StringLit | BoolLit | NullLit | DurationLit | TimestampLit
Expr = (
    IntLit
    | DecimalLit
    | StringLit
    | BoolLit
    | NullLit
    | DurationLit
    | TimestampLit
    | Ref
    | Member
    | Index
    | Project
    | Lambda
    | Call
    | Unary
    | Binary
    | ListLit
)


def precedence(expr: Expr) -> int:
    """How tightly an expression binds, to decide where the printer needs parentheses."""
    if isinstance(expr, Binary):
        return BINARY_PRECEDENCE[expr.op]
    if isinstance(expr, Unary):
        return UNARY_PRECEDENCE[expr.op]
    if isinstance(expr, Lambda):
        return LAMBDA_PRECEDENCE
    return ATOM_PRECEDENCE
