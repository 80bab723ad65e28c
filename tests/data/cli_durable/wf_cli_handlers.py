"""Handlers of tests/data/cli_durable/opsflow.wf for tests/test_cli_durable.py
(``wf worker --once --handlers wf_cli_handlers``)."""

from __future__ import annotations

from wflang.runtime.engine import TaskError, handler
from wflang.runtime.ir import Value


@handler("svc.a")
def a(id: str, amount: int) -> dict[str, Value]:
    return {"a": amount * 10}


@handler("svc.b")
def b(id: str, a: int) -> dict[str, Value]:
    if a == 0:  # an amount of 0 cannot be processed: the instance dead-letters
        raise TaskError("ZeroAmount", "svc.b cannot process a = 0")
    return {"b": a + 1}


# tests/data/durable/saga_ops.wf: c is rejected; undo_b fails for good for ids "fail-…".
@handler("fx.a")
def fx_a(id: str) -> dict[str, Value]:
    return {"a": id}


@handler("fx.b")
def fx_b(id: str) -> dict[str, Value]:
    return {"b": id}


@handler("fx.c")
def fx_c(id: str) -> dict[str, Value]:
    raise TaskError("Rejected", "c refuses")


@handler("fx.undo_a")
def fx_undo_a(a: str) -> None:
    return None


@handler("fx.undo_b")
def fx_undo_b(b: str) -> dict[str, Value]:
    if b.startswith("fail"):
        raise TaskError("Gone", "the charge is gone")
    return {"note": "undone"}


@handler("fx.undo_c")
def fx_undo_c(id: str) -> None:
    return None
