"""The path of a signal from the client to the handler it leads to (issue 18 item 3).

A client's signal is one transaction: the instance row locked, its status and the
payload checked against its version's table (cached by hash: a deployed table never
changes), the inbox row written with the COMMIT; on PostgreSQL, once the client has
read the table, one statement and one round trip, counted on the wire
(``test_round_trips.TurnCounter``). The worker's advance asks for the calls
due for its free slots with its first reads, and leases only those still due once its
steps are done.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from wflang.durable.client import Client, InvalidValue
from wflang.durable.worker import Worker
from wflang.runtime import instance as rt
from wflang.runtime.table import Table
from wflang.store import Store, postgres
from wflang.store.records import Advanced, IllegalAction, UnknownInstance

from .helpers import VirtualClock, fixture_table
from .test_round_trips import counted

SLEEP_MS = 60_000  # approval.wf's sleep before its wait
BOUND_S = 60  # a bound against a hang; the worker's own poll is an hour away


def _at_wait(store: Store, clock: VirtualClock | None, *ids: str) -> None:
    """Instances of approval.wf waiting for their signal ``approve``."""
    store.deploy(fixture_table("approval"))
    for iid in ids:
        store.create(store.deployed("approval"), {"id": iid}, iid)
    worker = Worker(store, {}, worker_id="w")
    worker.run_until_idle()
    if clock is not None:
        clock.advance(SLEEP_MS)
    else:  # the database's clock: fire the sleep's timer now
        for iid in ids:
            Client(store, actor="test").fire_timers(iid, reason=None)
    worker.run_until_idle()
    assert all(store.instance(iid).waiting_on == ("signal:approve",) for iid in ids)


def test_a_signal_costs_one_round_trip_on_postgresql(
    pg_url: str, make_store: Callable[..., Store], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(postgres, "_FRESH_S", 3600.0)  # no check of an idle connection
    with counted(pg_url) as (url, proxy):
        _at_wait(make_store(url), None, "a", "b")
        client = Client(make_store(url), actor="test")  # its own store: no table cached
        before = [proxy.turns, proxy.statements]

        def cost() -> tuple[int, int]:
            now = [proxy.turns, proxy.statements]
            spent = (now[0] - before[0], now[1] - before[1])
            before[:] = now
            return spent

        assert client.signal("a", "approve", {"approved": True, "by": "ada"}) is True
        first = cost()  # the table read once, by its hash
        assert client.signal("b", "approve", {"approved": True, "by": "bob"}, key="k") is True
        second = cost()
        assert client.signal("b", "approve", {"approved": False, "by": "eve"}, key="k") is False
        duplicate = cost()
    # (round trips, statements). The first: the lock, the table read, then the insert,
    # which notifies the workers itself if it wrote its row (no statement of its own).
    # Then, the table known: one statement, which locks the instance and inserts the row
    # if the instance is unfinished and of that version (``ops.deliver_at_once``).
    assert (first, second, duplicate) == ((3, 3), (1, 1), (1, 1))


def test_a_signal_in_one_statement_refuses_as_the_general_path_does(
    pg_url: str, make_store: Callable[..., Store], clock: VirtualClock
) -> None:
    """What the one statement cannot admit (an unknown instance, a finished one, a
    payload its version refuses) gets the general path's answer, and nothing is written."""
    store = make_store(pg_url, clock=clock)
    _at_wait(store, clock, "a", "b")
    client = Client(make_store(pg_url, clock=clock), actor="test")
    assert client.signal("a", "approve", {"approved": True, "by": "ada"})  # the table read
    with pytest.raises(UnknownInstance):
        client.signal("nobody", "approve", {"approved": True, "by": "ada"})
    with pytest.raises(InvalidValue, match="approved"):
        client.signal("b", "approve", {"approved": "yes", "by": "ada"})
    Worker(store, {}).run_until_idle()  # a takes its signal and ends
    assert store.instance("a").status == "completed"
    with pytest.raises(IllegalAction, match="'a' is completed: it cannot take the signal"):
        client.signal("a", "approve", {"approved": True, "by": "ada"})
    assert [e.event for e in store.pending("b")] == []
    assert [e.event for e in store.pending("a")] == []


