"""Async service tasks on both stores (issue 15 item 4): the worker runs the handler with
the task's key as a completion token and the call waits (``waiting``, no worker holds
it) until the client, or ``wf tasks complete``/``fail`` with the token, answers it; the
answer is checked as a handler's (a refused one changes nothing); the timeout applies
while it waits; and the store ends where the engine ends."""

from __future__ import annotations

import json
import time
from decimal import Decimal
from pathlib import Path

import pytest

from wflang.cli import main
from wflang.cli.values import when
from wflang.durable.client import InvalidValue
from wflang.runtime.engine import TaskCall
from wflang.runtime.ir import Value
from wflang.store import Store
from wflang.store.records import IllegalAction, UnknownTask
from wflang.testing import WorkflowEnv

from .kit import HOUR, MINUTE, T0, Durable, VirtualClock, compile_text, replays_exactly, snapshot

CHARGE = compile_text(
    (Path(__file__).resolve().parents[1] / "data" / "async" / "charge.wf").read_text()
)
ORDER: dict[str, Value] = {"order_id": "o-1", "amount": Decimal("9.50")}


class Provider:
    def __init__(self) -> None:
        self.tokens: list[str] = []

    def __call__(self, order_id: str, amount: Decimal, task: TaskCall) -> None:
        self.tokens.append(task.idempotency_key)


def started(store: Store, clock: VirtualClock) -> tuple[Durable, Provider, str]:
    provider = Provider()
    d = Durable(store, clock, {"payments.charge": provider}, CHARGE)
    d.start("charge", ORDER, "c-1")
    (token,) = provider.tokens
    return d, provider, token


def test_the_call_waits_for_its_token_and_the_client_completes_it(
    store: Store, clock: VirtualClock
) -> None:
    d, _, token = started(store, clock)
    task = store.task(token)
    assert (task.kind, task.status) == ("service", "waiting")
    assert d.run() == 0  # no worker takes it again
    d.client.complete_task(token, {"charge_id": "ch-1"})
    d.run()
    assert d.status("c-1") == "completed"
    assert d.instance("c-1").output == {"charge_id": "ch-1"}
    assert store.task(token).status == "done"
    replays_exactly(store, "c-1")
    env = WorkflowEnv([CHARGE], {"payments.charge": Provider()}, now=T0)
    env.start("charge", ORDER, instance_id="c-1")
    env.complete(token, {"charge_id": "ch-1"})
    assert env.instance("c-1").output == d.instance("c-1").output


def test_a_refused_answer_changes_nothing(store: Store, clock: VirtualClock) -> None:
    d, _, token = started(store, clock)
    before = snapshot(store, "c-1")
    with pytest.raises(InvalidValue, match="charge_id"):
        d.client.complete_task(token, {"charge_id": 7})
    with pytest.raises(InvalidValue, match="reason"):
        d.client.raise_error(token, "Declined", {"why": "x"})
    assert snapshot(store, "c-1") == before


def test_the_timeout_cancels_the_waiting_call(store: Store, clock: VirtualClock) -> None:
    d, _, token = started(store, clock)
    d.advance(HOUR)
    assert d.status("c-1") == "failed"
    assert store.task(token).status == "cancelled"
    with pytest.raises(IllegalAction, match="is cancelled, not open"):
        d.client.complete_task(token, {"charge_id": "ch-1"})


