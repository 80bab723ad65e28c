"""``Worker.run_new``: an instance created in the transaction that takes its start
(a carried start, ``wflang.store.carried``), one commit fewer than ``Store.create``
then ``run_until_idle``, and otherwise the same, on both stores."""

from __future__ import annotations

from typing import Any

import pytest

from wflang.durable.client import Client
from wflang.durable.operations import InvalidValue
from wflang.durable.worker import Worker
from wflang.runtime import codec
from wflang.runtime import instance as rt
from wflang.runtime.ir import Value
from wflang.store import Store, carried, ops
from wflang.store.advance import Advance
from wflang.store.records import Advanced, IllegalAction

from .kit import Factory, VirtualClock
from .test_carried import CHAIN, Spy, ok, renamed, table_of


class Counted:
    """The advances of a worker that committed something, and the store's creates."""

    def __init__(self, store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
        self.commits = 0
        self.created: list[bool] = []
        self.fused = 0  # inserts made in a start's transaction (not announced)
        create, insert = store.create, ops.create

        def counted_insert(*args: Any, **kw: Any) -> Any:
            self.fused += kw.get("announce") is False
            return insert(*args, **kw)

        monkeypatch.setattr(ops, "create", counted_insert)

        def counted_create(*args: Any, **kw: Any) -> bool:
            self.created.append(create(*args, **kw))
            return self.created[-1]

        monkeypatch.setattr(store, "create", counted_create)

    def __call__(self, adv: Advanced) -> None:
        self.commits += adv.transitions > 0


#: A chain that starts from its input.
FROM_INPUT = table_of(
    """workflow from_input version 1
input { first: int, at: timestamp? }
context { n: int = 0 }
service s.op() -> { v: int }
start a
task a: service s.op { output { n: input.first + result.v } next b }
task b: service s.op { output { n: context.n + result.v } next done }
end done: completed
"""
)


def chain_worker(store: Store, counted: Counted) -> Worker:
    store.deploy(CHAIN)
    store.deploy(FROM_INPUT)
    worker = Worker(store, {"s.op": ok}, worker_id="w-test", on_advance=counted)
    # a general advance first: a store carries steps only for a while after one
    assert worker.run_until_idle() == 0
    return worker


def history_of(store: Store, iid: str) -> list[Any]:
    rows = [
        (r.idempotency_key, r.worker, r.actor, r.reason, codec.unstructure_entry(r.entry))
        for r in store.history(iid)
    ]
    return [renamed(row, iid) for row in rows]


def test_run_new_writes_what_create_then_run_until_idle_writes_a_commit_fewer(
    store: Store, clock: VirtualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    spy = Spy(monkeypatch)
    counted = Counted(store, monkeypatch)
    worker = chain_worker(store, counted)
    deployed = store.deployed("chain")

    assert worker.run_new(deployed, {}, "fused", actor="ann", reason="why") == 5
    assert (counted.commits, counted.created) == (5, [])  # 5 steps, no create of its own
    assert (spy.guards, spy.moved) == (5, 0)  # the start and 4 results carried

    counted.commits = 0
    assert store.create(deployed, {}, "apart", actor="ann", reason="why")
    assert worker.run_until_idle() == 5
    assert (counted.commits, counted.created) == (5, [True])  # and the create's commit

    fused, apart = store.instance("fused"), store.instance("apart")
    assert (fused.status, apart.status) == ("completed", "completed")
    assert fused.instance is not None and fused.instance.context == {"n": 4}
    start = store.history("fused")[0]
    assert (start.actor, start.reason, start.entry.event) == ("ann", "why", None)
    assert (fused.created_at, fused.updated_at) == (apart.created_at, apart.updated_at)
    assert history_of(store, "fused") == history_of(store, "apart")


def test_run_new_of_an_id_that_exists_runs_what_is_due_and_creates_nothing(
    store: Store, clock: VirtualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    counted = Counted(store, monkeypatch)
    worker = chain_worker(store, counted)
    deployed = store.deployed("chain")
    assert worker.run_new(deployed, {}, "i1") == 5
    before = history_of(store, "i1")
    # the same start again (a retry after a lost answer): nothing new, nothing refused
    assert worker.run_new(deployed, {}, "i1") == 0
    # the fused insert found the id (rolled back), then create judged it
    assert (counted.fused, counted.created) == (2, [False])
    with pytest.raises(IllegalAction, match="'i1' already exists with another workflow or input"):
        worker.run_new(store.deployed("from_input"), {"first": 7}, "i1")
    assert history_of(store, "i1") == before
    info = store.instance("i1")
    assert info.instance is not None and info.instance.context == {"n": 4}


def test_run_new_where_a_start_cannot_be_carried_creates_then_starts(
    store: Store, clock: VirtualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    store.carries = False
    spy = Spy(monkeypatch)
    counted = Counted(store, monkeypatch)
    worker = chain_worker(store, counted)
    assert worker.run_new(store.deployed("chain"), {}, "i1") == 5
    assert counted.created == [True]
    assert spy.guards == 0
    info = store.instance("i1")
    assert info.status == "completed"


def test_a_fused_start_that_fails_leaves_no_instance_behind(
    store: Store, clock: VirtualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The insert rolls back with the start it rode with: the general path that follows
    creates the instance afresh (the create finds the id free) and starts it once."""
    counted = Counted(store, monkeypatch)
    worker = chain_worker(store, counted)
    flush = Advance._flush
    failed: list[str] = []

    def fails_once(self: Advance) -> None:
        if self.carried and not failed:
            failed.append("once")
            raise ValueError("a write that cannot be stored")
        flush(self)

    monkeypatch.setattr(Advance, "_flush", fails_once)
    assert worker.run_new(store.deployed("chain"), {}, "i1") == 5
    assert failed == ["once"]
    assert counted.created == [True]  # the id was free again: the insert rolled back
    rows = store.history("i1")
    assert [r.entry.seq for r in rows] == [1, 2, 3, 4, 5]
    assert rows[0].entry.event is None  # one start
    assert isinstance(rows[1].entry.event, rt.TaskCompleted)


def test_run_new_checks_and_fits_its_input_as_client_start_does(
    store: Store, clock: VirtualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Refused as ``Client.start`` refuses (nothing written, no transaction), and an
    input that fits is stored as ``Client.start`` stores it (a time as its ms)."""
    counted = Counted(store, monkeypatch)
    worker = chain_worker(store, counted)
    deployed = store.deployed("from_input")
    bad: Any = {"first": "seven"}
    with pytest.raises(InvalidValue, match="the input of from_input v1") as refused:
        worker.run_new(deployed, bad, "i1")
    with pytest.raises(InvalidValue) as by_client:
        Client(store).start("from_input", bad, instance_id="i9")
    assert str(refused.value) == str(by_client.value)
    with pytest.raises(InvalidValue, match="the instance id"):
        worker.run_new(deployed, {"first": 1}, "")
    assert store.instances(limit=10) == []
    assert (counted.commits, counted.fused, counted.created) == (0, 0, [])
    given: dict[str, Value] = {"first": 3, "at": "2026-12-03T10:00:00Z"}
    assert worker.run_new(deployed, given, "i1", actor="ann") == 3
    Client(store, actor="ann").start("from_input", given, instance_id="i2")
    worker.run_until_idle()
    stored = store.instance("i1").input
    assert stored == store.instance("i2").input == {"first": 3, "at": 1796292000000}
    assert history_of(store, "i1") == history_of(store, "i2")
    info = store.instance("i1")
    assert info.instance is not None and info.instance.context == {"n": 5}


def test_run_new_on_the_database_s_clock(opener: Factory, monkeypatch: pytest.MonkeyPatch) -> None:
    """No virtual clock: on PostgreSQL the start's time is the database's clock as the
    worker last read it (a carried step's estimate); created where the start is, and
    never after the database's clock."""
    store = opener(virtual=False)
    store.migrate()
    counted = Counted(store, monkeypatch)
    worker = chain_worker(store, counted)
    before = store.now()
    assert worker.run_new(store.deployed("chain"), {}, "i1") == 5
    after = store.now()
    info = store.instance("i1")
    assert info.status == "completed"
    assert (counted.fused, counted.created) == (1, [])
    assert before - carried.CLOCK_SLACK_MS <= info.created_at <= after
    start = store.history("i1")[0]
    assert start.entry.at == info.created_at
