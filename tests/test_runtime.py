"""The runtime's semantics, through the test kit with virtual time (nothing sleeps)."""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from pathlib import Path

import pytest

from wflang.compiler.compile import compile_workflow
from wflang.dsl.parser import parse
from wflang.runtime import instance as rt
from wflang.runtime.engine import TaskError
from wflang.runtime.ir import Value
from wflang.testing import (
    HOUR,
    Script,
    WorkflowEnv,
    by_attempt,
    delay,
    duplicate,
    permanent,
    succeed,
    transient,
)

EXAMPLES = Path(__file__).parent.parent / "examples"

ORDER: dict[str, Value] = {
    "order_id": "o-1",
    "customer": {"id": "c-1", "name": "Ada", "email": "ada@example.com", "tier": "standard"},
    "items": [{"sku": "A", "qty": 1, "unit_price": Decimal("10.00")}],
    "subtotal": 10,
    "shipping_fee": 2,
    "currency": "EUR",
    "express": False,
    # as declared (the engine checks a start input now)
    "ship_to": {
        "name": "Ada",
        "line1": "1 Main St",
        "city": "Oslo",
        "postcode": "0150",
        "country": "NO",
    },
}
OK: dict[str, Script] = {
    "inventory.reserve": succeed({"reservation_id": "r-1"}),
    "payments.charge": succeed({"charge_id": "ch-1", "settled": True}),
    "shipping.create": succeed({"shipment_id": "s-1"}),
    "notify.send": succeed({"message_id": "m-1"}),
    "inventory.release": succeed(),
    "payments.refund": succeed({"refund_id": "rf-1"}),
    "shipping.cancel": succeed(),
}


def order_env(**overrides: Script) -> WorkflowEnv:
    return WorkflowEnv.from_files(EXAMPLES / "order_saga.wf", handlers={**OK, **overrides})


def inline(source: str, handlers: Mapping[str, Script] | None = None) -> WorkflowEnv:
    compiled = compile_workflow(parse(source, "inline.wf"))
    assert compiled.table is not None, compiled.check.diagnostics
    return WorkflowEnv([compiled.table], handlers)


def test_order_completes_with_its_output() -> None:
    env = order_env()
    order = env.start("order_saga", ORDER)
    assert env.status(order) == "completed"
    assert env.instance(order).output == {
        "order_id": "o-1",
        "status": "shipped",
        "shipment_id": "s-1",
    }
    assert env.services_called() == [
        "inventory.reserve", "payments.charge", "shipping.create", "notify.send",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("failing", "error", "compensated_by"),
    [
        ("inventory.reserve", "OutOfStock", []),
        ("payments.charge", "CardDeclined", ["inventory.release"]),
        ("shipping.create", "AddressRejected", ["payments.refund", "inventory.release"]),
    ],
)
def test_saga_compensates_exactly_the_completed_steps_in_reverse(
    failing: str, error: str, compensated_by: list[str]
) -> None:
    env = order_env(**{failing: permanent(error)})
    order = env.start("order_saga", ORDER)
    called = env.services_called()
    after_failure = called[called.index(failing) + 1 :]
    assert after_failure == compensated_by
    expected = "failed" if failing == "inventory.reserve" else "compensated"
    assert env.status(order) == expected


def test_a_failed_compensation_is_never_swallowed() -> None:
    env = order_env(**{
        "shipping.create": permanent("AddressRejected"),
        "inventory.release": permanent("Gone"),
    })  # fmt: skip
    order = env.start("order_saga", ORDER)
    assert env.status(order) == "dead_lettered"  # it waits for an operator (tests/test_saga.py)
    assert env.instance(order).error == "compensation 'release_stock' failed: Gone"


