"""Stand-in services for examples/order_saga.wf, for `make demo` and `wf run`.

    wf run examples/order_saga.wf --input @examples/order_input.json \\
        --handlers order_handlers          # with examples/ on PYTHONPATH
"""

from __future__ import annotations

from wflang.runtime.engine import TaskCall, TaskError, handler


@handler("inventory.reserve")
def reserve(order_id: str, items: list[dict[str, object]]) -> dict[str, object]:
    if not items:
        raise TaskError("OutOfStock", "nothing to reserve")
    return {"reservation_id": f"res-{order_id}"}


@handler("inventory.release")
def release(reservation_id: str) -> None:
    return None


@handler("payments.charge")
def charge(
    customer_id: str, amount: object, currency: str, key: str, task: TaskCall
) -> dict[str, object]:
    if task.attempt == 1:  # the first call times out: the retry policy takes over
        raise TaskError("GatewayTimeout", "the payment gateway did not answer", transient=True)
    return {"charge_id": f"ch-{key}", "settled": True}


@handler("payments.refund")
def refund(charge_id: str, reason: str) -> dict[str, object]:
    return {"refund_id": f"rf-{charge_id}"}


@handler("shipping.create")
def ship(order_id: str, to: dict[str, object], express: bool) -> dict[str, object]:
    return {"shipment_id": f"shp-{order_id}"}


@handler("shipping.cancel")
def cancel_shipment(shipment_id: str) -> None:
    return None


@handler("notify.send")
def notify(to: str, channel: str, template: str, ref: str) -> dict[str, object]:
    return {"message_id": f"msg-{ref}"}
