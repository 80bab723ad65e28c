"""A store of example instances for the console's browser tests (issue 19), made through
the real runtime: the examples deployed from their files (so the console can draw
them), started with a client and moved by a worker on a virtual clock, exactly as
``tests/store/test_examples_durable.py`` runs them. No row is written by hand.

What is there after ``seed``:

- ``order-1``: an order_saga, completed (its first charge timed out and was retried);
- ``inv-1`` .. ``inv-4``: invoice_approvals, priced, waiting for the approval signal;
- ``loan-1``: a loan_approval at the underwriter's human task (its form: a decision,
  decimals, notes), with its finished child kyc_check;
- ``pr-dead-1``, ``pr-dead-2``: pricings dead-lettered at ``score`` (risk.score failed
  for good); ``risk_fixed`` makes the service answer again, for a retry;
- ``HOSTILE_ID``: an invoice_approval whose id, input and approval signal (a history
  value and the output) hold ``HOSTILE``, completed;
- order_saga v4 (``docs/diagrams/order_saga.v4.wf``) deployed last, beside v3.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal

from wflang.compiler.compile import compile_workflow
from wflang.dsl.parser import parse_file
from wflang.runtime.engine import TaskError
from wflang.runtime.ir import Value
from wflang.store import Store

from ..store.kit import (
    EXAMPLES,
    MINUTE,
    REPO,
    VirtualClock,
    example,
    handlers_of,
    ok,
)
from ..store.test_examples_durable import (
    CUSTOMER,
    INVOICE_HANDLERS,
    LOAN_HANDLERS,
    ORDER_HANDLERS,
    PRICING_HANDLERS,
    DurableDriver,
    order_saga,
)

HOSTILE = '<script>alert("hostile")</script>'
HOSTILE_ID = '<script>alert("id")</script>'
#: the workflows deployed, callees first
DEPLOYED = ("order_saga", "invoice_approval", "kyc_check", "loan_approval", "pricing")
INVOICES = ("inv-1", "inv-2", "inv-3", "inv-4")
DEAD = ("pr-dead-1", "pr-dead-2")


class Seeded(DurableDriver):
    """The seeded store's client and worker; ``risk_fixed`` ends risk.score's outage."""

    def __init__(self, store: Store, clock: VirtualClock) -> None:
        self.risk_down = True
        handlers = {
            **ORDER_HANDLERS,
            **LOAN_HANDLERS,
            **INVOICE_HANDLERS,
            **PRICING_HANDLERS,
            # a medium score: the loan goes to an underwriter
            **handlers_of(credit__score=ok({"score": 640, "band": "medium"})),
            "risk.score": self._risk,
        }
        super().__init__(store, clock, handlers, actor="seeder")
        for name in DEPLOYED:
            self.client.deploy(example(name), str(EXAMPLES / f"{name}.wf"))

    def _risk(self, **_: Value) -> Mapping[str, Value]:
        if self.risk_down:
            raise TaskError("RiskEngineDown", "the risk engine is down (scripted)")
        return {"score": 10}

    def risk_fixed(self) -> None:
        self.risk_down = False


def seed(store: Store, clock: VirtualClock) -> Seeded:
    d = Seeded(store, clock)
    order_saga(d)  # as the store suite runs the example: order-1, shipped
    for n, iid in enumerate(INVOICES, start=1):
        d.advance(7 * MINUTE)  # starts a few minutes apart, as the list shows them
        d.start("invoice_approval", {"invoice_id": f"i-{n}", "amount": Decimal(f"{n}00.50")}, iid)
    loan: dict[str, Value] = {
        "application_id": "app-1",
        "applicant": CUSTOMER,
        "country": "NL",
        "amount": Decimal("40000"),
    }
    d.advance(11 * MINUTE)
    d.start("loan_approval", loan, "loan-1")
    for iid in DEAD:
        d.advance(5 * MINUTE)
        buyer = {**CUSTOMER, "id": f"c-{iid}"}
        d.start(
            "pricing",
            {"sku": "bolt-m8", "qty": 3, "buyer": buyer, "credit_limit": Decimal("100.00")},
            iid,
        )
    d.advance(3 * MINUTE)
    d.start("invoice_approval", {"invoice_id": HOSTILE, "amount": Decimal("1.00")}, HOSTILE_ID)
    d.signal(HOSTILE_ID, "approval", {"by": HOSTILE, "at": "2026-03-03T09:00:00Z"})
    v4 = REPO / "docs" / "diagrams" / "order_saga.v4.wf"
    table = compile_workflow(parse_file(str(v4))).table
    assert table is not None
    d.client.deploy(table, str(v4))
    return d
