"""The one walk of a value from outside by its declared type (issue 13).

A start input, a signal's or a message's payload, a human task's form, an operator's
forced output, a handler's result and an error's payload are JSON from outside. One walk
of such a value by the fields it is declared with (``runtime.shapes``) does everything
the runtime needs of it, at every depth (in lists, maps and records):

- reads the text of a ``timestamp`` or a ``duration`` as its milliseconds
  (``runtime.times``: ISO-8601 or the language's own form), so that the instance, its
  history and the stores hold only the integers;
- fills in the defaults of the fields left out (``fill``), so that a field with a
  default is never read as null;
- reports what does not fit, each problem naming the field's path (``lines[2].at``):
  missing and unknown fields, scalars of the wrong kind, enum members, nulls.

It returns the value it was given, not a copy, when there was nothing to change.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from decimal import Decimal

from wflang.runtime.ir import Value, evaluate
from wflang.runtime.numbers import fits
from wflang.runtime.shapes import SCALARS, Shapes, TypeRef, shapes, type_ref
from wflang.runtime.table import FieldType, Table
from wflang.runtime.times import FORMS, READERS

#: How values of the types the runtime keeps as numbers may be written in JSON.
_UNITS = {name: f" ({form})" for name, form in FORMS.items()}
MAX_DEPTH = 64
#: Kept as 64-bit integers by the stores (due times, wake-ups).
_INT64 = ("int", "duration", "timestamp")


def fit(
    table: Table,
    fields: Sequence[FieldType],
    data: object,
    what: str,
    *,
    extra: bool = False,
    fill: bool = True,
) -> tuple[dict[str, Value], list[str]]:
    """``data`` (JSON from outside: any shape) walked by ``fields``: its time text read as
    milliseconds, with ``fill`` the defaults of the fields it leaves out filled in, and
    the problems with it (``what`` names the whole: "input", "signal moved", ...).
    ``extra``: fields that are not declared are let through, here and in nested records."""
    if not isinstance(data, Mapping):
        return {}, [f"{what} must be an object, not {kind_of(data)}"]
    walk = _Walk(table, shapes(table), extra, fill)
    record: dict[str, Value] = data if type(data) is dict else dict(data)
    return walk.record(fields, record, what, "", 0), walk.problems


class _Walk:
    __slots__ = ("extra", "fill", "problems", "shapes", "table")

    def __init__(self, table: Table, found: Shapes, extra: bool, fill: bool) -> None:
        self.table = table
        self.shapes = found
        self.extra = extra
        self.fill = fill
        self.problems: list[str] = []

    def record(
        self,
        fields: Sequence[FieldType],
        data: dict[str, Value],
        what: str,
        path: str,
        depth: int,
    ) -> dict[str, Value]:
        """A record by its fields (``what`` names it in the problems of its own fields:
        the whole at the top, else its quoted path)."""
        if not self.extra:
            names = [f.name for f in fields]
            for name in data:
                if name not in names:
                    known = ", ".join(names) or "none"
                    self.problems.append(
                        f"unknown input field '{name}' (fields: {known})"
                        if what == "input"
                        else f"unknown field '{name}' in {what} (fields: {known})"
                    )
        out = data
        for f in fields:
            if f.name not in data:
                if self.fill and f.default is not None:
                    out = dict(data) if out is data else out
                    out[f.name] = evaluate(self.table.expressions[f.default], {})
                elif not f.type.endswith("?") and not f.has_default:
                    self.problems.append(
                        f"missing input field '{f.name}' ({f.type})"
                        if what == "input"
                        else f"missing field '{f.name}' ({f.type}) in {what}"
                    )
                continue
            value = data[f.name]
            new = self.value(type_ref(f.type), value, f"{path}.{f.name}" if path else f.name, depth)
            if new is not value:
                out = dict(data) if out is data else out
                out[f.name] = new
        return out

    def value(self, t: TypeRef, value: Value, where: str, depth: int) -> Value:
        if depth > MAX_DEPTH:
            self.problems.append(f"'{where}' is nested too deeply")
            return value
        if value is None:
            if not t.optional:
                self.problems.append(f"'{where}' is null but its type {t.text} is not optional")
            return value
        kinds = SCALARS.get(t.kind)
        if kinds is not None:
            if type(value) is str and t.kind in READERS:
                ms = READERS[t.kind](value)
                if ms is not None:
                    return ms
                # the text itself, not "str": it was meant as a time, and says how it is not
                shown = value if len(value) <= 40 else value[:40] + "…"
                self.problems.append(f"'{where}' must be {t.kind}{_UNITS[t.kind]}, not {shown!r}")
                return value
            problem = _scalar(t.kind, kinds, value, where)
            if problem is not None:
                self.problems.append(problem)
            return value
        inner = t.inner
        if t.kind == "list" and inner is not None:
            if not isinstance(value, list):
                self.problems.append(f"'{where}' must be a list, not {kind_of(value)}")
                return value
            items = [self.value(inner, v, f"{where}[{i}]", depth + 1) for i, v in enumerate(value)]
            return value if all(a is b for a, b in zip(items, value, strict=True)) else items
        if t.kind == "map" and inner is not None:
            if not isinstance(value, dict):
                self.problems.append(f"'{where}' must be a map, not {kind_of(value)}")
                return value
            entries = {
                k: self.value(inner, v, f"{where}[{k!r}]", depth + 1) for k, v in value.items()
            }
            return value if all(entries[k] is v for k, v in value.items()) else entries
        members = self.shapes.enums.get(t.kind)
        if members is not None:
            if not (isinstance(value, str) and value in members):
                self.problems.append(
                    f"'{where}' must be one of {', '.join(members)}, not {value!r}"
                )
            return value
        fields = self.shapes.records.get(t.kind)
        if fields is not None:
            if not isinstance(value, dict):
                self.problems.append(f"'{where}' must be a {t.text} record, not {kind_of(value)}")
                return value
            return self.record(fields, value, f"'{where}'", where, depth + 1)
        return value  # a type the table does not describe (an imported alias): not checked here


def _scalar(name: str, kinds: tuple[type, ...], value: Value, where: str) -> str | None:
    """Why ``value`` is no ``name`` the runtime can keep, or None."""
    ok = isinstance(value, kinds) and not (isinstance(value, bool) and name != "bool")
    if ok and isinstance(value, Decimal | float):
        if not _is_finite(value):
            return f"'{where}' must be a finite {name}, not {value}"
        why = fits(_decimal_of(value))
        if why is not None:
            return f"'{where}' {why}"
    elif ok and type(value) is int and not -(2**63) <= value < 2**63:
        if name == "decimal":
            return (
                f"'{where}' is a whole number beyond 64 bits"
                " (write a larger decimal with a point or an exponent)"
            )
        if name in _INT64:
            return f"'{where}' is out of range for {name} (64 bits)"
    return None if ok else f"'{where}' must be {name}{_UNITS.get(name, '')}, not {kind_of(value)}"


def _decimal_of(value: Decimal | float) -> Decimal:
    """The decimal a JSON number reads as (a float's shortest repr: ``420.1``)."""
    return Decimal(repr(value)) if isinstance(value, float) else value


def _is_finite(value: Decimal | float) -> bool:
    return Decimal(value).is_finite() if isinstance(value, float) else value.is_finite()


def kind_of(value: object) -> str:
    """What a JSON value is, in the problems' words."""
    if isinstance(value, dict):
        return "object"
    if value is None:
        return "null"
    if isinstance(value, Decimal | float):
        return "decimal"
    return type(value).__name__
