"""Stand-in services for examples/payment_retry.wf, for `make demo` and `wf worker`.

    wf worker --handlers payment_handlers        # with examples/ on PYTHONPATH

The card of customer ``c-declined`` is declined on the first round (its key
ends in ``/0``) and accepted once the customer has updated it.
"""

from __future__ import annotations

from wflang.runtime.engine import TaskCall, TaskError, handler


@handler("payments.charge")
def charge(customer_id: str, amount: object, currency: str, key: str) -> dict[str, object]:
    if customer_id == "c-declined" and key.endswith("/0"):
        raise TaskError("CardDeclined", "the issuer declined the card")
    return {"charge_id": f"ch-{key}", "settled": True}


@handler("payments.charge_card")
def charge_card(method_id: str, amount: object, currency: str, key: str) -> dict[str, object]:
    return {"charge_id": f"ch-{key}"}


@handler("notify.send")
def send(to: str, channel: str, template: str, ref: str, task: TaskCall) -> dict[str, object]:
    return {"message_id": f"msg-{task.idempotency_key}"}


@handler("ledger.post")
def post(payment_id: str, charge_id: str, amount: object) -> dict[str, object]:
    return {"entry_id": f"le-{payment_id}"}


@handler("ops.dead_letter")
def dead_letter(payment_id: str, reason: str, rounds: int) -> dict[str, object]:
    return {"ticket_id": f"ops-{payment_id}"}
