"""``wf history --changes``: what each step changed in the context, in words; and the
layout of a step that ``wf history`` and ``wf run`` print (``step_text``).

Reads the entries of a ``wflang.history/1`` document (``changes``: JSON Patch
operations with the value each replaced, ``runtime.changes``) and prints one line per
field: ``+ field = new`` (added), ``~ field: old -> new`` (replaced), ``- field (was
old)`` (removed). Values are compact JSON, decimals exact, but for times, which the
documents hold as integers: a timestamp prints as ISO-8601 in UTC and a duration in the
language's form, as the language writes their literals (``2026-12-01T10:00:00Z``,
``1h30m``), wherever they sit in the value, by the types the table gives the fields
(``Table.time_types``; a table compiled before it had them prints the integers).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence

from wflang.runtime import codec
from wflang.runtime.ir import Value
from wflang.runtime.table import FieldType, Table, type_ref
from wflang.runtime.times import duration_text, timestamp_text

#: The field of each kind of event that says which one it was (a task's key, a timer…).
_DETAIL = ("name", "timer", "key", "state")


def event_label(event: Mapping[str, Value] | None) -> str:
    """``start``, or the event's type and what it answers: ``TaskCompleted KEY``,
    ``SignalReceived approval``, ``TimerFired ID``."""
    if event is None:
        return "start"
    for name in _DETAIL:
        detail = event.get(name)
        if isinstance(detail, str) and detail:
            return f"{event['type']} {detail}"
    return str(event["type"])


def step_text(seq: int, at: str, label: str, below: Iterable[str]) -> str:
    """A step as people read it: ``#SEQ AT LABEL``, then what it decided (or changed),
    a line each, indented under it."""
    return "\n".join([f"#{seq:<3} {at}  {label}", *(f"       {line}" for line in below)])


Records = Mapping[str, Sequence[FieldType]]


def _times_of(table: Table | None) -> tuple[dict[str, str], Records]:
    """The types of the table's fields that hold times, and its records."""
    if table is None:
        return {}, {}
    return dict(table.time_types), {r.name: r.fields for r in table.types.records}


def change_lines(
    changes: Sequence[Mapping[str, Value]], table: Table | None = None
) -> Iterator[str]:
    """A line per changed context field of ``table`` (None: no types known)."""
    types, records = _times_of(table)
    for change in changes:
        field = str(change["path"]).removeprefix("/")
        written = types.get(f"context.{field}")
        old, new = (
            codec.dumps(change.get(k))
            if written is None
            else shown(change.get(k), written, records)
            for k in ("old", "value")
        )
        if change["op"] == "add":
            yield f"+ {field} = {new}"
        elif change["op"] == "remove":
            yield f"- {field} (was {old})"
        else:
            yield f"~ {field}: {old} -> {new}"


def output_text(output: Mapping[str, Value], table: Table | None) -> str:
    """An instance's output as compact JSON, its times for people."""
    types, records = _times_of(table)
    return _object(
        (k, shown(v, types[f"output.{k}"], records) if f"output.{k}" in types else codec.dumps(v))
        for k, v in output.items()
    )


def shown(value: Value, written: str, records: Records) -> str:
    """``value`` of the type ``written``: compact JSON with its times for people. A
    value that is not what its type says (a field of an older version's shape, an
    instant past year 9999) prints as it is."""
    t = type_ref(written)
    kind = t.kind
    if isinstance(value, bool) or value is None:
        return codec.dumps(value)
    if kind == "timestamp" and isinstance(value, int):
        return timestamp_text(value) or str(value)
    if kind == "duration" and isinstance(value, int):
        return duration_text(value)
    if kind == "list" and t.inner is not None and isinstance(value, list):
        return "[" + ",".join(shown(v, t.inner.text, records) for v in value) + "]"
    if kind == "map" and t.inner is not None and isinstance(value, dict):
        inner = t.inner.text
        return _object((k, shown(v, inner, records)) for k, v in value.items())
    if kind in records and isinstance(value, dict):
        fields = {f.name: f.type for f in records[kind]}
        return _object(
            (k, codec.dumps(v) if k not in fields else shown(v, fields[k], records))
            for k, v in value.items()
        )
    return codec.dumps(value)


def _object(items: Iterable[tuple[str, str]]) -> str:
    return "{" + ",".join(f"{codec.dumps(k)}:{text}" for k, text in items) + "}"