def test_retry_schedule_to_the_second() -> None:
    # charge: attempts 5, backoff 1s..30s, factor 2: waits of 1s, 2s, 4s, 8s.
    env = order_env(**{"payments.charge": by_attempt(
        transient("Timeout"), transient("Timeout"), transient("Timeout"), transient("Timeout"),
        succeed({"charge_id": "ch-9", "settled": True}),
    )})  # fmt: skip
    order = env.start("order_saga", ORDER)

    def charges() -> list[int]:
        return [t.attempt for s, _, t in env.calls if s == "payments.charge"]

    assert charges() == [1]
    for wait_ms, attempts in ((1000, [1, 2]), (2000, [1, 2, 3]), (4000, [1, 2, 3, 4])):
        env.advance(ms=wait_ms - 1)
        assert charges() == attempts[:-1]
        env.advance(ms=1)
        assert charges() == attempts
    env.advance(seconds=8)
    assert charges() == [1, 2, 3, 4, 5]
    assert env.status(order) == "completed"
    assert env.now == 15_000


def test_exhausted_retries_dead_letter_with_a_snapshot() -> None:
    env = order_env(**{"inventory.reserve": transient("Unavailable")})
    order = env.start("order_saga", ORDER)
    env.advance(minutes=5)
    inst = env.instance(order)
    # 'on any -> not_reserved' routes it: a handler wins over retries.
    assert inst.status.value == "failed"
    env2 = inline(
        "workflow w version 1\nservice s.x()\nstart t\n"
        "task t: service s.x {\n    retry { attempts: 2, backoff: 1s }\n    next done\n}\n"
        "end done: completed\n",
        {"s.x": transient("Boom")},
    )
    i2 = env2.start("w", {})
    env2.advance(seconds=1)
    dead = env2.instance(i2)
    assert dead.status is rt.Status.DEAD_LETTERED
    assert dead.error == "t: Boom"
    assert dead.snapshot == {}
    env2.engine.handlers["s.x"] = lambda **kw: {}
    env2.send(i2, rt.RetryFrom())
    assert env2.status(i2) == "completed"


def test_boundary_timeout_cancels_the_task() -> None:
    env = order_env(**{"shipping.create": delay()})
    order = env.start("order_saga", ORDER)
    (key,) = [k for k in env.open_tasks(order) if ":ship:" in k]
    env.advance(minutes=2)
    assert key not in env.open_tasks(order)
    assert env.status(order) == "compensated"
    # A late answer from the cancelled task is ignored.
    env.send(order, rt.TaskCompleted(key, {"shipment_id": "late"}))
    assert env.status(order) == "compensated"


PARALLEL = """workflow p version 1
service s.a()
service s.b()
service s.c()
start fan
parallel fan {
    branch a {
        task ta: service s.a {
            next a_ok
        }
        end a_ok: completed
    }
    branch b {
        task tb: service s.b {
            next b_ok
        }
        end b_ok: completed
    }
    branch c {
        task tc: service s.c {
            next c_ok
        }
        end c_ok: completed
    }
    join JOIN -> done
}
end done: completed
"""


@pytest.mark.parametrize(("join", "answers", "finished"), [
    ("all", ["s.a", "s.b"], False),
    ("all", ["s.a", "s.b", "s.c"], True),
    ("any", ["s.b"], True),
    ("2 of 3", ["s.c", "s.a"], True),
    ("2 of 3", ["s.c"], False),
])  # fmt: skip
def test_join_policies_and_cancelled_losers(join: str, answers: list[str], finished: bool) -> None:
    env = inline(PARALLEL.replace("JOIN", join), {s: delay() for s in ("s.a", "s.b", "s.c")})
    iid = env.start("p", {})
    keys = {s: k for s, _, t in env.calls for k in [t.idempotency_key]}
    for service in answers:
        env.complete(keys[service])
    assert (env.status(iid) == "completed") is finished
    if finished:
        assert env.open_tasks(iid) == []  # the losers were cancelled


