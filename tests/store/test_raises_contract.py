"""A service's ``raises`` is a contract on a durable store too (issue 12, checker item 1):
what tests/test_raises_contract.py checks on the engine and the test kit, on SQLite
and PostgreSQL."""

from __future__ import annotations

import pytest

from wflang.runtime.engine import Handler
from wflang.store import Store

from ..test_raises_contract import contract_table
from .kit import Durable, VirtualClock, fails, ok, replays_exactly


@pytest.mark.parametrize(
    ("charge", "refund", "how"),
    [
        (ok(), fails("Declined"), "invalid"),  # undeclared by pay.refund: was "declined"
        (ok(), fails("Declined", transient=True), "invalid"),
        (fails("Declined"), ok(), "declined"),  # declared by pay.charge: its own name
    ],
)
def test_a_service_raises_only_what_it_declares_on_a_store(
    store: Store, clock: VirtualClock, charge: Handler, refund: Handler, how: str
) -> None:
    durable = Durable(store, clock, {"pay.charge": charge, "pay.refund": refund}, contract_table())
    iid = durable.start("contract", {}, "c-1")
    durable.advance(60_000)  # past any retry
    assert durable.instance(iid).output == {"how": how}, durable.instance(iid).error
    assert durable.recorder.services().count("pay.refund") == (how == "invalid")
    replays_exactly(store, iid)
