"""Stand-in services for examples/payment_retry.wf, for `make demo` and `wf worker`.

    wf worker --handlers examples/payment_handlers.py

Written against the types `wf gen python examples -o examples/typed` generates, as
``@handler`` functions: each takes its arguments as the generated types (a decimal as
``Decimal``, an enum as its class) and returns the service's result class.

The card of customer ``c-declined`` is declined on the first round (its key
ends in ``/0``) and accepted once the customer has updated it.
"""

from __future__ import annotations

import decimal

from typed import payment_retry, shared_types

from wflang.handlers import TaskCall, TaskError, handler


@handler("payments.charge")
def charge(
    customer_id: str, amount: decimal.Decimal, currency: str, key: str
) -> shared_types.PaymentsChargeResult:
    if customer_id == "c-declined" and key.endswith("/0"):
        raise TaskError("CardDeclined", "the issuer declined the card")
    return shared_types.PaymentsChargeResult(charge_id=f"ch-{key}", settled=True)


@handler("payments.charge_card")
def charge_card(
    method_id: str, amount: decimal.Decimal, currency: str, key: str
) -> payment_retry.PaymentsChargeCardResult:
    return payment_retry.PaymentsChargeCardResult(charge_id=f"ch-{key}")


@handler("notify.send")
def send(
    to: str, channel: shared_types.Channel, template: str, ref: str, task: TaskCall
) -> shared_types.NotifySendResult:
    return shared_types.NotifySendResult(message_id=f"msg-{task.idempotency_key}")


@handler("ledger.post")
def post(
    payment_id: str, charge_id: str, amount: decimal.Decimal
) -> payment_retry.LedgerPostResult:
    return payment_retry.LedgerPostResult(entry_id=f"le-{payment_id}")


@handler("ops.dead_letter")
def dead_letter(payment_id: str, reason: str, rounds: int) -> payment_retry.OpsDeadLetterResult:
    return payment_retry.OpsDeadLetterResult(ticket_id=f"ops-{payment_id}")