def test_map_of_1000_items_runs_at_most_10_at_a_time() -> None:
    env = inline(
        "workflow m version 1\ninput { xs: list[int] }\nservice s.work(x: int)\nstart each\n"
        "map each over input.xs as x {\n    concurrency 10\n"
        "    task w: service s.work {\n        args { x: x }\n        next ok\n    }\n"
        "    end ok: completed\n    next done\n}\nend done: completed\n",
        {"s.work": delay()},
    )
    iid = env.start("m", {"xs": list(range(1000))})
    peak = 0
    while env.open_tasks(iid):
        open_now = env.open_tasks(iid)
        peak = max(peak, len(open_now))
        env.complete(open_now[0])
    assert peak == 10
    assert len(env.calls) == 1000
    assert {args["x"] for _, args, _ in env.calls} == set(range(1000))  # 1000 calls: once each
    assert env.status(iid) == "completed"


SIGNALS = """workflow s version 1
signal approve { ok: bool }
context { ok: bool = false }
start wait_it
wait wait_it: signal approve {
    output { ok: signal.ok }
    timeout 48h -> late
    next done
}
end done: completed
end late: failed
"""


def test_duplicate_signal_is_ignored_and_early_signal_is_buffered() -> None:
    env = inline(
        SIGNALS.replace("start wait_it", "service s.prep()\nstart prep").replace(
            "wait wait_it", "task prep: service s.prep {\n    next wait_it\n}\nwait wait_it"
        ),
        {"s.prep": delay()},
    )
    iid = env.start("s", {})
    env.signal(iid, "approve", {"ok": True}, key="k1")  # early: the wait is not reached yet
    env.signal(iid, "approve", {"ok": False}, key="k1")  # the same delivery again
    assert env.instance(iid).buffered == (rt.Signal("signal", "approve", {"ok": True}, "k1"),)
    (key,) = env.open_tasks(iid)
    env.complete(key)
    assert env.status(iid) == "completed"
    assert env.context(iid) == {"ok": True}
    decisions = env.decisions(iid)
    assert "buffered signal approve" in decisions
    assert "ignored duplicate signal approve (key k1)" in decisions
    assert "wait_it takes buffered signal approve" in decisions


def test_signal_timeout_fires_at_48_hours() -> None:
    env = inline(SIGNALS)
    iid = env.start("s", {})
    env.advance(hours=47.99)
    assert env.status(iid) == "waiting"
    env.advance(hours=0.01)
    assert env.status(iid) == "failed"
    assert env.now == 48 * HOUR


def test_duplicate_callback_is_ignored() -> None:
    env = order_env(**{
        "payments.charge": duplicate({"charge_id": "ch-1", "settled": True}),
        "shipping.create": delay(),
    })  # fmt: skip
    order = env.start("order_saga", ORDER)
    assert env.status(order) == "running"  # waiting at 'ship' when the duplicate arrives
    stale = f"ignored a stale completion of {order}:charge:"
    assert any(d.startswith(stale) and d.endswith(":0:1") for d in env.decisions(order))
    assert env.services_called().count("payments.charge") == 1


def test_cancel_with_and_without_compensation() -> None:
    env = order_env(**{"shipping.create": delay()})
    order = env.start("order_saga", ORDER)
    env.cancel(order, compensate=True)
    assert env.status(order) == "cancelled"
    assert env.services_called()[-2:] == ["payments.refund", "inventory.release"]
    env2 = order_env(**{"shipping.create": delay()})
    order2 = env2.start("order_saga", ORDER)
    env2.cancel(order2)
    assert env2.status(order2) == "cancelled"
    assert "payments.refund" not in env2.services_called()


