"""Values keep their types and exact values through a durable store (issue 12 items 1
and 3): what the in-memory side checks in tests/test_values.py, on SQLite and
PostgreSQL."""

from __future__ import annotations

import itertools
from datetime import datetime
from decimal import Decimal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wflang.runtime import codec
from wflang.runtime import instance as rt
from wflang.runtime.engine import TaskCall
from wflang.runtime.ir import Value
from wflang.runtime.limits import Limits
from wflang.store import Store
from wflang.store.records import IllegalAction

from ..literals import Literal, expected, literals, same, workflow
from .kit import Durable, VirtualClock, compile_text, ok, replays_exactly

_names = itertools.count()


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(st.lists(literals, min_size=1, max_size=6))
def test_random_literals_survive_a_store(
    store: Store, clock: VirtualClock, lits: list[Literal]
) -> None:
    name = f"lits{next(_names)}"
    table = compile_text(workflow(lits, name))
    got: dict[str, Value] = {}

    def take(task: TaskCall, **args: Value) -> None:
        got.update(args)

    durable = Durable(store, clock, {"lits.take": take}, table)
    iid = durable.start(name, {}, f"{name}-1")
    args, output = expected(lits)
    assert durable.status(iid) == "completed", durable.instance(iid).error
    assert same(got, args), (got, args)
    assert same(durable.instance(iid).output, output), (durable.instance(iid).output, output)


@pytest.mark.parametrize(
    ("result", "status", "total"),
    [
        ({"total": 420.10}, "completed", Decimal("420.11")),
        ({"total": 7}, "completed", Decimal("7.01")),
        ({"total": 1.5, "at": datetime(2026, 1, 1)}, "failed", None),
        ({"total": float("inf")}, "failed", None),
    ],
)
def test_a_handler_result_is_exact_or_refused_on_a_store(
    store: Store, clock: VirtualClock, result: dict[str, Value], status: str, total: object
) -> None:
    from ..test_values import INVOICE

    durable = Durable(store, clock, {"billing.total": ok(result)}, compile_text(INVOICE))
    iid = durable.start("invoice", {}, "inv-1")
    assert durable.status(iid) == status, durable.instance(iid).error
    if total is not None:
        assert same((durable.instance(iid).output or {}).get("total"), total)
    else:
        (failed,) = [
            r.entry.event for r in store.history(iid) if isinstance(r.entry.event, rt.TaskFailed)
        ]
        assert failed.error == "InvalidResult"
    replays_exactly(store, iid)


def test_arithmetic_failures_and_limits_are_workflow_errors_on_a_store(
    store: Store, clock: VirtualClock
) -> None:
    from ..test_values import CALC, GROW

    durable = Durable(store, clock, {}, compile_text(CALC), compile_text(GROW))
    durable.worker.limits = Limits(string_chars=1_000)
    cases: dict[str, tuple[str, dict[str, Value], str | None]] = {
        "c-1": ("calc", {"a": Decimal("1E+6000"), "b": Decimal("1E+6000")}, "decimal overflow"),
        "c-2": ("calc", {"n": 2**62}, "int overflow"),
        "g-1": ("grow", {}, "int overflow"),
        "g-2": ("grow", {"n": 1, "turns": 100}, "(Limits.string_chars)"),
        "ok": ("calc", {"a": Decimal("2.5"), "b": 4}, None),
    }
    for iid, (name, input, _) in cases.items():
        durable.client.start(name, input, instance_id=iid)
    durable.run()
    for iid, (_, _, message) in cases.items():
        if message is None:
            assert durable.status(iid) == "completed"
            assert same((durable.instance(iid).output or {}).get("product"), Decimal("10.0"))
            continue
        assert durable.status(iid) == "dead_lettered", iid
        error = durable.instance(iid).error or ""
        assert error.startswith("workflow error: ") and message in error, (iid, error)


