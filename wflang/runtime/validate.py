"""Checking values from outside against the workflow's declared types.

A start input, a signal's payload, the output a person gives a human task and
the output an operator forces on a step all come from outside the workflow;
they are checked here, deeply, before anything is stored: required fields
present, no unknown fields, scalars of the right kind, enum members, records
by their fields, and every element of lists and maps. The table carries the
types as written (``list[Item]``, ``decimal?``) and the declarations they name.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from decimal import Decimal

from wflang.runtime.ir import Value
from wflang.runtime.table import FieldType, Table, Types

_SCALARS: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "int": (int,),
    "decimal": (int, Decimal, float),  # a JSON number ("12.5" is a string)
    "bool": (bool,),
    "duration": (int,),
    "timestamp": (int,),
}
#: How values of the types the runtime keeps as numbers are written in JSON.
_UNITS = {"duration": " (integer milliseconds)", "timestamp": " (epoch milliseconds)"}
_MAX_DEPTH = 64
#: Kept as 64-bit integers by the stores (due times, wake-ups).
_INT64 = ("int", "duration", "timestamp")


#: The largest value accepted from outside, as compact JSON: every value a person or
#: another system sends is kept in the instance's history (and often its context), and
#: an instance is stored whole after every step.
MAX_VALUE_BYTES = 256 * 1024


def validate_input(table: Table, data: Mapping[str, Value]) -> list[str]:
    """Problems with a start input, in words; empty when it fits."""
    fields = tuple(FieldType(f.name, f.type, f.default is not None) for f in table.input)
    return _sized(data, "input") or validate_fields(table.types, fields, data, "input")


def validate_signal(table: Table, kind: str, name: str, payload: Mapping[str, Value]) -> list[str]:
    """Problems with a signal's (or message's) name and payload."""
    shapes = table.types.signals if kind == "signal" else table.types.messages
    for shape in shapes:
        if shape.name == name:
            where = f"{kind} {name}"
            return _sized(payload, where) or validate_fields(
                table.types, shape.fields, payload, where
            )
    known = ", ".join(s.name for s in shapes) or "none"
    return [f"{table.workflow} declares no {kind} '{name}' ({kind}s: {known})"]


def validate_result(table: Table, state: str, output: Mapping[str, Value]) -> list[str]:
    """Problems with the output given to a step (a human task's form, a service's result)."""
    fields = _results(table).get(state)
    where = f"output of {state}"
    if fields is not None:
        return _sized(output, where) or validate_fields(table.types, fields, output, where)
    if output:
        return [f"{state} declares no output, but fields were given: {', '.join(output)}"]
    return []


def _sized(value: object, where: str) -> list[str]:
    """A problem when the value is larger than ``MAX_VALUE_BYTES`` as JSON."""
    try:
        size = len(json.dumps(value, separators=(",", ":"), default=str).encode())
    except (TypeError, ValueError):  # not JSON-like at all: the field checks say why
        return []
    if size <= MAX_VALUE_BYTES:
        return []
    return [f"the {where} is {size:,} bytes as JSON; the limit is {MAX_VALUE_BYTES:,}"]


#: The result shapes of each table seen, by step name (tables live as long as the
#: process: a few per workflow version). Keyed by identity: hashing a table is costly.
_RESULTS: dict[int, tuple[Table, dict[str, tuple[FieldType, ...]]]] = {}


def _results(table: Table) -> dict[str, tuple[FieldType, ...]]:
    hit = _RESULTS.get(id(table))
    if hit is None or hit[0] is not table:
        if len(_RESULTS) >= 256:
            _RESULTS.clear()
        hit = _RESULTS[id(table)] = (table, {s.name: s.fields for s in table.types.results})
    return hit[1]


def validate_handler_result(table: Table, state: str, result: Mapping[str, Value]) -> list[str]:
    """Problems with what a service handler returned: the declared fields must be there
    with their types; fields beyond them are let through (a handler may return a whole
    API response), since nothing can read them (``wf check`` refuses such reads)."""
    fields = _results(table).get(state)
    if fields is None:
        return []
    if _plainly_fits(fields, result):  # the usual case, without building any message
        return []
    return validate_fields(table.types, fields, result, f"result of {state}", extra=True)


#: Per field list (by identity, kept alive beside it): (name, accepted types, optional,
#: has a default) when every field is a scalar; None when some field needs the full check.
_PLAIN: dict[
    int, tuple[Sequence[FieldType], tuple[tuple[str, tuple[type, ...], bool, bool], ...] | None]
] = {}


def _plainly_fits(fields: Sequence[FieldType], data: Mapping[str, Value]) -> bool:
    """A quick yes for a result whose declared fields are all scalars present with
    their type (extra fields allowed); False means: run the full check for the words."""
    hit = _PLAIN.get(id(fields))
    if hit is None or hit[0] is not fields:
        if len(_PLAIN) >= 1024:
            _PLAIN.clear()
        plan = tuple(
            (f.name, _SCALARS[t.removesuffix("?")], t.endswith("?"), f.has_default)
            for f in fields
            for t in (f.type.strip(),)
            if t.removesuffix("?") in _SCALARS and t.removesuffix("?") not in ("bool", "decimal")
        )
        hit = _PLAIN[id(fields)] = (fields, plan if len(plan) == len(fields) else None)
    checks = hit[1]
    if checks is None or not isinstance(data, dict):
        return False
    for name, kinds, optional, has_default in checks:
        value = data.get(name, _MISSING)
        if value is _MISSING:
            if not (optional or has_default):
                return False
        elif value is None:
            if not optional:
                return False
        elif not isinstance(value, kinds) or isinstance(value, bool):
            return False
    return True


_MISSING = object()


def validate_fields(
    types: Types, fields: Sequence[FieldType], data: object, where: str, *, extra: bool = False
) -> list[str]:
    """Problems with an object given for these fields (JSON from outside: any shape);
    ``extra``: fields that are not declared are allowed, here and in nested records."""
    if not isinstance(data, Mapping):
        return [f"{where} must be an object, not {_kind(data)}"]
    problems: list[str] = []
    declared = {f.name: f for f in fields}
    for name in data if not extra else ():
        if name not in declared:
            known = ", ".join(declared) or "none"
            problems.append(
                f"unknown input field '{name}' (fields: {known})"
                if where == "input"
                else f"unknown field '{name}' in {where} (fields: {known})"
            )
    for name, f in declared.items():
        if name not in data:
            if not f.type.endswith("?") and not f.has_default:
                problems.append(
                    f"missing input field '{name}' ({f.type})"
                    if where == "input"
                    else f"missing field '{name}' ({f.type}) in {where}"
                )
            continue
        problems.extend(_check(types, data[name], f.type, name, 0, extra))
    return problems


def _check(
    types: Types, value: Value, type_text: str, where: str, depth: int, extra: bool
) -> list[str]:
    if depth > _MAX_DEPTH:
        return [f"'{where}' is nested too deeply"]
    type_text = type_text.strip()
    if type_text.endswith("?"):
        if value is None:
            return []
        type_text = type_text[:-1]
    if value is None:
        return [f"'{where}' is null but its type {type_text} is not optional"]
    if type_text in _SCALARS:
        ok = isinstance(value, _SCALARS[type_text]) and not (
            isinstance(value, bool) and type_text != "bool"
        )
        if ok and isinstance(value, Decimal | float):
            if not _is_finite(value):
                return [f"'{where}' must be a finite {type_text}, not {value}"]
        elif ok and type_text in _INT64 and not -(2**63) <= int(value) < 2**63:  # type: ignore[arg-type]
            return [f"'{where}' is out of range for {type_text} (64 bits)"]
        unit = _UNITS.get(type_text, "")
        return [] if ok else [f"'{where}' must be {type_text}{unit}, not {_kind(value)}"]
    if type_text.startswith("list[") and type_text.endswith("]"):
        if not isinstance(value, list):
            return [f"'{where}' must be a list, not {_kind(value)}"]
        inner = type_text[5:-1]
        return [
            p
            for i, v in enumerate(value)
            for p in _check(types, v, inner, f"{where}[{i}]", depth + 1, extra)
        ]
    if type_text.startswith("map[") and type_text.endswith("]"):
        if not isinstance(value, dict):
            return [f"'{where}' must be a map, not {_kind(value)}"]
        _, _, inner = _split_pair(type_text[4:-1])
        return [
            p
            for k, v in value.items()
            for p in _check(types, v, inner, f"{where}[{k!r}]", depth + 1, extra)
        ]
    for enum in types.enums:
        if enum.name == type_text:
            if isinstance(value, str) and value in enum.members:
                return []
            return [f"'{where}' must be one of {', '.join(enum.members)}, not {value!r}"]
    for record in types.records:
        if record.name == type_text:
            if not isinstance(value, dict):
                return [f"'{where}' must be a {type_text} record, not {_kind(value)}"]
            problems = validate_fields(types, record.fields, value, f"'{where}'", extra=extra)
            return problems
    return []  # a type the table does not describe (an imported alias): not checked here


def _split_pair(text: str) -> tuple[str, str, str]:
    depth = 0
    for i, ch in enumerate(text):
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        elif ch == "," and depth == 0:
            return text[:i].strip(), ",", text[i + 1 :].strip()
    return text, "", "string"


def _is_finite(value: Decimal | float) -> bool:
    return Decimal(value).is_finite() if isinstance(value, float) else value.is_finite()


def _kind(value: object) -> str:
    if isinstance(value, dict):
        return "object"
    if value is None:
        return "null"
    if isinstance(value, Decimal | float):
        return "decimal"
    return type(value).__name__
