"""Every example workflow runs durably to its main end, on both stores.

Each scenario is written once against a small driver interface and run twice: on
a durable store (client + worker + virtual clock) and on the in-memory engine of
the test kit, with the same handlers, signals, human-task outputs and clock moves.
The durable run must end where the in-memory one does, with the same status,
output and context (children included), no open tasks, timers or tokens, history
numbered without gaps, and a history that replays to the stored instance.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any, Protocol

import pytest

from wflang.runtime import codec
from wflang.runtime import instance as rt
from wflang.runtime.engine import Handler, TaskCall, TaskError
from wflang.runtime.ir import Value
from wflang.runtime.table import Table
from wflang.store import Store
from wflang.testing import WorkflowEnv

from .kit import (
    DAY,
    EXAMPLES,
    HOUR,
    MINUTE,
    SECOND,
    T0,
    Durable,
    VirtualClock,
    example,
    fails,
    handlers_of,
    ok,
    replays_exactly,
    seq_problems,
)


class Driver(Protocol):
    def start(self, workflow: str, input: Mapping[str, Value], iid: str) -> str: ...
    def advance(self, ms: int) -> None: ...
    def signal(self, iid: str, name: str, payload: Mapping[str, Value], **kw: Any) -> Any: ...
    def open(self, node: str) -> list[str]: ...
    def complete_key(self, key: str, output: Mapping[str, Value]) -> None: ...
    def waiting(self, node: str) -> list[str]: ...
    def instance(self, iid: str) -> rt.Instance: ...


class InMemory:
    """The same driver interface on the test kit's in-memory engine."""

    def __init__(self, handlers: Mapping[str, Handler], *tables: Table) -> None:
        self.env = WorkflowEnv(tables, dict(handlers), now=T0)

    def start(self, workflow: str, input: Mapping[str, Value], iid: str) -> str:
        return self.env.start(workflow, input, instance_id=iid)

    def advance(self, ms: int) -> None:
        self.env.advance(ms=ms)

    def signal(self, iid: str, name: str, payload: Mapping[str, Value], **kw: Any) -> None:
        if kw.get("kind") == "message":
            self.env.message(iid, name, payload, key=kw.get("key") or "")
        else:
            self.env.signal(iid, name, payload, key=kw.get("key") or "")

    def open(self, node: str) -> list[str]:
        return sorted(t.key for t in self.env.engine.human_tasks() if t.node == node)

    def complete_key(self, key: str, output: Mapping[str, Value]) -> None:
        self.env.complete(key, output)

    def waiting(self, node: str) -> list[str]:
        tasks = (t for r in self.env.engine.records.values() for t in r.tasks.values())
        return sorted(t.key for t in tasks if t.node == node)

    def instance(self, iid: str) -> rt.Instance:
        return self.env.instance(iid)

    def children(self, iid: str) -> list[str]:
        return sorted(c for c in self.env.engine.records if c.startswith(f"{iid}/"))


class DurableDriver(Durable):
    def open(self, node: str) -> list[str]:
        return sorted(t.key for t in self.client.open_tasks() if t.node == node)

    def complete_key(self, key: str, output: Mapping[str, Value]) -> None:
        self.client.complete_task(key, output)
        self.run()

    def waiting(self, node: str) -> list[str]:
        return sorted(t.key for t in self.store.tasks(status="waiting") if t.node == node)

    def children(self, iid: str) -> list[str]:
        return sorted(i.id for i in self.store.instances(limit=1000) if i.parent_id == iid)


def complete(d: Driver, node: str, output: Mapping[str, Value]) -> None:
    (key,) = d.open(node)
    d.complete_key(key, output)


CUSTOMER: dict[str, Value] = {
    "id": "c-1",
    "name": "Ada Lovelace",
    "email": "ada@example.com",
    "tier": "gold",
}
ADDRESS: dict[str, Value] = {
    "name": "Ada",
    "line1": "1 Main St",
    "city": "Oslo",
    "postcode": "0150",
    "country": "NO",
}


# ------------------------------------------------------------------- scenarios


