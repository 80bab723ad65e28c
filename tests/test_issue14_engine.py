"""Issue 14's features run on the engine itself, not through the test kit (the audit of
items 3 to 8 found them run on the kit, in tests/test_examples_run.py, and on both
stores, but not on ``Engine`` with plain handlers): the error being handled with its
typed payload (item 3), ``now()`` and time text from a handler (item 4), a named
record as a service result with its defaults (item 5), a read-only service that a saga
does not undo (item 6), an assignee expression (item 7) and a person raising a
declared error (item 8), on the two new examples."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

from wflang.compiler.compile import compile_workflow
from wflang.dsl.parser import parse_file
from wflang.runtime import instance as rt
from wflang.runtime.engine import Engine
from wflang.runtime.ir import Value
from wflang.runtime.outcome import Handler, TaskError
from wflang.runtime.table import Table
from wflang.runtime.validate import InvalidValue

EXAMPLES = Path(__file__).parent.parent / "examples"
T0 = 1_796_119_200_000  # 2026-12-01T10:00:00Z
HOUR = 3_600_000
DAY = 24 * HOUR

CLAIM: dict[str, Value] = {
    "claim_id": "x-1",
    "employee": "ada",
    "team": "research",
    "amount": Decimal("120.50"),
}


def _table(name: str) -> Table:
    compiled = compile_workflow(parse_file(str(EXAMPLES / name)))
    assert compiled.table is not None, [d.message for d in compiled.check.diagnostics]
    return compiled.table


def _over_budget(**_: Value) -> None:
    raise TaskError(
        "OverBudget",
        "research has 100.00 left",
        payload={"over_by": 20.5, "budget_left": Decimal("100.00"), "checked_at": "2026-12-01T09:00:00Z"},  # type: ignore[dict-item]  # a JSON float
    )  # fmt: skip


def _expense(reserve: Handler = _over_budget) -> Engine:
    handlers: dict[str, Handler] = {
        "budget.reserve": reserve,
        "payroll.reimburse": lambda **_: None,
    }
    return Engine([_table("expense_approval.wf")], handlers, now=T0)


def test_the_overrun_task_reads_the_payload_now_and_its_assignee_on_the_engine() -> None:
    engine = _expense()
    iid = engine.start("expense_approval", {**CLAIM, "submitted_at": "2026-11-20T09:00:00Z"})
    (task,) = engine.human_tasks()
    assert task.assignee == "research-managers"  # no manager named: the team's
    assert task.args == {
        "claim_id": "x-1",
        "over_by": Decimal("20.5"),  # a float in the handler's payload, exact as declared
        "budget_left": Decimal("100.00"),
        "checked_at": T0 - HOUR,  # ISO-8601 text from the handler, read as milliseconds
        "answer_by": T0 + 2 * DAY,  # now(): the time of the step that entered the task
    }
    engine.complete_task(task.key, {"approved": True})
    inst = engine.instance(iid)
    assert inst.status is rt.Status.COMPLETED, inst.error
    assert inst.output == {"claim_id": "x-1", "status": "paid", "overrun": Decimal("20.5")}


@pytest.mark.parametrize(("manager", "assignee"), [("bea", "bea"), (None, "research-managers")])
def test_a_person_raises_rejected_on_the_engine_and_a_wrong_raise_is_refused(
    manager: Value, assignee: str
) -> None:
    engine = _expense()
    iid = engine.start("expense_approval", {**CLAIM, "manager": manager})
    (task,) = engine.human_tasks()
    assert task.assignee == assignee
    before = engine.instance(iid)
    wrong: list[tuple[str, dict[str, Value]]] = [
        ("Rejectd", {"reason": "x"}),
        ("Rejected", {"reason": 3}),
    ]
    for error, payload in wrong:
        with pytest.raises(InvalidValue):
            engine.fail_task(task.key, error, payload=payload)
        assert engine.instance(iid) == before and engine.human_tasks() == [task]
    engine.fail_task(task.key, "Rejected", payload={"reason": "too much"})
    inst = engine.instance(iid)
    assert (inst.status, inst.error) == (rt.Status.FAILED, "ClaimRefused")
    assert inst.output == {"claim_id": "x-1", "status": "overrun rejected: too much", "overrun": 0}


def test_the_route_reads_the_name_and_message_of_any_error_on_the_engine() -> None:
    def closed(**_: Value) -> None:
        raise TaskError("TeamClosed", "research was merged")

    engine = _expense(closed)
    inst = engine.instance(engine.start("expense_approval", CLAIM))
    assert (inst.status, inst.error) == (rt.Status.FAILED, "ClaimRefused")
    assert inst.output is not None
    assert inst.output["status"] == "TeamClosed: research was merged"


def _pricing(score: int, calls: list[str]) -> Engine:
    def answer(service: str, result: dict[str, Value] | None) -> Handler:
        def handler(**_: Value) -> dict[str, Value] | None:
            calls.append(service)
            return result

        return handler

    handlers: dict[str, Handler] = {
        "pricing.quote": answer("pricing.quote", {"supplier": "acme", "price": 2.1}),  # type: ignore[dict-item]
        "stock.hold": answer(
            "stock.hold", {"hold_id": "h-1", "expires_at": "2026-12-01T11:00:00Z"}
        ),
        "risk.score": answer("risk.score", {"score": score}),
        "stock.release": answer("stock.release", None),
    }
    return Engine([_table("pricing.wf")], handlers, now=T0)


PRICING: dict[str, Value] = {
    "sku": "bolt-m8",
    "qty": 3,
    "buyer": {"id": "c-1", "name": "Ada", "email": "ada@example.com", "tier": "gold"},
    "credit_limit": Decimal("100.00"),
}


def test_a_named_result_gets_its_records_defaults_on_the_engine() -> None:
    calls: list[str] = []
    engine = _pricing(10, calls)
    inst = engine.instance(engine.start("pricing", PRICING))
    assert inst.status is rt.Status.COMPLETED, inst.error
    quote: dict[str, Value] = {"supplier": "acme", "price": Decimal("2.1"), "currency": "EUR"}
    assert inst.output == {
        "price": Decimal("6.3"),
        "currency": "EUR",  # the default of Quote's field: the handler gave none
        "hold_id": "h-1",
        "quote": quote,
    }


def test_a_saga_undoes_the_hold_and_no_read_on_the_engine() -> None:
    calls: list[str] = []
    engine = _pricing(90, calls)
    inst = engine.instance(engine.start("pricing", PRICING))
    assert inst.status is rt.Status.COMPENSATED, inst.error
    assert calls == ["pricing.quote", "stock.hold", "risk.score", "stock.release"]
