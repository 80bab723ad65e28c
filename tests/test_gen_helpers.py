"""The helpers ``wf gen python`` writes (issue 17), on the examples' checked-in package
``examples/typed``: start an instance, send a signal, complete a human task and raise
a declared error with its payload, each with the generated classes; and the test kit
and the durable client both fit the protocols the helpers call (checked by mypy)."""

from __future__ import annotations

import datetime
import importlib
import sys
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

import pytest

from wflang.testing import Script, WorkflowEnv, succeed

if TYPE_CHECKING:
    from wflang.durable.client import Client
    from wflang.handlers import CompletesTasks, Publishes, Signals, Starts

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


@pytest.fixture
def typed(monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    monkeypatch.syspath_prepend(str(EXAMPLES))
    yield importlib.import_module("typed")
    for name in [m for m in sys.modules if m == "typed" or m.startswith("typed.")]:
        del sys.modules[name]
    sys.modules.pop("payment_handlers", None)


def test_start_and_send_a_signal_with_the_generated_classes(typed: ModuleType) -> None:
    pay = importlib.import_module("typed.payment_retry")
    shared = importlib.import_module("typed.shared_types")
    env = WorkflowEnv.from_files(
        EXAMPLES / "payment_retry.wf", handlers=str(EXAMPLES / "payment_handlers.py")
    )
    customer = shared.Customer(
        id="c-declined", name="Charles", email="cb@example.com", phone=None,
        tier=shared.Tier.standard,
    )  # fmt: skip
    iid = pay.start(env, pay.PaymentRetryInput(
        payment_id="p-1", customer=customer, amount=Decimal("19.99")
    ), instance_id="p-1")  # fmt: skip
    assert iid == "p-1" and env.status(iid) == "waiting"
    pay.send_card_updated(env, iid, pay.CardUpdatedSignal(method_id="m-2", updated_by="me"))
    env.advance(minutes=5)
    assert env.status(iid) == "completed"
    assert env.instance(iid).input["customer"]["tier"] == "standard"  # type: ignore[index,call-overload]


def test_complete_a_human_task_and_raise_an_error_with_its_payload(typed: ModuleType) -> None:
    expense = importlib.import_module("typed.expense_approval")
    at = datetime.datetime(2026, 12, 1, tzinfo=datetime.UTC)

    def reserve(team: str, claim_id: str, amount: Decimal) -> None:
        payload = expense.OverBudgetPayload(
            over_by=amount - 100, budget_left=Decimal("100.00"), checked_at=at
        )
        raise expense.over_budget_error(payload, f"{team} has 100.00 left")

    handlers: dict[str, Script] = {"budget.reserve": reserve, "payroll.reimburse": succeed()}
    env = WorkflowEnv.from_files(EXAMPLES / "expense_approval.wf", handlers=handlers)
    claim = expense.ExpenseApprovalInput(
        claim_id="x-1", employee="ada", team="research", amount=Decimal("120.50")
    )
    iid = expense.start(env, claim)
    (task,) = env.engine.human_tasks()
    assert task.args["over_by"] == Decimal("20.50")
    assert task.args["checked_at"] == 1_796_083_200_000
    expense.complete_approve_overrun(env, task.key, expense.ApproveOverrunForm(approved=True))
    assert env.status(iid) == "completed"


def _the_runtimes_fit_the_helpers(env: WorkflowEnv, client: Client) -> None:
    """Never called: mypy checks that both runtimes are what the helpers take."""
    starts: list[Starts[object]] = [env, client]
    signals: list[Signals[object]] = [env, client]
    publishes: list[Publishes[object]] = [env, client]
    completes: list[CompletesTasks[object]] = [env, client]
    assert starts and signals and publishes and completes


def test_the_runtimes_fit_the_helpers() -> None:
    assert callable(_the_runtimes_fit_the_helpers)  # the check is mypy's (see above)