def test_replay_reproduces_the_instance_and_finds_divergence() -> None:
    env = order_env(
        **{
            "payments.charge": by_attempt(
                transient("T"), succeed({"charge_id": "c", "settled": True})
            )
        }
    )
    order = env.start("order_saga", ORDER)
    env.advance(seconds=5)
    replayed = env.replay(order)
    assert replayed.ok
    assert replayed.instance == env.instance(order)
    changed = (
        (EXAMPLES / "order_saga.wf").read_text().replace("backoff: 1s..30s", "backoff: 3s..30s")
    )
    other = compile_workflow(parse(changed, str(EXAMPLES / "order_saga.wf"))).table
    assert other is not None
    diverged = env.replay(order, other)
    assert not diverged.ok
    assert diverged.divergence is not None and "retry 2 in 3000 ms" in str(diverged.divergence)


def test_sub_workflow_call_passes_input_and_output(tmp_path: Path) -> None:
    (tmp_path / "child.wf").write_text(
        "workflow child version 2\ninput { n: int }\noutput { doubled: int }\nstart d\n"
        "end d: completed {\n    output { doubled: input.n * 2 }\n}\n"
    )
    (tmp_path / "parent.wf").write_text(
        'workflow parent version 1\nimport "child.wf"\ncontext { got: int = 0 }\nstart c\n'
        "call c: workflow child version 2 {\n    args { n: 21 }\n    output { got: result.doubled }\n"
        "    next done\n}\nend done: completed\n"
    )
    env = WorkflowEnv.from_files(tmp_path / "child.wf", tmp_path / "parent.wf")
    iid = env.start("parent", {})
    assert env.status(iid) == "completed"
    assert env.context(iid) == {"got": 42}
    (child,) = [i for i in env.engine.records if i.startswith(f"{iid}/")]
    assert env.status(child) == "completed"


# -- regressions found by running every example to each of its ends (test_examples_run.py)

BRANCH_ERROR = """workflow b version 1
error Bad
service s.a() raises Bad
service s.b()
start fan
parallel fan {
    branch a {
        task ta: service s.a {
            next a_ok
        }
        end a_ok: completed
    }
    branch b {
        task tb: service s.b {
            next b_ok
        }
        end b_ok: completed
    }
    join all -> done
    on any -> handled
}
end done: completed
end handled: failed
"""


def test_an_unhandled_error_in_a_branch_goes_to_the_parallels_handler() -> None:
    env = inline(BRANCH_ERROR, {"s.a": permanent("Bad"), "s.b": delay()})
    iid = env.start("b", {})
    assert env.status(iid) == "failed"  # not dead-lettered: `on any -> handled`
    assert env.instance(iid).error == "handled"
    assert "ta: Bad unhandled: its flow failed" in env.decisions(iid)
    assert env.open_tasks(iid) == []  # the other branch was cancelled
    assert env.replay(iid).ok


def test_an_unhandled_error_in_a_map_item_counts_against_tolerate() -> None:
    def work(x: int) -> dict[str, Value]:
        if x < 0:
            raise TaskError("Bad")
        return {}

    env = inline(
        "workflow m version 1\ninput { xs: list[int] }\nerror Bad\n"
        "service s.work(x: int) raises Bad\nstart each\n"
        "map each over input.xs as x {\n    tolerate 1\n"
        "    task w: service s.work {\n        args { x: x }\n        next ok\n    }\n"
        "    end ok: completed\n    on any -> too_many\n    next done\n}\n"
        "end done: completed\nend too_many: failed\n",
        {"s.work": work},
    )
    tolerated = env.start("m", {"xs": [1, -1, 2]})
    assert env.status(tolerated) == "completed"
    too_many = env.start("m", {"xs": [-1, 1, -2]})
    assert env.status(too_many) == "failed"
    assert env.instance(too_many).error == "too_many"


