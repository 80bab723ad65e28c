"""Runtime semantics that must hold wherever a workflow runs (issue 12): the same
scenario on the in-memory engine, the test kit, SQLite and PostgreSQL.

Each test gets a ``Run`` for one of the four: it deploys tables, starts instances,
moves a virtual clock and reads instances and decisions the same way on all of them.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from wflang.compiler.check import module_model
from wflang.compiler.lower import lower
from wflang.compiler.program import load_program
from wflang.dsl.parser import parse
from wflang.runtime import instance as rt
from wflang.runtime.engine import Engine, Handler, TaskError
from wflang.runtime.ir import Value
from wflang.runtime.table import Table
from wflang.store import open_store
from wflang.testing import WorkflowEnv

from .kit import PG_DSN, T0, Durable, VirtualClock, compile_text, with_search_path


class Run:
    """One place to run workflows: ``engine``, ``testkit``, ``sqlite`` or ``postgresql``."""

    def __init__(self, kind: str, url: str = "") -> None:
        self.kind, self.url = kind, url
        self.engine: Engine | None = None
        self.env: WorkflowEnv | None = None
        self.durable: Durable | None = None

    def deploy(self, handlers: Mapping[str, Handler], *sources: str | Table) -> None:
        tables = [compile_text(s) if isinstance(s, str) else s for s in sources]
        if self.kind == "engine":
            self.engine = Engine(tables, handlers, now=T0)
        elif self.kind == "testkit":
            # the same handlers as the engine and the stores, which do not verify them
            self.env = WorkflowEnv(tables, handlers, now=T0, allow_missing=True, allow_unused=True)
        else:
            clock = VirtualClock()
            store = open_store(self.url, clock=clock, pool=4)
            store.migrate()
            self.durable = Durable(store, clock, handlers, *tables)

    def start(self, workflow: str, input: Mapping[str, Value], iid: str) -> str:
        if self.engine is not None:
            return self.engine.start(workflow, input, instance_id=iid)
        if self.env is not None:
            return self.env.start(workflow, input, instance_id=iid)
        assert self.durable is not None
        return self.durable.start(workflow, input, iid)

    @property
    def now(self) -> int:
        if self.engine is not None:
            return self.engine.now
        if self.env is not None:
            return self.env.now
        assert self.durable is not None
        return self.durable.clock.ms

    def advance(self, ms: int) -> None:
        if self.engine is not None:
            self.engine.advance(ms)
        elif self.env is not None:
            self.env.advance(ms=ms)
        else:
            assert self.durable is not None
            self.durable.advance(ms)

    def instance(self, iid: str) -> rt.Instance:
        if self.engine is not None:
            return self.engine.instance(iid)
        if self.env is not None:
            return self.env.instance(iid)
        assert self.durable is not None
        return self.durable.instance(iid)

    def decisions(self, iid: str) -> list[str]:
        if self.engine is not None:
            return [d for e in self.engine.history(iid) for d in e.decisions]
        if self.env is not None:
            return self.env.decisions(iid)
        assert self.durable is not None
        return [d for r in self.durable.store.history(iid) for d in r.entry.decisions]

    def open_tasks(self, iid: str) -> dict[str, dict[str, Value]]:
        """The open human tasks of an instance: their arguments by key."""
        engine = self.engine if self.engine is not None or self.env is None else self.env.engine
        if engine is not None:
            prefix = f"{iid}:"
            return {t.key: t.args for t in engine.human_tasks() if t.key.startswith(prefix)}
        assert self.durable is not None
        return {t.key: t.args for t in self.durable.client.open_tasks(iid)}

    def complete(self, key: str, output: Mapping[str, Value]) -> None:
        if self.engine is not None:
            self.engine.complete_task(key, output)
        elif self.env is not None:
            self.env.complete(key, output)
        else:
            assert self.durable is not None
            self.durable.client.complete_task(key, output)
            self.durable.run()

    def close(self) -> None:
        if self.durable is not None:
            self.durable.store.close()


def _pg_admin(sql: str) -> None:
    import psycopg

    with psycopg.connect(PG_DSN, autocommit=True) as conn:
        conn.execute(sql)


@pytest.fixture(params=["engine", "testkit", "sqlite", "postgresql"])
def run(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Run]:
    kind, schema = request.param, f"wf_t_{uuid.uuid4().hex[:12]}"
    if kind == "sqlite":
        runner = Run(kind, f"sqlite:///{tmp_path / 'state.db'}")
    elif kind == "postgresql":
        if not PG_DSN:
            pytest.skip("WFLANG_TEST_PG_DSN is not set")
        _pg_admin(f"CREATE SCHEMA {schema}")
        runner = Run(kind, with_search_path(PG_DSN, schema))
    else:
        runner = Run(kind)
    try:
        yield runner
    finally:
        runner.close()
        if kind == "postgresql":
            _pg_admin(f"DROP SCHEMA {schema} CASCADE")


def unchecked(text: str) -> Table:
    """The table of a workflow lowered without the checker: what an older checker let
    through (the runtime must still never give a wrong answer for it)."""
    parsed = parse(text)
    return lower(module_model(load_program([parsed]), parsed.file))


def _always(error: str, *, transient: bool = False) -> Handler:
    def fn(**_: Value) -> None:
        raise TaskError(error, f"{error} (scripted)", transient=transient)

    return fn


# ------------------------------------------------------------ retry delays (12.8)

FLAKY = """\
workflow flaky version 1
service s.flaky()
start t
task t: service s.flaky {
    retry { attempts: 10, backoff: 1s..10s, factor: 10, jitter: 0.5 }
    next done
}
end done: completed
"""


def test_the_maximum_delay_holds_after_jitter(run: Run) -> None:
    run.deploy({"s.flaky": _always("Busy", transient=True)}, FLAKY)
    iid = run.start("flaky", {}, "flaky-1")
    delays = []
    while run.instance(iid).status is rt.Status.RUNNING:
        (timer,) = [t for t in run.instance(iid).timers if t.purpose == "retry"]
        delays.append(timer.due - run.now)
        run.advance(timer.due - run.now)
    assert len(delays) == 9
    assert max(delays) <= 10_000  # the cap, after jitter
    assert min(delays[1:]) >= 5_000  # 10 s spread by ± 50 %, then capped
    assert len(set(delays[1:])) > 1  # jitter still spreads the capped delays


# --------------------------------------------- a node with nowhere to go (12.2)

NOWHERE = """\
workflow nowhere version 1
error Nope
service s.a() -> { v: int } raises Nope
context { v: int = 0 }
output { v: int }
start t
task t: service s.a {
    output { v: result.v }
    on Nope -> gave_up
    timeout 1h -> gave_up
}
end gave_up: failed { output { v: context.v } }
"""


def test_a_step_with_only_error_routes_does_not_end_its_instance(run: Run) -> None:
    run.deploy({"s.a": lambda **_: {"v": 7}}, unchecked(NOWHERE))
    iid = run.start("nowhere", {}, "nowhere-1")
    inst = run.instance(iid)
    assert inst.status is rt.Status.DEAD_LETTERED  # not 'completed' with output {}
    assert inst.output is None
    assert inst.error == (
        "workflow error: 't' has nowhere to go: it has no 'next' (its 'on' and 'timeout' "
        "routes are taken only on an error or a timeout)"
    )
    assert "instance completed" not in run.decisions(iid)


# ------------------------------ errors raised in branches and items, by name (12.8b)

FANERR = """\
workflow fanerr version 1

