"""Crash test of the event-based choice (issue 15 item 1), on both stores: two arms'
signals reach each instance's inbox back to back, and the worker process is SIGKILLed
around the step that takes the first. A step lost with its transaction took nothing
(the signals stay in the inbox); the one that commits takes the first signal, removes
the other arms' timer and subscription and buffers or drops the second: each instance
takes 'approve' exactly once, ends along its arm, and keeps no timer or subscription."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from wflang.durable.client import Client
from wflang.durable.worker import Worker
from wflang.store import Store
from wflang.store.rows import scalar

from .helpers import crash_then_finish, fixture_table, history_gaps, signals_taken

N = 4
POINTS = [
    "transition.before-commit:1",  # the signals' step lost with its transaction: redone
    "transition.after-commit:1",  # committed: the next worker must not take them again
]


def _rows(store: Store, table: str) -> int:
    with store.backend.transaction() as tx:
        return scalar(tx.query(f"SELECT count(*) FROM {table}"))


def _setup(store: Store) -> None:
    store.deploy(fixture_table("crash_first"))
    for i in range(N):
        store.create(store.deployed("crash_first"), {"id": f"o{i}"}, f"f{i}")
    Worker(store, {}, worker_id="setup").run_until_idle()  # each waits on its four arms
    assert _rows(store, "wf_subscription") == N and _rows(store, "wf_timer") == N
    client = Client(store)
    for i in range(N):  # back to back, before any worker steps them
        client.signal(f"f{i}", "approve", {"by": f"p{i}"})
        client.signal(f"f{i}", "reject", {})


@pytest.mark.parametrize("fault", POINTS)
def test_the_first_signal_wins_once_across_a_crash(
    fault: str, store_url: str, make_store: Callable[..., Store], tmp_path: Path
) -> None:
    store = make_store(store_url)
    _setup(store)
    effects = tmp_path / "effects.db"
    crash_then_finish(store, store_url, effects, "sends", fault)

    problems: list[str] = []
    for i in range(N):
        iid = f"f{i}"
        info = store.instance(iid)
        if info.status != "completed" or info.instance is None:
            problems.append(f"{iid}: {info.status}")
            continue
        if info.instance.output != {"by": f"p{i}"}:
            problems.append(f"{iid} ended with {info.instance.output}")
        problems += history_gaps(store, iid)
        taken = signals_taken(store, iid)
        if taken["approve"] != 1 or taken["reject"] > 1:
            problems.append(f"{iid} took {dict(taken)}")
    assert not problems, "\n".join(problems)
    assert _rows(store, "wf_subscription") == 0
    assert _rows(store, "wf_timer") == 0
