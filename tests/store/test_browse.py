"""Pages of instances (issue 19: the console's instances page): every filter, the
search in ids and input fields, and keyset paging that neither skips nor repeats rows,
on both stores; the query plans use the indexes of migration 5."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wflang.durable.client import Client
from wflang.store import Store
from wflang.store.browse import InstanceQuery
from wflang.store.records import StoreError
from wflang.store.status import IS_ACTIVE

from .kit import MINUTE, OPS_HANDLERS, Durable, VirtualClock, opsflow, record_queries


def ids(store: Store, **query: object) -> list[str]:
    return [i.id for i in store.browse(InstanceQuery(**query)).instances]  # type: ignore[arg-type]


@pytest.fixture
def d(store: Store, clock: VirtualClock) -> Durable:
    d = Durable(store, clock, OPS_HANDLERS, opsflow(1), opsflow(2, end="fin"))
    for n in range(6):
        version = 1 if n % 2 else 2
        d.client.start("opsflow", {"id": f"cust-{n}", "amount": n}, instance_id=f"i-{n}",
                       version=version)  # fmt: skip
        clock.advance(MINUTE)
    return d


def test_every_page_newest_first_each_row_once(d: Durable) -> None:
    seen: list[str] = []
    after = None
    pages = 0
    while True:
        page = d.store.browse(InstanceQuery(newest_first=True, limit=4, after=after))
        seen += [i.id for i in page.instances]
        pages += 1
        if page.next is None:
            break
        after = page.next
        d.client.start("opsflow", {"id": "late"}, instance_id=f"late-{pages}")  # newer: not here
    assert seen == [f"i-{n}" for n in reversed(range(6))] and pages == 2
    assert ids(d.store, limit=3) == ["i-0", "i-1", "i-2"]  # oldest first, as `wf list`


def test_filters(d: Durable, clock: VirtualClock) -> None:
    store = d.store
    assert ids(store, version=1) == ["i-1", "i-3", "i-5"]
    assert ids(store, workflow="opsflow", version=2, status="pending") == ["i-0", "i-2", "i-4"]
    assert ids(store, workflow="other") == []
    t0 = store.instance("i-0").created_at
    assert ids(store, created_from=t0 + MINUTE, created_before=t0 + 3 * MINUTE) == ["i-1", "i-2"]
    d.run()  # every instance now waits at its human task
    assert set(ids(store, waiting_on="person")) == {f"i-{n}" for n in range(6)}
    assert ids(store, status="waiting", limit=2) == ["i-0", "i-1"]
    clock.advance(10 * MINUTE)
    d.complete("approve", {"ok": True}, "i-3")
    assert "i-3" not in ids(store, moved_before=store.now() - 5 * MINUTE)
    assert ids(store, waiting_on="signal:go") == ["i-3"]


def test_search_by_id_and_by_input_field(d: Durable) -> None:
    store = d.store
    d.client.start("opsflow", {"id": "x%_y"}, instance_id="odd%_id")
    assert ids(store, id_contains="-3") == ["i-3"]
    assert ids(store, id_contains="%_") == ["odd%_id"]  # taken literally
    assert ids(store, id_contains="i_") == []
    assert ids(store, input_field="id", input_value="cust-4") == ["i-4"]
    assert ids(store, input_field="amount", input_value="2") == ["i-2"]
    assert ids(store, input_field="id", input_value='"cust-1"') == []  # the quotes are text
    assert ids(store, input_field="nothing", input_value="1") == []


def test_refusals_say_why(store: Store) -> None:
    with pytest.raises(StoreError, match="not a page key"):
        store.browse(InstanceQuery(after="nonsense"))
    with pytest.raises(StoreError, match="not an input field"):
        store.browse(InstanceQuery(input_field="a'); drop table wf_instance; --"))
    assert store.browse(InstanceQuery()).instances == ()  # nothing dropped


def test_the_list_orders_use_an_index(store: Store) -> None:
    """The plans of the first page, unfiltered, by workflow, by status, and of the stuck
    ones: an index walk in order, no sort of the whole table. (SQLite chooses between
    the two indexes of the stuck ones by its statistics: with none it reads those of
    each active status and sorts them; after an ANALYZE of a full table it walks
    ``wf_instance_still``, measured on 100,000 rows.)"""
    newest = "ORDER BY created_at DESC, id DESC"
    queries: dict[str, tuple[str, tuple[object, ...]]] = {
        f"{newest}": ("", ()),
        f"WHERE workflow = ? {newest}": ("", ("w",)),
        f"WHERE status = ? {newest}": ("", ("running",)),
        f"WHERE {IS_ACTIVE} AND updated_at <= ? ORDER BY updated_at, id": ("", (5,)),
    }
    for tail, (_, params) in queries.items():
        sql = f"SELECT id FROM wf_instance {tail} LIMIT 51"
        with store.backend.read() as tx:
            if store.dialect.name == "sqlite":
                if "updated_at <=" in tail:
                    continue  # the store names the index: below
                plan = " ".join(str(r) for r in tx.query("EXPLAIN QUERY PLAN " + sql, params))  # type: ignore[arg-type]
                assert "USING INDEX" in plan or "USING COVERING INDEX" in plan, plan
                assert "TEMP B-TREE" not in plan, plan
            else:
                tx.execute("SET LOCAL enable_seqscan = off")
                plan = " ".join(str(r[0]) for r in tx.query("EXPLAIN " + sql, params))  # type: ignore[arg-type]
                assert "Index" in plan and "Sort" not in plan, plan


def test_the_stuck_ones_walk_their_index_without_statistics(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SQLite's planner, with no statistics (a store nobody ran ANALYZE on), may read
    each active status's range of an index led by the status and sort them: the stuck list
    names ``wf_instance_still`` (``Dialect.indexed_by``), walked in order, of one status
    too (no index holds those by time). Filtered by something an index of its own
    holds, the planner chooses."""
    if store.dialect.name != "sqlite":
        pytest.skip("PostgreSQL's planner chooses by its statistics, which it keeps")
    seen = record_queries(monkeypatch)
    store.browse(InstanceQuery(moved_before=5))
    store.browse(InstanceQuery(moved_before=5, status="waiting"))  # a filter of that walk
    store.browse(InstanceQuery(moved_before=5, workflow="w"))
    (stuck, _), (of_status, _), (by_workflow, _) = seen
    assert "INDEXED BY wf_instance_still" in stuck
    assert "INDEXED BY wf_instance_still" in of_status
    assert "INDEXED BY" not in by_workflow
    with store.backend.read() as tx:
        for sql, params in seen[:2]:
            plan = " ".join(str(r) for r in tx.query("EXPLAIN QUERY PLAN " + sql, params))
            assert "wf_instance_still" in plan and "TEMP B-TREE" not in plan, plan


