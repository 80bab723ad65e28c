"""Timestamps and durations written as text in JSON from outside (issue 14, item 4).

The runtime keeps a ``timestamp`` as epoch milliseconds and a ``duration`` as
milliseconds, and JSON may give either so. A person or another system may also write
them as text, as the language writes its literals: a timestamp in ISO-8601 with an
offset (``2026-12-01T10:00:00Z``, ``2026-12-01T11:00:00+01:00``), a duration in
ISO-8601 without years or months (``PT10M``, ``P1DT12H``) or in the language's own form
(``10m``, ``1h30m``, ``250ms``). ``typed_fields`` turns such text into the
milliseconds, where the declared type is one of them, before the value goes anywhere:
the instance, its history and the stores hold only the integers. Text that reads as
neither is left as it is, for the validation to refuse with its words.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta

from wflang.runtime.table import FieldType, Table, Types
from wflang.runtime.values import Value
from wflang.runtime.waiting import Wait

_TIMESTAMP = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]+)?)?(Z|[+-][0-9]{2}:[0-9]{2})"
)
_SIMPLE = re.compile(r"(?:[0-9]+(?:ms|s|m|h|d|w))+")
_SIMPLE_PART = re.compile(r"([0-9]+)(ms|s|m|h|d|w)")
_SIMPLE_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000, "w": 604_800_000}
_ISO = re.compile(
    r"P(?:([0-9]+)W)?(?:([0-9]+)D)?"
    r"(?:T(?:([0-9]+)H)?(?:([0-9]+)M)?(?:([0-9]+)(?:\.([0-9]{1,3}))?S)?)?"
)
_ISO_MS = (604_800_000, 86_400_000, 3_600_000, 60_000, 1000)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_INT64 = 2**63
#: How the runtime's time types may be written in JSON, for the refusals' words.
FORMS = {
    "timestamp": "epoch milliseconds or ISO-8601 text such as 2026-12-01T10:00:00Z",
    "duration": "integer milliseconds or text such as PT10M or 10m",
}


def timestamp_ms(text: str) -> int | None:
    """Epoch milliseconds of an ISO-8601 timestamp with an offset (a finer fraction cut
    off towards the past), or None when the text is not one."""
    if _TIMESTAMP.fullmatch(text) is None:
        return None
    try:
        return (datetime.fromisoformat(text) - _EPOCH) // timedelta(milliseconds=1)
    except ValueError:  # not a real date (2026-02-30)
        return None


def duration_ms(text: str) -> int | None:
    """Milliseconds of a duration (``PT10M``, ``P1DT12H``, ``10m``, ``1h30m``), or None
    when the text is not a fixed duration that fits 64 bits."""
    if _SIMPLE.fullmatch(text):
        total = sum(int(n) * _SIMPLE_MS[unit] for n, unit in _SIMPLE_PART.findall(text))
    else:
        m = _ISO.fullmatch(text)
        if m is None or text in ("P", "PT") or text.endswith("T"):
            return None
        *parts, fraction = m.groups()
        total = sum(int(n) * ms for n, ms in zip(parts, _ISO_MS, strict=True) if n)
        total += int((fraction or "0").ljust(3, "0"))
    return total if total < _INT64 else None


_READERS = {"timestamp": timestamp_ms, "duration": duration_ms}


def typed_fields(
    types: Types, fields: Sequence[FieldType], data: Mapping[str, Value]
) -> dict[str, Value]:
    """``data`` with the text of its time fields (declared ``timestamp`` or ``duration``,
    here or in the lists, maps and records they hold) read as milliseconds; the same
    object when there is none."""
    out = data if isinstance(data, dict) else dict(data)
    for f in fields:
        if f.name in data:
            value = data[f.name]
            new = _typed(types, f.type, value, 0)
            if new is not value:
                out = dict(out) if out is data else out
                out[f.name] = new
    return out


def _typed(types: Types, type_text: str, value: Value, depth: int) -> Value:
    type_text = type_text.strip().removesuffix("?")
    if value is None or depth > 64:
        return value
    reader = _READERS.get(type_text)
    if reader is not None:
        if isinstance(value, str):
            ms = reader(value)
            return value if ms is None else ms
        return value
    if type_text.startswith("list[") and isinstance(value, list):
        items = [_typed(types, type_text[5:-1], v, depth + 1) for v in value]
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items
    if type_text.startswith("map[") and isinstance(value, dict):
        inner = type_text[4:-1].split(",", 1)[1] if "," in type_text else "string"
        entries = {k: _typed(types, inner, v, depth + 1) for k, v in value.items()}
        return value if all(entries[k] is v for k, v in value.items()) else entries
    if isinstance(value, dict):
        for record in types.records:
            if record.name == type_text:
                return typed_fields(types, record.fields, value)
    return value


def typed_input(table: Table, data: Mapping[str, Value]) -> dict[str, Value]:
    """A start input with its time fields' text read as milliseconds."""
    fields = tuple(FieldType(f.name, f.type) for f in table.input)
    return typed_fields(table.types, fields, data)


def typed_payload(
    table: Table, kind: str, name: str, payload: Mapping[str, Value]
) -> dict[str, Value]:
    """A signal's (or message's: ``kind``) payload with its time fields' text read as
    milliseconds; as it is when the table declares no such signal."""
    shapes = table.types.signals if kind == Wait.SIGNAL else table.types.messages
    for shape in shapes:
        if shape.name == name:
            return typed_fields(table.types, shape.fields, payload)
    return dict(payload)


def typed_output(table: Table, state: str, output: Mapping[str, Value]) -> dict[str, Value]:
    """The output a person gives a step (a human task's form) with its time fields'
    text read as milliseconds; as it is when the step declares none."""
    for shape in table.types.results:
        if shape.name == state:
            return typed_fields(table.types, shape.fields, output)
    return dict(output)
