"""The types of the builtins (``_BUILTIN_TYPES``) and of the list forms: projection
(``lines[*].amount``), the builtins that take a lambda (``any``, ``all``, ``filter``,
``map``) and ``+`` of two lists.

Which builtins exist and how many arguments each takes is said once, in
``wflang.dsl.expr.BUILTINS``; what each computes, in ``wflang.runtime.ops``. The
problems of the list forms have kinds of their own (``LIST_ELEMENT``,
``PREDICATE``, ``PROJECTION``, ``LAMBDA``), each reported by one rule
(``rules/typing.py``).
"""

from __future__ import annotations

from collections.abc import Callable

from wflang.compiler.null_facts import non_null_paths
from wflang.compiler.symbols import did_you_mean
from wflang.compiler.types import (
    BOOL,
    DECIMAL,
    DURATION,
    INT,
    LAMBDA,
    LIST_ELEMENT,
    NUMERIC,
    PREDICATE,
    PROJECTION,
    STRING,
    TIMESTAMP,
    UNKNOWN,
    Fit,
    Inference,
    ListT,
    MapT,
    Opt,
    Record,
    Type,
    Unknown,
    fits,
    place_of,
    strip,
    widen,
)
from wflang.dsl import expr as ex


def call_type(inf: Inference, e: ex.Call) -> Type:
    """The type of a builtin's call; its arguments are typed on the way."""
    low, high = ex.BUILTINS.get(e.function, (0, 99))
    if not low <= len(e.args) <= high:
        want = str(low) if low == high else f"{low} to {high}"
        inf.problem("mismatch", f"{e.function}() takes {want} arguments, not {len(e.args)}", e.span)
        return UNKNOWN
    if e.function in ex.LAMBDA_BUILTINS:
        return _with_lambda(inf, e)
    if any(isinstance(a, ex.Lambda) for a in e.args):
        for a in e.args:
            inf.infer(a)  # each lambda is reported where it is
        return UNKNOWN
    if e.function in _NULLABLE_ARGUMENTS:
        args = [inf.infer(a) for a in e.args]
    else:
        args = [inf.value(a, f"the argument of {e.function}()") for a in e.args]
    if e.function in _READS_ITEMS and not _items_fit(inf, e, args):
        return UNKNOWN
    builtin = _BUILTIN_TYPES.get(e.function)
    if builtin is None:
        return UNKNOWN
    result = builtin(args)
    if result is None:
        shown = ", ".join(str(a) for a in args)
        inf.problem("mismatch", f"{e.function}() does not take ({shown})", e.span)
        return UNKNOWN
    return result


#: Builtins that take null: the others fail on it.
_NULLABLE_ARGUMENTS = frozenset({"coalesce", "string"})
#: Builtins that, given one list, compute over its items (numbers or durations).
_AGGREGATES = frozenset({"sum", "min", "max"})
_READS_ITEMS = _AGGREGATES | {"contains"}


def _items_fit(inf: Inference, e: ex.Call, args: list[Type]) -> bool:
    """Whether the items of the list an aggregate or ``contains`` reads fit it; a
    mismatch is a ``LIST_ELEMENT`` problem, items that may be null an ``optional`` one."""
    listed = strip(args[0])
    if not isinstance(listed, ListT) or (e.function in _AGGREGATES and len(args) != 1):
        return True
    item, where = listed.elem, e.args[0]
    if e.function == "contains":
        if fits(args[1], item) is Fit.MISMATCH and fits(item, args[1]) is Fit.MISMATCH:
            inf.problem(
                LIST_ELEMENT, f"contains() cannot look for {args[1]} in {listed}", e.args[1].span
            )
            return False
        return True
    if not (strip(item) in NUMERIC or strip(item) == DURATION or isinstance(item, Unknown)):
        inf.problem(
            LIST_ELEMENT,
            f"{e.function}() needs a list of numbers or durations, not {listed}",
            where.span,
        )
        return False
    if isinstance(item, Opt):
        inf.problem(
            "optional",
            f"the items of {e.function}()'s list may be null ({listed})",
            where.span,
            hint="leave the nulls out first: filter(xs, x => x != null)",
        )
    return True


def _with_lambda(inf: Inference, e: ex.Call) -> Type:
    """``any``/``all``/``filter``/``map`` of a list and a lambda over its items."""
    fn = e.function
    items, body = e.args
    listed = inf.value(items, f"the list of {fn}()")
    if not isinstance(body, ex.Lambda):
        inf.infer(body)
        inf.problem(
            LAMBDA,
            f"{fn}() takes a lambda as its second argument, as in {fn}(xs, x => …)",
            body.span,
        )
        return UNKNOWN
    item: Type = UNKNOWN
    if isinstance(listed, ListT):
        item = listed.elem
    elif not isinstance(listed, Unknown):
        inf.problem(LIST_ELEMENT, f"{fn}() needs a list, not {listed}", items.span)
    got = _bound(inf, body, item).infer(body.body)
    if inf.seen is not None:
        inf.seen[place_of(body)] = got
    if fn == "map":
        return ListT(got)
    fit = inf.env.conforms(got, BOOL)
    if fit is Fit.MISMATCH:
        inf.problem(
            PREDICATE,
            f"the predicate of {fn}() must be bool, not {got}",
            body.body.span,
            hint=f"compare it: {body.param} => … > 0, … == …",
        )
    elif fit is Fit.OPTIONAL:
        inf.problem(
            "optional",
            f"the predicate of {fn}() may be null ({got})",
            body.body.span,
            hint="compare it with true, or use coalesce()",
        )
    if fn != "filter":
        return BOOL
    if isinstance(item, Opt) and body.param in non_null_paths(body.body):
        return ListT(item.inner)  # ``filter(xs, x => x != null)`` leaves no null
    return ListT(item)