def test_wf_tasks_complete_and_fail_with_the_token(
    store: Store, clock: VirtualClock, url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # The command line writes at the time of day: the virtual clock starts there.
    clock.ms = int(time.time() * 1000)
    d, provider, token = started(store, clock)
    assert main(["tasks", "fail", token, "--error", "Declined", "--payload",
                 '{"reason": "stolen card"}', "--store", url]) == 0  # fmt: skip
    assert capsys.readouterr().out == f"task {token} failed with Declined\n"
    clock.ms = int(time.time() * 1000) + 1000
    d.run()
    assert d.status("c-1") == "failed"
    d.start("charge", ORDER, "c-2")
    second = provider.tokens[-1]
    assert main(["tasks", "complete", second, "--output", '{"charge_id": "ch-9"}',
                 "--store", url]) == 0  # fmt: skip
    clock.ms = int(time.time() * 1000) + 1000
    d.run()
    assert d.instance("c-2").output == {"charge_id": "ch-9"}
    assert main(["tasks", "fail", second, "--error", "Declined", "--store", url]) == 1
    assert "not open" in capsys.readouterr().err


def test_pending_async_calls_are_listed_with_their_token_and_deadline(
    store: Store, clock: VirtualClock, url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """``Client.pending_calls`` and ``wf tasks list``: each async call waiting for its
    token, with its workflow, instance, since when it waits (the hand-off) and its
    deadline (its interrupting timeout), beside the human tasks; filtered by kind,
    workflow and instance. A call answered or timed out is no longer listed."""
    clock.ms = int(time.time() * 1000)  # the command line writes at the time of day
    d, provider, token = started(store, clock)
    handed = clock.ms
    clock.ms += 1000
    d.start("charge", ORDER, "c-2")
    second = provider.tokens[-1]
    calls = d.client.pending_calls()
    assert [(c.key, c.instance_id, c.workflow, c.version, c.node, c.service) for c in calls] == [
        (token, "c-1", "charge", 1, "charge", "payments.charge"),
        (second, "c-2", "charge", 1, "charge", "payments.charge"),
    ]
    assert (calls[0].since, calls[0].deadline) == (handed, handed + HOUR)
    assert [c.key for c in d.client.pending_calls(instance_id="c-2")] == [second]
    assert d.client.pending_calls(workflow="other") == []

    assert main(["tasks", "list", "--store", url]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 and lines[0].startswith(
        f"{token}  async call payments.charge at charge  charge v1  c-1  since "
    )
    assert lines[0].endswith(f"  deadline {when(handed + HOUR)}")
    assert main(["tasks", "list", "--kind", "async", "--instance", "c-2", "--json",
                 "--store", url]) == 0  # fmt: skip
    (listed,) = json.loads(capsys.readouterr().out)
    assert listed == {
        "kind": "async", "key": second, "instance_id": "c-2", "workflow": "charge",
        "version": 1, "node": "charge", "service": "payments.charge",
        "since": handed + 1000, "deadline": handed + 1000 + HOUR,
    }  # fmt: skip
    assert main(["tasks", "list", "--kind", "human", "--store", url]) == 0
    assert capsys.readouterr().out == "no open human tasks\n"

    d.client.complete_task(token, {"charge_id": "ch-1"})
    assert [c.key for c in d.client.pending_calls()] == [second]
    d.advance(HOUR)  # c-2's timeout
    assert d.client.pending_calls() == []
    assert main(["tasks", "list", "--store", url]) == 0
    assert capsys.readouterr().out == "no open human tasks or pending async calls\n"


BOOKING = compile_text(
    (Path(__file__).resolve().parents[1] / "data" / "async" / "booking.wf").read_text()
)


def booked(store: Store, clock: VirtualClock) -> tuple[Durable, str]:
    tokens: list[str] = []

    def book(order_id: str, task: TaskCall) -> None:
        tokens.append(task.idempotency_key)

    d = Durable(store, clock, {"carrier.book": book}, BOOKING)
    d.start("booking", {"order_id": "o-1"}, "b-1")
    return d, tokens[0]


def test_heartbeats_through_the_client_keep_the_call_alive(
    store: Store, clock: VirtualClock
) -> None:
    """Each heartbeat starts the heartbeat timeout again (the deadline moves with it);
    missed, the call times out by the timeout's route, as on the engine."""
    d, token = booked(store, clock)
    assert [c.deadline for c in d.client.pending_calls()] == [clock.ms + 5 * MINUTE]
    for _ in range(3):
        d.advance(4 * MINUTE)
        d.client.heartbeat(token)
        d.run()
        assert [c.deadline for c in d.client.pending_calls()] == [clock.ms + 5 * MINUTE]
    assert d.status("b-1") == "running"
    d.advance(5 * MINUTE)
    assert d.status("b-1") == "failed"
    assert store.task(token).status == "cancelled"
    with pytest.raises(IllegalAction, match="only an async call under way takes a heartbeat"):
        d.client.heartbeat(token)
    replays_exactly(store, "b-1")
    env = WorkflowEnv([BOOKING], {"carrier.book": lambda order_id: None}, now=T0)
    env.start("booking", {"order_id": "o-1"}, instance_id="b-1")
    (key,) = env.open_tasks("b-1")
    for _ in range(3):
        env.advance(minutes=4)
        env.heartbeat(key)
    env.advance(minutes=5)
    stored = [x for row in store.history("b-1") for x in row.entry.decisions]
    assert env.decisions("b-1") == stored


def test_a_heartbeat_for_a_call_without_one_is_refused_and_changes_nothing(
    store: Store, clock: VirtualClock
) -> None:
    d, _, token = started(store, clock)  # charge.wf declares no heartbeat
    before = snapshot(store, "c-1")
    with pytest.raises(IllegalAction, match="declares no heartbeat timeout"):
        d.client.heartbeat(token)
    with pytest.raises(UnknownTask, match="no task 'nope'"):
        d.client.heartbeat("nope")
    assert snapshot(store, "c-1") == before


def test_wf_tasks_heartbeat_with_the_token(
    store: Store, clock: VirtualClock, url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    clock.ms = int(time.time() * 1000)  # the command line writes at the time of day
    d, token = booked(store, clock)
    clock.ms += 4 * MINUTE
    assert main(["tasks", "heartbeat", token, "--store", url]) == 0
    assert capsys.readouterr().out == f"heartbeat of task {token} sent\n"
    d.run()
    clock.ms += 4 * MINUTE
    d.run()
    assert d.status("b-1") == "running"  # 8 minutes in, 4 since the heartbeat
    assert main(["tasks", "heartbeat", "nope", "--store", url]) == 1
    assert "no task 'nope'" in capsys.readouterr().err
