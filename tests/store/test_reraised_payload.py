"""An error's payload re-raised out of a branch, a map item or a called workflow (issue 14
leftovers, item 1) on SQLite and PostgreSQL: the payload crosses the worker, the store,
the child's finish and the parent's inbox exactly (a decimal stays a decimal), and the
parallel's, the map's or the call's route reads it, as on the engine
(tests/test_reraised_payload.py)."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

from wflang.compiler.compile import compile_workflow
from wflang.dsl.parser import parse_file
from wflang.runtime import instance as rt
from wflang.runtime.engine import TaskError
from wflang.runtime.ir import Value
from wflang.runtime.table import Table
from wflang.store import Store

from .kit import Durable, VirtualClock, replays_exactly

DATA = Path(__file__).parent.parent / "data" / "reraise"
MISSING = Decimal("12.50")


def _table(name: str) -> Table:
    compiled = compile_workflow(parse_file(str(DATA / f"{name}.wf")))
    assert compiled.table is not None, [d.message for d in compiled.check.diagnostics]
    return compiled.table


def _debit(short: str):  # type: ignore[no-untyped-def]
    def fn(account: Value) -> dict[str, Value]:
        if account == short:
            raise TaskError("InsufficientFunds", "short", transient=False,
                            payload={"missing": MISSING})  # fmt: skip
        return {"ok": True}

    return fn


@pytest.mark.parametrize("short", ["a", "b", "c", "m"])
def test_the_outer_route_reads_the_payload(store: Store, clock: VirtualClock, short: str) -> None:
    d = Durable(store, clock, {"bank.debit": _debit(short)}, _table("pay"), _table("funds"))
    iid = d.start("funds", {"accounts": ["x", "m"]}, f"funds-{short}")
    assert d.status(iid) == "completed"
    got = d.instance(iid)
    assert got.output == {"missing": MISSING}
    assert isinstance(got.output["missing"], Decimal)
    if short == "c":
        told = [r.entry.event for r in store.history(iid)]
        failed = [e for e in told if isinstance(e, rt.ChildFailed)]
        assert [(e.error, e.payload) for e in failed] == [
            ("InsufficientFunds", {"missing": MISSING})
        ]
    replays_exactly(store, iid)