@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    times=st.lists(st.integers(0, 3), min_size=0, max_size=12),
    size=st.integers(1, 5),
    newest_first=st.booleans(),
)
def test_pages_cover_every_row_once_in_order(
    store: Store, clock: VirtualClock, times: list[int], size: int, newest_first: bool
) -> None:
    """Whatever the ties in time (many instances started in the same millisecond) and
    the page size, the pages put together are the whole ordered list."""
    client = Client(store, actor="t")
    client.deploy(opsflow(1))
    run = uuid.uuid4().hex[:8]  # this example's instances, apart from the others'
    start = clock.ms
    for n, t in enumerate(times):
        clock.ms = start + t
        client.start("opsflow", {"id": "x"}, instance_id=f"{run}-{n:02}")
    whole = sorted(
        (store.instance(f"{run}-{n:02}") for n in range(len(times))),
        key=lambda i: (i.created_at, i.id),
        reverse=newest_first,
    )
    seen: list[str] = []
    after = None
    while True:
        page = store.browse(InstanceQuery(id_contains=run, newest_first=newest_first,
                                          limit=size, after=after))  # fmt: skip
        seen += [i.id for i in page.instances]
        assert len(page.instances) <= size
        if page.next is None:
            break
        after = page.next
    assert seen == [i.id for i in whole]
    clock.ms = start + 10


def test_a_wait_among_several_is_found_by_its_exact_label(d: Durable) -> None:
    """An instance waiting on several things (the branches of a parallel) is found by
    each label, ``_`` in a name taken literally."""
    with d.store.backend.transaction() as tx:
        tx.execute("UPDATE wf_instance SET waiting_on = ? WHERE id = ?",
                   ("signal:go_now timer", "i-1"))  # fmt: skip
        tx.execute("UPDATE wf_instance SET waiting_on = ? WHERE id = ?",
                   ("signal:goXnow timer", "i-2"))  # fmt: skip
    assert ids(d.store, waiting_on="signal:go_now") == ["i-1"]
    assert ids(d.store, waiting_on="timer") == ["i-1", "i-2"]