def order_saga(d: Driver) -> str:
    """Shipped, after the first charge times out (transient) and its 1 s retry."""
    order: dict[str, Value] = {
        "order_id": "o-1",
        "customer": CUSTOMER,
        "items": [{"sku": "A", "qty": 2, "unit_price": Decimal("5.00")}],
        "subtotal": Decimal("10.00"),
        "ship_to": ADDRESS,
    }
    iid = d.start("order_saga", order, "order-1")
    assert d.instance(iid).status is rt.Status.RUNNING
    d.advance(SECOND)
    return iid


def _charge(task: TaskCall, **_: Value) -> Mapping[str, Value]:
    if task.attempt == 1:
        raise TaskError("GatewayTimeout", "no answer", transient=True)
    return {"charge_id": "ch-1", "settled": True}


ORDER_HANDLERS = handlers_of(
    inventory__reserve=ok({"reservation_id": "r-1"}),
    payments__charge=_charge,
    shipping__create=ok({"shipment_id": "s-1"}),
    notify__send=ok({"message_id": "m-1"}),
    inventory__release=ok(),
    payments__refund=ok({"refund_id": "rf-1"}),
    shipping__cancel=ok(),
)


def payment_retry(d: Driver) -> str:
    """Declined, the customer updates the card (a signal), paid in round 1."""
    iid = d.start(
        "payment_retry", {"payment_id": "p-1", "customer": CUSTOMER, "amount": Decimal("49")}, "p"
    )
    (token,) = d.instance(iid).tokens
    assert token.waiting == "signal:card_updated"
    d.signal(iid, "card_updated", {"method_id": "pm-9", "updated_by": "ada"})
    d.advance(2 * MINUTE)
    return iid


def _charge_by_round(key: str, **_: Value) -> Mapping[str, Value]:
    if key.endswith("/0"):
        raise TaskError("CardDeclined")
    return {"charge_id": "ch-2", "settled": True}


PAYMENT_HANDLERS = handlers_of(
    payments__charge=_charge_by_round,
    payments__charge_card=ok({"charge_id": "ch-backup"}),
    ledger__post=ok({"entry_id": "e-1"}),
    notify__send=ok({"message_id": "m-1"}),
    ops__dead_letter=ok({"ticket_id": "t-1"}),
)

KYC_OK = handlers_of(
    compliance__screen=ok({"hit": False, "list_name": None}),
    identity__verify=ok({"score": 91}),
    identity__check_document=ok({"valid": True}),
)
KYC: dict[str, Value] = {
    "customer_id": "c-1",
    "full_name": "Ada",
    "country": "NL",
    "document_ids": ["passport"],
}


def kyc_check(d: Driver) -> str:
    """A low identity score: passed by a manual review (a human task)."""
    iid = d.start("kyc_check", KYC, "kyc-1")
    complete(d, "manual_review", {"passed": True, "reason": "known customer"})
    return iid


def customer_onboarding(d: Driver) -> str:
    """A child kyc_check passes; the paperwork is signed by hand; products provisioned."""
    data: dict[str, Value] = {
        "customer": CUSTOMER,
        "country": "NL",
        "document_ids": ["passport"],
        "products": ["current_account", "savings"],
    }
    iid = d.start("customer_onboarding", data, "onb-1")
    complete(d, "paperwork", {"signed": True, "signed_on": T0})
    return iid


ONBOARD_HANDLERS = {
    **KYC_OK,
    **handlers_of(
        accounts__open=ok({"account_id": "a-1"}),
        accounts__close=ok(),
        products__provision=ok({"product_ref": "pr-1"}),
        notify__send=ok({"message_id": "m-1"}),
    ),
}

REVIEW_HANDLERS = handlers_of(
    notify__send=ok({"message_id": "m-1"}), reviews__record=ok({"review_id": "rv-1"})
)


def review_document(d: Driver) -> str:
    """Reminded at two days (a non-interrupting timer), then reviewed."""
    data = {"batch_id": "b-1", "document_id": "d-1", "title": "Q1", "reviewer_group": "editors"}
    iid = d.start("review_document", data, "rev-1")
    d.advance(2 * DAY)
    complete(d, "review", {"verdict": "request_changes", "comments": " fix ", "reviewer": "g"})
    return iid


