"""Handlers of examples/expense_approval.wf for tests/test_cli_durable.py: the budget
is always exceeded (``wf worker --once --handlers wf_expense_handlers``)."""

from __future__ import annotations

from decimal import Decimal

from wflang.runtime.engine import TaskError, handler
from wflang.runtime.ir import Value


@handler("budget.reserve")
def reserve(team: str, claim_id: str, amount: Decimal) -> None:
    payload: dict[str, Value] = {
        "over_by": amount - 100,
        "budget_left": Decimal(100),
        "checked_at": 0,
    }
    raise TaskError("OverBudget", f"{team} has 100 left", payload=payload)


@handler("payroll.reimburse")
def reimburse(employee: str, claim_id: str, amount: Decimal) -> None:
    return None
