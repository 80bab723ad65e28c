"""Duplicate and early signals at the store level (issue 5), on both stores.

``tests/data/durable/approval.wf`` sleeps a minute, then waits for the signal
``approve``: a signal sent during the sleep arrives before its wait.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import pytest

from wflang.durable.worker import Worker
from wflang.runtime import instance as rt
from wflang.runtime.ir import Value
from wflang.store import Store
from wflang.store.records import UnknownInstance

from .helpers import VirtualClock, fixture_table, history_gaps

SLEEP_MS = 60_000


def _approval(store: Store, *ids: str) -> None:
    store.deploy(fixture_table("approval"))
    deployed = store.deployed("approval")
    for iid in ids:
        store.create(deployed, {"id": iid}, iid)


def _approve(by: str, approved: bool = True) -> rt.SignalReceived:
    return rt.SignalReceived("approve", {"approved": approved, "by": by})


def _run(store: Store) -> int:
    return Worker(store, {}, worker_id="w").run_until_idle()


def _signals_taken(store: Store, iid: str) -> list[rt.SignalReceived]:
    return [
        r.entry.event for r in store.history(iid) if isinstance(r.entry.event, rt.SignalReceived)
    ]


def _output(store: Store, iid: str) -> dict[str, Value] | None:
    inst = store.instance(iid).instance
    return None if inst is None else inst.output


def test_a_duplicate_signal_is_taken_once(
    store_url: str, make_store: Callable[..., Store], clock: VirtualClock
) -> None:
    store = make_store(store_url, clock=clock)
    _approval(store, "x", "y")
    _run(store)
    clock.advance(SLEEP_MS)
    _run(store)  # now at the wait

    assert store.deliver("x", _approve("ada"), dedupe_key="signal:k") is True
    assert store.deliver("x", _approve("bob", False), dedupe_key="signal:k") is False
    assert store.stats().pending_events == 1
    _run(store)
    assert store.deliver("x", _approve("eve"), dedupe_key="signal:k") is False  # still a dup
    assert store.deliver("y", _approve("eve"), dedupe_key="signal:k") is True  # per instance
    _run(store)

    assert _signals_taken(store, "x") == [_approve("ada")]
    assert store.instance("x").status == "completed"
    assert _output(store, "x") == {"approved": True, "by": "ada"}
    assert store.stats().pending_events == 0
    assert not history_gaps(store, "x")


def test_racing_duplicate_deliveries_store_one(
    store_url: str, make_store: Callable[..., Store], clock: VirtualClock
) -> None:
    """Eight threads deliver the same key at once: exactly one delivery is stored."""
    store = make_store(store_url, clock=clock)
    _approval(store, "x")
    _run(store)

    def deliver(k: int) -> bool:
        return store.deliver("x", _approve(f"t{k}"), dedupe_key="signal:race")

    with ThreadPoolExecutor(8) as pool:
        outcomes = list(pool.map(deliver, range(8)))
    assert outcomes.count(True) == 1, outcomes
    clock.advance(SLEEP_MS)
    _run(store)
    taken = _signals_taken(store, "x")
    assert len(taken) == 1
    assert taken[0] == _approve(f"t{outcomes.index(True)}")
    assert store.instance("x").status == "completed"


@pytest.mark.parametrize("when", ["before-start", "during-sleep"])
def test_an_early_signal_is_buffered_until_the_wait(
    when: str, store_url: str, make_store: Callable[..., Store], clock: VirtualClock
) -> None:
    store = make_store(store_url, clock=clock)
    _approval(store, "x")
    if when == "during-sleep":
        _run(store)
        assert store.instance("x").status == "waiting"  # asleep: a timer
    assert store.deliver("x", _approve("ada"), dedupe_key="signal:early") is True
    _run(store)

    # The signal is in the history (buffered), but the instance still sleeps.
    info = store.instance("x")
    assert info.status == "waiting"
    assert _output(store, "x") is None
    assert _signals_taken(store, "x") == [_approve("ada")]
    assert store.stats().pending_events == 0

    clock.advance(SLEEP_MS)
    _run(store)
    assert store.instance("x").status == "completed"
    assert _output(store, "x") == {"approved": True, "by": "ada"}
    assert _signals_taken(store, "x") == [_approve("ada")]  # taken once, not twice
    events = [type(r.entry.event).__name__ for r in store.history("x")]
    assert events == ["NoneType", "SignalReceived", "TimerFired"]
    assert not history_gaps(store, "x")


def test_a_signal_to_an_unknown_instance_writes_nothing(
    store_url: str, make_store: Callable[..., Store], clock: VirtualClock
) -> None:
    store = make_store(store_url, clock=clock)
    _approval(store, "x")
    before = store.stats()
    with pytest.raises(UnknownInstance, match="no instance 'nope'") as err:
        store.deliver("nope", _approve("ada"), dedupe_key="signal:k")
    assert err.value.instance_id == "nope"
    assert store.stats() == before
    with pytest.raises(UnknownInstance):
        store.history("nope")
    # The key was not used up for the instance that does exist.
    assert store.deliver("x", _approve("ada"), dedupe_key="signal:k") is True
