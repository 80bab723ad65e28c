"""A table's hash across versions of the compiler (issue 14 leftovers, item 3): the fields
the table gained since its first release (``table.ADDED``) are left out of its JSON while
they hold their default, so a source that uses nothing they add compiles to the bytes,
and the hash, the compiler of 3fcedfa gave it. ``tests/data/tables/unchanged.3fcedfa.json``
is that compiler's table of ``unchanged.wf`` (``git worktree add /tmp/old 3fcedfa`` and
``dumps(compile_workflow(parse_file(...)).table)`` there). Redeploying on the stores:
tests/store/test_table_hash.py."""

from __future__ import annotations

import hashlib
import json
import typing
from pathlib import Path
from typing import Any

import attrs
from attrs import evolve

from wflang.compiler.compile import compile_workflow
from wflang.dsl.parser import parse_file
from wflang.runtime import ir
from wflang.runtime import table as tb

TABLES = Path(__file__).parent / "data" / "tables"
OLD = TABLES / "unchanged.3fcedfa.json"

#: The fields of each class of the table's JSON at 3fcedfa, the format's first release.
FIRST_RELEASE: dict[str, tuple[str, ...]] = {
    "Action": ("kind", "mapping", "state"),
    "CallEntry": ("workflow", "version", "args", "retry", "timers"),
    "ChoiceEntry": (),
    "EndEntry": ("outcome", "output", "error"),
    "Enum": ("name", "members"),
    "FieldType": ("name", "type", "has_default"),
    "InputField": ("name", "type", "default"),
    "MapEntry": ("items", "alias", "body", "concurrency", "sequential", "tolerate",
                 "tolerate_percent", "timers"),
    "Mapping": ("entries",),
    "ParallelEntry": ("branches", "join", "count", "timers"),
    "Retry": ("attempts", "initial_delay_ms", "max_delay_ms", "factor", "jitter",
              "non_retryable"),
    "Row": ("state", "event", "transitions"),
    "Shape": ("name", "fields"),
    "SleepEntry": ("duration",),
    "State": ("name", "kind", "owner", "entry"),
    "Table": ("schema", "workflow", "version", "source_hash", "start", "states", "events",
              "rows", "expressions", "input", "context", "errors", "types"),
    "TaskEntry": ("work", "service", "assignee", "args", "form", "retry", "timers"),
    "Timer": ("after", "event", "interrupting"),
    "Transition": ("guard", "target", "actions"),
    "Types": ("records", "enums", "signals", "messages", "results"),
    "WaitEntry": ("trigger", "name", "expression", "timers"),
    "Const": ("value",),
    "Dec": ("text",),
    "Load": ("root",),
    "Get": ("obj", "field"),
    "At": ("obj", "index"),
    "Apply": ("op", "args"),
    "MakeList": ("items",),
}  # fmt: skip


def _compiled() -> tb.Table:
    compiled = compile_workflow(parse_file(str(TABLES / "unchanged.wf")))
    assert compiled.table is not None, [d.message for d in compiled.check.diagnostics]
    return compiled.table


def test_a_source_that_uses_nothing_new_compiles_to_the_old_bytes_and_hash() -> None:
    old_text = OLD.read_text()
    table = _compiled()
    assert tb.dumps(table) == old_text
    assert tb.table_hash(table) == hashlib.sha256(old_text.encode()).hexdigest()


def test_an_old_table_reads_and_writes_back_byte_for_byte() -> None:
    old_text = OLD.read_text()
    assert tb.dumps(tb.loads(old_text)) == old_text
    assert tb.loads(old_text) == _compiled()


def _task_with(table: tb.Table, name: str, **changes: Any) -> tb.Table:
    """``table`` with the entry of its task ``name`` changed."""
    state = table.states[table.state_id(name)]
    assert isinstance(state.entry, tb.TaskEntry)
    changed = evolve(state, entry=evolve(state.entry, **changes))
    return evolve(table, states=tuple(changed if s is state else s for s in table.states))


def test_an_added_field_is_written_when_it_holds_more_than_its_default() -> None:
    table = _compiled()
    changed = _task_with(table, "approve", raises=("Refused",))
    written = json.loads(tb.dumps(changed))["states"][table.state_id("approve")]["entry"]
    assert written["raises"] == ["Refused"]
    assert "read_only" not in written and "assignee_from" not in written
    assert tb.loads(tb.dumps(changed)) == changed
    assert tb.table_hash(changed) != tb.table_hash(table)


def test_a_persons_empty_raises_runs_as_none() -> None:
    """A table compiled since 3467e8f and before this change wrote ``"raises": []`` for a
    person who may raise nothing; it runs as None does, so redeploying is a no-op."""
    table = _compiled()
    approve = table.states[table.state_id("approve")].entry
    assert isinstance(approve, tb.TaskEntry) and approve.raises is None
    older = _task_with(table, "approve", raises=())
    assert older != table and tb.same_behaviour(older, table)
    # a service's () is a contract (no error by name), None none
    service = _task_with(table, "approve", work="service", service="x.y", raises=())
    assert not tb.same_behaviour(service, _task_with(service, "approve", raises=None))


def test_every_field_added_since_the_first_release_is_left_out_at_its_default() -> None:
    classes = [
        c for c in vars(tb).values()
        if isinstance(c, type) and attrs.has(c) and c.__module__ == tb.__name__
        and c is not tb.Memo
    ] + list(typing.get_args(ir.IR))  # fmt: skip
    for cls in classes:
        names = tuple(a.name for a in attrs.fields(cls) if a.init)
        added = tuple(n for n in names if n not in FIRST_RELEASE.get(cls.__name__, ()))
        if cls.__name__ not in FIRST_RELEASE:
            continue  # a class of its own since (an IR node kind): no old table has it
        assert added == tb.ADDED.get(cls, ()), cls.__name__
        for name in added:
            assert attrs.fields_dict(cls)[name].default is not attrs.NOTHING, (cls, name)
