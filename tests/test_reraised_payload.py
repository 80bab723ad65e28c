"""An error's payload re-raised out of a branch, a map item or a called workflow (issue 14
leftovers, item 1): ``InsufficientFunds { missing: decimal }`` raised by a handler in a
branch (unhandled there, or handled by an end that fails with it again), in a map item,
or in a child workflow that ends ``failed { error InsufficientFunds }`` on its ``on
InsufficientFunds`` route, reaches the parallel's, the map's or the call's route with
its payload, which the checker types there. On the engine and the test kit here; on
SQLite and PostgreSQL in tests/store/test_reraised_payload.py."""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from pathlib import Path

import pytest

from wflang.compiler.check import check
from wflang.dsl.parser import parse_file
from wflang.runtime import instance as rt
from wflang.runtime.engine import Engine, TaskError
from wflang.runtime.ir import Value
from wflang.testing import WorkflowEnv

from .literals import same

DATA = Path(__file__).parent / "data" / "reraise"
FILES = (DATA / "funds.wf", DATA / "pay.wf")
MISSING = Decimal("12.50")
INPUT: dict[str, Value] = {"accounts": ["x", "m"]}

#: Which account lacks the money, and how the error comes out to a route.
WHERE = {
    "a": "a branch's unhandled error, to the parallel's route",
    "b": "a branch's end re-raising the error it handles, to the parallel's route",
    "m": "a map item's unhandled error, to the map's route",
    "c": "a child's end re-raising the error it handles, to the call's route",
}


def debit(short: str) -> Callable[..., dict[str, Value]]:
    """bank.debit: the account ``short`` lacks 12.50."""

    def fn(account: Value) -> dict[str, Value]:
        if account == short:
            raise TaskError("InsufficientFunds", "short", transient=False,
                            payload={"missing": MISSING})  # fmt: skip
        return {"ok": True}

    return fn


@pytest.mark.parametrize("short", sorted(WHERE))
def test_the_outer_route_reads_the_payload_on_the_test_kit(short: str) -> None:
    env = WorkflowEnv.from_files(*FILES, handlers={"bank.debit": debit(short)})
    iid = env.start("funds", INPUT)
    assert env.status(iid) == "completed", env.instance(iid).error
    out = env.instance(iid).output
    assert out is not None and same(out["missing"], MISSING), WHERE[short]


@pytest.mark.parametrize("short", sorted(WHERE))
def test_the_outer_route_reads_the_payload_on_the_engine(short: str) -> None:
    tables = WorkflowEnv.from_files(*FILES, allow_missing=True).engine.tables.values()
    engine = Engine(list(tables), {"bank.debit": debit(short)})
    iid = engine.start("funds", INPUT)
    got = engine.instance(iid)
    assert got.status is rt.Status.COMPLETED, got.error
    assert got.output is not None and same(got.output["missing"], MISSING), WHERE[short]


def test_a_child_that_fails_with_the_error_tells_its_parent_the_payload() -> None:
    env = WorkflowEnv.from_files(*FILES, handlers={"bank.debit": debit("c")})
    iid = env.start("funds", INPUT)
    told = [h.event for h in env.history(iid) if isinstance(h.event, rt.ChildFailed)]
    assert told == [rt.ChildFailed(told[0].key, "InsufficientFunds", {"missing": MISSING})]
    (child,) = (i for i in env.engine.records if i != iid)
    ends = [c for h in env.history(child) for c in h.commands if isinstance(c, rt.Finish)]
    assert ends == [rt.Finish(rt.Status.FAILED, None, "InsufficientFunds", {"missing": MISSING})]


# -- the checker ---------------------------------------------------------------------


def _findings(tmp_path: Path, funds: str, pay: str) -> list[str]:
    (tmp_path / "funds.wf").write_text(funds)
    (tmp_path / "pay.wf").write_text(pay)
    result = check([parse_file(str(tmp_path / "funds.wf")), parse_file(str(tmp_path / "pay.wf"))])
    return [f"{d.code} {d.message}" for d in result.diagnostics if d.severity.value == "error"]


FUNDS = (DATA / "funds.wf").read_text()
PAY = (DATA / "pay.wf").read_text()


def test_the_routes_read_the_payload_without_findings(tmp_path: Path) -> None:
    assert _findings(tmp_path, FUNDS, PAY) == []


def test_an_end_that_fails_with_the_error_it_does_not_handle_gives_no_payload(
    tmp_path: Path,
) -> None:
    """In a branch, ``give_up`` is also reached by ``on any``: it may fail with
    InsufficientFunds with no payload to give, so the parallel's route cannot read one."""
    funds = FUNDS.replace(
        "            on InsufficientFunds -> give_up\n",
        "            on InsufficientFunds -> give_up\n            on any -> give_up\n",
    )
    assert funds != FUNDS
    (found,) = _findings(tmp_path, funds, PAY)
    assert found.startswith("WF331 'error.payload' cannot be read here: ")
    assert "end 'give_up' fails with InsufficientFunds without its payload" in found


def test_a_child_that_declares_the_error_otherwise_gives_no_payload(tmp_path: Path) -> None:
    """Errors from a child are matched by name; its payload is readable only when the
    child declares the error with the caller's fields."""
    funds = FUNDS.replace('import "pay.wf"\n', 'import "pay.wf" as p\n').replace(
        "workflow pay version 1", "workflow p.pay version 1"
    )
    pay = PAY.replace("error InsufficientFunds { missing: decimal }",
                      "error InsufficientFunds { missing: int }")  # fmt: skip
    (found,) = _findings(tmp_path, funds, pay)
    assert "the workflow 'p.pay' declares InsufficientFunds with other payload fields" in found


def test_a_child_that_fails_with_the_error_unhandled_gives_no_payload(tmp_path: Path) -> None:
    pay = PAY.replace("    on InsufficientFunds -> give_up\n", "    on any -> give_up\n")
    (found,) = _findings(tmp_path, FUNDS, pay)
    assert (
        "in the workflow 'pay', end 'give_up' fails with InsufficientFunds without its payload"
        in found
    )
