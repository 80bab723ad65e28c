"""Sagas on the engine and the test kit (issue 12 item 6): which steps are compensated
(completed ones, and those whose outcome is unknown; not those that failed with a
business error), and what happens when a compensation fails for good: the instance
waits, dead-lettered, for an operator to retry, force-complete or skip it, and then
the remaining compensations run in order."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

import pytest

from wflang.compiler.compile import compile_workflow
from wflang.dsl.parser import parse
from wflang.runtime import instance as rt
from wflang.runtime.engine import Handler, TaskError
from wflang.testing import Script, WorkflowEnv, delay, permanent, succeed, transient

SAGA = Path(__file__).parent / "data" / "durable" / "saga_ops.wf"
UNDO = ["fx.undo_c", "fx.undo_b", "fx.undo_a"]


def saga(**overrides: Script) -> WorkflowEnv:
    handlers: dict[str, Script] = {
        "fx.a": succeed({"a": "a-1"}),
        "fx.b": succeed({"b": "b-1"}),
        "fx.c": permanent("Rejected"),
        "fx.undo_a": succeed(),
        "fx.undo_b": succeed({"note": "b undone"}),
        "fx.undo_c": succeed(),
    }
    handlers.update({k.replace("__", "."): v for k, v in overrides.items()})
    return WorkflowEnv.from_files(SAGA, handlers=handlers)


def inline(source: str, handlers: Mapping[str, Script]) -> WorkflowEnv:
    compiled = compile_workflow(parse(source, "inline.wf"))
    assert compiled.table is not None, compiled.check.diagnostics
    return WorkflowEnv([compiled.table], handlers)


def undone(env: WorkflowEnv) -> list[str]:
    return [s for s in env.services_called() if s.startswith("fx.undo")]


def fails_until_fixed() -> tuple[Handler, Callable[[], None]]:
    """A handler of fx.undo_b that fails (Gone, transiently) until ``fix`` is called."""
    state = {"fixed": False}

    def fn(**_: object) -> dict[str, str]:
        if not state["fixed"]:
            raise TaskError("Gone", "the charge is gone", transient=True)
        return {"note": "retried"}

    def fix() -> None:
        state["fixed"] = True

    return fn, fix


# ------------------------------------------------------------- which steps are undone


def test_a_business_error_is_not_compensated_its_earlier_steps_are() -> None:
    env = saga()  # c fails with Rejected, a declared business error: nothing to undo
    iid = env.start("saga_ops", {"id": "x"})
    assert undone(env) == ["fx.undo_b", "fx.undo_a"]
    assert env.status(iid) == "compensated"


def test_a_timed_out_call_is_compensated_too() -> None:
    env = saga(fx__c=delay())  # dispatched, never answered: its effect may have happened
    iid = env.start("saga_ops", {"id": "x"})
    env.advance(minutes=1)
    assert undone(env) == UNDO
    assert env.status(iid) == "compensated"
    assert "registered compensation undo_c (c: outcome unknown)" in env.decisions(iid)


def test_an_interrupted_call_is_compensated_too() -> None:
    # What a durable store reports for an at-most-once call whose worker vanished.
    env = saga(fx__c=permanent("Interrupted"))
    iid = env.start("saga_ops", {"id": "x"})
    assert env.status(iid) == "compensated"
    assert undone(env) == UNDO


def test_cancelling_with_compensation_undoes_a_call_in_flight() -> None:
    env = saga(fx__c=delay())
    iid = env.start("saga_ops", {"id": "x"})
    env.cancel(iid, compensate=True)
    assert env.status(iid) == "cancelled"
    assert undone(env) == UNDO


def test_cancelling_without_compensation_registers_nothing() -> None:
    env = saga(fx__c=delay())
    iid = env.start("saga_ops", {"id": "x"})
    env.cancel(iid)
    assert env.status(iid) == "cancelled"
    assert undone(env) == []
    assert not [d for d in env.decisions(iid) if "outcome unknown" in d]


def test_a_compensation_is_retried_by_its_own_policy() -> None:
    env = saga(fx__undo_b=[transient("Busy"), succeed({"note": "second try"})])
    iid = env.start("saga_ops", {"id": "x"})
    assert env.status(iid) == "compensating"
    env.advance(seconds=1)
    assert env.status(iid) == "compensated"
    assert undone(env) == ["fx.undo_b", "fx.undo_b", "fx.undo_a"]
    assert env.context(iid)["undone"] == "second try"


# -------------------------------------------------------- a compensation that fails


def dead_in_undo_b() -> tuple[WorkflowEnv, str, Callable[[], None]]:
    fn, fix = fails_until_fixed()
    env = saga(fx__undo_b=fn)
    iid = env.start("saga_ops", {"id": "x"})
    env.advance(seconds=1)  # undo_b's second and last attempt
    return env, iid, fix


def test_a_failed_compensation_dead_letters_and_the_rest_wait() -> None:
    env, iid, _ = dead_in_undo_b()
    inst = env.instance(iid)
    assert inst.status is rt.Status.DEAD_LETTERED
    assert inst.error == "compensation 'undo_b' failed: Gone the charge is gone"
    assert undone(env) == ["fx.undo_b", "fx.undo_b"]  # undo_a waits: never swallowed
    (token,) = inst.tokens
    assert token.compensating and env.engine.tables[("saga_ops", 1)].states[token.state].name == (
        "undo_b"
    )
    assert "undo_b: Gone after 2 attempt(s): compensation dead-lettered" in env.decisions(iid)


def test_retrying_a_failed_compensation_runs_it_then_the_rest() -> None:
    env, iid, fix = dead_in_undo_b()
    fix()
    env.retry(iid)
    assert undone(env) == ["fx.undo_b", "fx.undo_b", "fx.undo_b", "fx.undo_a"]
    inst = env.instance(iid)
    assert inst.status is rt.Status.COMPENSATED
    # The end's output and error, not the dead letter's.
    assert (inst.output, inst.error) == ({"id": "x", "status": "rolled_back"}, "Rejected")
    assert inst.context["undone"] == "retried"
    assert env.replay(iid).ok


def test_force_completing_a_failed_compensation_runs_the_rest() -> None:
    env, iid, _ = dead_in_undo_b()
    env.force_complete(iid, "undo_b", {"note": "refunded by hand"})
    assert undone(env) == ["fx.undo_b", "fx.undo_b", "fx.undo_a"]
    inst = env.instance(iid)
    assert (inst.status, inst.error) == (rt.Status.COMPENSATED, "Rejected")
    assert inst.context["undone"] == "refunded by hand"


def test_skipping_a_failed_compensation_runs_the_rest() -> None:
    env, iid, _ = dead_in_undo_b()
    env.skip_compensation(iid, "undo_b", reason="refunded by phone")
    assert undone(env) == ["fx.undo_b", "fx.undo_b", "fx.undo_a"]
    inst = env.instance(iid)
    assert (inst.status, inst.error) == (rt.Status.COMPENSATED, "Rejected")
    assert inst.context["undone"] is None  # skipped: it wrote nothing
    assert "compensation undo_b skipped by an operator: refunded by phone" in env.decisions(iid)
    assert env.replay(iid).ok


def test_a_skip_needs_a_reason_and_a_waiting_compensation() -> None:
    env, iid, _ = dead_in_undo_b()
    with pytest.raises(ValueError, match="a reason"):
        env.skip_compensation(iid, "undo_b", reason=" ")
    env.skip_compensation(iid, "undo_a", reason="wrong step")
    assert env.status(iid) == "dead_lettered"
    assert env.decisions(iid)[-1] == "ignored: no compensation waits at undo_a"


def test_replaying_another_step_is_ignored_while_a_compensation_failed() -> None:
    env, iid, _ = dead_in_undo_b()
    env.send(iid, rt.RetryFrom("a"))
    assert env.status(iid) == "dead_lettered"
    assert env.decisions(iid)[-1] == (
        "ignored replay from a: the compensation undo_b failed; retry, complete or skip it"
    )
    assert undone(env) == ["fx.undo_b", "fx.undo_b"]


def test_a_compensation_that_fails_again_after_a_retry_dead_letters_again() -> None:
    env, iid, fix = dead_in_undo_b()
    env.retry(iid)  # not fixed yet
    env.advance(seconds=1)
    assert env.status(iid) == "dead_lettered"
    fix()
    env.retry(iid)
    assert env.status(iid) == "compensated"
    assert undone(env)[-1] == "fx.undo_a"


def test_a_workflow_error_in_a_compensation_waits_for_ops_too() -> None:
    env = inline(
        """workflow w version 1