def test_a_whole_decimal_computes_as_a_decimal_on_a_store(
    store: Store, clock: VirtualClock
) -> None:
    """A JSON ``10000000000`` for a decimal input is cubed as a decimal, as
    ``10000000000.0`` is (was: "int overflow"); ``-2^63 / -1`` is stored and read back as
    the whole decimal ``9223372036854775808``; an int overflow says what overflowed."""
    from ..test_typed_arithmetic import CUBE, CUBED, WHOLE

    durable = Durable(store, clock, {}, compile_text(CUBE), compile_text(WHOLE))
    for iid, text in [("c-int", "10000000000"), ("c-dec", "10000000000.0")]:
        durable.start("cube", codec.loads('{"a": ' + text + "}"), iid)
        assert durable.status(iid) == "completed", durable.instance(iid).error
        output = durable.instance(iid).output
        assert output is not None and {k: output[k] for k in CUBED} == CUBED
        replays_exactly(store, iid)
    durable.start("whole", {"n": -(2**63), "d": 1234}, "w-1")
    output = durable.instance("w-1").output
    assert output is not None
    assert same(output["q"], Decimal(2**63)) and output["text"] == "9223372036854775808"
    assert same(output["hundreds"], 1200) and same(output["half"], 200)
    replays_exactly(store, "w-1")
    assert codec.dumps(output["q"]) == "9223372036854775808"  # digits, read back as a decimal


def test_an_int_overflow_says_what_overflowed_on_a_store(store: Store, clock: VirtualClock) -> None:
    from ..test_values import CALC

    durable = Durable(store, clock, {}, compile_text(CALC))
    durable.start("calc", {"n": 2**62}, "c-big")
    assert durable.instance("c-big").error == (
        "workflow error: int overflow: 4611686018427387904 * 4 is outside the 64-bit range"
        " (-9223372036854775808 to 9223372036854775807)"
    )


def test_a_repeated_start_is_the_same_only_with_the_same_values(
    store: Store, clock: VirtualClock
) -> None:
    """Starting is idempotent by id, for the same input: ``1.0`` is not ``1`` (was: ``==``
    took ``{"a": 1}`` for the ``{"a": 1.0}`` the instance was started with)."""
    from ..test_typed_arithmetic import NEGATE

    durable = Durable(store, clock, {}, compile_text(NEGATE))
    durable.client.start("negate", {"a": Decimal("1.0")}, instance_id="n-1")
    durable.client.start("negate", {"a": Decimal("1.0")}, instance_id="n-1")  # a retry
    for other in (1, Decimal("1.00")):
        with pytest.raises(IllegalAction, match="already exists with another workflow or input"):
            durable.client.start("negate", {"a": other}, instance_id="n-1")
    durable.run()
    assert same(durable.instance("n-1").output, {"neg": Decimal("-1.0"), "size": Decimal("1.0")})


_DONE = """workflow done version 1
start end_
end end_: completed
"""


_COPIED = "workflow, version, table_hash, status, input, seed, wake_at, created_at, updated_at"


def test_two_starts_of_one_id_at_once_are_one_instance(store: Store, clock: VirtualClock) -> None:
    """A start that finds its id being inserted by another, not committed yet, waits for
    it and is then the same start again (was: a unique-key error, its check of the id
    having run before the other's insert)."""
    if store.dialect.name != "postgresql":
        pytest.skip("SQLite has one writer: no two inserts at once")
    import threading
    import time

    import psycopg

    from wflang.store.postgres import PostgresBackend

    backend = store.backend
    assert isinstance(backend, PostgresBackend)
    durable = Durable(store, clock, {}, compile_text(_DONE))
    deployed = store.deployed("done")
    started: list[bool | BaseException] = []

    def second() -> None:
        try:
            started.append(store.create(deployed, {}, "twice"))
        except BaseException as err:
            started.append(err)

    with psycopg.connect(backend.url, autocommit=True) as first:
        with first.transaction():
            assert store.create(deployed, {}, "model")  # the first start's row, copied
            first.execute(
                f"INSERT INTO wf_instance (id, {_COPIED}) SELECT 'twice', {_COPIED} "
                "FROM wf_instance WHERE id = 'model'"
            )
            thread = threading.Thread(target=second)
            thread.start()
            deadline = time.monotonic() + 60
            while not first.execute(  # the second start waits on the first's row
                "SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                "AND datname = current_database()"
            ).fetchall():
                assert time.monotonic() < deadline, "the second start never waited"
                assert thread.is_alive(), started
        thread.join(60)
    assert started == [False]
    durable.run()
    assert {i.id: i.status for i in store.instances()} == {
        "model": "completed",
        "twice": "completed",
    }
