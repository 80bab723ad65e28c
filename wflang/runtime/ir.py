"""The expression IR the runtime evaluates: a few frozen node kinds and a fixed set of ops.

The compiler lowers type-checked expressions to this IR; ``compile_ir`` turns an
IR tree into a closure once, when a table is loaded. There is no ``eval``, no
attribute access beyond record fields, and no loops: the work an expression does
is bounded by its size and, where it goes over lists (``wflang.runtime.lists``), by
a budget of the items it may touch (``Limits.list_elements``). Run-time failures
(division by zero, a null where a value is needed, an index out of range, a budget
spent) raise ``ExpressionError`` with a message that names what went wrong; the step
function turns it into a workflow error.

Values are JSON-like: None, bool, int, Decimal, str, list and dict. Durations
are int milliseconds and timestamps int milliseconds since the Unix epoch. Numbers
follow ``wflang.runtime.numbers`` (64-bit ints, exact decimals of 34 digits, one form
per value); strings and lists an expression builds are bounded by ``Limits``.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import assert_never

from attrs import field, frozen

from wflang.runtime import lists
from wflang.runtime.limits import DEFAULT as DEFAULT_LIMITS
from wflang.runtime.limits import Limits

# Defined beside the numbers, whose limits raise it; the runtime imports it from here.
from wflang.runtime.numbers import ExpressionError as ExpressionError  # noqa: PLC0414
from wflang.runtime.numbers import canonical, int_overflow
from wflang.runtime.ops import OPS, show
from wflang.runtime.values import Value as Value  # noqa: PLC0414  # imported from here

Env = Mapping[str, Value]

#: The root the error being handled is bound to, in the node an error route leads to
#: (``error`` in the language: its name, message and payload). Not a name a file can
#: write, so no map item or lambda parameter called ``error`` can hide it.
HANDLED_ERROR = "$error"
#: The root ``now()`` reads: the time of the event the step processes, in epoch
#: milliseconds (a step's ``now``, recorded with it). No name can be written so.
NOW = "$now"
Compiled = Callable[[Env], Value]

#: How deep an IR tree may nest; deeper trees are refused when a table loads.
MAX_IR_DEPTH = 128


def _typed(value: object) -> tuple[type, object]:
    """What a literal is compared and hashed by: its type as well as its value, since
    in Python ``False == 0`` and ``hash(True) == hash(1)`` (the compiler keeps one copy
    of equal constants, and ``false`` must not become ``0``)."""
    return type(value), value


@frozen
class Const:
    """A literal: None, bool, int or str (decimals travel as ``Dec``)."""

    value: bool | int | str | None = field(eq=_typed)


@frozen
class Dec:
    """A decimal literal, kept as text so it survives JSON exactly."""

    text: str


@frozen
class Load:
    """A root: ``input``, ``context``, ``result``, ``signal``, ``message`` or a map item."""

    root: str


@frozen
class Get:
    """A record field: ``obj.field``."""

    obj: IR
    field: str


@frozen
class At:
    """A list index or a map key: ``obj[index]``."""

    obj: IR
    index: IR


@frozen
class Apply:
    """An operator or builtin from ``OPS``, applied to its arguments."""

    op: str
    args: tuple[IR, ...]


@frozen
class MakeList:
    items: tuple[IR, ...]


@frozen
class Project:
    """``obj[*].a.b``: the field ``path`` of every item of a list."""

    obj: IR
    path: tuple[str, ...]


@frozen
class Each:
    """``op(items, param => body)``, ``op`` one of ``any``, ``all``, ``filter``, ``map``:
    ``body`` evaluated with ``param`` bound to each item of ``items``."""

    op: str
    items: IR
    param: str
    body: IR


IR = Const | Dec | Load | Get | At | Apply | MakeList | Project | Each


def reads_lists(node: IR) -> bool:
    """Whether evaluating ``node`` may go over the items of lists (it needs a budget)."""
    match node:
        case Project() | Each():
            return True
        case Apply():
            return _reads_items(node) or any(reads_lists(a) for a in node.args)
        case Get():
            return reads_lists(node.obj)
        case At():
            return reads_lists(node.obj) or reads_lists(node.index)
        case MakeList():
            return any(reads_lists(i) for i in node.items)
        case Const() | Dec() | Load():
            return False
        case _:
            assert_never(node)


def compile_ir(node: IR, limits: Limits = DEFAULT_LIMITS, depth: int = 0) -> Compiled:
    """Turn an IR tree into a closure over an environment of roots; the strings and
    lists it builds, and the list items it touches, are bounded by ``limits``."""
    if depth == 0 and reads_lists(node):
        return lists.budgeted(_compile(node, limits, 1), limits.list_elements)
    return _compile(node, limits, depth)


def _reads_items(node: Apply) -> bool:
    """Whether ``node`` reads the items of a list that is not a literal (a literal's
    items are bounded by the expression's size: ``x in ["a", "b"]`` costs no budget)."""
    if node.op not in lists.READS_ITEMS:
        return False
    where = lists.READS_ITEMS[node.op]
    listed = node.args if where is None else [node.args[i] for i in where if i < len(node.args)]
    return not all(isinstance(a, MakeList | Const | Dec) for a in listed)


def _compile(node: IR, limits: Limits, depth: int) -> Compiled:
    if depth > MAX_IR_DEPTH:
        raise ValueError(f"expression nested deeper than {MAX_IR_DEPTH}")
    if isinstance(node, Const):
        value = node.value
        return lambda env: value
    if isinstance(node, Dec):
        dec = canonical(Decimal(node.text))
        return lambda env: dec
    if isinstance(node, Load):
        root = node.root

        def load(env: Env) -> Value:
            try:
                return env[root]
            except KeyError:
                shown = "error" if root == HANDLED_ERROR else root
                raise ExpressionError(f"'{shown}' is not available here") from None

        return load
    if isinstance(node, Get):
        if isinstance(node.obj, Load):  # ``root.field``, the commonest read: one closure
            return _compile_root_field(node.obj.root, node.field)
        obj, field = _compile(node.obj, limits, depth + 1), node.field

        def get(env: Env) -> Value:
            record = obj(env)
            if record is None:
                raise ExpressionError(f"cannot read '.{field}' of null")
            if not isinstance(record, dict):
                raise ExpressionError(f"cannot read '.{field}' of {show(record)}")
            return record.get(field)

        return get
    if isinstance(node, At):
        obj, index = (
            _compile(node.obj, limits, depth + 1),
            _compile(node.index, limits, depth + 1),
        )

        def at(env: Env) -> Value:
            container, key = obj(env), index(env)
            if isinstance(container, list | str):
                if isinstance(key, bool) or not isinstance(key, int):
                    raise ExpressionError(f"an index must be an integer, got {show(key)}")
                if not -len(container) <= key < len(container):
                    raise ExpressionError(f"index {key} is out of range (length {len(container)})")
                return container[key]
            if isinstance(container, dict):
                return container.get(str(key))
            raise ExpressionError(f"cannot index {show(container)}")

        return at
    if isinstance(node, MakeList):
        items = [_compile(i, limits, depth + 1) for i in node.items]
        if len(items) > limits.list_items:
            most = limits.list_items
            raise ValueError(f"a list of {len(items)} items is over the limit of {most}")
        return lambda env: [item(env) for item in items]
    if isinstance(node, Project):
        obj = _compile(node.obj, limits, depth + 1)
        return lists.compile_project(obj, node.path, limits.list_elements)
    if isinstance(node, Each):
        items_of = _compile(node.items, limits, depth + 1)
        body = _compile(node.body, limits, depth + 1)
        return lists.compile_each(node.op, items_of, node.param, body, limits.list_elements)
    return _compile_apply(node, limits, depth)


def _compile_root_field(root: str, field: str) -> Compiled:
    """``Get(Load(root), field)`` as one closure, with the same errors as the two."""

    def get_root_field(env: Env) -> Value:
        try:
            record = env[root]
        except KeyError:
            raise ExpressionError(f"'{root}' is not available here") from None
        if type(record) is dict:
            return record.get(field)
        if record is None:
            raise ExpressionError(f"cannot read '.{field}' of null")
        if not isinstance(record, dict):
            raise ExpressionError(f"cannot read '.{field}' of {show(record)}")
        return record.get(field)

    return get_root_field


def _add64(a: int, b: int) -> Value:
    r = a + b
    if -9_223_372_036_854_775_808 <= r <= 9_223_372_036_854_775_807:  # int64(), inline
        return r
    raise int_overflow("+", a, b)


def _sub64(a: int, b: int) -> Value:
    r = a - b
    if -9_223_372_036_854_775_808 <= r <= 9_223_372_036_854_775_807:
        return r
    raise int_overflow("-", a, b)


def _mul64(a: int, b: int) -> Value:
    r = a * b
    if -9_223_372_036_854_775_808 <= r <= 9_223_372_036_854_775_807:
        return r
    raise int_overflow("*", a, b)


#: Operators with a fast path for two ints (not bools): the same result as ``OPS``.
_INT_FAST: dict[str, Callable[[int, int], Value]] = {
    "add": _add64,
    "sub": _sub64,
    "mul": _mul64,
    "eq": operator.eq,
    "ne": operator.ne,
    "lt": operator.lt,
    "le": operator.le,
    "gt": operator.gt,
    "ge": operator.ge,
}


def _compile_int_fast(
    op: str, fn: Callable[..., Value], first: Compiled, second: Compiled, args: tuple[IR, ...]
) -> Compiled:
    fast = _INT_FAST[op]
    const = args[1]
    if isinstance(const, Const) and type(const.value) is int:  # ``context.n < 100``
        b = const.value

        def apply_const(env: Env) -> Value:
            a = first(env)
            if type(a) is int:
                return fast(a, b)
            return fn(a, b)

        return _fused(args, apply_const, fast)

    def apply(env: Env) -> Value:
        a, b = first(env), second(env)
        if type(a) is int and type(b) is int:
            return fast(a, b)
        return fn(a, b)

    return _fused(args, apply, fast)


def root_field(node: IR) -> tuple[str, str] | None:
    """``(root, field)`` of ``root.field``, else None."""
    if isinstance(node, Get) and isinstance(node.obj, Load):
        return node.obj.root, node.field
    return None


def _fused(args: tuple[IR, ...], generic: Compiled, fast: Callable[[int, int], Value]) -> Compiled:
    """An int operator whose operands are ``root.field`` reads (or the second an int
    literal) as one closure that reads the fields itself: the commonest expressions
    (``context.n + result.value``, ``context.n < 100``). Anything but two ints from
    records goes to ``generic``, which reads again (expressions have no effects) and
    gives the same result or error."""
    left, right = root_field(args[0]), root_field(args[1])
    if left is None:
        return generic
    root, field = left
    if right is not None:
        root2, field2 = right

        def fields(env: Env) -> Value:
            record, record2 = env.get(root), env.get(root2)
            if type(record) is dict and type(record2) is dict:
                a, b = record.get(field), record2.get(field2)
                if type(a) is int and type(b) is int:
                    return fast(a, b)
            return generic(env)

        return fields
    const = args[1]
    if not (isinstance(const, Const) and type(const.value) is int):
        return generic
    b: int = const.value

    def field_const(env: Env) -> Value:
        record = env.get(root)
        if type(record) is dict:
            a = record.get(field)
            if type(a) is int:
                return fast(a, b)
        return generic(env)

    return field_const


#: The operators that build a string (``trim`` and ``coalesce`` only pass one on or cut
#: it) or a list, with the limit on what they build: (type built, its limit, its unit).
_BUILDS: dict[str, tuple[type, str, str]] = {
    **dict.fromkeys(("add", "upper", "lower", "string"), (str, "string_chars", "characters")),
    "concat": (list, "list_items", "items"),
}


def _bounded(fn: Callable[..., Value], op: str, limits: Limits) -> Callable[..., Value]:
    """``fn``, refusing a string or a list it builds over its limit."""
    built, name, unit = _BUILDS[op]
    most: int = getattr(limits, name)
    what = "a string" if built is str else "a list"

    def bounded(*args: Value) -> Value:
        result = fn(*args)
        if type(result) is built and isinstance(result, str | list) and len(result) > most:
            raise ExpressionError(
                f"{what} of {len(result):,} {unit} is over the limit of {most:,} (Limits.{name})"
            )
        return result

    return bounded


def _compile_apply(node: Apply, limits: Limits, depth: int) -> Compiled:
    args = [_compile(a, limits, depth + 1) for a in node.args]
    if node.op in ("and", "or"):
        left, right = args
        if node.op == "and":
            return lambda env: bool(left(env)) and bool(right(env))
        return lambda env: bool(left(env)) or bool(right(env))
    try:
        fn = OPS[node.op]
    except KeyError:
        raise ValueError(f"unknown operator {node.op!r}") from None
    if node.op in _BUILDS:
        fn = _bounded(fn, node.op, limits)
    if _reads_items(node):
        return lists.compile_reading(fn, args, limits.list_elements)
    if len(args) == 1:
        (only,) = args
        return lambda env: fn(only(env))
    if len(args) == 2:
        first, second = args
        if node.op in _INT_FAST:
            return _compile_int_fast(node.op, fn, first, second, node.args)
        return lambda env: fn(first(env), second(env))
    return lambda env: fn(*(a(env) for a in args))


def evaluate(node: IR, env: Env) -> Value:
    """Evaluate once (compiling on the way); prefer ``compile_ir`` for repeated use."""
    return compile_ir(node)(env)