input { d: int }
error Nope
service s.a()
service s.b() raises Nope
service s.undo(n: decimal)
start a
task a: service s.a {
    compensate undo
    next b
}
task b: service s.b {
    on Nope -> rolled
    next done
}
end done: completed
end rolled: compensated
task undo: service s.undo {
    args { n: 10 / input.d }
}
""",
        {"s.a": succeed(), "s.b": permanent("Nope"), "s.undo": succeed()},
    )
    iid = env.start("w", {"d": 0})
    assert env.status(iid) == "dead_lettered"
    assert env.instance(iid).error == "workflow error: division by zero"
    env.retry(iid)  # the same input: the same error
    assert env.status(iid) == "dead_lettered"
    env.send(iid, rt.RetryFrom("undo", {"d": 2}))  # replay the compensation, input fixed
    assert env.status(iid) == "compensated"
    assert env.services_called() == ["s.a", "s.b", "s.undo"]


RACE = """workflow race version 1
service s.fast()
service s.slow()
service s.undo_slow()
service s.after() raises Nope
error Nope
start fan
parallel fan {
    branch one {
        task fast: service s.fast {
            next one_ok
        }
        end one_ok: completed
    }
    branch two {
        task slow: service s.slow {
            compensate undo_slow
            next two_ok
        }
        end two_ok: completed
    }
    join any -> after
}
task after: service s.after {
    on Nope -> rolled
    next done
}
end done: completed
end rolled: compensated
task undo_slow: service s.undo_slow {
}
"""


def test_a_call_cancelled_by_a_lost_race_is_compensated() -> None:
    env = inline(
        RACE,
        {
            "s.fast": succeed(),
            "s.slow": delay(),  # dispatched, then cancelled when 'one' wins
            "s.after": permanent("Nope"),
            "s.undo_slow": succeed(),
        },
    )
    iid = env.start("race", {})
    assert env.status(iid) == "compensated"
    assert env.services_called()[-1] == "s.undo_slow"
    assert "registered compensation undo_slow (slow: outcome unknown)" in env.decisions(iid)


def test_cancelling_with_compensation_during_the_saga_lets_it_go_on() -> None:
    env = saga(fx__undo_b=delay())
    iid = env.start("saga_ops", {"id": "x"})
    assert env.status(iid) == "compensating"
    env.cancel(iid, compensate=True)
    assert env.status(iid) == "compensating"  # undo_b still runs: it is not dropped
    (key,) = [k for k in env.open_tasks(iid) if ":undo_b:" in k]
    env.complete(key, {"note": "late"})
    assert undone(env) == ["fx.undo_b", "fx.undo_a"]
    assert (env.status(iid), env.instance(iid).error) == ("cancelled", "cancelled")