def test_a_child_that_finishes_at_once_leaves_the_callers_timers_alone(tmp_path: Path) -> None:
    (tmp_path / "child.wf").write_text("workflow child version 1\nstart d\nend d: completed\n")
    (tmp_path / "parent.wf").write_text(
        'workflow parent version 1\nimport "child.wf"\nsignal go\nstart c\n'
        "call c: workflow child {\n    timeout 5d -> early\n    next w\n}\n"
        "wait w: signal go {\n    timeout 10d -> late\n    next done\n}\n"
        "end done: completed\nend early: failed\nend late: failed\n"
    )
    env = WorkflowEnv.from_files(tmp_path / "child.wf", tmp_path / "parent.wf")
    iid = env.start("parent", {})
    # The call's 5d timer was started after the child had already answered: it
    # must not overwrite the wait's 10d timer (they share a token and an id).
    assert sorted(due for due, _ in env.engine.timers.values()) == [10 * 24 * HOUR]
    env.advance(hours=5 * 24)
    assert env.status(iid) == "waiting"
    env.advance(hours=5 * 24)
    assert env.instance(iid).error == "late"


def test_a_call_through_an_aliased_import_finds_the_workflow(tmp_path: Path) -> None:
    (tmp_path / "child.wf").write_text(
        "workflow child version 1\noutput { n: int }\nstart d\n"
        "end d: completed {\n    output { n: 7 }\n}\n"
    )
    (tmp_path / "parent.wf").write_text(
        'workflow parent version 1\nimport "child.wf" as kid\ncontext { n: int = 0 }\nstart c\n'
        "call c: workflow kid.child version 1 {\n    output { n: result.n }\n    next done\n}\n"
        "end done: completed\n"
    )
    env = WorkflowEnv.from_files(tmp_path / "child.wf", tmp_path / "parent.wf")
    iid = env.start("parent", {})
    assert env.status(iid) == "completed"
    assert env.context(iid) == {"n": 7}


def test_a_wait_until_a_past_instant_goes_on_at_once() -> None:
    env = inline(
        "workflow u version 1\ninput { at: timestamp }\nstart w\n"
        "wait w: until input.at {\n    next done\n}\nend done: completed\n",
    )
    env.engine.now = 5 * HOUR
    past = env.start("u", {"at": HOUR})
    assert env.status(past) == "completed"  # without moving the clock
    future = env.start("u", {"at": 6 * HOUR})
    assert env.status(future) == "waiting"
    env.advance(hours=1)
    assert env.status(future) == "completed"


def test_function_handlers_are_recorded_like_scripted_ones() -> None:
    def charge(amount: Value, **_: Value) -> dict[str, Value]:
        return {"charge_id": f"c-{amount}", "settled": True}

    env = order_env(**{"payments.charge": charge})
    order = env.start("order_saga", ORDER)
    assert env.status(order) == "completed"
    assert "payments.charge" in env.services_called()
    ((_, args, task),) = [c for c in env.calls if c[0] == "payments.charge"]
    assert args["amount"] == 12 and task.attempt == 1


LOOP = """
workflow poll version 1
input { rounds: int }
context { n: int = 0 }
service probe.check(n: int) -> { ok: bool }
start check
task check: service probe.check {
    args { n: context.n }
    output { n: context.n + 1 }
    next again
}
choice again {
    when context.n < input.rounds -> check
    else -> done
}
end done: completed
"""


def test_each_visit_of_a_node_in_a_loop_has_its_own_key() -> None:
    env = inline(LOOP, {"probe.check": delay()})
    iid = env.start("poll", {"rounds": 3})
    first = env.open_tasks(iid)
    assert len(first) == 1
    env.complete(first[0], {"ok": True})
    second = env.open_tasks(iid)
    assert len(second) == 1 and second[0] != first[0]
    # A late duplicate answer to the first visit does not complete the second.
    env.send(iid, rt.TaskCompleted(first[0], {"ok": True}))
    assert env.open_tasks(iid) == second
    assert f"ignored a stale completion of {first[0]}" in env.decisions(iid)
    env.complete(second[0], {"ok": True})
    third = env.open_tasks(iid)
    env.complete(third[0], {"ok": True})
    assert env.status(iid) == "completed"
    assert len({first[0], second[0], third[0]}) == 3
