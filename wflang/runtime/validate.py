"""Checking a start input against the workflow's declared input fields.

The table carries each input field's type as written (``list[Item]``,
``decimal?``); this checks the shape that can be checked without the record
declarations: required fields present, no unknown fields, scalars of the
right kind. Records and enums are checked by the fields they must have.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal

from wflang.runtime.ir import Value
from wflang.runtime.table import Table

_SCALARS: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "int": (int,),
    "decimal": (int, Decimal, float, str),
    "bool": (bool,),
    "duration": (int,),
    "timestamp": (int, str),
}


def validate_input(table: Table, data: Mapping[str, Value]) -> list[str]:
    """Problems with a start input, in words; empty when it fits."""
    problems: list[str] = []
    declared = {f.name: f for f in table.input}
    for name in data:
        if name not in declared:
            known = ", ".join(declared) or "none"
            problems.append(f"unknown input field '{name}' (fields: {known})")
    for name, f in declared.items():
        if name not in data:
            if not f.type.endswith("?") and f.default is None:
                problems.append(f"missing input field '{name}' ({f.type})")
            continue
        problem = _check(data[name], f.type, name)
        if problem:
            problems.append(problem)
    return problems


def _check(value: Value, type_text: str, where: str) -> str | None:
    if type_text.endswith("?"):
        if value is None:
            return None
        type_text = type_text[:-1]
    if value is None:
        return f"'{where}' is null but its type {type_text} is not optional"
    if type_text in _SCALARS:
        ok = isinstance(value, _SCALARS[type_text]) and not (
            isinstance(value, bool) and type_text != "bool"
        )
        return None if ok else f"'{where}' must be {type_text}, not {type(value).__name__}"
    if type_text.startswith("list[") and not isinstance(value, list):
        return f"'{where}' must be a list, not {type(value).__name__}"
    if type_text.startswith("map[") and not isinstance(value, dict):
        return f"'{where}' must be a map, not {type(value).__name__}"
    return None