def document_review(d: Driver) -> str:
    """Five child reviews, all approved by hand; signed off; published."""
    docs: list[Value] = [
        {"id": f"d-{n}", "title": f"Doc {n}", "author": "ada", "confidential": n == 2, "tags": []}
        for n in range(5)
    ]
    iid = d.start("document_review", {"batch_id": "b-1", "documents": docs}, "batch-1")
    keys = d.open("review")
    assert len(keys) == 5
    for key in keys:
        d.complete_key(key, {"verdict": "approve", "comments": None, "reviewer": "grace"})
    complete(d, "sign_off", {"publish": True, "note": "ok"})
    return iid


BATCH_HANDLERS = {
    **REVIEW_HANDLERS,
    **handlers_of(
        reviews__open_batch=ok({"batch_url": "https://reviews/b-1"}),
        reviews__summarise=ok({"approved": 5, "rejected": 0, "lapsed": 0}),
        documents__publish=ok({"published_at": T0}),
    ),
}


def incident_escalation(d: Driver) -> str:
    """Sev1: acknowledged and resolved by signals, a postmortem planned, 30 quiet minutes."""
    data: dict[str, Value] = {
        "incident_id": "inc-7",
        "service_name": "checkout",
        "severity": "sev1",
        "summary": "5xx",
        "opened_at": T0,
        "primary": "alice",
        "secondary": "bob",
    }
    iid = d.start("incident_escalation", data, "inc-7")
    d.signal(iid, "acknowledged", {"responder": "alice"})
    d.signal(iid, "resolved", {"resolution": "rolled back", "root_cause": "bad deploy"})
    complete(d, "plan_postmortem", {"postmortem_at": T0 + 3 * DAY, "owner": "carol"})
    d.advance(29 * MINUTE)
    assert d.instance(iid).status is rt.Status.WAITING
    d.advance(MINUTE)
    return iid


INCIDENT_HANDLERS = handlers_of(
    pager__page=ok({"page_id": "pg-1"}),
    notify__send=ok({"message_id": "m-1"}),
    statuspage__post=ok({"url": "https://status/inc-7"}),
    conference__open_bridge=ok({"bridge_url": "https://bridge/inc-7"}),
    postmortems__schedule=ok(),
)


def loan_approval(d: Driver) -> str:
    """A child kyc_check, an offer accepted by signal, paid out on the funds date."""
    data: dict[str, Value] = {
        "application_id": "app-1",
        "applicant": CUSTOMER,
        "country": "NL",
        "amount": 10000,
    }
    iid = d.start("loan_approval", data, "loan-1")
    d.signal(iid, "offer_response", {"accepted": True, "signed_at": T0})
    d.advance(2 * DAY - MINUTE)
    assert d.instance(iid).status is rt.Status.WAITING
    d.advance(MINUTE)
    return iid


LOAN_HANDLERS = {
    **KYC_OK,
    **handlers_of(
        credit__score=ok({"score": 750, "band": "low"}),
        loans__offer=ok(
            {"offer_id": "of-1", "expires_at": T0 + 7 * DAY, "funds_available_at": T0 + 2 * DAY}
        ),
        loans__disburse=ok({"transfer_id": "tr-1"}),
        notify__send=ok({"message_id": "m-1"}),
    ),
}


def shipment_fanout(d: Driver) -> str:
    """Quotes, labels for ten parcels, then a delivery message."""
    data: dict[str, Value] = {
        "shipment_id": "sh-1",
        "customer": CUSTOMER,
        "origin": {**ADDRESS, "country": "nl"},
        "destination": ADDRESS,
        "parcels": [{"id": f"p-{n}", "weight_kg": Decimal("2.5")} for n in range(10)],
        "total_weight_kg": Decimal("25"),
        "declared_value": Decimal("900"),
        "pickup_after": T0 + HOUR,
    }
    iid = d.start("shipment_fanout", data, "sh-1")
    message: dict[str, Value] = {
        "shipment_id": "sh-1",
        "delivered_at": T0 + 3 * DAY,
        "signed_by": "Ada",
    }
    d.signal(iid, "parcel_delivered", message, kind="message")
    return iid


SHIP_HANDLERS = handlers_of(
    carriers__quote=ok({"quote_id": "q"}),
    carriers__best_quote=ok({"carrier": "ups", "price": Decimal("42.00")}),
    carriers__book_pickup=ok({"pickup_ref": "pu-1"}),
    labels__create=ok({"label_url": "https://labels/1"}),
    customs__declare=ok({"customs_ref": "cu-1"}),
    notify__send=ok({"message_id": "m-1"}),
)


