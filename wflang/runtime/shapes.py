"""The declared shapes of values from outside, looked up one way (issue 13).

A start input, a signal's or a message's payload, a step's output (a service's result,
a human task's form, an operator's forced output) and an error's payload are each a set
of declared fields; the records and enums they name are declared beside them. Every
entry point (the engine, the test kit, the durable client, the worker's results, the
stores) and the step function find a shape here, and ``runtime.fit`` walks a value by
it. The index is made once per table and kept with it (``Table.memo``).
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal

from attrs import frozen

from wflang.runtime.table import TIME_KINDS, FieldType, Table, reachable
from wflang.runtime.table import TypeRef as TypeRef  # noqa: PLC0414  # imported from here
from wflang.runtime.table import type_ref as type_ref  # noqa: PLC0414
from wflang.runtime.waiting import Wait

#: The types the runtime keeps as one Python value, and what JSON may give for each.
SCALARS: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "int": (int,),
    "decimal": (int, Decimal, float),  # a JSON number ("12.5" is a string)
    "bool": (bool,),
    "duration": (int,),
    "timestamp": (int,),
}
#: The types that ISO-8601 (or the language's own) text may also give.
TIMES = TIME_KINDS

#: A quick check of a handler's result: (name, accepted types, optional, has a default)
#: per declared field when every field is a scalar other than bool and decimal.
Plan = tuple[tuple[str, tuple[type, ...], bool, bool], ...]


@frozen
class Declared:
    """A shape a value from outside must fit: its fields, the quick check of a handler's
    result (None when some field needs the walk), and whether the walk of a value that
    fits may still change it (a default to fill or a time field that text may give, in it
    or in a record it holds): when not, the step has nothing to do with it."""

    fields: tuple[FieldType, ...]
    plan: Plan | None
    changes: bool


@frozen
class Shapes:
    """Every shape of one table, by kind and name."""

    input: Declared
    signals: dict[str, Declared]
    messages: dict[str, Declared]
    results: dict[str, Declared]
    errors: dict[str, Declared]
    records: dict[str, tuple[FieldType, ...]]
    enums: dict[str, tuple[str, ...]]

    def payload(self, kind: str) -> dict[str, Declared]:
        """The payloads of the signals or the messages (``kind`` is the ``Wait``)."""
        return self.signals if kind == Wait.SIGNAL else self.messages


def shapes(table: Table) -> Shapes:
    """The shapes of ``table``, made once and kept with it."""
    memo = table.memo
    found = memo.shapes
    if isinstance(found, Shapes):
        return found
    types = table.types
    records = {r.name: r.fields for r in types.records}

    def declared(fields: Sequence[FieldType]) -> Declared:
        return Declared(tuple(fields), _plan(fields), _changes(records, fields))

    made = Shapes(
        input=declared(
            [FieldType(f.name, f.type, f.default is not None, f.default) for f in table.input]
        ),
        signals={s.name: declared(s.fields) for s in types.signals},
        messages={s.name: declared(s.fields) for s in types.messages},
        results={s.name: declared(s.fields) for s in types.results},
        errors={s.name: declared(s.fields) for s in types.errors},
        records=records,
        enums={e.name: tuple(e.members) for e in types.enums},
    )
    memo.shapes = made
    return made


def _plan(fields: Sequence[FieldType]) -> Plan | None:
    plan = tuple(
        (f.name, SCALARS[t.kind], t.optional, f.has_default)
        for f in fields
        for t in (type_ref(f.type),)
        if t.kind in SCALARS and t.kind not in ("bool", "decimal")
    )
    return plan if len(plan) == len(fields) else None


def _changes(records: dict[str, tuple[FieldType, ...]], fields: Sequence[FieldType]) -> bool:
    """Whether a default or a time field is in these fields or the records they hold."""
    return any(f.default is not None or t.kind in TIMES for f, t in reachable(records, fields))
