"""A worker goes again at once only when work may be left (``Advanced.more``, issue 18).

An advance that took all there was to find (fewer ready instances than it could take,
nothing made due for an instance) is not followed by another at once: the worker waits
for a result, a notification or its poll. A handler it has just started then runs at
once instead of after the next advance's CPU (in one process they share the GIL): the
latency from a signal to its handler's start.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

from wflang.durable.worker import Worker
from wflang.runtime import instance as rt
from wflang.runtime.ir import Value
from wflang.store import Store
from wflang.store.records import Advanced

from .helpers import VirtualClock, fixture_table

BOUND_S = 60  # a bound against a hang; the worker's own poll is an hour away


def test_an_advance_says_whether_work_may_be_left(
    store_url: str, make_store: Callable[..., Store], clock: VirtualClock
) -> None:
    store = make_store(store_url, clock=clock)
    store.carries = False  # the general path's answer (a carried step's is always True)
    store.deploy(fixture_table("chain"))
    for iid in ("c1", "c2"):
        store.create(store.deployed("chain"), {}, iid)
    # Each step's call is claimed at once (a call left ready is work left too).
    full = store.advance("w", instances=1, claim=5)  # as many as it could take: one
    assert (full.instances, full.more) == (1, True)
    rest = store.advance("w", instances=5, claim=5)  # all there was
    assert (rest.instances, rest.more) == (1, False)
    idle = store.advance("w", instances=5, claim=5)
    assert (idle.transitions, idle.more) == (0, False)
    # A step that starts a child (here: fails for want of the callee, in its own inbox)
    # makes work due now.
    store.deploy(fixture_table("parent"))
    store.create(store.deployed("parent"), {"id": "p"}, "p1")
    started = store.advance("w", instances=5, claim=5)
    assert (started.instances, started.more) == (1, True)
    assert store.advance("w", instances=5, claim=5).instances == 1  # the failure, stepped
    store.create(store.deployed("chain"), {}, "c3")
    left = store.advance("w", instances=5, claim=0)  # its first call left ready: work left
    assert (left.instances, left.claimed, left.more) == (1, (), True)


def test_a_carried_start_says_work_may_be_left(
    store_url: str, make_store: Callable[..., Store], clock: VirtualClock
) -> None:
    """The start of the one instance this store created is carried (no first reads,
    ``wflang.store.carried``): it looked for no other work, so it says some may be left,
    and the general advance after it finds that there is none."""
    store = make_store(store_url, clock=clock)
    store.deploy(fixture_table("chain"))
    store.advance("w", instances=5, claim=5)  # a general advance before: carrying allowed
    store.create(store.deployed("chain"), {}, "c1")
    carried = store.advance("w", instances=5, claim=5)
    assert (carried.transitions, len(carried.claimed), carried.more) == (1, 1, True)
    general = store.advance("w", instances=5, claim=5)
    assert (general.transitions, general.claimed, general.more) == (0, (), False)


def test_a_worker_that_took_all_the_work_waits_while_its_handler_runs(
    store_url: str, make_store: Callable[..., Store]
) -> None:
    """The first advance starts the instance and claims its first call; the worker then
    waits (no advance while the handler runs, which it did before)."""
    store = make_store(store_url)
    store.deploy(fixture_table("chain"))
    store.create(store.deployed("chain"), {}, "c1")
    started, release, finished = threading.Event(), threading.Event(), threading.Event()
    advances: list[Advanced] = []

    def op(**kw: Value) -> dict[str, Value]:
        started.set()
        assert release.wait(BOUND_S)
        return {"value": 1}

    def seen(adv: Advanced) -> None:
        advances.append(adv)
        if "c1" in adv.finished:
            finished.set()

    class Wake(threading.Event):
        """The worker's wake-up event, telling each time the worker goes idle."""

        idle = threading.Semaphore(0)

        def wait(self, timeout: float | None = None) -> bool:
            self.idle.release()
            return super().wait(timeout)

    worker = Worker(store, {"svc.op": op}, poll_ms=3_600_000, on_advance=seen)
    worker.wake = wake = Wake()
    thread = threading.Thread(target=worker.run)
    thread.start()
    try:
        assert started.wait(BOUND_S)
        assert wake.idle.acquire(timeout=BOUND_S)  # idle, the handler still running
        assert [(a.transitions, len(a.claimed), a.more) for a in advances] == [(1, 1, False)]
        release.set()
        assert finished.wait(BOUND_S)
    finally:
        release.set()
        worker.stop()
        thread.join(timeout=BOUND_S)
    assert store.instance("c1").status == "completed"


