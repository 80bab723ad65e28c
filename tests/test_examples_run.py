"""Every example workflow runs to each of its end states.

The acceptance test of the runtime: for every example and every `end` node at the
top level of its workflow (and the compensated outcomes of its sagas), a test
drives an instance there with scripted handlers, signals, messages, human-task
completions and the virtual clock, then checks the status, the output, the
context and that replaying the history reproduces the instance. Ends inside
branches, map bodies and side paths of non-interrupting timers are reached on
the way and checked through the instance's decisions. Nothing sleeps.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import pytest

from wflang.compiler.compile import compile_workflow
from wflang.dsl.parser import parse_file
from wflang.runtime import instance as rt
from wflang.runtime import table as tb
from wflang.runtime.engine import TaskError, pending
from wflang.runtime.ir import Value
from wflang.runtime.validate import InvalidValue
from wflang.testing import (
    DAY,
    HOUR,
    MINUTE,
    Script,
    WorkflowEnv,
    by_attempt,
    delay,
    permanent,
    succeed,
    transient,
)

EXAMPLES = Path(__file__).parent.parent / "examples"

F = TypeVar("F", bound=Callable[..., None])

#: (workflow, end) pairs the tests below drive an instance to.
REACHED: set[tuple[str, str]] = set()


def reaches(workflow: str, *ends: str) -> Callable[[F], F]:
    """Mark a test as one that drives `workflow` to these top-level ends."""

    def mark(fn: F) -> F:
        REACHED.update((workflow, end) for end in ends)
        return fn

    return mark


def at(text: str) -> int:
    """A timestamp as the runtime holds it: milliseconds since the epoch."""
    return int(datetime.fromisoformat(text).timestamp() * 1000)


T0 = at("2026-03-02T09:00:00+00:00")  # the virtual clock starts here

CUSTOMER: dict[str, Value] = {
    "id": "c-1",
    "name": "Ada Lovelace",
    "email": "ada@example.com",
    "tier": "gold",
}
ADDRESS: dict[str, Value] = {
    "name": "Ada Lovelace",
    "line1": "1 Main St",
    "city": "Oslo",
    "postcode": "0150",
    "country": "NO",
}


def env_of(*files: str, **handlers: Script) -> WorkflowEnv:
    """A test env of example files; handler names use `__` for the dot."""
    scripted = {name.replace("__", "."): script for name, script in handlers.items()}
    return WorkflowEnv.from_files(*(EXAMPLES / f for f in files), handlers=scripted, now=T0)


ROLLED_BACK: dict[str, Value] = {"order_id": "o-1", "status": "rolled_back", "shipment_id": None}


def finished(
    env: WorkflowEnv,
    iid: str,
    end: str,
    status: str,
    output: dict[str, Value] | None = None,
    **context: Value,
) -> list[str]:
    """Check that an instance ended at `end` with this status, output and context."""
    decisions = env.decisions(iid)
    inst = env.instance(iid)
    assert f"enter {end}" in decisions, decisions
    assert env.status(iid) == status, (inst.error, decisions)
    assert inst.output == output
    assert {k: env.context(iid).get(k, "<missing>") for k in context} == context
    assert inst.tokens == () and inst.timers == ()
    assert env.open_tasks(iid) == []
    assert not [t for t, (_, owner) in env.engine.timers.items() if owner == iid]
    replayed = env.replay(iid)
    assert replayed.ok, replayed.divergence
    assert replayed.instance == inst
    return decisions


def calls(env: WorkflowEnv, service: str) -> list[dict[str, Value]]:
    return [args for s, args, _ in env.calls if s == service]


def task_key(env: WorkflowEnv, iid: str, node: str) -> str:
    """The key of the one open task (service call or human task) at `node`."""
    (key,) = [k for k in env.open_tasks(iid) if f":{node}:" in k]
    return key


def child(env: WorkflowEnv, iid: str, n: int = 0) -> str:
    """The n-th child workflow instance started by `iid`."""
    return [c for c in env.engine.records if c.startswith(f"{iid}/")][n]


def children(env: WorkflowEnv, iid: str) -> list[str]:
    return [c for c in env.engine.records if c.startswith(f"{iid}/")]


def test_every_top_level_end_of_every_example_is_reached() -> None:
    ends: set[tuple[str, str]] = set()
    for path in sorted(EXAMPLES.glob("*.wf")):
        table = compile_workflow(parse_file(str(path))).table
        if path.name == "shared_types.wf":
            assert table is None  # a library: no workflow to run
            continue
        assert table is not None
        ends |= {
            (table.workflow, s.name)
            for s in table.states
            if s.kind == "end" and s.owner == tb.NO_STATE
        }
    assert len({w for w, _ in ends}) == 15
    assert ends - REACHED == set()
    assert REACHED - ends == set()


# ------------------------------------------------------------------ order_saga

ORDER: dict[str, Value] = {
    "order_id": "o-1",
    "customer": CUSTOMER,
    "items": [{"sku": "A", "qty": 2, "unit_price": Decimal("5.00")}],
    "subtotal": Decimal("10.00"),
    "ship_to": ADDRESS,
}
ORDER_OK: dict[str, Script] = {
    "inventory__reserve": succeed({"reservation_id": "r-1"}),
    "payments__charge": succeed({"charge_id": "ch-1", "settled": True}),
    "shipping__create": succeed({"shipment_id": "s-1"}),
    "notify__send": succeed({"message_id": "m-1"}),
    "inventory__release": succeed(),
    "payments__refund": succeed({"refund_id": "rf-1"}),
    "shipping__cancel": succeed(),
}


def order(**handlers: Script) -> WorkflowEnv:
    return env_of("order_saga.wf", **{**ORDER_OK, **handlers})


@reaches("order_saga", "shipped")
@pytest.mark.parametrize(
    ("express", "total"), [(False, Decimal("14.95")), (True, Decimal("19.90"))]
)
def test_order_saga_shipped(express: bool, total: Decimal) -> None:
    env = order()
    iid = env.start("order_saga", {**ORDER, "express": express})
    finished(
        env, iid, "shipped", "completed",
        {"order_id": "o-1", "status": "shipped", "shipment_id": "s-1"},
        total=total, reservation_id="r-1", charge_id="ch-1", shipment_id="s-1",
    )  # fmt: skip
    assert env.services_called() == [
        "inventory.reserve", "payments.charge", "shipping.create", "notify.send",
    ]  # fmt: skip
    assert calls(env, "payments.charge")[0]["amount"] == total
    assert ("enter price_express" in env.decisions(iid)) is express


@reaches("order_saga", "out_of_stock")
def test_order_saga_out_of_stock_undoes_nothing() -> None:
    env = order(inventory__reserve=permanent("OutOfStock"))
    iid = env.start("order_saga", ORDER)
    finished(env, iid, "out_of_stock", "failed", reservation_id=None)
    assert env.instance(iid).error == "OutOfStock"
    assert env.services_called() == ["inventory.reserve"]  # not retried, nothing to undo


@reaches("order_saga", "not_reserved")
def test_order_saga_not_reserved_after_three_attempts() -> None:
    env = order(inventory__reserve=transient("ServiceUnavailable"))
    iid = env.start("order_saga", ORDER)
    env.advance(seconds=2)
    assert env.status(iid) == "running"
    env.advance(seconds=4)  # backoff 2s, then 4s
    finished(env, iid, "not_reserved", "failed")
    assert env.instance(iid).error == "not_reserved"
    assert env.services_called() == ["inventory.reserve"] * 3


@reaches("order_saga", "payment_declined")
@pytest.mark.parametrize("error", ["CardDeclined", "InsufficientFunds"])
def test_order_saga_payment_declined_releases_the_stock(error: str) -> None:
    env = order(payments__charge=permanent(error))
    iid = env.start("order_saga", ORDER)
    decisions = finished(
        env,
        iid,
        "payment_declined",
        "compensated",
        {"order_id": "o-1", "status": "payment_declined", "shipment_id": None},
        reservation_id="r-1",
        charge_id=None,
    )
    assert env.services_called() == ["inventory.reserve", "payments.charge", "inventory.release"]
    assert calls(env, "inventory.release") == [{"reservation_id": "r-1"}]
    assert "compensate with release_stock" in decisions


@reaches("order_saga", "undo")
@pytest.mark.parametrize(
    ("handlers", "advance_s", "undone_by"),
    [
        pytest.param(  # 'on any' of charge, after its five attempts
            {"payments__charge": transient("ServiceUnavailable")}, 15, ["inventory.release"],
            id="charge-unavailable",
        ),
        pytest.param(
            {"payments__charge": permanent("FraudSuspected")}, 0, ["inventory.release"],
            id="charge-fraud",
        ),
        pytest.param(
            {"shipping__create": permanent("AddressRejected")}, 0,
            ["payments.refund", "inventory.release"], id="address-rejected",
        ),
        pytest.param(
            {"shipping__create": permanent("CarrierUnavailable")}, 0,
            ["payments.refund", "inventory.release"], id="carrier-unavailable",
        ),
        pytest.param(  # the 2m timeout cancels the shipment request, which may have
            # been made: its outcome is unknown, so it is compensated too (issue 12 item 6)
            {"shipping__create": delay()}, 120,
            ["shipping.cancel", "payments.refund", "inventory.release"], id="ship-timeout",
        ),
    ],
)  # fmt: skip
def test_order_saga_undo_compensates_in_reverse(
    handlers: dict[str, Script], advance_s: int, undone_by: list[str]
) -> None:
    env = order(**handlers)
    iid = env.start("order_saga", ORDER)
    env.advance(seconds=advance_s)
    finished(env, iid, "undo", "compensated", ROLLED_BACK, reservation_id="r-1", shipment_id=None)
    called = env.services_called()
    assert called[len(called) - len(undone_by) :] == undone_by
    assert called.count("shipping.cancel") == undone_by.count("shipping.cancel")
    assert "notify.send" not in called
    if "payments.refund" in undone_by:
        assert calls(env, "payments.refund") == [
            {"charge_id": "ch-1", "reason": "order o-1 rolled back"}
        ]


def test_order_saga_refund_is_retried_during_the_saga() -> None:
    env = order(
        shipping__create=permanent("AddressRejected"),
        payments__refund=by_attempt(transient("ServiceUnavailable"), succeed({"refund_id": "r"})),
    )
    iid = env.start("order_saga", ORDER)
    assert env.status(iid) == "compensating"
    env.advance(seconds=6)  # backoff 5s with 10% jitter
    finished(env, iid, "undo", "compensated", ROLLED_BACK)
    assert env.services_called()[-3:] == ["payments.refund", "payments.refund", "inventory.release"]


def test_order_saga_cancel_with_compensation_cancels_the_shipment_too() -> None:
    # cancel_shipment is registered only once `ship` completed; no end node after
    # that is compensated, so only a cancellation runs it.
    env = order(notify__send=delay())
    iid = env.start("order_saga", ORDER)
    env.cancel(iid, compensate=True)
    assert env.status(iid) == "cancelled"
    assert env.services_called()[-3:] == ["shipping.cancel", "payments.refund", "inventory.release"]
    assert calls(env, "shipping.cancel") == [{"shipment_id": "s-1"}]
    assert env.replay(iid).ok


# --------------------------------------------------------------- payment_retry

PAYMENT: dict[str, Value] = {"payment_id": "p-1", "customer": CUSTOMER, "amount": Decimal("49.00")}
PAY_OK: dict[str, Script] = {
    "payments__charge": succeed({"charge_id": "ch-1", "settled": True}),
    "payments__charge_card": succeed({"charge_id": "ch-backup"}),
    "ledger__post": succeed({"entry_id": "e-1"}),
    "notify__send": succeed({"message_id": "m-1"}),
    "ops__dead_letter": succeed({"ticket_id": "t-1"}),
}


def payment(**handlers: Script) -> WorkflowEnv:
    return env_of("payment_retry.wf", **{**PAY_OK, **handlers})


def charges_by_round(*outcomes: Callable[[], dict[str, Value]]) -> Script:
    """A `payments.charge` handler whose outcome depends on the round (the key's suffix)."""

    def charge(key: str, **_: Value) -> dict[str, Value]:
        return outcomes[int(key.rsplit("/", 1)[1])]()

    return charge


def declined() -> NoReturn:
    raise TaskError("CardDeclined")


@reaches("payment_retry", "paid")
def test_payment_paid_at_once() -> None:
    env = payment()
    iid = env.start("payment_retry", PAYMENT)
    finished(
        env, iid, "paid", "completed", {"payment_id": "p-1", "charge_id": "ch-1", "rounds": 0},
        charge_id="ch-1", rounds=0,
    )  # fmt: skip
    assert calls(env, "payments.charge")[0]["key"] == "p-1/0"
    assert calls(env, "ledger.post") == [
        {"payment_id": "p-1", "charge_id": "ch-1", "amount": Decimal("49.00")}
    ]


def test_payment_paid_after_transient_failures_and_a_ledger_retry() -> None:
    env = payment(
        payments__charge=by_attempt(
            transient("ServiceUnavailable"), transient("ServiceUnavailable"),
            succeed({"charge_id": "ch-3", "settled": True}),
        ),
        ledger__post=by_attempt(transient("Timeout"), succeed({"entry_id": "e-1"})),
    )  # fmt: skip
    iid = env.start("payment_retry", PAYMENT)
    env.advance(seconds=10)  # 1s and 2.5s (±20%) between the charges, ~1s before the post
    finished(env, iid, "paid", "completed", {"payment_id": "p-1", "charge_id": "ch-3", "rounds": 0})
    assert env.services_called() == ["payments.charge"] * 3 + ["ledger.post"] * 2


def test_payment_paid_with_the_backup_method() -> None:
    env = payment(payments__charge=permanent("CardDeclined"))
    iid = env.start("payment_retry", {**PAYMENT, "backup_method_id": "pm-2"})
    decisions = finished(
        env, iid, "paid", "completed",
        {"payment_id": "p-1", "charge_id": "ch-backup", "rounds": 0},
    )  # fmt: skip
    assert "enter charge_backup" in decisions
    assert calls(env, "payments.charge_card")[0]["key"] == "p-1/backup"
    assert env.services_called().count("payments.charge") == 1  # non-retryable


def test_payment_paid_after_the_customer_updates_the_card() -> None:
    charge = charges_by_round(declined, lambda: {"charge_id": "ch-2", "settled": True})
    env = payment(payments__charge=charge)
    iid = env.start("payment_retry", PAYMENT)
    assert env.instance(iid).tokens[0].waiting == "signal:card_updated"
    assert calls(env, "notify.send")[0]["template"] == "card-declined"
    env.signal(iid, "card_updated", {"method_id": "pm-9", "updated_by": "ada"})
    env.advance(minutes=1)
    assert env.services_called().count("payments.charge") == 1  # settle_delay is 2m
    env.advance(minutes=1)
    finished(
        env, iid, "paid", "completed", {"payment_id": "p-1", "charge_id": "ch-2", "rounds": 1},
        rounds=1, last_error="card declined",
    )  # fmt: skip
    assert [c["key"] for c in calls(env, "payments.charge")] == ["p-1/0", "p-1/1"]


@reaches("payment_retry", "unprocessable")
@pytest.mark.parametrize(
    ("handlers", "input", "script", "rounds", "reason"),
    [
        pytest.param(
            {"payments__charge": permanent("FraudSuspected")}, {}, [], 0, "charge failed",
            id="fraud",
        ),
        pytest.param(  # six attempts over about a minute, then 'on any'
            {"payments__charge": transient("ServiceUnavailable")}, {}, [("advance", 2 * MINUTE)],
            0, "charge failed", id="retries-exhausted",
        ),
        pytest.param(
            {"payments__charge": delay()}, {}, [("advance", 15 * MINUTE)], 0, "charge failed",
            id="charge-timeout",
        ),
        pytest.param(  # the backup is declined too; rounds run out at once
            {"payments__charge": permanent("InsufficientFunds"),
             "payments__charge_card": permanent("CardDeclined")},
            {"backup_method_id": "pm-2", "max_rounds": 1}, [], 1, "card declined",
            id="backup-declined",
        ),
        pytest.param(
            {"payments__charge": permanent("CardDeclined")}, {},
            [("advance", 72 * HOUR)], 1, "card declined", id="no-new-card",
        ),
        pytest.param(  # three rounds of new cards, all declined
            {"payments__charge": permanent("CardDeclined")}, {},
            [("signal", 0), ("advance", 2 * MINUTE), ("signal", 0), ("advance", 2 * MINUTE)],
            3, "card declined", id="rounds-exhausted",
        ),
    ],
)  # fmt: skip
def test_payment_unprocessable(
    handlers: dict[str, Script],
    input: dict[str, Value],
    script: list[tuple[str, int]],
    rounds: int,
    reason: str,
) -> None:
    env = payment(
        **handlers, ops__dead_letter=by_attempt(transient(), succeed({"ticket_id": "t-1"}))
    )
    iid = env.start("payment_retry", {**PAYMENT, **input})
    for action, ms in script:
        if action == "advance":
            env.advance(ms=ms)
        else:
            env.signal(iid, "card_updated", {"method_id": "pm-new", "updated_by": "ada"})
    env.advance(seconds=5)  # the dead-letter call's own retry
    finished(env, iid, "unprocessable", "failed", rounds=rounds)
    assert env.instance(iid).error == "PaymentUnprocessable"
    assert calls(env, "ops.dead_letter")[-1] == {
        "payment_id": "p-1",
        "reason": reason,
        "rounds": rounds,
    }
    assert env.services_called().count("ops.dead_letter") == 2


# ------------------------------------------------------------------- kyc_check

KYC: dict[str, Value] = {
    "customer_id": "c-1",
    "full_name": "Ada Lovelace",
    "country": "NL",
    "document_ids": ["passport", "bill"],
}
KYC_OK: dict[str, Script] = {
    "compliance__screen": succeed({"hit": False, "list_name": None}),
    "identity__verify": succeed({"score": 91}),
    "identity__check_document": succeed({"valid": True}),
}


def kyc(**handlers: Script) -> WorkflowEnv:
    return env_of("kyc_check.wf", **{**KYC_OK, **handlers})


def review_by_hand(env: WorkflowEnv, iid: str, passed: bool, reason: str) -> None:
    (task,) = env.engine.human_tasks()
    assert (task.node, task.assignee) == ("manual_review", "compliance-analysts")
    assert task.args == {"customer_id": "c-1", "score": env.context(iid)["identity_score"]}
    env.complete(task.key, {"passed": passed, "reason": reason})


@reaches("kyc_check", "passed")
@pytest.mark.parametrize("documents", [["passport", "bill"], []])
def test_kyc_passed_automatically(documents: list[str]) -> None:
    env = kyc()
    iid = env.start("kyc_check", {**KYC, "document_ids": [*documents]})
    decisions = finished(
        env, iid, "passed", "completed", {"passed": True, "manual_review": False, "reason": None},
        sanctions_hit=False, identity_score=91, manual_review=False,
    )  # fmt: skip
    for end in ("sanctions_done", "identity_done"):
        assert f"enter {end}" in decisions
    assert decisions.count("enter document_checked") == len(documents)
    checked = [c["document_id"] for c in calls(env, "identity.check_document")]
    assert checked == documents  # sequential, in order


def test_kyc_documents_are_checked_one_at_a_time() -> None:
    env = kyc(identity__check_document=delay())
    iid = env.start("kyc_check", KYC)
    (first,) = env.open_tasks(iid)
    env.complete(first, {"valid": True})
    (second,) = env.open_tasks(iid)
    assert second != first
    env.complete(second, {"valid": True})
    finished(
        env, iid, "passed", "completed", {"passed": True, "manual_review": False, "reason": None}
    )


@pytest.mark.parametrize(
    ("handlers", "advance_ms"),
    [
        pytest.param({"identity__verify": succeed({"score": 55})}, 0, id="low-score"),
        pytest.param({"identity__verify": delay()}, HOUR, id="screening-timeout"),
        pytest.param(  # a branch error no node handles: the parallel's 'on any'
            {"compliance__screen": permanent("ServiceUnavailable")}, 0, id="screening-failed",
        ),
        pytest.param(  # four attempts: backoff 1s, 2s, 4s
            {"compliance__screen": transient("ServiceUnavailable")}, 7000, id="screening-retried",
        ),
        pytest.param(  # an item error no node handles: the map's 'on any'
            {"identity__check_document": permanent("DocumentUnreadable")}, 0, id="unreadable",
        ),
    ],
)  # fmt: skip
def test_kyc_passed_by_manual_review(handlers: dict[str, Script], advance_ms: int) -> None:
    env = kyc(**handlers)
    iid = env.start("kyc_check", KYC)
    env.advance(ms=advance_ms)
    assert env.status(iid) == "waiting"
    review_by_hand(env, iid, True, "known customer")
    finished(
        env, iid, "passed", "completed",
        {"passed": True, "manual_review": True, "reason": "known customer"},
        manual_review=True, manual_passed=True, review_reason="known customer",
    )  # fmt: skip


@reaches("kyc_check", "rejected")
def test_kyc_rejected_on_a_sanctions_hit() -> None:
    env = kyc(compliance__screen=succeed({"hit": True, "list_name": "EU"}))
    iid = env.start("kyc_check", KYC)
    finished(
        env, iid, "rejected", "completed",
        {"passed": False, "manual_review": False, "reason": None}, sanctions_hit=True,
    )  # fmt: skip


def test_kyc_rejected_by_manual_review() -> None:
    env = kyc(identity__verify=succeed({"score": 40}))
    iid = env.start("kyc_check", KYC)
    review_by_hand(env, iid, False, "documents do not match")
    finished(
        env, iid, "rejected", "completed",
        {"passed": False, "manual_review": True, "reason": "documents do not match"},
        manual_passed=False,
    )  # fmt: skip


def test_kyc_rejected_when_the_manual_review_takes_three_days() -> None:
    env = kyc(identity__verify=succeed({"score": 40}))
    iid = env.start("kyc_check", KYC)
    env.advance(days=2.99)
    assert env.status(iid) == "waiting"
    env.advance(days=0.01)
    finished(
        env, iid, "rejected", "completed",
        {"passed": False, "manual_review": False, "reason": None}, manual_passed=None,
    )  # fmt: skip
    assert env.engine.human_tasks() == []  # the review task was withdrawn


# --------------------------------------------------------- customer_onboarding

ONBOARDING: dict[str, Value] = {
    "customer": CUSTOMER,
    "country": "NL",
    "document_ids": ["passport"],
    "products": ["current_account", "savings", "credit_card"],
}
ONBOARD_OK: dict[str, Script] = {
    **KYC_OK,
    "accounts__open": succeed({"account_id": "a-1"}),
    "accounts__close": succeed(),
    "products__provision": succeed({"product_ref": "pr-1"}),
    "notify__send": succeed({"message_id": "m-1"}),
}


def onboarding(**handlers: Script) -> WorkflowEnv:
    return env_of("kyc_check.wf", "customer_onboarding.wf", **{**ONBOARD_OK, **handlers})


def sign_paperwork(env: WorkflowEnv, iid: str, signed: bool = True) -> None:
    key = task_key(env, iid, "paperwork")
    (task,) = [t for t in env.engine.human_tasks() if t.key == key]
    assert (task.kind, task.assignee, task.args) == (
        "manual",
        "branch-staff",
        {"account_id": "a-1"},
    )
    env.complete(key, {"signed": signed, "signed_on": env.now})


def closed_account(env: WorkflowEnv) -> None:
    assert calls(env, "accounts.close") == [
        {"account_id": "a-1", "reason": "onboarding not completed"}
    ]


@reaches("customer_onboarding", "onboarded")
def test_onboarding_onboarded() -> None:
    env = onboarding()
    iid = env.start("customer_onboarding", ONBOARDING)
    kyc_iid = child(env, iid)
    finished(
        env,
        kyc_iid,
        "passed",
        "completed",
        {"passed": True, "manual_review": False, "reason": None},
    )
    sign_paperwork(env, iid)
    decisions = finished(
        env, iid, "onboarded", "completed",
        {"account_id": "a-1", "kyc_manual": False, "welcome_message_id": "m-1"},
        account_id="a-1", kyc_passed=True, paperwork_signed=True, welcome_message_id="m-1",
    )  # fmt: skip
    assert decisions.count("enter provisioned") == 3
    assert sorted(str(c["product"]) for c in calls(env, "products.provision")) == [
        "credit_card", "current_account", "savings",
    ]  # fmt: skip
    assert "accounts.close" not in env.services_called()


def test_onboarding_onboarded_after_a_manual_kyc_and_one_tolerated_provisioning_failure() -> None:
    def provision(product: str, **_: Value) -> dict[str, Value]:
        if product == "savings":
            raise TaskError("ServiceUnavailable", transient=True)
        return {"product_ref": f"pr-{product}"}

    env = onboarding(identity__verify=succeed({"score": 60}), products__provision=provision)
    iid = env.start("customer_onboarding", ONBOARDING)
    kyc_iid = child(env, iid)
    review_by_hand(env, kyc_iid, True, "looks fine")
    sign_paperwork(env, iid)
    env.advance(seconds=5 + 10 + 20)  # provision: four attempts, backoff 5s, 10s, 20s
    decisions = finished(
        env, iid, "onboarded", "completed",
        {"account_id": "a-1", "kyc_manual": True, "welcome_message_id": "m-1"},
        kyc_manual=True,
    )  # fmt: skip
    assert decisions.count("enter provisioned") == 2
    assert "provision: ServiceUnavailable unhandled: its flow failed" in decisions
    assert [c["product"] for c in calls(env, "products.provision")].count("savings") == 4


@reaches("customer_onboarding", "duplicate")
def test_onboarding_duplicate_customer() -> None:
    env = onboarding(accounts__open=permanent("DuplicateCustomer"))
    iid = env.start("customer_onboarding", ONBOARDING)
    finished(env, iid, "duplicate", "failed", account_id=None)
    assert env.instance(iid).error == "DuplicateCustomer"
    assert env.services_called() == ["accounts.open"]  # not retried, nothing to close


@reaches("customer_onboarding", "kyc_rejected")
def test_onboarding_kyc_rejected_closes_the_account() -> None:
    env = onboarding(compliance__screen=succeed({"hit": True, "list_name": "UN"}))
    iid = env.start("customer_onboarding", ONBOARDING)
    decisions = finished(
        env, iid, "kyc_rejected", "compensated", account_id="a-1", kyc_passed=False
    )
    assert "compensate with close_account" in decisions
    closed_account(env)


@reaches("customer_onboarding", "kyc_incomplete")
def test_onboarding_kyc_incomplete_after_five_days() -> None:
    env = onboarding(identity__check_document=delay())
    iid = env.start("customer_onboarding", ONBOARDING)
    env.advance(days=4.99)
    assert env.status(iid) == "waiting"
    env.advance(days=0.01)
    finished(env, iid, "kyc_incomplete", "compensated", kyc_passed=False)
    closed_account(env)
    kyc_iid = child(env, iid)
    assert env.status(kyc_iid) == "cancelled"  # the parent's timeout cancelled the child
    assert env.open_tasks(kyc_iid) == []


def test_onboarding_kyc_incomplete_when_the_check_fails_twice() -> None:
    env = onboarding(identity__verify=succeed({"score": 10}))
    iid = env.start("customer_onboarding", ONBOARDING)
    for attempt in (1, 2):
        kyc_iid = children(env, iid)[-1]
        (task,) = [t for t in env.engine.human_tasks() if t.key.startswith(kyc_iid)]
        # the task fails with an error no person may raise (the system's, not a
        # person's: the test kit refuses it from a person): the child dead-letters
        env.send(kyc_iid, rt.TaskFailed(task.key, "AnalystUnavailable", False))
        assert env.status(kyc_iid) == "dead_lettered"
        # A dead letter is no outcome (ops may retry it): the parent waits at its call
        # until an operator gives up on the child, which fails the call.
        assert env.status(iid) == "waiting"
        env.cancel(kyc_iid)
        if attempt == 1:
            env.advance(minutes=1)  # the call's retry starts a new child
    assert len(children(env, iid)) == 2
    finished(env, iid, "kyc_incomplete", "compensated")
    closed_account(env)


@reaches("customer_onboarding", "provisioning_failed")
def test_onboarding_provisioning_failed() -> None:
    env = onboarding(products__provision=permanent("ServiceUnavailable"))
    iid = env.start("customer_onboarding", ONBOARDING)
    sign_paperwork(env, iid)
    decisions = finished(env, iid, "provisioning_failed", "compensated", paperwork_signed=True)
    assert "provision_products: ServiceUnavailable (MapFailed) handled" in decisions
    closed_account(env)


@reaches("customer_onboarding", "abandoned")
@pytest.mark.parametrize("how", ["not-signed", "timeout"])
def test_onboarding_abandoned(how: str) -> None:
    env = onboarding()
    iid = env.start("customer_onboarding", ONBOARDING)
    if how == "not-signed":
        sign_paperwork(env, iid, signed=False)
    else:
        env.advance(days=9.99)
        assert env.status(iid) == "waiting"
        env.advance(days=0.01)
    finished(env, iid, "abandoned", "compensated", paperwork_signed=False)
    closed_account(env)
    assert "products.provision" not in env.services_called()


# ------------------------------------------------------------- review_document

REVIEW: dict[str, Value] = {
    "batch_id": "b-1",
    "document_id": "d-1",
    "title": "Q1 report",
    "reviewer_group": "editors",
}
REVIEW_OK: dict[str, Script] = {
    "notify__send": succeed({"message_id": "m-1"}),
    "reviews__record": succeed({"review_id": "rv-1"}),
}


def reviews(*files: str, **handlers: Script) -> WorkflowEnv:
    return env_of(*files, **{**REVIEW_OK, **handlers})


def review_task(env: WorkflowEnv, iid: str) -> str:
    key = task_key(env, iid, "review")
    (task,) = [t for t in env.engine.human_tasks() if t.key == key]
    assert (task.kind, task.assignee) == ("user", "reviewers")
    assert task.form == ("verdict", "comments", "reviewer")
    return key


@reaches("review_document", "reviewed", "reminded")
@pytest.mark.parametrize("reminded", [False, True])
def test_review_document_reviewed(reminded: bool) -> None:
    env = reviews("review_document.wf")
    iid = env.start("review_document", REVIEW)
    if reminded:
        env.advance(days=2)  # the non-interrupting timer: a reminder, the review goes on
        assert calls(env, "notify.send") == [
            {"to": "editors", "channel": "email", "template": "review-reminder", "ref": "d-1"}
        ]
    verdict = {"verdict": "request_changes", "comments": "  fix p.3 ", "reviewer": "grace"}
    env.complete(review_task(env, iid), verdict)
    decisions = finished(
        env, iid, "reviewed", "completed", {"verdict": "request_changes"},
        verdict="request_changes", comments="  fix p.3 ", reviewer="grace",
    )  # fmt: skip
    assert calls(env, "reviews.record") == [
        {
            "batch_id": "b-1",
            "document_id": "d-1",
            "verdict": "request_changes",
            "note": "fix p.3",
            "reviewer": "grace",
        }
    ]
    assert ("enter reminded" in decisions) is reminded
    assert ("side path ended" in decisions) is reminded


@reaches("review_document", "lapsed")
def test_review_document_lapsed_after_five_days() -> None:
    env = reviews("review_document.wf")
    iid = env.start("review_document", REVIEW)
    env.advance(days=4.99)
    assert env.status(iid) == "waiting"
    env.advance(days=0.01)
    decisions = finished(env, iid, "lapsed", "failed", verdict=None)
    assert env.instance(iid).error == "ReviewLapsed"
    assert "enter reminded" in decisions  # reminded once, at two days
    assert env.services_called() == ["notify.send"]


# ------------------------------------------------------------- document_review


def doc(n: int, confidential: bool = False, tags: tuple[str, ...] = ()) -> dict[str, Value]:
    return {"id": f"d-{n}", "title": f"Doc {n}", "author": "ada", "confidential": confidential,
            "tags": list(tags)}  # fmt: skip


BATCH: dict[str, Value] = {
    "batch_id": "b-1",
    "documents": [doc(1), doc(2, confidential=True), doc(3, tags=("legal",)), doc(4), doc(5)],
}
BATCH_OK: dict[str, Script] = {
    **REVIEW_OK,
    "reviews__open_batch": succeed({"batch_url": "https://reviews/b-1"}),
    "reviews__summarise": succeed({"approved": 5, "rejected": 0, "lapsed": 0}),
    "documents__publish": succeed({"published_at": T0}),
}


def batch(**handlers: Script) -> WorkflowEnv:
    return reviews("review_document.wf", "document_review.wf", **{**BATCH_OK, **handlers})


def review_all(env: WorkflowEnv, iid: str, verdict: str = "approve") -> list[str]:
    """Complete every open review of the batch; return the reviewer groups asked."""
    groups = []
    for task in [t for t in env.engine.human_tasks() if t.node == "review"]:
        groups.append(str(task.args["group"]))
        env.complete(task.key, {"verdict": verdict, "comments": None, "reviewer": "grace"})
    return groups


def sign_off(env: WorkflowEnv, iid: str, publish: bool) -> None:
    key = task_key(env, iid, "sign_off")
    (task,) = [t for t in env.engine.human_tasks() if t.key == key]
    assert task.assignee == "editors"
    assert task.args["editor"] == "editor-in-chief"  # the input's default
    env.complete(key, {"publish": publish, "note": "ok"})


@reaches("document_review", "published")
def test_document_review_published() -> None:
    env = batch()
    iid = env.start("document_review", BATCH)
    assert len(children(env, iid)) == 5
    groups = review_all(env, iid)
    assert sorted(groups) == ["editors", "editors", "editors", "legal", "legal"]
    sign_off(env, iid, publish=True)
    decisions = finished(
        env, iid, "published", "completed", {"batch_id": "b-1", "approved": 5, "published": True},
        approved=5, publish=True, sign_off_note="ok",
    )  # fmt: skip
    assert decisions.count("enter reviewed") == 5
    assert decisions.count("enter legal_review") == 2
    for c in children(env, iid):
        assert env.status(c) == "completed"


def test_document_review_runs_at_most_five_reviews_at_a_time() -> None:
    env = batch(reviews__summarise=succeed({"approved": 7, "rejected": 0, "lapsed": 0}))
    iid = env.start("document_review", {**BATCH, "documents": [doc(n) for n in range(7)]})
    assert len(children(env, iid)) == 5
    review_all(env, iid)
    assert len(children(env, iid)) == 7
    review_all(env, iid)
    sign_off(env, iid, publish=True)
    finished(
        env, iid, "published", "completed", {"batch_id": "b-1", "approved": 7, "published": True}
    )


@reaches("document_review", "done")
@pytest.mark.parametrize(
    ("how", "approved", "lapsed"),
    [
        ("empty-batch", 0, 0),
        ("too-few-approved", 3, 0),  # 60% < 80%
        ("two-lapsed", 3, 2),  # tolerate 2: the batch goes on without them
        ("not-published", 5, 0),
        ("sign-off-late", 5, 0),
    ],
)
def test_document_review_done_unpublished(how: str, approved: int, lapsed: int) -> None:
    summary = {"approved": approved, "rejected": 5 - approved - lapsed, "lapsed": lapsed}
    env = batch(reviews__summarise=succeed(summary))
    documents = [] if how == "empty-batch" else BATCH["documents"]
    iid = env.start("document_review", {**BATCH, "documents": documents})
    tasks = [t for t in env.engine.human_tasks() if t.node == "review"]
    for task in tasks[: len(tasks) - lapsed]:
        env.complete(task.key, {"verdict": "approve", "comments": None, "reviewer": "grace"})
    if lapsed:
        env.advance(days=5)
    if how == "not-published":
        sign_off(env, iid, publish=False)
    if how == "sign-off-late":
        env.advance(days=2.99)
        assert env.status(iid) == "waiting"
        env.advance(days=0.01)
    decisions = finished(
        env, iid, "done", "completed", {"batch_id": "b-1", "approved": approved, "published": False},
        approved=approved, lapsed=lapsed, publish=False,
    )  # fmt: skip
    assert decisions.count("enter review_lapsed") == lapsed
    assert ("enter sign_off" in decisions) is (how in ("not-published", "sign-off-late"))
    assert "documents.publish" not in env.services_called()


@reaches("document_review", "too_slow")
def test_document_review_too_slow_cancels_the_open_reviews() -> None:
    env = batch(reviews__record=delay())  # reviews are given but never recorded
    iid = env.start("document_review", BATCH)
    review_all(env, iid)
    env.advance(days=9.99)
    assert env.status(iid) == "waiting"
    env.advance(days=0.01)
    finished(env, iid, "too_slow", "cancelled", approved=0)
    for c in children(env, iid):
        assert env.status(c) == "cancelled"
        assert env.open_tasks(c) == []
    assert "reviews.summarise" not in env.services_called()


@reaches("document_review", "too_many_failures")
def test_document_review_too_many_failures() -> None:
    env = batch()
    iid = env.start("document_review", BATCH)
    tasks = [t for t in env.engine.human_tasks() if t.node == "review"]
    for task in tasks[:2]:
        env.complete(task.key, {"verdict": "approve", "comments": None, "reviewer": "grace"})
    env.advance(days=5)  # three reviews lapse: one more than `tolerate 2`
    decisions = finished(env, iid, "too_many_failures", "failed")
    assert env.instance(iid).error == "BatchFailed"
    assert decisions.count("enter review_lapsed") == 3
    assert "review_all: ReviewLapsed (MapFailed) handled" in decisions


# --------------------------------------------------------- incident_escalation

INCIDENT: dict[str, Value] = {
    "incident_id": "inc-7",
    "service_name": "checkout",
    "severity": "sev3",
    "summary": "5xx on checkout",
    "opened_at": T0,
    "primary": "alice",
    "secondary": "bob",
}
INCIDENT_OK: dict[str, Script] = {
    "pager__page": succeed({"page_id": "pg-1"}),
    "notify__send": succeed({"message_id": "m-1"}),
    "statuspage__post": succeed({"url": "https://status/inc-7"}),
    "conference__open_bridge": succeed({"bridge_url": "https://bridge/inc-7"}),
    "postmortems__schedule": succeed(),
}


def incident(**handlers: Script) -> WorkflowEnv:
    return env_of("incident_escalation.wf", **{**INCIDENT_OK, **handlers})


def closed(env: WorkflowEnv, iid: str, responder: str, **context: Value) -> list[str]:
    return finished(
        env, iid, "closed", "completed",
        {"incident_id": "inc-7", "responder": responder, "resolution": "rolled back"},
        responder=responder, resolution="rolled back", **context,
    )  # fmt: skip


def resolve(env: WorkflowEnv, iid: str) -> None:
    env.signal(iid, "resolved", {"resolution": "rolled back", "root_cause": "bad deploy"})


@reaches("incident_escalation", "closed")
def test_incident_closed_sev3() -> None:
    env = incident()
    iid = env.start("incident_escalation", INCIDENT)
    env.signal(iid, "acknowledged", {"responder": "alice"})
    resolve(env, iid)
    decisions = closed(env, iid, "alice", page_id="pg-1", root_cause="bad deploy")
    assert "enter war_room" not in decisions and "enter plan_postmortem" not in decisions
    assert env.services_called() == ["pager.page"]


def test_incident_closed_sev1_with_a_war_room_and_a_postmortem() -> None:
    env = incident()
    iid = env.start("incident_escalation", {**INCIDENT, "severity": "sev1"})
    env.signal(iid, "acknowledged", {"responder": "alice"})
    resolve(env, iid)
    key = task_key(env, iid, "plan_postmortem")
    env.complete(key, {"postmortem_at": T0 + 3 * DAY, "owner": "carol"})
    env.advance(minutes=29)
    assert env.status(iid) == "waiting"  # the quiet period
    env.advance(minutes=1)
    decisions = closed(
        env, iid, "alice", status_page_url="https://status/inc-7", postmortem_at=T0 + 3 * DAY
    )
    for end in ("status_posted", "bridge_open", "briefed"):
        assert f"enter {end}" in decisions
    assert "war_room: join all satisfied" in decisions
    assert calls(env, "postmortems.schedule") == [
        {"incident_id": "inc-7", "at": T0 + 3 * DAY, "owner": "alice"}
    ]


@pytest.mark.parametrize(
    ("handlers", "advance_m"),
    [
        pytest.param({"conference__open_bridge": delay()}, 10, id="war-room-timeout"),
        pytest.param(  # a branch error no node handles: the parallel's 'on any'
            {"statuspage__post": permanent("Unavailable")}, 0, id="war-room-failed",
        ),
    ],
)  # fmt: skip
def test_incident_war_room_problems_do_not_hold_up_the_fix(
    handlers: dict[str, Script], advance_m: int
) -> None:
    env = incident(**handlers)
    iid = env.start("incident_escalation", {**INCIDENT, "severity": "sev1"})
    env.signal(iid, "acknowledged", {"responder": "alice"})
    env.advance(minutes=advance_m)
    (token,) = env.instance(iid).tokens
    assert token.waiting == "signal:resolved"
    resolve(env, iid)
    env.complete(task_key(env, iid, "plan_postmortem"), {"postmortem_at": T0, "owner": "c"})
    env.advance(minutes=30 + advance_m)
    closed(env, iid, "alice")


@reaches("incident_escalation", "nudged")
def test_incident_primary_nudged_then_secondary_takes_it() -> None:
    env = incident()
    iid = env.start("incident_escalation", {**INCIDENT, "severity": "sev2"})
    env.advance(minutes=5)
    assert calls(env, "notify.send") == [
        {"to": "alice", "channel": "sms", "template": "page-reminder", "ref": "inc-7"}
    ]
    env.advance(minutes=10)  # ack_sla 15m: page the secondary
    assert [c["person"] for c in calls(env, "pager.page")] == ["alice", "bob"]
    env.signal(iid, "acknowledged", {"responder": "bob"})
    resolve(env, iid)
    env.complete(task_key(env, iid, "plan_postmortem"), {"postmortem_at": T0, "owner": "bob"})
    env.advance(minutes=30)
    decisions = closed(env, iid, "bob")
    assert decisions.index("enter nudged") < decisions.index("enter page_secondary")
    assert "side path ended" in decisions


@reaches("incident_escalation", "manager_paged")
@pytest.mark.parametrize("secondary", ["no-ack", "page-failed"])
def test_incident_escalated_to_a_manager(secondary: str) -> None:
    def page(person: str, **_: Value) -> dict[str, Value]:
        if person == "bob" and secondary == "page-failed":
            raise TaskError("ServiceUnavailable", transient=True)
        return {"page_id": f"pg-{person}"}

    env = incident(pager__page=page)
    iid = env.start("incident_escalation", INCIDENT)
    env.advance(minutes=15)  # no ack from alice
    env.advance(minutes=10 if secondary == "no-ack" else 1)  # bob: no ack, or five failed pages
    key = task_key(env, iid, "escalate_to_manager")
    (task,) = [t for t in env.engine.human_tasks() if t.key == key]
    assert (task.kind, task.assignee) == ("manual", "incident-managers")
    env.advance(minutes=10)  # the manager is paged again; the task stays open
    assert calls(env, "notify.send")[-1]["template"] == "unowned-incident"
    assert task_key(env, iid, "escalate_to_manager") == key
    env.complete(key, {"owner": "dave"})
    resolve(env, iid)
    decisions = closed(env, iid, "dave")
    assert "enter manager_paged" in decisions
    pages = [c["person"] for c in calls(env, "pager.page")]
    assert pages == ["alice", "bob"] if secondary == "no-ack" else ["alice"] + ["bob"] * 5


@reaches("incident_escalation", "status_update_requested")
def test_incident_status_update_due_after_an_hour() -> None:
    env = incident()
    iid = env.start("incident_escalation", {**INCIDENT, "severity": "sev2"})
    env.signal(iid, "acknowledged", {"responder": "alice"})
    env.advance(hours=1)
    assert calls(env, "notify.send") == [
        {"to": "alice", "channel": "push", "template": "status-update-due", "ref": "inc-7"}
    ]
    assert env.status(iid) == "waiting"
    resolve(env, iid)
    env.complete(task_key(env, iid, "plan_postmortem"), {"postmortem_at": T0, "owner": "alice"})
    env.advance(minutes=30)
    decisions = closed(env, iid, "alice")
    assert "enter status_update_requested" in decisions


@reaches("incident_escalation", "stale")
def test_incident_stale_after_three_days() -> None:
    env = incident()
    iid = env.start("incident_escalation", INCIDENT)
    env.signal(iid, "acknowledged", {"responder": "alice"})
    env.advance(days=3)
    finished(env, iid, "stale", "failed", responder="alice", resolution=None)
    assert env.instance(iid).error == "IncidentStale"


# --------------------------------------------------------------- loan_approval

LOAN: dict[str, Value] = {
    "application_id": "app-1",
    "applicant": CUSTOMER,
    "country": "NL",
    "amount": Decimal("10000"),
}
FUNDS_AT = T0 + 2 * DAY
LOAN_OK: dict[str, Script] = {
    **KYC_OK,
    "credit__score": succeed({"score": 750, "band": "low"}),
    "loans__offer": succeed(
        {"offer_id": "of-1", "expires_at": T0 + 7 * DAY, "funds_available_at": FUNDS_AT}
    ),
    "loans__disburse": succeed({"transfer_id": "tr-1"}),
    "notify__send": succeed({"message_id": "m-1"}),
}
APPROVED: dict[str, Value] = {"application_id": "app-1", "decision": "approve", "offer_id": "of-1"}
DECLINED: dict[str, Value] = {"application_id": "app-1", "decision": "decline", "offer_id": None}


def loan(**handlers: Script) -> WorkflowEnv:
    return env_of("kyc_check.wf", "loan_approval.wf", **{**LOAN_OK, **handlers})


def answer_offer(env: WorkflowEnv, iid: str, accepted: bool) -> None:
    env.signal(
        iid, "offer_response", {"accepted": accepted, "signed_at": env.now if accepted else None}
    )


def decide(env: WorkflowEnv, iid: str, node: str, decision: str, amount: str | None = None) -> None:
    key = task_key(env, iid, node)
    form: dict[str, Value] = {
        "decision": decision,
        "approved_amount": None if amount is None else Decimal(amount),
        "rate": Decimal("6.5"),
    }
    if node == "underwrite":
        form["notes"] = "checked payslips"
    env.complete(key, form)


@reaches("loan_approval", "approved")
def test_loan_approved_automatically_pays_out_on_the_funds_date() -> None:
    env = loan()
    iid = env.start("loan_approval", LOAN)
    answer_offer(env, iid, accepted=True)
    env.advance(days=1.99)
    assert "loans.disburse" not in env.services_called()  # cooling off until FUNDS_AT
    env.advance(days=0.01)
    finished(
        env, iid, "approved", "completed", APPROVED,
        kyc_passed=True, score=750, band="low", decision="approve",
        approved_amount=Decimal("10000"), rate=Decimal("4.9"), accepted=True,
        offer_id="of-1", funds_available_at=FUNDS_AT,
    )  # fmt: skip
    assert calls(env, "loans.offer") == [
        {"application_id": "app-1", "amount": Decimal("10000"), "rate": Decimal("4.9"),
         "term_months": 36}
    ]  # fmt: skip
    assert env.status(child(env, iid)) == "completed"


def test_loan_funds_date_already_passed_pays_out_at_once() -> None:
    env = loan(
        loans__offer=succeed({"offer_id": "of-1", "expires_at": T0, "funds_available_at": T0 - DAY})
    )
    iid = env.start("loan_approval", LOAN)
    answer_offer(env, iid, accepted=True)
    finished(env, iid, "approved", "completed", APPROVED)


@reaches("loan_approval", "reminded")
def test_loan_approved_by_an_underwriter_after_a_reminder_and_a_referral() -> None:
    env = loan(credit__score=succeed({"score": 650, "band": "medium"}))
    iid = env.start("loan_approval", {**LOAN, "amount": Decimal("40000")})
    (task,) = env.engine.human_tasks()
    assert (task.node, task.assignee, task.args) == (
        "underwrite", "underwriters",
        {"application_id": "app-1", "score": 650, "amount": Decimal("40000"), "notes": None},
    )  # fmt: skip
    env.advance(hours=24)  # non-interrupting: a reminder, the task stays with the underwriters
    assert [c["template"] for c in calls(env, "notify.send")] == ["loan-waiting"]
    decide(env, iid, "underwrite", "refer")
    assert [c["template"] for c in calls(env, "notify.send")] == ["loan-waiting", "loan-documents"]
    env.signal(iid, "documents_uploaded", {"count": 3})
    (again,) = env.engine.human_tasks()
    assert again.args["notes"] == "checked payslips"  # the first look's notes
    decide(env, iid, "underwrite", "approve", "35000")
    answer_offer(env, iid, accepted=True)
    env.advance(days=2)
    decisions = finished(
        env, iid, "approved", "completed", APPROVED,
        decision="approve", approved_amount=Decimal("35000"), rate=Decimal("6.5"),
        underwriter_notes="checked payslips",
    )  # fmt: skip
    assert decisions.count("enter underwrite") == 2
    assert "enter reminded" in decisions and "side path ended" in decisions
    assert calls(env, "loans.offer")[0]["amount"] == Decimal("35000")


def test_loan_approved_by_the_committee_after_three_days() -> None:
    env = loan(credit__score=succeed({"score": 600, "band": "medium"}))
    iid = env.start("loan_approval", LOAN)
    env.advance(days=3)
    assert [t.node for t in env.engine.human_tasks()] == ["committee"]
    decide(env, iid, "committee", "approve", "8000")
    answer_offer(env, iid, accepted=True)
    env.advance(days=2)
    decisions = finished(
        env, iid, "approved", "completed", APPROVED, approved_amount=Decimal("8000")
    )
    assert decisions.count("enter reminded") == 1  # the reminder timer fires once


@reaches("loan_approval", "declined")
@pytest.mark.parametrize(
    ("handlers", "advance_d", "decider", "kyc_status"),
    [
        pytest.param({"compliance__screen": succeed({"hit": True, "list_name": "EU"})}, 0, None,
                     "completed", id="kyc-not-passed"),
        pytest.param({"credit__score": succeed({"score": 480, "band": "medium"})}, 0, None,
                     "completed", id="low-score"),
        pytest.param({"credit__score": succeed({"score": 650, "band": "high"})}, 0, None,
                     "completed", id="high-risk"),
        pytest.param({"credit__score": succeed({"score": 650, "band": "medium"})}, 0,
                     "underwrite", "completed", id="underwriter-declines"),
        pytest.param({"credit__score": succeed({"score": 650, "band": "medium"})}, 3,
                     "committee", "completed", id="committee-declines"),
        pytest.param({"identity__check_document": delay()}, 7, None, "cancelled",
                     id="kyc-timeout"),
    ],
)  # fmt: skip
def test_loan_declined(
    handlers: dict[str, Script], advance_d: int, decider: str | None, kyc_status: str
) -> None:
    env = loan(**handlers)
    iid = env.start("loan_approval", {**LOAN, "document_ids": ["passport"]})
    env.advance(days=advance_d)
    if decider is not None:
        decide(env, iid, decider, "decline")
    decisions = finished(env, iid, "declined", "completed", DECLINED, offer_id=None)
    assert env.status(child(env, iid)) == kyc_status
    assert "loans.offer" not in env.services_called()
    assert ("enter score" in decisions) is (kyc_status == "completed")


@reaches("loan_approval", "withdrawn")
@pytest.mark.parametrize("how", ["offer-declined", "no-answer", "no-documents"])
def test_loan_withdrawn(how: str) -> None:
    score: dict[str, Value] = (
        {"score": 650, "band": "medium"} if how == "no-documents" else {"score": 750, "band": "low"}
    )
    env = loan(credit__score=succeed(score))
    iid = env.start("loan_approval", LOAN)
    if how == "offer-declined":
        answer_offer(env, iid, accepted=False)
    elif how == "no-answer":
        env.advance(days=6.99)
        assert env.status(iid) == "waiting"
        env.advance(days=0.01)
    else:
        decide(env, iid, "underwrite", "refer")
        env.advance(days=14)
    finished(env, iid, "withdrawn", "cancelled", accepted=False)
    assert "loans.disburse" not in env.services_called()


# ------------------------------------------------------------- shipment_fanout

PARCELS: list[Value] = [{"id": f"p-{n}", "weight_kg": Decimal("2.5")} for n in range(10)]
SHIPMENT: dict[str, Value] = {
    "shipment_id": "sh-1",
    "customer": CUSTOMER,
    "origin": {**ADDRESS, "country": "nl"},
    "destination": ADDRESS,
    "parcels": PARCELS,
    "total_weight_kg": Decimal("25"),
    "declared_value": Decimal("900"),
    "pickup_after": T0 + HOUR,
}
SHIP_OK: dict[str, Script] = {
    "carriers__quote": succeed({"quote_id": "q"}),
    "carriers__best_quote": succeed({"carrier": "ups", "price": Decimal("42.00")}),
    "carriers__book_pickup": succeed({"pickup_ref": "pu-1"}),
    "labels__create": succeed({"label_url": "https://labels/1"}),
    "customs__declare": succeed({"customs_ref": "cu-1"}),
    "notify__send": succeed({"message_id": "m-1"}),
}
DELIVERED_AT = T0 + 3 * DAY


def shipment(**handlers: Script) -> WorkflowEnv:
    return env_of("shipment_fanout.wf", **{**SHIP_OK, **handlers})


def quotes_from(*answering: str) -> Script:
    """Carriers in `answering` quote at once; the others never answer."""

    def quote(carrier: str, **_: Value) -> Any:  # pending() is an Any sentinel
        return {"quote_id": f"q-{carrier}"} if carrier in answering else pending()

    return quote


def delivered(env: WorkflowEnv, iid: str) -> list[str]:
    return finished(
        env, iid, "delivered", "completed",
        {"shipment_id": "sh-1", "carrier": "ups", "delivered_at": DELIVERED_AT},
        carrier="ups", price=Decimal("42.00"), delivered_at=DELIVERED_AT,
    )  # fmt: skip


@reaches("shipment_fanout", "delivered")
def test_shipment_delivered() -> None:
    env = shipment(carriers__quote=quotes_from("dhl", "ups"))
    iid = env.start("shipment_fanout", SHIPMENT)
    assert env.open_tasks(iid) == []  # fedex was cancelled: two quotes were enough
    env.message(iid, "parcel_delivered", {"shipment_id": "sh-1", "delivered_at": DELIVERED_AT,
                                          "signed_by": "Ada"})  # fmt: skip
    decisions = delivered(env, iid)
    for end in ("dhl_quoted", "ups_quoted", "pickup_booked", "customs_declared", "customer_told",
                "delivery_seen"):  # fmt: skip
        assert f"enter {end}" in decisions
    assert "enter fedex_quoted" not in decisions and "enter exception_seen" not in decisions
    assert decisions.count("enter labelled") == 10
    assert env.context(iid)["customs_ref"] == "cu-1"  # "nl" and "NO" differ
    assert env.context(iid)["pickup_ref"] == "pu-1"
    assert {c["carrier"] for c in calls(env, "labels.create")} == {"ups"}


def test_shipment_delivered_domestic_after_a_quote_timeout_and_labels_by_hand() -> None:
    def label(parcel_id: str, **_: Value) -> dict[str, Value]:
        if parcel_id in ("p-3", "p-7"):  # two of ten fail: more than 10%
            raise TaskError("ServiceUnavailable", transient=True)
        return {"label_url": f"https://labels/{parcel_id}"}

    env = shipment(carriers__quote=quotes_from("ups"), labels__create=label)
    iid = env.start("shipment_fanout", {**SHIPMENT, "origin": ADDRESS})
    env.advance(minutes=2)  # only one quote: the timeout goes on to pick a carrier
    env.advance(seconds=1 + 2 + 4 + 2)  # four attempts per label, with jitter
    key = task_key(env, iid, "labels_by_hand")
    env.complete(key, {"printed": 2})
    env.message(iid, "parcel_delivered", {"shipment_id": "sh-1", "delivered_at": DELIVERED_AT})
    decisions = delivered(env, iid)
    assert "labels: ServiceUnavailable (MapFailed) handled" in decisions
    assert "enter no_customs" in decisions and "customs.declare" not in env.services_called()
    assert env.context(iid)["labels_by_hand"] == 2


def test_shipment_labels_by_hand_after_thirty_minutes() -> None:
    env = shipment(labels__create=delay())
    iid = env.start("shipment_fanout", SHIPMENT)
    assert len(env.open_tasks(iid)) == 8  # concurrency 8
    env.advance(minutes=30)
    env.complete(task_key(env, iid, "labels_by_hand"), {"printed": 10})
    env.message(iid, "parcel_delivered", {"shipment_id": "sh-1", "delivered_at": DELIVERED_AT})
    delivered(env, iid)


def test_shipment_delivered_after_an_exception_was_investigated() -> None:
    env = shipment()
    iid = env.start("shipment_fanout", SHIPMENT)
    env.message(iid, "delivery_exception", {"shipment_id": "sh-1", "reason": "address unknown"})
    key = task_key(env, iid, "investigate")
    (task,) = [t for t in env.engine.human_tasks() if t.key == key]
    assert task.args == {
        "shipment_id": "sh-1",
        "reason": "address unknown",
        "carrier": "ups",
        "price": Decimal("42.00"),
        "pickup_ref": "pu-1",
        "customs_ref": "cu-1",
        "labels_by_hand": 0,
    }
    env.complete(key, {"found": True, "delivered_at": DELIVERED_AT})
    decisions = delivered(env, iid)
    assert "enter exception_seen" in decisions
    assert env.context(iid)["exception_reason"] == "address unknown"


@reaches("shipment_fanout", "no_carrier")
def test_shipment_no_carrier() -> None:
    env = shipment(carriers__best_quote=permanent("NoCarrier"))
    iid = env.start("shipment_fanout", SHIPMENT)
    finished(env, iid, "no_carrier", "failed", carrier=None)
    assert env.instance(iid).error == "NoCarrier"
    assert "labels.create" not in env.services_called()


@reaches("shipment_fanout", "lost")
@pytest.mark.parametrize("how", ["not-found", "search-timeout", "no-scan"])
def test_shipment_lost(how: str) -> None:
    env = shipment()
    iid = env.start("shipment_fanout", SHIPMENT)
    if how == "no-scan":
        env.advance(days=21)  # no message at all
        assert env.context(iid)["exception_reason"] is None
    else:
        env.message(iid, "delivery_exception", {"shipment_id": "sh-1", "reason": "damaged"})
    key = task_key(env, iid, "investigate")
    if how == "search-timeout":
        env.advance(days=14)
    else:
        env.complete(key, {"found": False, "delivered_at": None})
    finished(env, iid, "lost", "failed", delivered_at=None)
    assert env.instance(iid).error == "ShipmentLost"


# -------------------------------------------------------- subscription_renewal

FIRST_RENEWAL = T0 + DAY
SUBSCRIPTION: dict[str, Value] = {
    "subscription_id": "sub-1",
    "customer": CUSTOMER,
    "plan": "pro",
    "price": Decimal("9.99"),
    "first_renewal_at": FIRST_RENEWAL,
    "max_renewals": 2,
}
SUB_OK: dict[str, Script] = {
    "payments__charge": succeed({"charge_id": "ch-1", "settled": True}),
    "notify__send": succeed({"message_id": "m-1"}),
}


def subscription(**handlers: Script) -> WorkflowEnv:
    return env_of("subscription_renewal.wf", **{**SUB_OK, **handlers})


def until_renewal(env: WorkflowEnv, n: int) -> None:
    """Move the clock to the n-th renewal date (n = 0 is the first)."""
    env.advance(ms=FIRST_RENEWAL + n * 30 * DAY - env.now)


@reaches("subscription_renewal", "term_complete")
def test_subscription_term_complete() -> None:
    env = subscription()
    iid = env.start("subscription_renewal", SUBSCRIPTION)
    env.advance(ms=DAY - 1)
    assert env.services_called() == []
    for n in range(3):
        until_renewal(env, n)
    decisions = finished(
        env, iid, "term_complete", "completed",
        {"subscription_id": "sub-1", "renewals": 2, "ended_because": "term"},
        renewals=2, renews_at=FIRST_RENEWAL + 60 * DAY, cancel_reason=None, settled=False,
    )  # fmt: skip
    assert [c["key"] for c in calls(env, "payments.charge")] == ["sub-1/1", "sub-1/2"]
    assert [c["template"] for c in calls(env, "notify.send")] == ["renewal-receipt/pro"] * 2
    assert decisions.count("enter due") == 3 and "enter cancel_noted" not in decisions


def test_subscription_renews_after_settlement_and_a_provider_outage() -> None:
    answers: Iterator[dict[str, Value] | None] = iter(
        [None, None, None, {"charge_id": "ch-2", "settled": False}]
    )

    def charge(
        **_: Value,
    ) -> dict[str, Value]:  # down for three calls, then accepted but not settled
        answer = next(answers)
        if answer is None:
            raise TaskError("ServiceUnavailable", transient=True)
        return answer

    env = subscription(
        payments__charge=charge,
        notify__send=by_attempt(transient(), transient(), transient()),  # receipts never go out
    )  # fmt: skip
    iid = env.start("subscription_renewal", {**SUBSCRIPTION, "max_renewals": 1})
    until_renewal(env, 0)
    env.advance(seconds=5 + 10)  # three attempts, then 'on ServiceUnavailable -> back_off'
    assert env.services_called() == ["payments.charge"] * 3
    env.advance(minutes=15)  # the back-off sleep; the charge starts again at attempt 1
    assert env.services_called().count("payments.charge") == 4
    (token,) = env.instance(iid).tokens
    assert token.waiting == "message:invoice_paid:sub-1"
    env.message(iid, "invoice_paid", {"subscription_id": "sub-1", "invoice_id": "inv-1",
                                      "amount": Decimal("9.99")})  # fmt: skip
    env.advance(minutes=2)  # the receipt fails three times: 'on any -> cycle'
    until_renewal(env, 1)
    decisions = finished(
        env, iid, "term_complete", "completed",
        {"subscription_id": "sub-1", "renewals": 1, "ended_because": "term"}, charge_id="ch-2",
    )  # fmt: skip
    assert "enter back_off" in decisions and "send_receipt: Unavailable handled" in decisions


@reaches("subscription_renewal", "cancelled")
@pytest.mark.parametrize("when", ["waiting", "while-charging"])
def test_subscription_cancelled(when: str) -> None:
    env = subscription(payments__charge=delay())
    iid = env.start("subscription_renewal", SUBSCRIPTION)
    renewals = 0
    if when == "while-charging":  # the signal waits in the buffer for the next cycle
        until_renewal(env, 0)
        env.signal(iid, "cancel", {"reason": "too expensive", "requested_by": "ada"}, key="c-1")
        assert len(env.instance(iid).buffered) == 1
        env.complete(task_key(env, iid, "charge"), {"charge_id": "ch-1", "settled": True})
        renewals = 1
    else:
        env.signal(iid, "cancel", {"reason": "too expensive", "requested_by": "ada"}, key="c-1")
    env.signal(iid, "cancel", {"reason": "again", "requested_by": "ada"}, key="c-1")  # a duplicate
    output = {
        "subscription_id": SUBSCRIPTION["subscription_id"],
        "renewals": renewals,
        "ended_because": "cancelled: too expensive",
    }
    decisions = finished(
        env, iid, "cancelled", "cancelled", output,
        renewals=renewals, cancel_reason="too expensive",
    )  # fmt: skip
    assert "enter cancel_noted" in decisions and "enter due" not in decisions[-8:]
    assert "cycle: join any satisfied" in decisions


@reaches("subscription_renewal", "lapsed")
@pytest.mark.parametrize("how", ["declined", "never-settled"])
def test_subscription_lapsed_after_dunning(how: str) -> None:
    charge = (
        permanent("CardDeclined") if how == "declined"
        else succeed({"charge_id": "ch-1", "settled": False})
    )  # fmt: skip
    env = subscription(payments__charge=charge)
    iid = env.start("subscription_renewal", SUBSCRIPTION)
    until_renewal(env, 0)
    for _ in range(4):  # dunning rounds: notify, wait two days, count, charge again
        if how == "never-settled":
            env.advance(days=3)  # settlement_window
        env.advance(days=2)
    decisions = finished(
        env, iid, "lapsed", "failed", renewals=0, dunning_attempts=4, charge_id=(
            None if how == "declined" else "ch-1"
        ),
    )  # fmt: skip
    assert env.instance(iid).error == "SubscriptionLapsed"
    assert env.services_called().count("payments.charge") == 4
    assert [c["template"] for c in calls(env, "notify.send")] == ["payment-failed"] * 4
    assert decisions.count("enter dunning_pause") == 4


# ------------------------------------------------------------- purchase_quotes


def order_line(
    sku: str, qty: int, price: str, hazardous: bool = False, note: str | None = None
) -> dict[str, Value]:
    return {
        "sku": sku,
        "qty": qty,
        "unit_price": Decimal(price),
        "hazardous": hazardous,
        "note": note,
    }


PURCHASE: dict[str, Value] = {
    "order_id": "po-1",
    "lines": [order_line("bolt", 100, "0.25", note="zinc"), order_line("nut", 100, "0.10")],
    "extras": [order_line("glue", 2, "4.50")],
    "budget": Decimal("50"),
}
#: The supplier's lead time of each sku, in days.
LEAD_DAYS = {"bolt": 3, "nut": 5, "glue": 21, "solvent": 10}


def quote(order_id: str, lines: list[dict[str, Value]], **_: Value) -> dict[str, Value]:
    """A quote per line: its quantity times its unit price, and the sku's lead time."""
    quotes: list[Value] = []
    for item in lines:
        qty, price, sku = item["qty"], item["unit_price"], item["sku"]
        assert isinstance(qty, int) and isinstance(price, Decimal | int) and isinstance(sku, str)
        quotes.append({"sku": sku, "amount": price * qty, "lead_days": LEAD_DAYS[sku]})
    return {"quotes": quotes}


def promise(most: int | None = None) -> Script:
    """A supplier that promises what is asked, at most ``most`` of a sku per ask."""

    def confirm(order_id: str, sku: str, qty: int, **_: Value) -> dict[str, Value]:
        return {"qty": qty if most is None else min(qty, most)}

    return confirm


def purchasing(**handlers: Script) -> WorkflowEnv:
    return env_of(
        "purchase_quotes.wf",
        **{
            "pricing__quote": quote,
            "suppliers__confirm": promise(),
            "purchasing__approve": succeed({"approver": "kim"}),
            **handlers,
        },
    )


@reaches("purchase_quotes", "approved")
def test_purchase_approved_for_a_slow_quote() -> None:
    """The glue takes 21 days: within budget (25 + 10 + 9 = 44), but a person approves."""
    env = purchasing()
    iid = env.start("purchase_quotes", PURCHASE)
    finished(
        env, iid, "approved", "completed",
        {
            "order_id": "po-1", "status": "approved", "total": Decimal("44.00"),
            "skus": ["bolt", "nut", "glue"], "slow_skus": ["glue"], "notes": ["zinc"],
            "approved_by": "kim",
        },
        quick=False, hazardous=False, approver="kim",
    )  # fmt: skip
    (sent,) = calls(env, "purchasing.approve")
    assert sent == {
        "order_id": "po-1",
        "total": Decimal("44.00"),
        "hazardous_skus": [],
        "promised": [100, 100, 2],  # what each line's item was promised, in line order
    }
    (priced,) = calls(env, "pricing.quote")
    lines = priced["lines"]
    assert isinstance(lines, list)
    assert [item["sku"] for item in lines if isinstance(item, dict)] == ["bolt", "nut", "glue"]


@reaches("purchase_quotes", "accepted")
def test_purchase_accepted_within_budget_and_quick() -> None:
    env = purchasing()
    iid = env.start("purchase_quotes", {**PURCHASE, "extras": []})
    finished(
        env, iid, "accepted", "completed",
        {
            "order_id": "po-1", "status": "accepted", "total": Decimal("35.00"),
            "skus": ["bolt", "nut"], "slow_skus": [], "notes": ["zinc"],
        },
        quick=True, hazardous=False,
    )  # fmt: skip
    assert calls(env, "purchasing.approve") == []


def test_purchase_of_something_hazardous_is_approved_by_a_person() -> None:
    env = purchasing()
    solvent = order_line("solvent", 1, "3.00", hazardous=True, note="flammable")
    iid = env.start("purchase_quotes", {**PURCHASE, "extras": [solvent]})
    assert env.status(iid) == "completed"
    (sent,) = calls(env, "purchasing.approve")
    assert sent["hazardous_skus"] == ["solvent"]
    assert env.instance(iid).output == {
        "order_id": "po-1",
        "status": "approved",
        "total": Decimal("38.00"),
        "skus": ["bolt", "nut", "solvent"],
        "slow_skus": [],
        "notes": ["zinc", "flammable"],
        "approved_by": "kim",
    }


def test_each_line_asks_again_for_what_was_not_promised_in_its_own_variables() -> None:
    """A supplier promises at most 60 of a sku per ask: the 100 bolts and the 100 nuts
    are each asked for twice (100, then the 40 left), every item counting its own asks
    and promises (``local``), and the quick order is accepted."""
    env = purchasing(suppliers__confirm=promise(60))
    iid = env.start("purchase_quotes", {**PURCHASE, "extras": []})
    finished(
        env, iid, "accepted", "completed",
        {
            "order_id": "po-1", "status": "accepted", "total": Decimal("35.00"),
            "skus": ["bolt", "nut"], "slow_skus": [], "notes": ["zinc"],
        },
        promised=[100, 100], short=[False, False],
    )  # fmt: skip
    asked = sorted((str(c["sku"]), c["qty"]) for c in calls(env, "suppliers.confirm"))
    assert asked == [("bolt", 40), ("bolt", 100), ("nut", 40), ("nut", 100)]


def test_a_line_still_short_after_three_asks_is_approved_by_a_person() -> None:
    env = purchasing(suppliers__confirm=promise(30))
    iid = env.start("purchase_quotes", {**PURCHASE, "extras": []})
    finished(
        env, iid, "approved", "completed",
        {
            "order_id": "po-1", "status": "approved", "total": Decimal("35.00"),
            "skus": ["bolt", "nut"], "slow_skus": [], "notes": ["zinc"],
            "approved_by": "kim",
        },
        promised=[90, 90], short=[True, True],
    )  # fmt: skip
    assert len(calls(env, "suppliers.confirm")) == 6  # three asks per line, then no more
    (sent,) = calls(env, "purchasing.approve")
    assert sent["promised"] == [90, 90]


@reaches("purchase_quotes", "over_budget")
def test_purchase_far_over_budget_fails() -> None:
    env = purchasing()
    iid = env.start("purchase_quotes", {**PURCHASE, "budget": Decimal("30")})
    finished(env, iid, "over_budget", "failed", None, total=Decimal("44.00"))
    assert env.instance(iid).error == "OverBudget"
    assert calls(env, "purchasing.approve") == []


@reaches("purchase_quotes", "rejected")
@pytest.mark.parametrize(
    "change",
    [
        {"lines": [], "extras": []},
        {"blocked_skus": ["glue"]},
        {"extras": [order_line("glue", 0, "4.50")]},
    ],
    ids=["empty", "blocked", "no-quantity"],
)
def test_purchase_rejected_before_pricing(change: dict[str, Value]) -> None:
    env = purchasing()
    iid = env.start("purchase_quotes", {**PURCHASE, **change})
    finished(env, iid, "rejected", "failed", None)
    assert env.instance(iid).error == "OrderRejected"
    assert env.services_called() == []


# -------------------------------------------------------------------- pricing

PRICING: dict[str, Value] = {
    "sku": "bolt-m8",
    "qty": 3,
    "buyer": CUSTOMER,
    "credit_limit": Decimal("100.00"),
}


#: The quote leaves out its currency (the record's default) and gives its price as a
#: JSON float (read as the decimal it is written as, exactly).
def float_quote(**_: Value) -> Any:
    return {"supplier": "acme", "price": 2.1}  # as a JSON API would give it


PRICING_OK: dict[str, Script] = {
    "pricing__quote": float_quote,
    "stock__hold": succeed({"hold_id": "h-1", "expires_at": T0 + HOUR}),
    "risk__score": succeed({"score": 10}),
    "stock__release": succeed(),
}
QUOTE: dict[str, Value] = {"supplier": "acme", "price": Decimal("2.1"), "currency": "EUR"}


def pricing(**handlers: Script) -> WorkflowEnv:
    return env_of("pricing.wf", **{**PRICING_OK, **handlers})


@reaches("pricing", "priced")
def test_pricing_priced_with_the_named_results_defaults_and_exact_decimals() -> None:
    env = pricing()
    iid = env.start("pricing", PRICING)
    output: dict[str, Value] = {
        "price": Decimal("6.3"),
        "currency": "EUR",
        "hold_id": "h-1",
        "quote": QUOTE,
    }
    finished(env, iid, "priced", "completed", output, quote=QUOTE, risk=10)
    assert calls(env, "pricing.quote") == [{"sku": "bolt-m8", "qty": 3, "tier": "gold"}]


@reaches("pricing", "refused")
@pytest.mark.parametrize(("score", "limit"), [(90, "100.00"), (10, "6.29")])
def test_pricing_refused_releases_the_hold_but_undoes_no_read(score: int, limit: str) -> None:
    env = pricing(risk__score=succeed({"score": score}))
    iid = env.start("pricing", {**PRICING, "credit_limit": Decimal(limit)})
    finished(env, iid, "refused", "compensated", None, hold_id="h-1", risk=score)
    assert env.services_called() == ["pricing.quote", "stock.hold", "risk.score", "stock.release"]
    assert calls(env, "stock.release") == [{"hold_id": "h-1"}]


@reaches("pricing", "no_price")
def test_pricing_no_price() -> None:
    env = pricing(pricing__quote=permanent("NoPrice"))
    iid = env.start("pricing", PRICING)
    finished(env, iid, "no_price", "failed", quote=None)
    assert env.instance(iid).error == "NoPrice"


@reaches("pricing", "no_stock")
def test_pricing_no_stock() -> None:
    env = pricing(stock__hold=permanent("NoStock"))
    iid = env.start("pricing", PRICING)
    finished(env, iid, "no_stock", "failed", hold_id=None)
    assert env.services_called() == ["pricing.quote", "stock.hold"]


def test_pricing_a_quote_that_does_not_fit_its_named_record_fails_the_attempt() -> None:
    env = pricing(pricing__quote=succeed({"supplier": "acme", "price": "cheap"}))
    iid = env.start("pricing", PRICING)
    env.advance(minutes=1)  # past the quote's retries: an invalid result is not retried
    assert env.status(iid) == "dead_lettered"
    assert env.instance(iid).error == "quote: InvalidResult 'price' must be decimal, not str"
    assert env.services_called() == ["pricing.quote"]
    assert env.context(iid)["quote"] is None


# ------------------------------------------------------------ expense_approval

CLAIM: dict[str, Value] = {
    "claim_id": "x-1",
    "employee": "ada",
    "team": "research",
    "amount": Decimal("120.50"),
}
OVER_BUDGET = permanent(
    "OverBudget",
    "research has 100.00 left",
    {"over_by": 20.5, "budget_left": Decimal("100.00"), "checked_at": T0},  # type: ignore[dict-item]
)


def expense(**handlers: Script) -> WorkflowEnv:
    ok: dict[str, Script] = {
        "budget__reserve": succeed({"reservation_id": "r-1"}),
        "payroll__reimburse": succeed(),
    }
    return env_of("expense_approval.wf", **{**ok, **handlers})


@reaches("expense_approval", "paid")
def test_expense_within_budget_is_paid() -> None:
    env = expense()
    iid = env.start("expense_approval", CLAIM)
    out: dict[str, Value] = {"claim_id": "x-1", "status": "paid", "overrun": 0}
    finished(env, iid, "paid", "completed", out)


def test_expense_over_budget_shows_the_payload_to_the_manager_and_is_paid() -> None:
    env = expense(budget__reserve=OVER_BUDGET)
    iid = env.start("expense_approval", CLAIM)
    (task,) = env.engine.human_tasks()
    # the payload as declared: a JSON float became the exact decimal it reads as
    assert task.args == {
        "claim_id": "x-1",
        "over_by": Decimal("20.5"),
        "budget_left": Decimal("100.00"),
        "checked_at": T0,
        "answer_by": T0 + 2 * DAY,  # now(): the time of the step that entered the task
    }
    assert task.assignee == "research-managers"  # no manager named: the team's
    env.advance(days=3)
    env.complete(task.key, {"approved": True})
    out: dict[str, Value] = {"claim_id": "x-1", "status": "paid", "overrun": Decimal("20.5")}
    finished(env, iid, "paid", "completed", out, approved=True)


@pytest.mark.parametrize(
    ("submitted_at", "paid"),
    [("2026-02-01T09:00:00Z", True), ("2026-01-31T08:59:59Z", False), (T0 - 29 * DAY, True)],
)
def test_expense_overrun_goes_to_the_named_manager_and_is_refused_after_30_days(
    submitted_at: Value, paid: bool
) -> None:
    """The claim's JSON may give the submission time as ISO-8601 text; the manager
    approves at T0 + 1 day: 30 days after it at most, the claim is paid, else refused."""
    env = expense(budget__reserve=OVER_BUDGET)
    claim = {**CLAIM, "manager": "bea", "submitted_at": submitted_at}
    iid = env.start("expense_approval", claim)
    (task,) = env.engine.human_tasks()
    assert task.assignee == "bea"
    env.advance(days=1)
    env.complete(task.key, {"approved": True})
    assert env.status(iid) == ("completed" if paid else "failed")
    assert env.replay(iid).reproduces(env.instance(iid))


def test_expense_overrun_left_unanswered_is_refused_after_three_times_answer_within() -> None:
    """The claim's JSON gives the time to answer as ISO-8601 duration text (issue 14
    item 4): the task is due 4 hours after it opened, and is refused, through its
    timeout of ``3 * input.answer_within`` (an int times a duration), 12 hours after."""
    env = expense(budget__reserve=OVER_BUDGET)
    iid = env.start("expense_approval", {**CLAIM, "answer_within": "PT4H"})
    (task,) = env.engine.human_tasks()
    assert task.args["answer_by"] == T0 + 4 * HOUR
    env.advance(hours=11, minutes=59)
    assert env.status(iid) == "waiting" and env.open_tasks(iid) == [task.key]
    env.advance(minutes=1)
    out: dict[str, Value] = {"claim_id": "x-1", "status": "overrun refused", "overrun": 0}
    finished(env, iid, "refused_overrun", "failed", out)


@reaches("expense_approval", "refused_overrun")
def test_expense_over_budget_refused_by_the_manager() -> None:
    env = expense(budget__reserve=OVER_BUDGET)
    iid = env.start("expense_approval", CLAIM)
    env.complete(task_key(env, iid, "approve_overrun"), {"approved": False})
    out: dict[str, Value] = {
        "claim_id": "x-1",
        "status": "overrun refused",
        "overrun": Decimal("20.5"),
    }
    finished(env, iid, "refused_overrun", "failed", out)
    assert env.instance(iid).error == "ClaimRefused"


def test_expense_overrun_rejected_by_the_manager_with_a_reason() -> None:
    """The manager raises Rejected (issue 14 item 8): its payload is the refusal."""
    env = expense(budget__reserve=OVER_BUDGET)
    iid = env.start("expense_approval", CLAIM)
    env.fail(task_key(env, iid, "approve_overrun"), "Rejected", payload={"reason": "too much"})
    out: dict[str, Value] = {
        "claim_id": "x-1",
        "status": "overrun rejected: too much",
        "overrun": 0,
    }
    finished(env, iid, "refused", "failed", out)
    assert env.instance(iid).error == "ClaimRefused"
    assert "approve_overrun: Rejected handled" in env.decisions(iid)


def test_a_manager_raising_an_undeclared_error_or_a_wrong_payload_is_refused() -> None:
    env = expense(budget__reserve=OVER_BUDGET)
    iid = env.start("expense_approval", CLAIM)
    key = task_key(env, iid, "approve_overrun")
    before = env.instance(iid)
    for error, payload, problem in [
        (
            "Rejectd",
            {"reason": "x"},
            "approve_overrun does not raise 'Rejectd' (it raises Rejected); "
            "did you mean 'Rejected'?",
        ),
        ("OverBudget", None, "approve_overrun does not raise 'OverBudget' (it raises Rejected)"),
        ("Rejected", {"reason": 3}, "'reason' must be string, not int in the payload of Rejected"),
        ("Rejected", None, "missing field 'reason' (string) in payload of Rejected"),
    ]:
        with pytest.raises(InvalidValue) as refused:
            env.fail(key, error, payload=payload)
        assert refused.value.problems == (problem,)
        assert env.instance(iid) == before and env.open_tasks(iid) == [key]


@reaches("expense_approval", "refused")
def test_expense_refused_reads_the_error_name_and_message() -> None:
    env = expense(budget__reserve=permanent("TeamClosed", "research was merged"))
    iid = env.start("expense_approval", CLAIM)
    out: dict[str, Value] = {
        "claim_id": "x-1",
        "status": "TeamClosed: research was merged",
        "overrun": 0,
    }
    finished(env, iid, "refused", "failed", out)


def test_expense_over_budget_with_a_wrong_payload_is_an_invalid_result() -> None:
    wrong = permanent("OverBudget", "", {"over_by": "a lot", "budget_left": 1, "checked_at": T0})
    env = expense(budget__reserve=wrong)
    iid = env.start("expense_approval", CLAIM)
    out: dict[str, Value] = {
        "claim_id": "x-1",
        "status": "InvalidResult: 'over_by' must be decimal, not str in the payload of OverBudget",
        "overrun": 0,
    }
    finished(env, iid, "refused", "failed", out)


# ------------------------------------------------------------------ invoice_approval


def invoice() -> WorkflowEnv:
    return env_of("invoice_approval.wf", tax__add=succeed({"total": Decimal("120.60")}))


INVOICE: dict[str, Value] = {"invoice_id": "i-1", "amount": Decimal("100.50")}


@reaches("invoice_approval", "approved")
def test_invoice_approved_records_who_and_when() -> None:
    env = invoice()
    iid = env.start("invoice_approval", INVOICE)
    assert env.status(iid) == "waiting"  # for its approval
    assert env.stuck(waiting_on="signal:approval") == [iid]
    env.advance(days=1)
    env.signal(iid, "approval", {"by": "ada", "at": "2026-03-03T09:00:00Z"})
    approved_at = at("2026-03-03T09:00:00+00:00")
    out: dict[str, Value] = {
        "invoice_id": "i-1",
        "total": Decimal("120.60"),
        "approved_by": "ada",
        "approved_at": approved_at,
    }
    finished(env, iid, "approved", "completed", out, approved_at=approved_at)
    assert [c.field for e in env.history(iid) for c in e.changes][3:] == [
        "total", "approved_by", "approved_at"
    ]  # fmt: skip


@reaches("invoice_approval", "expired")
def test_invoice_not_approved_within_a_week_expires() -> None:
    env = invoice()
    iid = env.start("invoice_approval", INVOICE)
    env.advance(days=7)
    out: dict[str, Value] = {
        "invoice_id": "i-1",
        "total": Decimal("120.60"),
        "approved_by": "nobody",
        "approved_at": None,
    }
    finished(env, iid, "expired", "failed", out)
    assert env.instance(iid).error == "NotApproved"


# ------------------------------------------------------------------ shipment_events

#: The order side of the choreography: it hears how far its shipment got (a signal to
#: its own id) and that it was delivered (a message for its order id).
ORDER_SIDE = """\
workflow order_side version 1

input { order_id: string }
context { status: string = "", signed_by: string = "" }

signal shipment_update { status: string, tracking: string }
message delivered { order_id: string, tracking: string, signed_by: string }

start hear_update

wait hear_update: signal shipment_update {
    output { status: signal.status }
    next hear_delivery
}

wait hear_delivery: message delivered correlate input.order_id {
    output { signed_by: message.signed_by }
    next done
}

end done: completed
"""


def shipment_booking() -> tuple[WorkflowEnv, str, str]:
    """The order waiting for news, the shipment waiting for the carrier to book."""
    from wflang.dsl.parser import parse

    side = compile_workflow(parse(ORDER_SIDE, "order_side.wf")).table
    shipped = compile_workflow(parse_file(str(EXAMPLES / "shipment_events.wf"))).table
    assert side is not None and shipped is not None
    env = WorkflowEnv([side, shipped], {"carrier.book": succeed({"tracking": "T-9"})}, now=T0)
    order = env.start("order_side", {"order_id": "o-1"})
    iid = env.start(
        "shipment_events", {"order_id": "o-1", "order_instance": order, "address": "Main St 1"}
    )
    # The booking is async: the carrier answers later with the task's token.
    assert env.status(iid) == "running" and env.context(order)["status"] == ""
    return env, order, iid


def shipment_events() -> tuple[WorkflowEnv, str, str]:
    env, order, iid = shipment_booking()
    (token,) = env.open_tasks(iid)
    env.complete(token, {"tracking": "T-9"})
    return env, order, iid


@reaches("shipment_events", "cancelled", "note_relayed")
def test_shipment_relays_a_carrier_note_then_is_called_off_while_booking() -> None:
    env, order, iid = shipment_booking()
    # A note from the carrier for this order: passed on, and the booking goes on.
    assert env.publish("carrier_note", "o-1", {"order_id": "o-1", "note": "depot busy"}) == [iid]
    assert env.context(order)["status"] == "note: depot busy"
    (token,) = env.open_tasks(iid)
    assert env.context(iid)["note"] == "depot busy"
    # The order calls it off: the booking is cancelled, the order told.
    env.signal(iid, "cancel_shipment", {"reason": "customer cancelled"})
    finished(env, iid, "cancelled", "cancelled")
    assert env.open_tasks(iid) == []
    assert "book caught signal cancel_shipment" in env.decisions(iid)
    told = [b.payload for b in env.instance(order).buffered]
    assert told == [{"status": "cancelled: customer cancelled", "tracking": ""}]
    # The carrier's late answer with the booking's token is refused: the task is gone.
    with pytest.raises(KeyError, match="no open task"):
        env.complete(token, {"tracking": "T-9"})
    assert env.status(iid) == "cancelled"


def test_shipment_booking_heartbeats_then_goes_quiet_and_is_lost() -> None:
    env, order, iid = shipment_booking()
    (token,) = env.open_tasks(iid)
    for _ in range(5):  # alive past the heartbeat's 10 minutes, 45 minutes in all
        env.advance(ms=9 * 60_000)
        env.heartbeat(token)
    assert env.status(iid) == "running" and env.open_tasks(iid) == [token]
    env.advance(ms=10 * 60_000)  # quiet for 10 minutes: timed out as its 'timeout' is
    finished(env, iid, "lost", "failed")
    assert env.open_tasks(iid) == []
    assert env.context(order)["status"] == "lost"  # the order, waiting for news, told
    with pytest.raises(KeyError):  # a heartbeat after that is refused: the task is gone
        env.heartbeat(token)


@reaches("shipment_events", "done")
def test_shipment_tells_the_order_and_announces_the_delivery() -> None:
    env, order, iid = shipment_events()
    assert env.context(order)["status"] == "booked"  # the signal, sent in the booking's step
    assert env.publish("scanned", "T-9", {"tracking": "T-9", "signed_by": "Ann"}) == [iid]
    assert env.status(order) == "completed"  # the message 'delivered' reached it
    assert env.context(order) == {"status": "booked", "signed_by": "Ann"}
    # The hand-over: the receipt comes first, and its payload is read by its arm.
    assert env.status(iid) == "waiting"
    assert env.stuck(waiting_on="signal:return_parcel") == [iid]
    assert env.publish("receipt", "o-1", {"signed_by": "Bob"}) == [iid]
    finished(env, iid, "done", "completed", {"tracking": "T-9", "signed_by": "Bob"})


def test_shipment_hand_over_a_return_or_a_quiet_week() -> None:
    env, _order, iid = shipment_events()
    env.publish("scanned", "T-9", {"tracking": "T-9", "signed_by": "Ann"})
    env.signal(iid, "return_parcel", {"reason": "damaged"})
    finished(env, iid, "done", "completed", {"tracking": "T-9", "signed_by": "Ann"})
    assert "enter tell_returned" in env.decisions(iid)
    # The receipt arm lost with the return: a receipt published now reaches nobody.
    assert env.publish("receipt", "o-1", {"signed_by": "Bob"}) == []
    env2, _, iid2 = shipment_events()
    env2.publish("scanned", "T-9", {"tracking": "T-9", "signed_by": "Ann"})
    env2.advance(ms=7 * DAY)
    finished(env2, iid2, "done", "completed", {"tracking": "T-9", "signed_by": "Ann"})


@reaches("shipment_events", "lost", "delay_told")
def test_shipment_late_then_lost_tells_the_order() -> None:
    env, order, iid = shipment_events()
    env.advance(ms=3 * DAY)
    decisions = finished(env, iid, "lost", "failed")
    assert decisions.count("enter delay_told") == 2  # once a day, at most twice
    assert env.status(order) == "waiting"  # told 'booked', then the rest is buffered
    told = [b.payload for b in env.instance(order).buffered]
    assert told == [{"status": s, "tracking": "T-9"} for s in ("delayed", "delayed", "lost")]