def test_a_delivery_is_admitted_under_the_lock_and_a_refusal_writes_nothing(
    store_url: str, make_store: Callable[..., Store], clock: VirtualClock
) -> None:
    store = make_store(store_url, clock=clock)
    _at_wait(store, clock, "x")
    seen: list[tuple[str, str]] = []

    def refuse(status: str, table: Table) -> rt.Event:
        seen.append((status, table.workflow))
        raise IllegalAction("refused by the test")

    before = store.stats()
    with pytest.raises(IllegalAction, match="refused by the test"):
        store.deliver("x", refuse, dedupe_key="signal:k")
    assert seen == [("waiting", "approval")]
    assert store.stats() == before
    assert store.pending("x") == []

    def admit(status: str, table: Table) -> rt.Event:
        return rt.SignalReceived("approve", {"approved": True, "by": table.workflow})

    assert store.deliver("x", admit, dedupe_key="signal:k") is True  # the key not used up
    assert store.deliver("x", admit, dedupe_key="signal:k") is False
    Worker(store, {}, worker_id="w").run_until_idle()
    assert store.instance("x").status == "completed"


def test_a_due_call_cancelled_by_a_step_of_the_same_advance_is_not_leased(
    store_url: str, make_store: Callable[..., Store], clock: VirtualClock
) -> None:
    """The advance finds the call due with its first reads, then steps the instance's
    cancel, which cancels the call: the call is not leased."""
    store = make_store(store_url, clock=clock)
    store.deploy(fixture_table("chain"))
    store.create(store.deployed("chain"), {}, "c1")
    started = store.advance("w", claim=0)  # no free slot: its first call waits, ready
    assert started.transitions == 1 and not started.claimed
    [call] = store.tasks(instance_id="c1")
    assert call.status == "ready"
    store.deliver("c1", rt.CancelRequested(False, "by the test"))

    cancelled = store.advance("w", claim=1)
    assert cancelled.claimed == ()
    assert store.task(call.key).status == "cancelled"
    assert store.instance("c1").status == "cancelled"


def test_a_signal_wakes_an_idle_worker_whose_advance_takes_two_round_trips(
    pg_url: str, make_store: Callable[..., Store], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The notification names the instance: the woken worker reads its inbox with its
    first reads (one round trip), then writes the step with the COMMIT (the second)."""
    monkeypatch.setattr(postgres, "_FRESH_S", 3600.0)  # no check of an idle connection
    _at_wait(make_store(pg_url), None, "a")
    client = Client(make_store(pg_url), actor="test")
    costs: list[tuple[Advanced, int, int]] = []
    looked = threading.Semaphore(0)
    finished = threading.Event()
    with counted(pg_url) as (url, proxy):
        last = [proxy.turns, proxy.statements]

        def seen(adv: Advanced) -> None:
            costs.append((adv, proxy.turns - last[0], proxy.statements - last[1]))
            last[:] = [proxy.turns, proxy.statements]
            looked.release()
            if "a" in adv.finished:
                finished.set()

        worker = Worker(make_store(url), {}, poll_ms=3_600_000, on_advance=seen)
        with worker.woken_by_notify():
            thread = threading.Thread(target=worker.run)
            thread.start()
            try:
                assert looked.acquire(timeout=BOUND_S)  # its first pass found nothing
                assert client.signal("a", "approve", {"approved": True, "by": "ada"})
                assert finished.wait(BOUND_S), "the signal did not wake the worker"
            finally:
                worker.stop()
                thread.join(timeout=BOUND_S)
    # Its statements: the ready instances (with the due calls and the clock), the inbox;
    # then the instance's end (its calls and timers stopped, its outbox row), and its row
    # carrying its history, the inbox row it took and its status's outbox row.
    assert [(n, s) for adv, n, s in costs if adv.transitions] == [(2, 6)], costs
