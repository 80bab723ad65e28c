"""A read-only service (``reads``, issue 14 item 6) survives compile, the table's JSON,
the deployment and a fresh store's reading of it, on SQLite and PostgreSQL; and a
named result's record with its defaults (item 5) too. The step treats a read-only
task as any service task: the pricing example runs durably like in memory
(tests/store/test_examples_durable.py)."""

from __future__ import annotations

from wflang.runtime import ir
from wflang.runtime import table as tb

from .kit import Factory, example


def _entry(table: tb.Table, state: str) -> tb.TaskEntry:
    entry = table.states[table.state_id(state)].entry
    assert isinstance(entry, tb.TaskEntry)
    return entry


def test_read_only_and_result_defaults_survive_a_store(opener: Factory) -> None:
    table = example("pricing")
    assert [_entry(table, s).read_only for s in ("quote", "hold", "score")] == [True, False, True]
    deployer = opener()
    deployer.migrate()
    assert deployer.deploy(table)
    (loaded,) = opener().tables()  # another store: read from the database, not a cache
    assert loaded == table and tb.table_hash(loaded) == tb.table_hash(table)
    assert [_entry(loaded, s).read_only for s in ("quote", "hold", "score")] == [True, False, True]
    quote = {s.name: s for s in loaded.types.results}["quote"]
    currency = {f.name: f for f in quote.fields}["currency"]
    assert currency.default is not None
    assert loaded.expressions[currency.default] == ir.Const("EUR")