error Rejected, Broken, BranchFailed, MapFailed

input { kind: string, xs: list[int] }

output { how: string }

service s.check(kind: string) raises Rejected, Broken

service s.item(x: int) raises Rejected

start fan

parallel fan {
    branch a {
        task check: service s.check {
            args { kind: input.kind }
            next a_done
        }
        end a_done: completed
    }
    branch b {
        choice b_kind {
            when input.kind == "end" -> b_failed
            when input.kind == "nested" -> inner
            else -> b_done
        }
        end b_failed: failed {
            error Rejected
        }
        parallel inner {
            branch c {
                task inner_check: service s.check {
                    args { kind: "Rejected" }
                    next c_done
                }
                end c_done: completed
            }
            join all -> b_done
        }
        end b_done: completed
    }
    join all -> items
    on Rejected -> rejected
    on BranchFailed -> branch_failed
    on any -> other
}

map items over input.xs as x {
    choice zero {
        when x == 0 -> item_failed
        else -> item
    }
    end item_failed: failed
    task item: service s.item {
        args { x: x }
        next item_done
    }
    end item_done: completed
    on Rejected -> item_rejected
    on MapFailed -> map_failed
    on any -> other
    next done
}

end rejected: completed {
    output { how: "rejected" }
}

end branch_failed: completed {
    output { how: "branch_failed" }
}

