"""Stand-in services for examples/order_saga.wf, for `make demo` and `wf run`.

    wf run examples/order_saga.wf --input @examples/order_input.json \\
        --handlers examples/order_handlers.py

Written against the types `wf gen python examples -o examples/typed` generates:
``OrderHandlers`` implements the ``OrderSagaServices`` protocol, so mypy checks each
method's parameters and result against the services the workflow declares.
"""

from __future__ import annotations

import decimal

from typed import order_saga, shared_types

from wflang.handlers import Registry, TaskCall, TaskError


class OrderHandlers:
    def inventory_reserve(
        self, *, order_id: str, items: list[order_saga.LineItem]
    ) -> order_saga.InventoryReserveResult:
        if not items:
            raise TaskError("OutOfStock", "nothing to reserve")
        return order_saga.InventoryReserveResult(reservation_id=f"res-{order_id}")

    def inventory_release(self, *, reservation_id: str) -> None:
        return None

    def payments_charge(
        self,
        *,
        customer_id: str,
        amount: decimal.Decimal,
        currency: str,
        key: str,
        task: TaskCall | None = None,
    ) -> shared_types.PaymentsChargeResult:
        if task is not None and task.attempt == 1:  # the first call times out: a retry
            raise TaskError("GatewayTimeout", "the payment gateway did not answer", transient=True)
        return shared_types.PaymentsChargeResult(charge_id=f"ch-{key}", settled=True)

    def payments_refund(self, *, charge_id: str, reason: str) -> shared_types.PaymentsRefundResult:
        return shared_types.PaymentsRefundResult(refund_id=f"rf-{charge_id}")

    def shipping_create(
        self, *, order_id: str, to: shared_types.Address, express: bool
    ) -> order_saga.ShippingCreateResult:
        return order_saga.ShippingCreateResult(shipment_id=f"shp-{order_id}")

    def shipping_cancel(self, *, shipment_id: str) -> None:
        return None

    def notify_send(
        self, *, to: str, channel: shared_types.Channel, template: str, ref: str
    ) -> shared_types.NotifySendResult:
        return shared_types.NotifySendResult(message_id=f"msg-{ref}")


registry = order_saga.register(Registry(), OrderHandlers())