def _bound(inf: Inference, fn: ex.Lambda, item: Type) -> Inference:
    """The inference of a lambda's body: the roots, and its parameter as an item.
    A parameter may not hide a name already there (a root, a map's item, an outer
    lambda's parameter, a type)."""
    name = fn.param
    if name in inf.roots or name in inf.env.types:
        what = "a type" if name in inf.env.types else "already a name here"
        inf.problem(
            LAMBDA,
            f"the lambda's '{name}' hides '{name}', {what}",
            fn.span,
            hint=f"name the item something else: {_other_name(name, inf)} => …",
        )
    return Inference(inf.env, {**inf.roots, name: item}, inf.problems, inf.checked, inf.seen)


def _other_name(name: str, inf: Inference) -> str:
    for candidate in (name[:1] or "x", "it", "each", f"{name}_item"):
        if candidate not in inf.roots and candidate not in inf.env.types:
            return candidate
    return f"{name}_item"


def lambda_out_of_place(inf: Inference, e: ex.Lambda) -> Type:
    """A lambda anywhere but as the second argument of ``any``/``all``/``filter``/``map``."""
    inf.problem(
        LAMBDA,
        f"'{e.param} => …' can only be the second argument of any(), all(), filter() or map()",
        e.span,
    )
    return UNKNOWN


def project_type(inf: Inference, e: ex.Project) -> Type:
    """``xs[*].a.b``: the list of every item's ``.a.b``, read with the rules of ``.``."""
    listed = inf.value(e.target, "the list projected")
    if isinstance(listed, Unknown):
        return UNKNOWN
    if not isinstance(listed, ListT):
        inf.problem(PROJECTION, f"'[*]' projects the items of a list, not {listed}", e.span)
        return UNKNOWN
    if not e.fields:
        inf.problem(
            PROJECTION,
            "'[*]' must be followed by the field it projects, as in lines[*].amount",
            e.span,
        )
        return listed
    t = listed.elem
    for name in e.fields:
        if isinstance(t, Unknown):
            return ListT(UNKNOWN)
        if isinstance(t, Opt):
            inf.problem(
                "optional",
                f"items of the list may be null ({t}) when '.{name}' is projected",
                e.span,
                hint="leave the nulls out first: filter(xs, x => x != null)[*]…",
            )
        base = strip(t)
        fields = inf.env.field_types(base) if isinstance(base, Record) else None
        found = None if fields is None else fields.get(name)
        if found is None:
            have = ", ".join(fields or ()) or "none"
            inf.problem(
                PROJECTION,
                f"the items ({base}) have no field '{name}' to project",
                e.span,
                hint=did_you_mean(name, fields or {}) or f"fields: {have}",
            )
            return ListT(UNKNOWN)
        t = found
    return ListT(t)


def concat_type(inf: Inference, e: ex.Binary, left: Type, right: Type) -> Type:
    """``xs + ys``: one list of the items of both, which must be of one type."""
    lt, rt = strip(left), strip(right)
    assert isinstance(lt, ListT) and isinstance(rt, ListT)
    if isinstance(lt.elem, Unknown):  # ``[] + xs``
        return rt
    if isinstance(rt.elem, Unknown):
        return lt
    common = widen(lt.elem, rt.elem)
    if common is None:
        inf.problem(
            LIST_ELEMENT,
            f"'+' joins lists of one item type, not {lt} and {rt}",
            e.span,
            hint="map one of them first: map(xs, x => …)",
        )
        return UNKNOWN
    return ListT(common)


def _one(args: list[Type], ok: Callable[[Type], bool], result: Type) -> Type | None:
    return result if all(ok(strip(a)) or isinstance(a, Unknown) for a in args) else None


def _numeric(args: list[Type]) -> Type | None:
    flat = [a.elem if isinstance(a, ListT) and len(args) == 1 else a for a in args]
    flat = [strip(a) for a in flat]
    if all(a in NUMERIC or a == DURATION or isinstance(a, Unknown) for a in flat):
        return DECIMAL if DECIMAL in flat else flat[0]
    return None


def _coalesce(args: list[Type]) -> Type | None:
    last = args[-1]
    for a in args[:-1]:
        if fits(strip(a), strip(last)) is Fit.MISMATCH:
            return None
    return last


_BUILTIN_TYPES: dict[str, Callable[[list[Type]], Type | None]] = {
    "len": lambda a: _one(a, lambda t: isinstance(t, ListT | MapT) or t == STRING, INT),
    "lower": lambda a: _one(a, lambda t: t == STRING, STRING),
    "upper": lambda a: _one(a, lambda t: t == STRING, STRING),
    "trim": lambda a: _one(a, lambda t: t == STRING, STRING),
    "starts_with": lambda a: _one(a, lambda t: t == STRING, BOOL),
    "ends_with": lambda a: _one(a, lambda t: t == STRING, BOOL),
    "contains": lambda a: (
        BOOL
        if (strip(a[0]) == STRING and strip(a[1]) == STRING)
        or (isinstance(strip(a[0]), ListT | Unknown))
        else None
    ),
    "coalesce": _coalesce,
    "min": _numeric,
    "max": _numeric,
    "sum": _numeric,
    "abs": _numeric,
    "round": lambda a: DECIMAL if strip(a[0]) in NUMERIC or isinstance(a[0], Unknown) else None,
    "keys": lambda a: (
        ListT(strip(a[0]).key)  # type: ignore[union-attr]
        if isinstance(strip(a[0]), MapT)
        else None
    ),
    "string": lambda a: STRING,
    "now": lambda a: TIMESTAMP,
}
