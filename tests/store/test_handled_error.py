"""The error being handled (issue 14 item 3) on SQLite and PostgreSQL: a handler's
typed error payload crosses the worker and the store exactly (a decimal stays exact,
a timestamp a timestamp), the route's node reads it, and a payload that does not fit
its error's fields is the runtime's invalid result, as on the engine
(tests/test_examples_run.py, tests/test_handled_error.py). And a person raising a
declared error on a user task (item 8): checked like a form, a refusal stores nothing."""

from __future__ import annotations

from decimal import Decimal

import pytest

from wflang.runtime.engine import TaskError
from wflang.runtime.ir import HANDLED_ERROR, Value
from wflang.runtime.outcome import Handler
from wflang.runtime.validate import InvalidValue
from wflang.store import Store

from .kit import (
    DAY,
    Durable,
    VirtualClock,
    compile_text,
    example,
    handlers_of,
    ok,
    replays_exactly,
    snapshot,
)

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


PAYLOAD: dict[str, Value] = {
    "over_by": Decimal("20.50"),
    "budget_left": Decimal("100.00"),
    "checked_at": CHECKED_AT,
}


def _at_the_manager(store: Store, clock: VirtualClock, iid: str) -> tuple[Durable, str]:
    handlers = handlers_of(budget__reserve=_over_budget(PAYLOAD), payroll__reimburse=ok())
    d = Durable(store, clock, handlers, example("expense_approval"))
    d.start("expense_approval", CLAIM, iid)
    return d, d.task("approve_overrun", iid)


def test_a_person_raises_a_declared_error_with_its_payload(
    store: Store, clock: VirtualClock
) -> None:
    d, key = _at_the_manager(store, clock, "ex-3")
    task = d.client.raise_error(key, "Rejected", {"reason": "too much"}, message="no")
    assert task.status == "done"  # closed: the person answered
    d.run()
    assert d.status("ex-3") == "failed"
    got = d.instance("ex-3")
    assert got.error == "ClaimRefused"
    assert got.output == {
        "claim_id": "x-1",
        "status": "overrun rejected: too much",
        "overrun": 0,
    }
    assert d.recorder.services() == ["budget.reserve"]  # never reimbursed
    replays_exactly(store, "ex-3")


def test_an_undeclared_error_or_a_wrong_payload_is_refused_and_nothing_is_stored(
    store: Store, clock: VirtualClock
) -> None:
    d, key = _at_the_manager(store, clock, "ex-4")
    before = snapshot(store, "ex-4")
    cases: list[tuple[str, dict[str, Value], str]] = [
        (
            "Rejectd",
            {"reason": "x"},
            "approve_overrun does not raise 'Rejectd' (it raises Rejected); "
            "did you mean 'Rejected'?",
        ),
        ("Rejected", {"reason": 3}, "'reason' must be string, not int in the payload of Rejected"),
        ("Rejected", {"reason": "x", "by": "kim"}, (
            "unknown field 'by' in payload of Rejected (fields: reason)"
        )),
    ]  # fmt: skip
    for error, payload, problem in cases:
        with pytest.raises(InvalidValue) as refused:
            d.client.raise_error(key, error, payload)
        assert refused.value.problems == (problem,)
        d.run()
        assert snapshot(store, "ex-4") == before
    assert [t.key for t in d.client.open_tasks("ex-4")] == [key]


def test_a_person_may_write_a_payload_time_as_iso_8601_text(
    store: Store, clock: VirtualClock
) -> None:
    from ..test_handled_error import PERSON

    text = PERSON.replace(
        "error Rejected { reason: string }",
        "error Rejected { reason: string, until: timestamp, grace: duration = 0s }",
    )
    d = Durable(store, clock, {}, compile_text(text))
    d.start("exp", {"id": "1"}, "p-1")
    key = d.task("approve", "p-1")
    before = snapshot(store, "p-1")
    with pytest.raises(InvalidValue):  # text that is no time is still refused
        d.client.raise_error(key, "Rejected", {"reason": "x", "until": "soon"})
    assert snapshot(store, "p-1") == before
    payload: dict[str, Value] = {"reason": "x", "until": "1970-01-01T00:00:01Z", "grace": "PT1M"}
    d.client.raise_error(key, "Rejected", payload)
    d.run()
    assert d.instance("p-1").output == {"status": "x"}
    (failed,) = [r.entry.event for r in store.history("p-1") if r.entry.event is not None
                 and r.entry.event.__class__.__name__ == "TaskFailed"]  # fmt: skip
    assert getattr(failed, "payload", None) == {"reason": "x", "until": 1000, "grace": 60_000}
    replays_exactly(store, "p-1")