def subscription_renewal(d: Driver) -> str:
    """Two renewals a month apart, by timers only: the term completes."""
    data: dict[str, Value] = {
        "subscription_id": "sub-1",
        "customer": CUSTOMER,
        "plan": "pro",
        "price": Decimal("9.99"),
        "first_renewal_at": T0 + DAY,
        "max_renewals": 2,
    }
    iid = d.start("subscription_renewal", data, "sub-1")
    d.advance(DAY + 60 * DAY)
    return iid


SUB_HANDLERS = handlers_of(
    payments__charge=ok({"charge_id": "ch-1", "settled": True}),
    notify__send=ok({"message_id": "m-1"}),
)


def purchase_quotes(d: Driver) -> str:
    """Priced line by line, one quote slow and one line hazardous: approved by a person."""
    from ..test_examples_run import PURCHASE, order_line

    solvent = order_line("solvent", 1, "3.00", hazardous=True, note="flammable")
    extras: list[Value] = [*PURCHASE["extras"], solvent]  # type: ignore[misc]
    return d.start("purchase_quotes", {**PURCHASE, "extras": extras}, "po-1")


def _quote(**args: Value) -> Mapping[str, Value]:
    from ..test_examples_run import quote

    return quote(**args)  # type: ignore[arg-type]


def _confirm(qty: int, **_: Value) -> dict[str, Value]:
    """A supplier that promises at most 60 of a sku per ask: each line asks again."""
    return {"qty": min(qty, 60)}


PURCHASE_HANDLERS = handlers_of(
    pricing__quote=_quote,
    suppliers__confirm=_confirm,
    purchasing__approve=ok({"approver": "kim"}),
)


def pricing(d: Driver) -> str:
    """A quote (a named record, its currency left to the default, its price a float),
    a hold and a risk score: priced."""
    data: dict[str, Value] = {
        "sku": "bolt-m8",
        "qty": 3,
        "buyer": CUSTOMER,
        "credit_limit": Decimal("100.00"),
    }
    return d.start("pricing", data, "pr-1")


def float_quote(**_: Value) -> Any:
    return {"supplier": "acme", "price": 2.1}  # as a JSON API would give it


PRICING_HANDLERS = handlers_of(
    pricing__quote=float_quote,
    stock__hold=ok({"hold_id": "h-1", "expires_at": T0 + HOUR}),
    risk__score=ok({"score": 10}),
    stock__release=ok(),
)


def test_pricing_fills_the_named_results_defaults_exactly_on_a_store(
    store: Store, clock: VirtualClock
) -> None:
    d = DurableDriver(store, clock, PRICING_HANDLERS, example("pricing"))
    iid = pricing(d)
    quote = {"supplier": "acme", "price": Decimal("2.1"), "currency": "EUR"}
    got = d.instance(iid)
    assert got.status is rt.Status.COMPLETED, got.error
    assert got.context["quote"] == quote and got.output is not None
    assert got.output["price"] == Decimal("6.3") and got.output["currency"] == "EUR"
    replays_exactly(store, iid)


def test_pricing_refused_compensates_only_the_hold_on_a_store(
    store: Store, clock: VirtualClock
) -> None:
    handlers = {**PRICING_HANDLERS, "risk.score": ok({"score": 95})}
    d = DurableDriver(store, clock, handlers, example("pricing"))
    iid = pricing(d)
    assert d.instance(iid).status is rt.Status.COMPENSATED
    assert d.recorder.services() == ["pricing.quote", "stock.hold", "risk.score", "stock.release"]
    replays_exactly(store, iid)


def expense_approval(d: Driver) -> str:
    """Over budget (a typed error payload, read by the route): the manager approves."""
    from ..test_examples_run import CLAIM

    iid = d.start("expense_approval", CLAIM, "ex-1")
    (key,) = d.open("approve_overrun")
    d.complete_key(key, {"approved": True})
    return iid


def _over_budget(**_: Value) -> None:
    payload: dict[str, Value] = {
        "over_by": Decimal("20.50"),
        "budget_left": Decimal("100.00"),
        "checked_at": T0,
    }
    raise TaskError("OverBudget", "research has 100.00 left", payload=payload)


