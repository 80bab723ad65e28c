"""``Worker.run_new``: an instance created in the transaction that takes its start
(a carried start, ``wflang.store.carried``), one commit fewer than ``Store.create``
then ``run_until_idle``, and otherwise the same, on both stores."""

from __future__ import annotations

from typing import Any

import pytest

from wflang.durable.worker import Worker
from wflang.runtime import codec
from wflang.runtime import instance as rt
from wflang.store import Store
from wflang.store.advance import Advance
from wflang.store.records import Advanced, IllegalAction

from .kit import VirtualClock
from .test_carried import CHAIN, Spy, ok, renamed


class Counted:
    """The advances of a worker that committed something, and the store's creates."""

    def __init__(self, store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
        self.commits = 0
        self.created: list[bool] = []
        create = store.create

        def counted_create(*args: Any, **kw: Any) -> bool:
            self.created.append(create(*args, **kw))
            return self.created[-1]

        monkeypatch.setattr(store, "create", counted_create)

    def __call__(self, adv: Advanced) -> None:
        self.commits += adv.transitions > 0


def chain_worker(store: Store, counted: Counted) -> Worker:
    store.deploy(CHAIN)
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
    assert counted.created == [False]  # the fused insert found the id: create judged it
    with pytest.raises(IllegalAction, match="'i1' already exists with another workflow or input"):
        worker.run_new(deployed, {"n": 7}, "i1")
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


def test_run_new_refuses_an_input_it_cannot_store_and_writes_nothing(
    store: Store, clock: VirtualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    counted = Counted(store, monkeypatch)
    worker = chain_worker(store, counted)
    bad: Any = {"n": b"bytes"}  # not a value of the language: the codec refuses it
    with pytest.raises(TypeError, match="bytes is not a JSON value"):
        worker.run_new(store.deployed("chain"), bad, "i1")
    assert store.instances(limit=10) == []
    assert counted.commits == 0
