"""Crash test of send tasks (issue 15 item 3): a worker process SIGKILLed around the step
that sends, on both stores. The send is part of the step's transaction: a step lost
with its transaction sent nothing, and the one that commits sends once. Each shop
instance takes exactly one signal and one message from its sender, and each sender
writes exactly one outbox row per send."""

from __future__ import annotations

import collections
from collections.abc import Callable
from pathlib import Path

import pytest

from wflang.compiler.compile import compile_workflow
from wflang.dsl.parser import parse_file
from wflang.durable.worker import Worker
from wflang.store import Store

from .helpers import REPO, crash_then_finish, fixture_table, history_gaps, signals_taken

N = 4
POINTS = [
    # The booking's result, the two sends and the end commit together: lost, then redone.
    "transition.before-commit:2",
    "transition.before-commit:3",
    # Committed with its sends: the next worker must not send again.
    "transition.after-commit:2",
    "handler.after:2",
]


def _setup(store: Store) -> None:
    shop = compile_workflow(parse_file(REPO / "tests" / "data" / "sends" / "shop.wf")).table
    assert shop is not None
    store.deploy(shop)
    for i in range(N):
        store.create(store.deployed("shop"), {"order_id": f"o{i}"}, f"shop{i}")
    # The shops wait (and are subscribed) before any sender is there to run.
    Worker(store, {}, worker_id="setup").run_until_idle()
    store.deploy(fixture_table("crash_sends"))
    for i in range(N):
        store.create(store.deployed("crash_sends"), {"id": f"o{i}", "shop": f"shop{i}"}, f"s{i}")


@pytest.mark.parametrize("fault", POINTS)
def test_a_send_happens_once_with_its_step(
    fault: str, store_url: str, make_store: Callable[..., Store], tmp_path: Path
) -> None:
    store = make_store(store_url)
    _setup(store)
    effects = tmp_path / "effects.db"
    crash_then_finish(store, store_url, effects, "sends", fault)

    problems: list[str] = []
    for i in range(N):
        for iid in (f"s{i}", f"shop{i}"):
            if store.instance(iid).status != "completed":
                problems.append(f"{iid}: {store.instance(iid).status}")
            problems += history_gaps(store, iid)
        taken = signals_taken(store, f"shop{i}")
        if taken != {"packed": 1, "shipped": 1}:
            problems.append(f"shop{i} took {dict(taken)}")
        output = store.instance(f"shop{i}").instance
        assert output is not None
        if output.output != {"boxes": 1, "carrier": f"carrier-o{i}"}:
            problems.append(f"shop{i} ended with {output.output}")
    rows = collections.Counter(
        (e.instance_id, e.kind) for e in store.outbox(limit=1000) if e.kind.endswith(".sent")
    )
    want = {(f"s{i}", kind): 1 for i in range(N) for kind in ("signal.sent", "message.sent")}
    assert not problems, "\n".join(problems)
    assert rows == want
