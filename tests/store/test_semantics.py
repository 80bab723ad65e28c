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
            self.env = WorkflowEnv(tables, handlers, now=T0)
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
