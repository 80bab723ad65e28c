"""A stand-in tax service for examples/invoice_approval.wf, for `make demo` and `wf worker`.

    wf worker --handlers examples/invoice_handlers.py

It returns its result as a plain mapping (the typed class, ``TaxAddResult`` of
``examples/typed/invoice_approval.py``, would do as well): a decimal stays exact.
"""

from __future__ import annotations

from decimal import Decimal

from wflang.handlers import handler


@handler("tax.add")
def add(amount: Decimal) -> dict[str, Decimal]:
    return {"total": amount * Decimal("1.20")}
