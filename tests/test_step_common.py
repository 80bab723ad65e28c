"""The common path of a task's completion (``step.common``) against the general one.

``step`` answers most completions without its working state (``Run``): the token
moves on through writes and choices to a service task, or ends its branch of a
parallel. Whatever it does must be exactly what the general path does. These tests
drive random workflows with the common path and without it (a table compiled with
``common_path=False``) and compare every step: the instance as stored, the commands
and the decisions.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.test_step_properties import LENIENT, workflows
from wflang.compiler.compile import compile_workflow
from wflang.dsl.parser import parse
from wflang.runtime import codec
from wflang.runtime import instance as rt
from wflang.runtime import step as sp
from wflang.runtime.ir import Value
from wflang.runtime.step.common import complete
from wflang.runtime.table import Table

LOOP = """workflow loop version 1
context { n: int = 0, seen: int = 0 }
output { n: int }
service s.work(n: int) -> { v: int }
start work
task work: service s.work {
    args { n: context.n }
    output { n: context.n + result.v, seen: context.seen + 1 }
    next check
}
choice check {
    when context.seen > 6 -> done
    when context.n < 4 -> work
    else -> again
}
choice again {
    when context.n > 8 -> done
    else -> work
}
end done: completed { output { n: context.n } }
"""

FANOUT = """workflow fan version 1
context { n: int = 0 }
output { n: int }
service s.work(n: int) -> { v: int }
start fan
parallel fan {
    branch a {
        task a1: service s.work { args { n: context.n } output { n: result.v } next a2 }
        task a2: service s.work { args { n: 1 } next ae }
        end ae: completed
    }
    branch b {
        task b1: service s.work { args { n: 2 } output { n: context.n + result.v } next bc }
        choice bc {
            when context.n > 3 -> bf
            else -> be
        }
        end bf: failed
        end be: completed
    }
    branch c {
        task c1: service s.work { args { n: 3 } next ce }
        end ce: completed
    }
    join JOIN -> done
}
end done: completed { output { n: context.n } }
"""

Record = tuple[str, Any, tuple[str, ...]]


def table_of(source: str) -> Table:
    """The compiled table of a workflow that must compile."""
    compiled = compile_workflow(parse(source, "common.wf"), LENIENT)
    assert compiled.table is not None, [d.message for d in compiled.check.diagnostics]
    return compiled.table


def _general(table: Table) -> sp.Compiled:
    """The table compiled to answer every event on the general path: no completion on
    the common path, no parallel's tasks entered at once."""
    return sp.Compiled(table, common_path=False)


def _drive(c: sp.Compiled, script: list[tuple[int, int]]) -> list[Record]:
    """Every step of a run: tasks completed in the order the script picks, a timer
    fired when no task is open, now and then a completion that is stale."""
    table = c.table
    s = sp.start_compiled(c, "i1", {}, 0)
    steps: list[Record] = []
    done: list[str] = []
    for pick, value in script:
        steps.append(
            (codec.dump_instance(s.instance), codec.unstructure_commands(s.commands), s.decisions)
        )
        inst = s.instance
        keys = [
            f"{inst.id}:{table.states[t.state].name}:{t.visit}:{t.id}:{t.attempt}"
            for t in inst.tokens
            if t.waiting == "task"
        ]
        event: rt.Event
        if pick == 7 and done:
            event = rt.TaskCompleted(done[value % len(done)], {"v": value})
        elif keys:
            key = keys[pick % len(keys)]
            done.append(key)
            event = rt.TaskCompleted(key, {"v": value})
        elif inst.timers:
            event = rt.TimerFired(inst.timers[0].id)
        else:
            break
        if pick == 6:  # an instance read back from storage has no index of its own
            inst = codec.load_instance(codec.dump_instance(inst))
        s = sp.step_compiled(c, inst, event, 1000 * len(steps))
    return steps


