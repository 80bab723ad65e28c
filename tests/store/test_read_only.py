"""A read-only service (``reads``, issue 14 item 6) survives compile, the table's JSON,
the deployment and a fresh store's reading of it, on SQLite and PostgreSQL; and a
named result's record with its defaults (item 5) too; a result that does not fit the
record is refused on a store as on the engine. The step treats a read-only
task as any service task: the pricing example runs durably like in memory
(tests/store/test_examples_durable.py)."""

from __future__ import annotations

from decimal import Decimal

from wflang.runtime import ir
from wflang.runtime import table as tb
from wflang.runtime.ir import Value
from wflang.store import Store

from .kit import Durable, Factory, VirtualClock, example, handlers_of, ok, replays_exactly

PRICING_INPUT: dict[str, Value] = {
    "sku": "bolt-m8",
    "qty": 3,
    "buyer": {"id": "c-1", "name": "Ada", "email": "ada@example.com", "tier": "gold"},
    "credit_limit": Decimal("100.00"),
}


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


def test_a_result_that_does_not_fit_its_named_record_dead_letters_and_writes_nothing(
    store: Store, clock: VirtualClock
) -> None:
    handlers = handlers_of(pricing__quote=ok({"supplier": "acme", "price": "cheap"}))
    d = Durable(store, clock, handlers, example("pricing"))
    iid = d.start("pricing", PRICING_INPUT, "pr-bad")
    d.advance(60_000)  # past the quote's retries: an invalid result is not retried
    assert d.status(iid) == "dead_lettered"
    got = d.instance(iid)
    assert got.error == "quote: InvalidResult 'price' must be decimal, not str"
    assert got.context["quote"] is None and got.context["price"] == 0
    assert d.recorder.services() == ["pricing.quote"]
    replays_exactly(store, iid)
