"""A compensated end reports the error it declares, or none, on a durable store too
(issue 12, checker item 4; the in-memory side is tests/test_compensated_end.py)."""

from __future__ import annotations

import pytest

from wflang.store import Store

from ..test_compensated_end import CASES, saga_table
from .kit import Durable, VirtualClock, fails, ok, replays_exactly


@pytest.mark.parametrize(("how", "status", "error"), CASES)
def test_a_compensated_end_reports_the_error_it_declares_on_a_store(
    store: Store, clock: VirtualClock, how: str, status: str, error: str | None
) -> None:
    handlers = {"s.book": ok(), "s.charge": fails("Declined"), "s.unbook": ok()}
    durable = Durable(store, clock, handlers, saga_table())
    iid = durable.start("undo_end", {"how": how}, "u-1")
    assert (durable.status(iid), durable.instance(iid).error) == (status, error)
    replays_exactly(store, iid)
