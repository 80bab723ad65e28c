"""Property tests of the step function: random small workflows, random event sequences.

Whatever happens — tasks answered, failed transiently or for good, timers fired,
signals sent (twice, early, or never), cancellation — a step never raises, never
leaves an invalid instance, and replaying the history reproduces the instance.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wflang.compiler.compile import compile_workflow
from wflang.compiler.config import Config
from wflang.dsl.parser import parse
from wflang.runtime import instance as rt
from wflang.runtime.replay import replay
from wflang.testing import WorkflowEnv, delay

#: Random flows leave nodes unreached and declarations unused; the runtime does not mind.
LENIENT = Config(severities=dict.fromkeys(("WF201", "WF206", "WF210", "WF303", "WF304")))

HEADER = """workflow prop version 1
context { n: int = 0, ns: list[int] = [] }
signal go { v: int }
error Bad
service s.work(i: int) -> { v: int } raises Bad
start n0
"""


@st.composite
def workflows(draw: st.DrawFn) -> str:
    """A small acyclic workflow of every kind of node, as source text."""
    count = draw(st.integers(min_value=1, max_value=6))
    parts = [HEADER]
    for i in range(count):
        nxt = f"n{i + 1}" if i + 1 < count else "done"
        later = [f"n{j}" for j in range(i + 1, count)] + ["done", "failed"]
        kinds = ["task", "choice", "wait", "sleep", "parallel", "script", "map"]
        kind = draw(st.sampled_from(kinds))
        if kind == "task":
            retry = draw(st.sampled_from(["", "    retry { attempts: 3, backoff: 1s..10s }\n"]))
            timeout = draw(
                st.sampled_from(["", f"    timeout 30s -> {draw(st.sampled_from(later))}\n"])
            )
            handler = draw(st.sampled_from(["", f"    on Bad -> {draw(st.sampled_from(later))}\n"]))
            parts.append(
                f"task n{i}: service s.work {{\n    args {{ i: {i} }}\n"
                f"    output {{ n: result.v }}\n{retry}{timeout}{handler}    next {nxt}\n}}\n"
            )
        elif kind == "choice":
            other = draw(st.sampled_from(later))
            parts.append(
                f"choice n{i} {{\n    when context.n > {i} -> {other}\n    else -> {nxt}\n}}\n"
            )
        elif kind == "wait":
            late = draw(st.sampled_from(later))
            parts.append(
                f"wait n{i}: signal go {{\n    output {{ n: signal.v }}\n"
                f"    timeout 1h -> {late}\n    next {nxt}\n}}\n"
            )
        elif kind == "sleep":
            parts.append(f"sleep n{i} 5m next {nxt}\n")
        elif kind == "script":
            parts.append(
                f"task n{i}: script {{\n    output {{ n: context.n + 1 }}\n    next {nxt}\n}}\n"
            )
        elif kind == "map":
            parts.append(_map(i, nxt, draw(st.sampled_from(["", "    tolerate 1\n"]))))
        else:
            join = draw(st.sampled_from(["all", "any", "1 of 2"]))
            parts.append(
                f"parallel n{i} {{\n"
                f"    branch a{i} {{\n        task a{i}t: service s.work {{\n"
                f"            args {{ i: {i} }}\n            next a{i}e\n        }}\n"
                f"        end a{i}e: completed\n    }}\n"
                f"    branch b{i} {{\n        sleep b{i}s 1m next b{i}e\n"
                f"        end b{i}e: completed\n    }}\n"
                f"    join {join} -> {nxt}\n}}\n"
            )
    parts.append("end done: completed\nend failed: failed\n")
    return "".join(parts)


def _map(i: int, nxt: str, tolerate: str) -> str:
    """A map whose items keep their own variables (issue 14 item 2): each asks again
    while its answer is negative (twice at most), and the map collects every item's
    last answer plus its asks, in item order."""
    return (
        f"map n{i} over [{i}, {i + 1}, 3] as x {{\n    concurrency 2\n{tolerate}"
        "    local { v: int = 0, asks: int = 0 }\n"
        f"    task m{i}t: service s.work {{\n        args {{ i: x + local.asks }}\n"
        "        output { local.v: result.v, local.asks: local.asks + 1 }\n"
        f"        next m{i}c\n    }}\n"
        f"    choice m{i}c {{\n        when local.v < 0 and local.asks < 2 -> m{i}t\n"
        f"        else -> m{i}e\n    }}\n"
        f"    end m{i}e: completed {{\n        output {{ v: local.v }}\n    }}\n"
        "    collect local.v + local.asks into context.ns\n"
        f"    output {{ n: len(result) }}\n    next {nxt}\n}}\n"
    )


actions = st.lists(
    st.one_of(
        st.tuples(st.just("complete"), st.integers(0, 5), st.integers(-3, 9)),
        st.tuples(st.just("fail"), st.integers(0, 5), st.booleans()),
        st.tuples(st.just("advance"), st.sampled_from([1_000, 60_000, 300_000, 3_600_000])),
        st.tuples(st.just("signal"), st.integers(0, 9), st.sampled_from(["k1", "k2", ""])),
        st.tuples(st.just("cancel"), st.booleans()),
        st.tuples(st.just("stale"), st.integers(0, 5)),
    ),
    max_size=25,
)


def check_invariants(inst: rt.Instance, states: int) -> None:
    tokens = {t.id for t in inst.tokens}
    for t in inst.tokens:
        assert -1 <= t.state < states
        assert t.parent == rt.NO_TOKEN or t.parent in tokens
        assert t.id < inst.next_token
    for timer in inst.timers:
        assert timer.token in tokens
    for join in inst.joins:
        assert join.token in tokens
        assert join.completed + join.failed <= join.total
    if inst.status in (rt.Status.COMPLETED, rt.Status.FAILED, rt.Status.CANCELLED,
                       rt.Status.COMPENSATED):  # fmt: skip
        assert inst.tokens == () and inst.timers == ()
    if inst.status is rt.Status.COMPLETED:
        assert inst.output is not None


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(workflows(), actions)
def test_random_events_never_break_an_instance(
    source: str, script: list[tuple[int | str, ...]]
) -> None:
    compiled = compile_workflow(parse(source, "prop.wf"), LENIENT)
    assert compiled.table is not None, [d.message for d in compiled.check.diagnostics]
    table = compiled.table
    env = WorkflowEnv([table], {"s.work": delay()}, allow_unused=True)  # some call none
    iid = env.start("prop", {})
    check_invariants(env.instance(iid), len(table.states))
    for action in script:
        kind = action[0]
        keys = env.open_tasks(iid)
        if kind == "complete" and keys:
            env.complete(keys[int(action[1]) % len(keys)], {"v": action[2]})
        elif kind == "fail" and keys:
            env.fail(keys[int(action[1]) % len(keys)], "Bad", transient=bool(action[2]))
        elif kind == "advance":
            env.advance(ms=int(action[1]))
        elif kind == "signal":
            env.signal(iid, "go", {"v": action[1]}, key=str(action[2]))
        elif kind == "cancel":
            env.cancel(iid, compensate=bool(action[1]))
        elif kind == "stale":
            env.send(iid, rt.TaskCompleted(f"{iid}:nowhere:{action[1]}:1", {}))
        check_invariants(env.instance(iid), len(table.states))
    replayed = replay(table, iid, env.history(iid), env.instance(iid).seed)
    assert replayed.ok, replayed.divergence
    assert replayed.instance == env.instance(iid)
