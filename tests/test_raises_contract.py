"""A service that declares its errors (``raises``) is a contract (issue 12, checker item 1):
a handler failing its task with a declared error its service does not raise is an
invalid result, seen by the workflow's routes as ``InvalidResult``, never by that
error's name (``wf check``'s WF214 reasons the same way). The stores' side is in
tests/store/test_raises_contract.py."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from wflang.compiler.compile import compile_workflow
from wflang.dsl.parser import parse
from wflang.runtime import instance as rt
from wflang.runtime.engine import Engine, TaskError
from wflang.runtime.ir import Value
from wflang.runtime.table import Table
from wflang.testing import Outcome, WorkflowEnv, permanent, succeed, transient

#: ``refund`` (a branch of ``p``) calls a service that declares no errors; ``charge``
#: one that declares ``Declined``. The parallel routes ``Declined`` by name.
CONTRACT = """\
workflow contract version 1

error Declined, InvalidResult

service pay.charge() raises Declined

service pay.refund()

output { how: string }

start charge

task charge: service pay.charge {
    retry { attempts: 3 }
    on Declined -> declined
    next p
}

parallel p {
    branch b {
        task refund: service pay.refund {
            retry { attempts: 3 }
            next refunded
        }
        end refunded: completed
    }
    on Declined -> declined
    on InvalidResult -> invalid
    on any -> other
    next done
}

end done: completed {
    output { how: "done" }
}

end declined: completed {
    output { how: "declined" }
}

end invalid: completed {
    output { how: "invalid" }
}

end other: completed {
    output { how: "other" }
}
"""


def contract_table() -> Table:
    result = compile_workflow(parse(CONTRACT, "contract.wf"))
    assert result.table is not None, [d.message for d in result.check.diagnostics]
    return result.table


def test_the_table_carries_what_each_service_raises() -> None:
    table = contract_table()
    raises = {s.name: getattr(s.entry, "raises", "-") for s in table.states}
    assert raises["charge"] == ("Declined",)
    assert raises["refund"] == ()
    assert raises["done"] == "-"


def _engine_run(charge: Exception | None, refund: Exception | None) -> rt.Instance:
    def handler(error: Exception | None) -> Callable[[], dict[str, Value]]:
        def fn() -> dict[str, Value]:
            if error is not None:
                raise error
            return {}

        return fn

    engine = Engine(
        [contract_table()], {"pay.charge": handler(charge), "pay.refund": handler(refund)}
    )
    iid = engine.start("contract", {})
    engine.run()
    engine.advance(60_000)  # past any retry
    return engine.instance(iid)


@pytest.mark.parametrize("is_transient", [False, True])
def test_an_undeclared_error_is_an_invalid_result_on_the_engine(is_transient: bool) -> None:
    inst = _engine_run(None, TaskError("Declined", "no such card", transient=is_transient))
    assert inst.output == {"how": "invalid"}  # was "declined": routed by a name it cannot raise


def test_a_declared_error_is_routed_by_its_name_on_the_engine() -> None:
    inst = _engine_run(TaskError("Declined"), None)
    assert inst.output == {"how": "declined"}


def test_an_error_the_workflow_does_not_declare_keeps_its_name() -> None:
    """A crashing handler's exception (a name no route can take) is retried as before."""
    inst = _engine_run(None, RuntimeError("boom"))
    assert inst.output == {"how": "other"}


@pytest.mark.parametrize("outcome", [permanent("Declined"), transient("Declined")])
def test_an_undeclared_error_is_an_invalid_result_in_the_test_kit(outcome: Outcome) -> None:
    env = WorkflowEnv([contract_table()], {"pay.charge": succeed(), "pay.refund": outcome})
    iid = env.start("contract", {})
    assert env.instance(iid).output == {"how": "invalid"}
    assert env.services_called().count("pay.refund") == 1  # a contract breach is not retried
    assert any("pay.refund does not raise" in d for d in env.decisions(iid)), env.decisions(iid)
    assert env.replay(iid).ok


def test_a_declared_error_is_routed_by_its_name_in_the_test_kit() -> None:
    env = WorkflowEnv([contract_table()], {"pay.charge": permanent("Declined")}, allow_missing=True)
    iid = env.start("contract", {})
    assert env.instance(iid).output == {"how": "declined"}
