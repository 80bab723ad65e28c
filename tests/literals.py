"""Random literals of every type, a workflow that carries them everywhere a value goes,
and a comparison that tells ``False`` from ``0`` and ``1.50`` from ``1.5``.

A literal is written as source text and has the value the runtime must keep: the
property tests compile the workflow, run it (in memory or on a durable store) and
compare what the handler received and what the instance output, type for type.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal

from attrs import frozen
from hypothesis import strategies as st

from wflang.dsl.formatter import format_string
from wflang.runtime import codec
from wflang.runtime.ir import Value

INT64 = 2**63 - 1
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@frozen
class Literal:
    """A literal of a declared type: its source text and the value it denotes."""

    type: str
    text: str
    value: Value


def _int(n: int) -> Literal:
    return Literal("int", str(n) if n >= 0 else f"-{-n}", n)


def _decimal(whole: int, frac: str, negative: bool) -> Literal:
    text = f"{'-' if negative else ''}{whole}.{frac}"
    value = Decimal(text)
    return Literal("decimal", text, value.copy_abs() if value.is_zero() else value)  # never -0


def _timestamp(moment: datetime, offset_minutes: int, millis: int) -> Literal:
    zone = timezone(timedelta(minutes=offset_minutes))
    local = (moment + timedelta(milliseconds=millis)).astimezone(zone)
    body = local.strftime("%Y-%m-%dT%H:%M:%S") + f".{millis:03d}"
    sign, minutes = ("+" if offset_minutes >= 0 else "-"), abs(offset_minutes)
    suffix = "Z" if offset_minutes == 0 else f"{sign}{minutes // 60:02d}:{minutes % 60:02d}"
    value = (moment + timedelta(milliseconds=millis) - _EPOCH) // timedelta(milliseconds=1)
    return Literal("timestamp", body + suffix, value)


_moments = st.datetimes(
    min_value=datetime(1000, 1, 2), max_value=datetime(9999, 12, 30), timezones=st.just(UTC)
).map(lambda d: d.replace(microsecond=0))

scalars: st.SearchStrategy[Literal] = st.one_of(
    st.integers(-INT64, INT64).map(_int),
    st.builds(
        _decimal,
        st.integers(0, 10**21 - 1),  # with the fraction, at most 34 significant digits
        st.from_regex(r"[0-9]{1,12}", fullmatch=True),
        st.booleans(),
    ),
    st.text(max_size=20).map(lambda s: Literal("string", format_string(s), s)),
    st.booleans().map(lambda b: Literal("bool", "true" if b else "false", b)),
    st.integers(0, 10**12).map(lambda ms: Literal("duration", f"{ms}ms", ms)),
    st.builds(_timestamp, _moments, st.integers(-14 * 60, 14 * 60), st.integers(0, 999)),
)


def _optional_null(lit: Literal) -> Literal:
    return Literal(lit.type + "?", "null", None)


def _list_of(items: list[Literal]) -> Literal:
    return Literal(
        f"list[{items[0].type}]",
        "[" + ", ".join(i.text for i in items) + "]",
        [i.value for i in items],
    )


literals: st.SearchStrategy[Literal] = st.one_of(
    scalars,
    scalars.map(_optional_null),
    scalars.flatmap(lambda first: st.lists(st.just(first) | scalars, min_size=1, max_size=4))
    .filter(lambda items: len({i.type for i in items}) == 1)
    .map(_list_of),
    st.sampled_from(["red", "green"]).map(lambda m: Literal("Color", f"Color.{m}", m)),
)


def text_of(value: Value) -> str:
    """What ``string(x)`` gives: a string itself, anything else as compact JSON."""
    return value if isinstance(value, str) else codec.dumps(value)


def workflow(lits: list[Literal], name: str = "lits") -> str:
    """A workflow with every literal as an input default, a context default and a
    service argument; its output holds them all, and ``string()`` of each (but null)."""
    n = range(len(lits))
    typed = [f"v{i}: {lit.type} = {lit.text}" for i, lit in zip(n, lits, strict=True)]
    params = ", ".join(f"a{i}: {lit.type}" for i, lit in zip(n, lits, strict=True))
    args = ", ".join(f"a{i}: {lit.text}" for i, lit in zip(n, lits, strict=True))
    out, declared = [], []
    for i, lit in enumerate(lits):
        out += [f"i{i}: input.v{i}", f"c{i}: context.v{i}"]
        declared += [f"i{i}: {lit.type}", f"c{i}: {lit.type}"]
        if lit.value is not None:
            out.append(f"s{i}: string(context.v{i})")
            declared.append(f"s{i}: string")
    return (
        f"workflow {name} version 1\n"
        "enum Color { red, green }\n"
        f"input {{ {', '.join(typed)} }}\n"
        f"context {{ {', '.join(typed)} }}\n"
        f"output {{ {', '.join(declared)} }}\n"
        f"service lits.take({params}) -> {{ }}\n"
        "start take\n"
        f"task take: service lits.take {{\n    args {{ {args} }}\n    next done\n}}\n"
        f"end done: completed {{\n    output {{ {', '.join(out)} }}\n}}\n"
    )


def expected(lits: list[Literal]) -> tuple[dict[str, Value], dict[str, Value]]:
    """The arguments the handler must receive and the output the instance must give."""
    args = {f"a{i}": lit.value for i, lit in enumerate(lits)}
    output: dict[str, Value] = {}
    for i, lit in enumerate(lits):
        output[f"i{i}"] = lit.value
        output[f"c{i}"] = lit.value
        if lit.value is not None:
            output[f"s{i}"] = text_of(lit.value)
    return args, output


def same(a: object, b: object) -> bool:
    """Equal in type and value, all the way down: ``False`` is not ``0``, ``Decimal('1.50')``
    is not ``Decimal('1.5')`` (nor ``1``)."""
    if type(a) is not type(b):
        return False
    # Both checks of each pair hold or fail together (same type); the second narrows b.
    if isinstance(a, Decimal) and isinstance(b, Decimal):
        return a.as_tuple() == b.as_tuple()
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return a == b
