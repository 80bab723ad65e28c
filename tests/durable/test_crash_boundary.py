"""Crash test of boundary signals (issue 15 item 1): while a service task is in flight
(its handler running in a worker process) its instance is nudged (a non-interrupting
boundary signal) and told to stop (an interrupting one); the worker is SIGKILLed around
those steps, on both stores. Whatever the kill lost is redone by the next worker: each
instance takes each signal once, the stop cancels the task it arrived during (the
handler's late answer completes nothing), the nudge's side path runs once, and every
history has its steps without a gap."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from wflang.store import Store

from .helpers import expire_leases, finish, fixture_table, history_gaps, signals_taken, start_worker

N = 4
POINTS = [
    "handler.after:2",  # the signals of the second call sent, its answer not committed
    "transition.before-commit:2",  # a step lost with its transaction
    "transition.after-commit:2",  # committed: the next worker must not redo it
    "transition.before-commit:4",
]


@pytest.mark.parametrize("fault", POINTS)
def test_a_boundary_signal_during_an_in_flight_task_survives_a_crash(
    fault: str, store_url: str, make_store: Callable[..., Store], tmp_path: Path
) -> None:
    store = make_store(store_url)
    store.deploy(fixture_table("crash_boundary"))
    for i in range(N):
        store.create(store.deployed("crash_boundary"), {"id": f"b{i}"}, f"b{i}")
    effects = tmp_path / "effects.db"
    crashed = start_worker(store_url, effects, "boundary", fault=fault)
    rc, out = finish(crashed)
    assert rc == -9, f"{fault} was never reached (exit {rc}):\n{out}"
    expire_leases(store, crashed.pid)
    rc, out = finish(start_worker(store_url, effects, "boundary"))
    assert rc == 0, f"the restarted worker did not finish (exit {rc}):\n{out}"

    problems: list[str] = []
    for i in range(N):
        iid = f"b{i}"
        info = store.instance(iid)
        inst = info.instance
        assert inst is not None
        if info.status != "cancelled" or inst.output != {"reason": f"stop b{i}"}:
            problems.append(f"{iid}: {info.status} with {inst.output}")
        if inst.context.get("nudged") != 1:
            problems.append(f"{iid}: the nudge's side path ran {inst.context.get('nudged')}x")
        problems += history_gaps(store, iid)
        taken = signals_taken(store, iid)
        if taken != {"nudge": 1, "stop": 1}:
            problems.append(f"{iid} took {dict(taken)}")
        caught = [d for r in store.history(iid) for d in r.entry.decisions if " caught " in d]
        if caught != ["work caught signal nudge (non-interrupting)", "work caught signal stop"]:
            problems.append(f"{iid} caught {caught}")
    assert not problems, "\n".join(problems)
    assert not [t for t in store.tasks(limit=100) if t.status in ("ready", "running")]
