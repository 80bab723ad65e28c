"""Handlers of tests/data/cli_durable/opsflow.wf for tests/test_cli_durable.py
(``wf worker --once --handlers wf_cli_handlers``)."""

from __future__ import annotations

from wflang.runtime.engine import TaskError, handler


@handler("svc.a")
def a(id: str, amount: int) -> dict[str, object]:
    return {"a": amount * 10}


@handler("svc.b")
def b(id: str, a: int) -> dict[str, object]:
    if a == 0:  # an amount of 0 cannot be processed: the instance dead-letters
        raise TaskError("ZeroAmount", "svc.b cannot process a = 0")
    return {"b": a + 1}