EXPENSE_HANDLERS = handlers_of(budget__reserve=_over_budget, payroll__reimburse=ok())


def invoice_approval(d: Driver) -> str:
    """Priced, then approved a day later: what each step changed is recorded alike."""
    iid = d.start("invoice_approval", {"invoice_id": "i-1", "amount": Decimal("100.50")}, "i-1")
    d.advance(DAY)
    d.signal(iid, "approval", {"by": "ada", "at": "2026-03-03T09:00:00Z"})
    return iid


def _tax(amount: Decimal) -> dict[str, Value]:
    return {"total": amount * Decimal("1.20")}


INVOICE_HANDLERS = handlers_of(tax__add=_tax)


def shipment_events(d: Driver) -> str:
    """Booked (the order told, though no such instance is there), scanned, announced."""
    input: dict[str, Value] = {"order_id": "o-1", "order_instance": "nobody", "address": "x"}
    iid = d.start("shipment_events", input, "ship-ev-1")
    (token,) = d.waiting("book")  # async: the carrier answers with the task's token
    d.complete_key(token, {"tracking": "T-9"})
    d.signal(iid, "scanned", {"tracking": "T-9", "signed_by": "Ann"}, kind="message")
    d.signal(iid, "receipt", {"signed_by": "Bob"}, kind="message")  # the hand-over's first arm
    return iid


Scenario = Callable[[Driver], str]
SCENARIOS: dict[str, tuple[Scenario, tuple[str, ...], dict[str, Handler], str, str]] = {
    # name: (drive, tables, handlers, end status, end node)
    "order_saga": (order_saga, ("order_saga",), ORDER_HANDLERS, "completed", "shipped"),
    "payment_retry": (payment_retry, ("payment_retry",), PAYMENT_HANDLERS, "completed", "paid"),
    "kyc_check": (
        kyc_check,
        ("kyc_check",),
        {**KYC_OK, "identity.verify": ok({"score": 55})},
        "completed",
        "passed",
    ),
    "customer_onboarding": (
        customer_onboarding,
        ("kyc_check", "customer_onboarding"),
        ONBOARD_HANDLERS,
        "completed",
        "onboarded",
    ),
    "review_document": (
        review_document,
        ("review_document",),
        REVIEW_HANDLERS,
        "completed",
        "reviewed",
    ),
    "document_review": (
        document_review,
        ("review_document", "document_review"),
        BATCH_HANDLERS,
        "completed",
        "published",
    ),
    "incident_escalation": (
        incident_escalation,
        ("incident_escalation",),
        INCIDENT_HANDLERS,
        "completed",
        "closed",
    ),
    "loan_approval": (
        loan_approval,
        ("kyc_check", "loan_approval"),
        LOAN_HANDLERS,
        "completed",
        "approved",
    ),
    "shipment_fanout": (
        shipment_fanout,
        ("shipment_fanout",),
        SHIP_HANDLERS,
        "completed",
        "delivered",
    ),
    "purchase_quotes": (
        purchase_quotes,
        ("purchase_quotes",),
        PURCHASE_HANDLERS,
        "completed",
        "approved",
    ),
    "pricing": (pricing, ("pricing",), PRICING_HANDLERS, "completed", "priced"),
    "expense_approval": (
        expense_approval,
        ("expense_approval",),
        EXPENSE_HANDLERS,
        "completed",
        "paid",
    ),
    "shipment_events": (
        shipment_events,
        ("shipment_events",),
        handlers_of(carrier__book=ok({"tracking": "T-9"})),
        "completed",
        "done",
    ),
    "subscription_renewal": (
        subscription_renewal,
        ("subscription_renewal",),
        SUB_HANDLERS,
        "completed",
        "term_complete",
    ),
    "invoice_approval": (
        invoice_approval,
        ("invoice_approval",),
        INVOICE_HANDLERS,
        "completed",
        "approved",
    ),
}