def test_a_carried_step_that_frees_its_slot_says_whether_work_is_left(
    store_url: str, make_store: Callable[..., Store], clock: VirtualClock
) -> None:
    """A carried step that leases no next call (here: the one that ends its instance)
    asks, with its writes, whether anything is due for the slot it frees: nothing, and
    ``run_until_idle`` stops there, with no advance to find nothing; something (an
    instance another store created, which this one has not heard of), and it goes on."""
    store = make_store(store_url, clock=clock)
    store.deploy(fixture_table("chain"))
    advances: list[Advanced] = []

    def op(**kw: Value) -> dict[str, Value]:
        return {"value": 1}

    worker = Worker(store, {"svc.op": op}, concurrency=1, batch=1, group_commit=False,
                    on_advance=advances.append)  # fmt: skip
    store.create(store.deployed("chain"), {}, "c1")
    worker.run_until_idle()
    last = advances[-1]
    assert (last.finished, last.transitions, last.more) == (("c1",), 1, False)
    other = make_store(store_url, clock=clock)
    store.create(store.deployed("chain"), {}, "c2")  # started without reads (carried)
    other.create(other.deployed("chain"), {}, "c3")
    advances.clear()
    worker.run_until_idle()
    assert {i.id: i.status for i in store.instances()} == {
        "c1": "completed", "c2": "completed", "c3": "completed"
    }  # fmt: skip
    ended = [a for a in advances if a.finished]
    assert [(a.finished, a.more) for a in ended] == [(("c2",), True), (("c3",), False)]


def test_run_until_idle_goes_on_when_the_calls_it_looked_at_were_cancelled(
    store_url: str, make_store: Callable[..., Store], clock: VirtualClock
) -> None:
    """A worker with one slot looks at one due call; if the step it takes cancels that
    call (its instance was cancelled), others may still be due: the advance says so
    (``Claims.crowded``) and ``run_until_idle`` goes on (was: it stopped, leaving b's
    first call ready; found by review)."""
    from wflang.durable.client import Client

    store = make_store(store_url, clock=clock)
    client = Client(store, actor="t")
    client.deploy(fixture_table("chain"))
    for iid in ("a", "b"):
        client.start("chain", {}, instance_id=iid)
    store.advance("w0", instances=5, claim=0)  # both started, their first calls left ready
    client.cancel("a", compensate=False, reason="x")

    def op(**kw: Value) -> dict[str, Value]:
        return {"value": 1}

    Worker(store, {"svc.op": op}, concurrency=1, batch=32).run_until_idle()
    assert (store.instance("a").status, store.instance("b").status) == ("cancelled", "completed")


def test_run_until_idle_goes_on_after_a_dead_letter_with_events_left(
    store_url: str, make_store: Callable[..., Store], clock: VirtualClock,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    """The careful path dead-letters an instance at the event it cannot step and leaves
    the events after it in its inbox, due now: the advance says work may be left, and
    ``run_until_idle`` takes them (was: it stopped; found by review)."""
    from wflang.durable.client import Client
    from wflang.runtime import step as steps

    store = make_store(store_url, clock=clock)
    client = Client(store, actor="t")
    client.deploy(fixture_table("approval"))
    client.start("approval", {"id": "x"}, instance_id="a1")
    worker = Worker(store, {}, concurrency=4, batch=32)
    worker.run_until_idle()
    client.signal("a1", "approve", {"approved": True, "by": "p1"}, key="k1")
    client.signal("a1", "approve", {"approved": True, "by": "p2"}, key="k2")
    step = steps.step

    def poisoned(table: Any, inst: Any, event: Any, now: int, limits: Any) -> Any:
        if isinstance(event, rt.SignalReceived) and event.key == "k1":
            raise ZeroDivisionError("poison")
        return step(table, inst, event, now, limits)

    monkeypatch.setattr(steps, "step", poisoned)
    worker.run_until_idle()
    assert store.instance("a1").status == "dead_lettered"
    assert worker.run_until_idle() == 0  # the second signal was taken the first time
    assert store.pending("a1") == []


def test_a_worker_that_takes_no_instance_starts_none(
    store_url: str, make_store: Callable[..., Store], clock: VirtualClock
) -> None:
    """An advance that may take no instance (a worker stopping) carries no start either
    (found by review)."""
    store = make_store(store_url, clock=clock)
    store.deploy(fixture_table("chain"))
    store.advance("w", instances=5, claim=5)  # carrying allowed from here
    store.create(store.deployed("chain"), {}, "c1")
    assert store.advance("w", instances=0, claim=0).transitions == 0
    assert store.instance("c1").status == "pending"
