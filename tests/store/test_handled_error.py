"""The error being handled (issue 14 item 3) on SQLite and PostgreSQL: a handler's
typed error payload crosses the worker and the store exactly (a decimal stays exact,
a timestamp a timestamp), the route's node reads it, and a payload that does not fit
its error's fields is the runtime's invalid result, as on the engine
(tests/test_examples_run.py, tests/test_handled_error.py)."""

from __future__ import annotations

from decimal import Decimal

from wflang.runtime.engine import TaskError
from wflang.runtime.ir import HANDLED_ERROR, Value
from wflang.runtime.outcome import Handler
from wflang.store import Store

from .kit import DAY, Durable, VirtualClock, example, handlers_of, ok, replays_exactly

CLAIM: dict[str, Value] = {
    "claim_id": "x-1",
    "employee": "ada",
    "team": "research",
    "amount": Decimal("120.50"),
}
CHECKED_AT = 1_775_000_000_000


def _over_budget(payload: dict[str, Value]) -> Handler:
    def fn(**_: Value) -> None:
        raise TaskError("OverBudget", "research has 100.00 left", payload=payload)

    return fn


def test_a_typed_error_payload_reaches_the_route_exactly(store: Store, clock: VirtualClock) -> None:
    payload: dict[str, Value] = {
        "over_by": Decimal("20.50"),
        "budget_left": 100.0,  # type: ignore[dict-item]  # a JSON float: the decimal it reads as
        "checked_at": CHECKED_AT,
    }
    handlers = handlers_of(budget__reserve=_over_budget(payload), payroll__reimburse=ok())
    d = Durable(store, clock, handlers, example("expense_approval"))
    iid = d.start("expense_approval", CLAIM, "ex-1")
    (task,) = d.client.open_tasks(iid)
    assert (task.node, task.assignee) == ("approve_overrun", "research-managers")
    assert task.args == {
        "claim_id": "x-1",
        "over_by": Decimal("20.50"),
        "budget_left": Decimal("100.0"),
        "checked_at": CHECKED_AT,
        "answer_by": clock.ms + 2 * DAY,  # now() + 2d, at the step that entered the task
    }
    (token,) = d.instance(iid).tokens
    assert dict(token.locals)[HANDLED_ERROR] == {
        "name": "OverBudget",
        "message": "research has 100.00 left",
        "payload": {"over_by": Decimal("20.50"), "budget_left": Decimal("100.0"),
                    "checked_at": CHECKED_AT},
    }  # fmt: skip
    d.complete("approve_overrun", {"approved": True}, iid)
    assert d.status(iid) == "completed"
    got = d.instance(iid)
    assert got.output == {"claim_id": "x-1", "status": "paid", "overrun": Decimal("20.50")}
    assert got.tokens == ()
    replays_exactly(store, iid)


def test_a_payload_that_does_not_fit_is_an_invalid_result(
    store: Store, clock: VirtualClock
) -> None:
    wrong: dict[str, Value] = {"over_by": "a lot", "budget_left": 1, "checked_at": CHECKED_AT}
    handlers = handlers_of(budget__reserve=_over_budget(wrong), payroll__reimburse=ok())
    d = Durable(store, clock, handlers, example("expense_approval"))
    iid = d.start("expense_approval", CLAIM, "ex-2")
    assert d.status(iid) == "failed"
    got = d.instance(iid)
    assert got.output is not None
    assert got.output["status"] == (
        "InvalidResult: 'over_by' must be decimal, not str in the payload of OverBudget"
    )
    assert d.client.open_tasks(iid) == []  # no manager was asked
    assert d.recorder.services() == ["budget.reserve"]  # an invalid result is not retried
    replays_exactly(store, iid)
