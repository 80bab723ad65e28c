"""The in-memory engine and the test kit refuse what a durable store refuses, the same
way (issue 12): a start input that does not fit the workflow's declared input, and a
``call`` of a workflow that is not there (the call fails, as on a store, and nothing is
left half-applied). The stores' side is tests/store/test_refusals.py."""

from __future__ import annotations

import re
from decimal import Decimal
from pathlib import Path

import pytest

from wflang.compiler.compile import compile_workflow
from wflang.dsl.parser import parse
from wflang.runtime import instance as rt
from wflang.runtime.engine import Engine
from wflang.runtime.ir import Value
from wflang.runtime.table import Table
from wflang.runtime.validate import InvalidValue
from wflang.testing import WorkflowEnv

from .store.kit import compile_text, data_table

TYPED = """\
workflow typed version 1
input { n: int, d: decimal, on: bool = false, tags: list[string] = [] }
output { n: int }
start done
end done: completed { output { n: input.n } }
"""

#: Inputs that do not fit TYPED, and what the refusal says (as ``wf start`` says it).
BAD_INPUTS: list[tuple[dict[str, Value], str]] = [
    ({"d": 1}, "missing input field 'n' (int)"),
    ({"n": "1", "d": 1}, "'n' must be int, not str"),
    ({"n": True, "d": 1}, "'n' must be int, not bool"),
    ({"n": 1, "d": 1, "on": 1}, "'on' must be bool, not int"),
    ({"n": 1, "d": "1.5"}, "'d' must be decimal, not str"),
    ({"n": 1, "d": 1, "tags": [1]}, "'tags[0]' must be string, not int"),
    ({"n": 1, "d": 1, "extra": 1}, "unknown input field 'extra'"),
]


@pytest.mark.parametrize(("input", "says"), BAD_INPUTS)
def test_the_engine_refuses_an_input_that_does_not_fit(input: dict[str, Value], says: str) -> None:
    """Was: the engine started the instance with whatever it was given (``true`` for an
    int, a string for a decimal), which only failed later or computed nonsense."""
    engine = Engine([compile_text(TYPED)], {})
    with pytest.raises(InvalidValue, match=r"^the input of typed v1 does not fit: ") as caught:
        engine.start("typed", input)
    assert says in str(caught.value)
    assert engine.records == {} and not engine.queue  # nothing stored


@pytest.mark.parametrize(("input", "says"), BAD_INPUTS[:3])
def test_the_test_kit_refuses_an_input_that_does_not_fit(
    input: dict[str, Value], says: str
) -> None:
    env = WorkflowEnv([compile_text(TYPED)])
    with pytest.raises(InvalidValue, match=re.escape(says)):
        env.start("typed", input)
    assert env.engine.records == {}


def test_an_input_that_fits_starts() -> None:
    env = WorkflowEnv([compile_text(TYPED)])
    iid = env.start("typed", {"n": 1, "d": Decimal("1.5")})
    assert env.status(iid) == "completed"


#: Calls ``kid`` (not registered here) with a timeout, and routes any failure of the call.
ROUTED = """\
workflow routed version 1
import "kid.wf"
output { how: string }
start c
call c: workflow kid version 1 {
    args { id: "k" }
    timeout 1h -> late
    on any -> gave_up
    next done
}
end done: completed { output { how: "done" } }
end late: completed { output { how: "late" } }
end gave_up: completed { output { how: "gave up" } }
"""


def routed() -> Table:
    path = Path(__file__).parent / "data" / "durable" / "routed.wf"
    result = compile_workflow(parse(ROUTED, str(path)))
    assert result.table is not None, [d.message for d in result.check.diagnostics]
    return result.table


def test_a_call_of_a_workflow_that_is_not_registered_fails_the_call() -> None:
    """Was: a bare KeyError out of ``Engine.start``, with the parent's step half applied
    (its instance updated, the call's timer never started). Now the call fails as it
    does on a store, ``workflow 'kid' is not deployed``, and the workflow's own routes
    see it."""
    engine = Engine([data_table("parent"), routed()], {})
    iid = engine.start("parent", {"id": "p"})
    inst = engine.instance(iid)
    assert inst.status is rt.Status.DEAD_LETTERED, inst
    assert inst.error is not None and "workflow 'kid' is not deployed" in inst.error
    assert engine.records[iid].children == {} and not engine.timers and not engine.queue
    assert list(engine.records) == [iid]

    env = WorkflowEnv([routed()])
    iid = env.start("routed", {})
    assert env.status(iid) == "completed"
    assert env.instance(iid).output == {"how": "gave up"}
    assert not env.engine.timers  # the call's timeout went with it
    assert env.replay(iid).reproduces(env.instance(iid))