def _both(table: Table, script: list[tuple[int, int]]) -> None:
    assert _drive(sp.compiled(table), script) == _drive(_general(table), script)


scripts = st.lists(st.tuples(st.integers(0, 7), st.integers(-3, 9)), max_size=30)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(workflows(), scripts)
def test_the_common_path_steps_as_the_general_one(
    source: str, script: list[tuple[int, int]]
) -> None:
    _both(table_of(source), script)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(["all", "any", "2 of 3", "1 of 3"]), scripts)
def test_fanout_joins_alike(join: str, script: list[tuple[int, int]]) -> None:
    _both(table_of(FANOUT.replace("JOIN", join)), script)


@settings(max_examples=60, deadline=None)
@given(scripts)
def test_loops_through_choices_alike(script: list[tuple[int, int]]) -> None:
    _both(table_of(LOOP), script)


def test_the_common_path_is_taken() -> None:
    """Not vacuous: a task's completion in a loop and a branch's end take it."""
    for source in (LOOP, FANOUT.replace("JOIN", "all")):
        table = table_of(source)
        s = sp.start(table, "i1", {}, 0)
        key = next(c.key for c in s.commands if isinstance(c, rt.ScheduleTask))
        common = complete(sp.compiled(table), s.instance, rt.TaskCompleted(key, {"v": 1}))
        assert common is not None
        general = sp.step_compiled(_general(table), s.instance, rt.TaskCompleted(key, {"v": 1}), 0)
        assert codec.dump_instance(common.instance) == codec.dump_instance(general.instance)
        assert (common.commands, common.decisions) == (general.commands, general.decisions)


def test_a_branch_that_fails_to_start_leaves_the_others_queued() -> None:
    """Entering a parallel's tasks at once: an argument's error at the second branch
    leaves the first scheduled and the rest entering, as the agenda would."""
    source = """workflow e version 1
input { x: int? }
service s.work(n: int) -> { v: int }
start fan
parallel fan {
    branch a { task a1: service s.work { args { n: 1 } next ae } end ae: completed }
    branch b { task b1: service s.work { args { n: input.x + 1 } next be } end be: completed }
    branch c { task c1: service s.work { args { n: 3 } next ce } end ce: completed }
    join all -> done
}
end done: completed
"""
    table = table_of(source)
    inputs: list[dict[str, Value]] = [{}, {"x": 1}]
    for given_input in inputs:
        at_once = sp.start(table, "i1", given_input, 0)
        queued = sp.start_compiled(_general(table), "i1", given_input, 0)
        assert codec.dump_instance(at_once.instance) == codec.dump_instance(queued.instance)
        assert (at_once.commands, at_once.decisions) == (queued.commands, queued.decisions)
    assert at_once.instance.status is rt.Status.RUNNING


@given(st.permutations(range(3)), st.integers(0, 2))
def test_tokens_out_of_id_order_step_as_on_the_general_path(order: list[int], pick: int) -> None:
    """An instance made by hand, its branches' tokens in any order: the common path
    (which looks a token up where a step would keep it, then by a binary search)
    steps as the general path (which looks it up by id), or hands the event over."""
    table = table_of(FANOUT.replace("JOIN", "all"))
    s = sp.start(table, "i1", {}, 0)
    first, *branches = s.instance.tokens
    tokens = (first, *(branches[i] for i in order))
    inst = codec.load_instance(codec.dump_instance(s.instance))
    inst = rt.Instance(**{**inst.__dict__, "tokens": tokens})
    keys = [c.key for c in s.commands if isinstance(c, rt.ScheduleTask)]
    event = rt.TaskCompleted(keys[pick], {"v": 1})
    general = sp.step_compiled(_general(table), inst, event, 0)
    common = complete(sp.compiled(table), inst, event)
    if common is not None:
        assert codec.dump_instance(common.instance) == codec.dump_instance(general.instance)
        assert (common.commands, common.decisions) == (general.commands, general.decisions)
