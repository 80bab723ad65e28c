"""Async service tasks (issue 15 item 4) in memory: ``service S async`` hands the handler
the task's key as a completion token and waits; ``complete``/``fail`` with the token (on
the engine and the test kit) answer it, checked as a handler's answer; timeouts and
retries apply while it waits."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

from wflang.compiler.check import check
from wflang.dsl.parser import parse
from wflang.runtime.engine import TaskCall, TaskError
from wflang.runtime.ir import Value
from wflang.testing import MINUTE, WorkflowEnv

DATA = Path(__file__).resolve().parent / "data" / "async"
ORDER: dict[str, Value] = {"order_id": "o-1", "amount": Decimal("9.50")}


class Provider:
    """A payment provider that takes the work and keeps the token (a webhook answers)."""

    def __init__(self, fail_first: bool = False) -> None:
        self.tokens: list[str] = []
        self.fail_first = fail_first

    def __call__(self, order_id: str, amount: Decimal, task: TaskCall) -> None:
        self.tokens.append(task.idempotency_key)
        if self.fail_first and len(self.tokens) == 1:
            raise TaskError("Unavailable", "the provider is down", transient=True)


def env(provider: Provider) -> WorkflowEnv:
    return WorkflowEnv.from_files(DATA / "charge.wf", handlers={"payments.charge": provider})


def test_the_handler_gets_a_token_and_the_task_waits_until_completed() -> None:
    provider = Provider()
    e = env(provider)
    iid = e.start("charge", ORDER)
    (token,) = provider.tokens
    assert e.status(iid) == "running"
    assert e.open_tasks(iid) == [token]  # what the handler returned completed nothing
    e.complete(token, {"charge_id": "ch-1"})
    assert e.status(iid) == "completed"
    assert e.instance(iid).output == {"charge_id": "ch-1"}


def test_failed_with_the_token_routes_the_error() -> None:
    provider = Provider()
    e = env(provider)
    iid = e.start("charge", ORDER)
    e.fail(provider.tokens[0], "Declined", payload={"reason": "card stolen"})
    assert e.status(iid) == "failed"
    assert "enter declined" in e.decisions(iid)


def test_a_handler_that_raises_is_retried_with_a_new_token() -> None:
    provider = Provider(fail_first=True)
    e = env(provider)
    iid = e.start("charge", ORDER)
    e.advance(seconds=1)
    assert len(provider.tokens) == 2 and provider.tokens[0] != provider.tokens[1]
    e.complete(provider.tokens[1], {"charge_id": "ch-2"})
    assert e.instance(iid).output == {"charge_id": "ch-2"}


def test_the_timeout_applies_while_it_waits_and_a_late_answer_is_refused() -> None:
    provider = Provider()
    e = env(provider)
    iid = e.start("charge", ORDER)
    e.advance(minutes=60)
    assert e.status(iid) == "failed" and "enter late" in e.decisions(iid)
    with pytest.raises(KeyError, match="no open task"):
        e.complete(provider.tokens[0], {"charge_id": "ch-1"})


def test_an_answer_that_does_not_fit_fails_the_attempt_as_a_handler_s_would() -> None:
    provider = Provider()
    e = env(provider)
    iid = e.start("charge", ORDER)
    e.complete(provider.tokens[0], {"charge_id": 7})
    assert e.status(iid) == "dead_lettered"
    assert "InvalidResult" in (e.instance(iid).error or "")
    assert e.now == 0 * MINUTE


def test_an_async_task_without_an_interrupting_timeout_is_a_finding() -> None:
    source = (DATA / "charge.wf").read_text().replace("    timeout 1h -> late\n", "")
    found = [(d.code, d.message) for d in check([parse(source, "c.wf")]).diagnostics]
    assert ("WF362", "async task 'charge' has no timeout that interrupts it") in found


# ------------------------------------------------------------------ heartbeats


class Carrier:
    def __init__(self) -> None:
        self.tokens: list[str] = []

    def __call__(self, order_id: str, task: TaskCall) -> None:
        self.tokens.append(task.idempotency_key)


def booking() -> tuple[WorkflowEnv, str, str]:
    carrier = Carrier()
    e = WorkflowEnv.from_files(DATA / "booking.wf", handlers={"carrier.book": carrier})
    iid = e.start("booking", {"order_id": "o-1"})
    (token,) = carrier.tokens
    return e, iid, token


def test_heartbeats_keep_an_async_task_alive_past_its_heartbeat_timeout() -> None:
    e, iid, token = booking()
    for _ in range(5):  # 20 minutes, a heartbeat every 4
        e.advance(minutes=4)
        e.heartbeat(token)
    e.advance(minutes=4)
    assert e.status(iid) == "running"
    e.complete(token, {"booking": "b-1"})
    assert e.instance(iid).output == {"booking": "b-1"}


def test_a_missed_heartbeat_times_the_task_out_by_its_timeout_route() -> None:
    e, iid, token = booking()
    e.advance(minutes=4)
    e.heartbeat(token)
    e.advance(minutes=5)  # 9 minutes in: 5 since the last heartbeat
    assert e.status(iid) == "failed"
    decisions = e.decisions(iid)
    assert "book: missed its heartbeat" in decisions and "enter late" in decisions
    assert e.now == 9 * MINUTE
    with pytest.raises(KeyError, match="no open task"):
        e.heartbeat(token)
    with pytest.raises(KeyError, match="no open task"):
        e.complete(token, {"booking": "b-1"})


def test_the_engine_refuses_a_heartbeat_as_the_durable_client_does() -> None:
    """A call that declares no heartbeat timeout, and a human task, take no heartbeat:
    refused with the store's words (``table.heartbeat_refused``), and nothing is sent
    (no step notes an ignored heartbeat, as none is written on a store)."""
    tokens: list[str] = []

    def charge(order_id: str, amount: Decimal, task: TaskCall) -> None:
        tokens.append(task.idempotency_key)

    e = WorkflowEnv.from_files(DATA / "charge.wf", handlers={"payments.charge": charge})
    iid = e.start("charge", {"order_id": "o-1", "amount": Decimal("9.50")})
    (token,) = tokens
    before = e.history(iid)
    with pytest.raises(ValueError, match=rf"task '{token}' \(charge\) declares no heartbeat"):
        e.heartbeat(token)
    assert e.history(iid) == before
    ops = WorkflowEnv.from_files(
        DATA.parent / "cli_durable" / "opsflow.wf",
        handlers={"svc.a": lambda id, amount: {"a": 1}, "svc.b": lambda id, a: {"b": 2}},
    )
    oid = ops.start("opsflow", {"id": "x"})
    (human,) = ops.open_tasks(oid)
    before = ops.history(oid)
    with pytest.raises(
        ValueError,
        match=rf"task '{human}' is a human task that is open: only an async call under way",
    ):
        ops.heartbeat(human)
    assert ops.history(oid) == before


def test_heartbeats_never_keep_a_task_past_its_timeout() -> None:
    e, iid, token = booking()
    for _ in range(15):  # a heartbeat every 4 minutes, for the hour
        e.advance(minutes=4)
        if e.status(iid) != "running":
            break
        e.heartbeat(token)
    assert e.status(iid) == "failed" and e.now == 60 * MINUTE
    assert "timer boundary:0 of book fired" in e.decisions(iid)


def test_a_heartbeat_belongs_on_an_async_service_task() -> None:
    source = (DATA / "booking.wf").read_text().replace(" async {", " {")
    parsed = parse(source, "b.wf")
    found = [(d.code, d.message) for d in parsed.diagnostics]
    assert found == [("WF003", "'heartbeat' is for an async service task: 'book' is not async")]


def test_a_heartbeat_that_is_no_duration_is_a_type_error() -> None:
    source = (DATA / "booking.wf").read_text().replace("heartbeat 5m", 'heartbeat "5m"')
    found = [d.message for d in check([parse(source, "b.wf")]).diagnostics]
    assert any("a heartbeat must be duration, not string" in m for m in found), found
