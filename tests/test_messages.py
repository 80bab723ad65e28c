"""Messages published by correlation, in memory (the step function, the engine and the
test kit): a `wait ...: message M correlate EXPR` takes a message published for the
value EXPR had when the wait began, and no other."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

from wflang.compiler.compile import compile_workflow
from wflang.dsl.parser import parse
from wflang.runtime import instance as rt
from wflang.runtime.correlation import awaited_messages, correlation_text
from wflang.runtime.ir import Value
from wflang.runtime.replay import replay
from wflang.runtime.table import Table
from wflang.testing import WorkflowEnv

SETTLE = (Path(__file__).resolve().parents[1] / "tests" / "data" / "settle.wf").read_text()

HOUR = 3_600_000


@pytest.fixture(scope="module")
def table() -> Table:
    compiled = compile_workflow(parse(SETTLE, "settle.wf"))
    assert compiled.table is not None, [d.message for d in compiled.check.diagnostics]
    return compiled.table


def paid(order_id: str, amount: str = "9.50") -> dict[str, Value]:
    return {"order_id": order_id, "amount": Decimal(amount)}


def test_a_message_reaches_only_the_instance_with_its_correlation(table: Table) -> None:
    env = WorkflowEnv([table])
    one = env.start("settle", {"order_id": "o-1", "customer_no": 7})
    two = env.start("settle", {"order_id": "o-2", "customer_no": 8})
    assert awaited_messages(env.instance(one)) == {0: ("paid", "o-1")}

    assert env.publish("paid", "o-1", paid("o-1")) == [one]

    assert env.instance(one).context["amount"] == Decimal("9.50")
    assert [t.waiting for t in env.instance(one).tokens] == ["message:refunded:7"]
    assert [t.waiting for t in env.instance(two).tokens] == ["message:paid:o-2"]
    # An int correlation is matched on its decimal text.
    assert env.publish("refunded", 8, {"customer_no": 8}) == []  # two waits for paid first
    assert env.publish("refunded", 7, {"customer_no": 7}) == [one]
    assert env.instance(one).status is rt.Status.COMPLETED
    assert env.instance(one).output == {"amount": Decimal("9.50")}
    assert env.instance(two).status is rt.Status.WAITING


def test_without_a_ttl_a_message_nobody_waits_for_is_gone(table: Table) -> None:
    env = WorkflowEnv([table])
    assert env.publish("paid", "o-1", paid("o-1")) == []
    iid = env.start("settle", {"order_id": "o-1"})
    assert [t.waiting for t in env.instance(iid).tokens] == ["message:paid:o-1"]
    env.advance(hours=1)
    assert env.instance(iid).status is rt.Status.FAILED  # the timeout took its path


def test_with_a_ttl_later_waiters_get_it_once_each_until_it_expires(table: Table) -> None:
    env = WorkflowEnv([table])
    assert env.publish("paid", "o-1", paid("o-1", "3.00"), ttl_ms=HOUR) == []
    early = env.start("settle", {"order_id": "o-1", "customer_no": 1})
    assert env.instance(early).context["amount"] == Decimal("3.00")  # taken on entry
    other = env.start("settle", {"order_id": "o-2", "customer_no": 2})
    assert [t.waiting for t in env.instance(other).tokens] == ["message:paid:o-2"]
    env.advance(minutes=59)
    late = env.start("settle", {"order_id": "o-1", "customer_no": 3})
    assert env.instance(late).context["amount"] == Decimal("3.00")
    env.advance(minutes=2)  # expired now
    too_late = env.start("settle", {"order_id": "o-1", "customer_no": 4})
    assert [t.waiting for t in env.instance(too_late).tokens] == ["message:paid:o-1"]
    received = [d for e in env.history(early) for d in e.decisions if "received" in d]
    assert received == ["by_order received message paid"]  # once, not again


def test_a_message_sent_to_an_instance_by_id_needs_no_correlation(table: Table) -> None:
    env = WorkflowEnv([table])
    iid = env.start("settle", {"order_id": "o-1"})
    env.message(iid, "paid", paid("o-9"))  # by id: the instance chose it
    assert env.instance(iid).context["amount"] == Decimal("9.50")


def test_a_correlated_message_that_arrives_early_waits_for_its_own_wait(table: Table) -> None:
    env = WorkflowEnv([table])
    iid = env.start("settle", {"order_id": "o-1", "customer_no": 5})
    # Delivered to this instance for correlation 5 while it still waits for 'paid':
    # kept, and taken when the wait for 'refunded' with correlation 5 begins.
    env.send(iid, rt.SignalReceived("refunded", {"customer_no": 5}, "", "message", "5"))
    env.send(iid, rt.SignalReceived("refunded", {"customer_no": 6}, "", "message", "6"))
    assert [s.correlation for s in env.instance(iid).buffered] == ["5", "6"]
    env.publish("paid", "o-1", paid("o-1"))
    assert env.instance(iid).status is rt.Status.COMPLETED
    assert [s.correlation for s in env.instance(iid).buffered] == ["6"]  # not its own


def test_history_with_published_messages_replays_exactly(table: Table) -> None:
    env = WorkflowEnv([table])
    iid = env.start("settle", {"order_id": "o-1", "customer_no": 7})
    env.publish("paid", "o-1", paid("o-1"))
    env.publish("refunded", "7", {"customer_no": 7})
    inst = env.instance(iid)
    got = replay(table, iid, env.history(iid), inst.seed)
    assert got.ok, got.divergence
    assert got.instance == inst


@pytest.mark.parametrize("value", [True, Decimal("1.5"), None, ["a"]])
def test_a_correlation_is_a_string_or_an_int(value: object) -> None:
    with pytest.raises(ValueError, match="a correlation is a string or an integer"):
        correlation_text(value)  # type: ignore[arg-type]  # the bad input under test


def test_a_correlation_of_another_type_is_a_workflow_error() -> None:
    source = SETTLE.replace("input { order_id: string, customer_no: int = 0 }",
                            "input { order_id: string, customer_no: int = 0, price: decimal }")  # fmt: skip
    source = source.replace("correlate input.order_id", "correlate input.price")
    compiled = compile_workflow(parse(source, "bad.wf"))
    assert compiled.table is None
    messages = [d.message for d in compiled.check.diagnostics]
    assert messages == ["a correlation must be string or int, not decimal"]


def test_an_operator_can_complete_a_message_wait(table: Table) -> None:
    env = WorkflowEnv([table])
    iid = env.start("settle", {"order_id": "o-1", "customer_no": 7})
    env.send(iid, rt.CompleteStep("by_order", paid("o-1", "1.25")))
    assert env.instance(iid).context["amount"] == Decimal("1.25")  # read as message.amount
    assert [t.waiting for t in env.instance(iid).tokens] == ["message:refunded:7"]
    assert "by_order completed by an operator" in env.history(iid)[-1].decisions


def test_the_test_kit_checks_what_it_sends_as_a_store_would(table: Table) -> None:
    env = WorkflowEnv([table])
    iid = env.start("settle", {"order_id": "o-1", "customer_no": 7})
    with pytest.raises(ValueError, match="the message 'paid' does not fit: 'amount'"):
        env.publish("paid", "o-1", {"order_id": "o-1", "amount": "lots"})
    with pytest.raises(ValueError, match="no registered workflow declares a message 'pay'"):
        env.publish("pay", "o-1", {})
    with pytest.raises(ValueError, match="ttl_ms must not be negative"):
        env.publish("paid", "o-1", paid("o-1"), ttl_ms=-1)
    with pytest.raises(ValueError, match="the message 'paid' does not fit"):
        env.message(iid, "paid", {"zzz": 1})
    assert [t.waiting for t in env.instance(iid).tokens] == ["message:paid:o-1"]  # untouched
    # A key is published once: the second publication is ignored, as in a store.
    other = env.start("settle", {"order_id": "o-1", "customer_no": 8})
    assert env.publish("paid", "o-1", paid("o-1"), key="K") == [iid, other]
    later = env.start("settle", {"order_id": "o-1", "customer_no": 9})
    assert env.publish("paid", "o-1", paid("o-1"), key="K") == []
    assert [t.waiting for t in env.instance(later).tokens] == ["message:paid:o-1"]