end other: completed {
    output { how: "other" }
}

end item_rejected: completed {
    output { how: "item_rejected" }
}

end map_failed: completed {
    output { how: "map_failed" }
}

end done: completed {
    output { how: "done" }
}
"""


def _check(kind: str) -> None:
    if kind in ("Rejected", "Broken"):
        raise TaskError(kind, f"{kind} (scripted)")


def _item(x: int) -> None:
    if x < 0:
        raise TaskError("Rejected", "a negative item (scripted)")


FAN_HANDLERS: dict[str, Handler] = {"s.check": _check, "s.item": _item}


def test_an_error_raised_in_a_branch_or_item_reaches_its_container_by_name(run: Run) -> None:
    run.deploy(FAN_HANDLERS, FANERR)
    cases: list[tuple[str, list[Value], str]] = [
        ("Rejected", [1], "rejected"),  # a task's error, unhandled in its branch
        ("end", [1], "rejected"),  # a branch's `end …: failed { error Rejected }`
        ("nested", [1], "rejected"),  # out of a parallel inside the branch, by name too
        ("Broken", [1], "branch_failed"),  # no `on Broken`: BranchFailed catches it, not any
        ("ok", [1, -1, 2], "item_rejected"),  # an item's error, on the map
        ("ok", [1, 0], "map_failed"),  # an item failed without a name: MapFailed
        ("ok", [1, 2], "done"),
    ]
    for n, (kind, xs, how) in enumerate(cases):
        iid = run.start("fanerr", {"kind": kind, "xs": xs}, f"fan-{n}")
        inst = run.instance(iid)
        assert (inst.status, inst.output) == (rt.Status.COMPLETED, {"how": how}), (kind, xs)


UNROUTED = """\
workflow unrouted version 1
error Rejected
service s.check(kind: string) raises Rejected
start p
parallel p {
    branch a {
        task check: service s.check {
            args { kind: "Rejected" }
            next a_done
        }
        end a_done: completed
    }
    join all -> done
}
end done: completed
"""


def test_an_unrouted_error_from_a_branch_dead_letters_under_its_name(run: Run) -> None:
    run.deploy(FAN_HANDLERS, UNROUTED)
    iid = run.start("unrouted", {}, "unrouted-1")
    inst = run.instance(iid)
    assert inst.status is rt.Status.DEAD_LETTERED
    assert inst.error == "p: Rejected (BranchFailed)"


# ----------------------------------------- a map's result: its items' outputs (12.5)

GATHER = """\
workflow gather version 1

type Label { parcel_id: string, url: string? }

input { parcels: list[string] }

context { last_url: string?, labels: list[Label] = [], count: int = 0 }

output { count: int, labels: list[Label] }

start labels

map labels over input.parcels as parcel {
    tolerate 1
    choice known {
        when parcel == "lost" -> missing
        else -> print_label
    }
    end missing: failed
    task print_label: user "warehouse" {
        args { parcel: parcel }
        form { url: string }
        output { last_url: result.url }
        next printed
    }
    end printed: completed {
        output { parcel_id: parcel, url: context.last_url }
    }
    output { labels: result, count: len(result) }
    next done
}

end done: completed {
    output { count: context.count, labels: context.labels }
}
"""


def test_a_maps_output_reads_its_items_outputs_in_item_order(run: Run) -> None:
    run.deploy({}, GATHER)
    iid = run.start("gather", {"parcels": ["p1", "lost", "p3", "p4"]}, "gather-1")
    tasks = run.open_tasks(iid)
    assert sorted(str(args["parcel"]) for args in tasks.values()) == ["p1", "p3", "p4"]
    for key, args in sorted(tasks.items(), key=lambda t: str(t[1]["parcel"]), reverse=True):
        run.complete(key, {"url": f"https://labels/{args['parcel']}"})  # the last item first
    inst = run.instance(iid)
    assert inst.status is rt.Status.COMPLETED
    assert inst.output == {
        "count": 3,  # the item that failed within `tolerate` has no output
        "labels": [
            {"parcel_id": "p1", "url": "https://labels/p1"},
            {"parcel_id": "p3", "url": "https://labels/p3"},
            {"parcel_id": "p4", "url": "https://labels/p4"},
        ],
    }
