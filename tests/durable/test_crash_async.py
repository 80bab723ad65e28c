"""Crash test of async service tasks (issue 15 item 4): a worker process SIGKILLed
around the call that hands out a completion token, on both stores. A kill before the
hand-off commits runs the handler again with the same token (at least once, as any
call); once committed, the call waits and no worker runs it again. Then the client
answers every token and each instance completes once, with its answer."""

from __future__ import annotations

import collections
from collections.abc import Callable
from pathlib import Path

import pytest

from wflang.compiler.compile import compile_workflow
from wflang.dsl.parser import parse_file
from wflang.durable.client import Client
from wflang.durable.worker import Worker
from wflang.store import Store

from .helpers import REPO, crash_then_finish, history_gaps
from .worker_proc import EffectLog

N = 4
POINTS = [
    ("handler.after:2", 1),  # the second token was handed out, its hand-off not committed
    ("claim.before-commit:2", 1),  # the first's hand-off is in the lost commit
    ("handler.before:3", 0),  # two hand-offs committed: waiting, never handed out again
]


@pytest.mark.parametrize(("fault", "twice"), POINTS, ids=[p for p, _ in POINTS])
def test_a_token_is_handed_out_until_its_hand_off_commits(
    fault: str, twice: int, store_url: str, make_store: Callable[..., Store], tmp_path: Path
) -> None:
    store = make_store(store_url)
    table = compile_workflow(parse_file(REPO / "tests" / "data" / "async" / "charge.wf")).table
    assert table is not None
    store.deploy(table)
    for i in range(N):
        store.create(store.deployed("charge"), {"order_id": f"o{i}", "amount": "1.00"}, f"c{i}")
    effects = tmp_path / "effects.db"
    crash_then_finish(store, store_url, effects, "async", fault)

    handed = collections.Counter(key for key, *_ in EffectLog(effects).rows())
    assert len(handed) == N
    assert sum(n - 1 for n in handed.values()) == twice
    tasks = store.tasks(limit=100)
    assert sorted(t.status for t in tasks) == ["waiting"] * N
    client = Client(store, actor="provider")
    for t in tasks:
        client.complete_task(t.key, {"charge_id": f"ch-{t.instance_id}"})
    Worker(store, {"payments.charge": lambda **_: None}, worker_id="after").run_until_idle()
    for i in range(N):
        info = store.instance(f"c{i}")
        assert info.status == "completed", info
        assert info.instance is not None
        assert info.instance.output == {"charge_id": f"ch-c{i}"}
        assert not history_gaps(store, f"c{i}")