def test_every_example_workflow_has_a_scenario() -> None:
    names = {p.stem for p in EXAMPLES.glob("*.wf")} - {"shared_types"}
    assert names == set(SCENARIOS)


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_example_runs_durably_like_in_memory(name: str, store: Store, clock: VirtualClock) -> None:
    drive, files, handlers, status, end = SCENARIOS[name]
    tables = [example(f) for f in files]
    durable = DurableDriver(store, clock, handlers, *tables)
    iid = drive(durable)
    memory = InMemory(handlers, *tables)
    assert drive(memory) == iid

    info = store.instance(iid)
    got, want = durable.instance(iid), memory.instance(iid)
    assert info.status == got.status.value == status, (got.error, info)
    assert info.workflow == name and info.version == tables[-1].version
    decisions = [d for r in store.history(iid) for d in r.entry.decisions]
    assert f"enter {end}" in decisions
    assert (got.status, got.output, got.error) == (want.status, want.output, want.error)
    assert dict(got.context) == dict(want.context)
    # what each step changed, as the step function gave it to each (issue 15); the
    # branches of a parallel may answer in another order: by event
    stored = sorted((repr(r.entry.event), repr(r.entry.changes)) for r in store.history(iid))
    kept = sorted((repr(e.event), repr(e.changes)) for e in memory.env.history(iid))
    assert stored == kept
    assert got.tokens == () and got.timers == ()
    assert store.tasks(instance_id=iid, status="open") == []
    assert store.tasks(instance_id=iid, status="ready") == []
    assert seq_problems(store, iid) == []
    replays_exactly(store, iid)
    kids = durable.children(iid)
    assert kids == memory.children(iid)
    for kid in kids:
        assert durable.instance(kid).status == memory.instance(kid).status, kid
        assert durable.instance(kid).output == memory.instance(kid).output, kid
        assert seq_problems(store, kid) == []
        replays_exactly(store, kid)
    assert sorted(durable.recorder.services()) == sorted(s for s, *_ in _memory_calls(memory)), (
        "the same service calls, as many times"
    )
    assert store.stats().due_timers == 0
    # An instance's tasks are a range of the key (``status.TASKS_OF``): every key starts
    # with its instance's id and a colon, and the range finds what the column does.
    with store.backend.read() as tx:
        strays = tx.query(
            "SELECT key, instance_id FROM wf_task "
            "WHERE substr(key, 1, length(instance_id) + 1) <> instance_id || ':'"
        )
        ids = [str(i) for (i,) in tx.query("SELECT DISTINCT instance_id FROM wf_task")]
        by_column = {i: sorted(str(k) for (k,) in tx.query(
            "SELECT key FROM wf_task WHERE instance_id = ?", (i,))) for i in ids}  # fmt: skip
    assert strays == []
    assert {i: sorted(t.key for t in store.tasks(instance_id=i, limit=10_000)) for i in ids} == (
        by_column
    )


def _memory_calls(memory: InMemory) -> list[tuple[str, dict[str, Value], TaskCall]]:
    return memory.env.calls


def test_order_saga_on_the_example_handlers_module(store: Store, clock: VirtualClock) -> None:
    """examples/order_handlers.py (the demo's handlers, typed: issue 17) on
    order_input.json: shipped."""
    from wflang.handlers import load

    handlers = dict(load([str(EXAMPLES / "order_handlers.py")]))
    assert sorted(handlers) == sorted(ORDER_HANDLERS)
    d = Durable(store, clock, handlers, example("order_saga"))
    data = codec.loads((EXAMPLES / "order_input.json").read_text())
    iid = d.start("order_saga", data, "o-1001")
    assert d.status(iid) == "running"  # the charge's first attempt timed out
    d.advance(SECOND)
    assert d.status(iid) == "completed"
    assert d.instance(iid).output == {
        "order_id": "o-1001",
        "status": "shipped",
        "shipment_id": "shp-o-1001",
    }
    first, second = d.recorder.keys("payments.charge")
    assert first != second and first.startswith("o-1001:charge:")


def test_a_failing_saga_compensates_durably(store: Store, clock: VirtualClock) -> None:
    """order_saga whose shipment is rejected: refund, then release, in reverse order."""
    handlers = {**ORDER_HANDLERS, "shipping.create": fails("AddressRejected")}
    d = DurableDriver(store, clock, handlers, example("order_saga"))
    iid = order_saga(d)
    assert d.status(iid) == "compensated"
    assert d.instance(iid).output == {
        "order_id": "o-1",
        "status": "rolled_back",
        "shipment_id": None,
    }
    assert d.recorder.services()[-2:] == ["payments.refund", "inventory.release"]
    replays_exactly(store, iid)
