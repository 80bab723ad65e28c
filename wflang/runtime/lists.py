"""Evaluating the list forms: projection (``xs[*].a``), the builtins that take a lambda
(``any``, ``all``, ``filter``, ``map``) and the aggregates, within a budget of items.

An expression has no loops of its own, but these go over lists, so the items one
evaluation of an expression may touch are bounded (``Limits.list_elements``): every
item a projection reads, a lambda is applied to, or ``sum``/``min``/``max``,
``contains``/``in`` or ``+`` of lists reads counts once. Over the budget the
evaluation fails with an ``ExpressionError`` that names the limit, which the step
function turns into a workflow error as it does an overflow.

The budget travels in the environment: an expression that reads lists is compiled
with ``budgeted``, which wraps the roots in a ``Scope`` holding a fresh ``Budget``
for each evaluation (so a table's compiled expressions may serve several threads).
A lambda's body sees the same ``Scope`` with its parameter bound to the item.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

from wflang.runtime.numbers import ExpressionError
from wflang.runtime.ops import show
from wflang.runtime.values import Value

Env = Mapping[str, Value]
Compiled = Callable[[Env], Value]

#: The builtins a lambda is given to, and what each makes of the lambda's results.
LAMBDA_OPS = ("any", "all", "filter", "map")
#: The operators that read every item of the lists they are given, with the positions
#: of the arguments that may be such lists (None: every argument).
READS_ITEMS: dict[str, tuple[int, ...] | None] = {
    "sum": None,
    "sum_decimal": None,
    "min": None,
    "max": None,
    "concat": None,
    "contains": (0,),
    "in": (1,),
    "not_in": (1,),
}


class Budget:
    """The items an evaluation may still touch."""

    __slots__ = ("left", "limit")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.left = limit

    def take(self, items: int) -> None:
        self.left -= items
        if self.left < 0:
            raise ExpressionError(
                f"the expression touches more than {self.limit:,} list items (Limits.list_elements)"
            )


class Scope(Mapping[str, Value]):
    """The roots an evaluation sees, the item a lambda is at (``name``) and the budget."""

    __slots__ = ("budget", "name", "parent", "value")

    def __init__(
        self, parent: Env, budget: Budget, name: str | None = None, value: Value = None
    ) -> None:
        self.parent, self.budget, self.name, self.value = parent, budget, name, value

    def __getitem__(self, key: str) -> Value:
        if key == self.name:
            return self.value
        return self.parent[key]

    def __iter__(self) -> Iterator[str]:
        yield from self.parent
        if self.name is not None and self.name not in self.parent:
            yield self.name

    def __len__(self) -> int:
        return sum(1 for _ in self)


def budget_of(env: Env, limit: int) -> Budget:
    """The budget of the evaluation ``env`` belongs to (a fresh one outside ``budgeted``)."""
    return env.budget if isinstance(env, Scope) else Budget(limit)


def budgeted(compiled: Compiled, limit: int) -> Compiled:
    """``compiled`` with a budget of ``limit`` items for each evaluation."""
    return lambda env: compiled(Scope(env, Budget(limit)))


def _items(value: Value, what: str) -> list[Value]:
    if type(value) is list:
        return value
    raise ExpressionError(f"{what} needs a list, got {show(value)}")


def compile_project(items: Compiled, fields: tuple[str, ...], limit: int) -> Compiled:
    """``xs[*].a.b``: every item's ``.a.b``, read as ``.`` reads it (null fails)."""

    def project(env: Env) -> Value:
        xs = _items(items(env), "'[*]'")
        budget_of(env, limit).take(len(xs))
        out: list[Value] = []
        for position, item in enumerate(xs):
            value = item
            for name in fields:
                if type(value) is not dict:
                    what = "null" if value is None else show(value)
                    raise ExpressionError(
                        f"cannot read '.{name}' of {what} (item {position} of the list)"
                    )
                value = value.get(name)
            out.append(value)
        return out

    return project


def compile_each(op: str, items: Compiled, param: str, body: Compiled, limit: int) -> Compiled:
    """``any``/``all``/``filter``/``map`` of a list and a lambda over its items."""
    if op not in LAMBDA_OPS:
        raise ValueError(f"unknown list operator {op!r}")

    def each(env: Env) -> Value:
        xs = _items(items(env), f"{op}()")
        budget = budget_of(env, limit)
        scope = Scope(env, budget, param)  # one per evaluation: the body keeps no env
        out: list[Value] = []
        for x in xs:
            budget.take(1)
            scope.value = x
            got = body(scope)
            if op == "map":
                out.append(got)
                continue
            if type(got) is not bool:
                raise ExpressionError(f"the predicate of {op}() gave {show(got)}, not a bool")
            if op == "any" and got:
                return True
            if op == "all" and not got:
                return False
            if op == "filter" and got:
                out.append(x)
        if op == "any":
            return False
        if op == "all":
            return True
        return out

    return each


def compile_reading(fn: Callable[..., Value], args: list[Compiled], limit: int) -> Compiled:
    """An operator that reads the items of the lists it is given, counted in the budget."""

    def reading(env: Env) -> Value:
        values = [a(env) for a in args]
        budget = budget_of(env, limit)
        for v in values:
            if type(v) is list:
                budget.take(len(v))
        return fn(*values)

    return reading
