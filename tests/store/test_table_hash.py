"""Redeploying a table stored by an older compiler (issue 14 leftovers, item 3), on
SQLite and PostgreSQL: ``tests/data/tables/unchanged.3fcedfa.json`` was compiled at
3fcedfa; today's compile of the same source has its hash, so deploying it again is a
no-op that keeps the stored row; a table compiled between 3467e8f and now (a person's
empty ``raises`` written as ``[]``) is the same behaviour, and a no-op too."""

from __future__ import annotations

import hashlib
from pathlib import Path

from attrs import evolve

from wflang.compiler.compile import compile_workflow
from wflang.dsl.parser import parse_file
from wflang.durable.client import Client
from wflang.runtime import table as tb
from wflang.store import Store

TABLES = Path(__file__).parent.parent / "data" / "tables"


def _compiled() -> tb.Table:
    compiled = compile_workflow(parse_file(str(TABLES / "unchanged.wf")))
    assert compiled.table is not None, [d.message for d in compiled.check.diagnostics]
    return compiled.table


def _rows(store: Store) -> list[tuple[str, int, str]]:
    return [(t.workflow, t.version, tb.table_hash(t)) for t in store.tables()]


def test_redeploying_a_table_the_old_compiler_stored_is_a_no_op(store: Store) -> None:
    old_text = (TABLES / "unchanged.3fcedfa.json").read_text()
    old_hash = hashlib.sha256(old_text.encode()).hexdigest()
    assert tb.dumps(tb.loads(old_text)) == old_text  # stored as the old compiler wrote it
    assert store.deploy(tb.loads(old_text), "unchanged.wf") is True
    assert store.deployed("unchanged", 3).hash == old_hash

    again = Client(store).deploy(_compiled(), "unchanged.wf")
    assert (again.new, again.hash) == (False, old_hash)
    assert _rows(store) == [("unchanged", 3, old_hash)]


def test_redeploying_a_persons_empty_raises_is_a_no_op(store: Store) -> None:
    table = _compiled()
    approve = table.states[table.state_id("approve")]
    assert isinstance(approve.entry, tb.TaskEntry)
    empty = evolve(approve, entry=evolve(approve.entry, raises=()))
    between = evolve(table, states=tuple(empty if s is approve else s for s in table.states))
    assert store.deploy(between, "unchanged.wf") is True
    stored = store.deployed("unchanged", 3).hash
    assert stored != tb.table_hash(table)

    assert store.deploy(table, "unchanged.wf") is False
    assert store.deployed("unchanged", 3).hash == stored
    assert len(store.tables()) == 1
