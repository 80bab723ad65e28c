"""Building blocks of the store test suite (issue 5): a virtual clock, compiled
examples, scripted handlers and a driver that moves a durable store through time
the way the in-memory engine does (timer by timer, never by sleeping)."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from wflang.compiler.compile import compile_workflow
from wflang.dsl.parser import parse_file
from wflang.durable.client import Client
from wflang.durable.worker import Worker
from wflang.runtime import instance as rt
from wflang.runtime.engine import Handler, TaskError
from wflang.runtime.ir import Value
from wflang.runtime.limits import DEFAULT as DEFAULT_LIMITS
from wflang.runtime.limits import Limits
from wflang.runtime.replay import replay
from wflang.runtime.table import Table
from wflang.store import Store, sqlite
from wflang.store.status import StatusRows

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
PG_DSN = os.environ.get("WFLANG_TEST_PG_DSN", "")
T0 = 1_772_442_000_000  # 2026-03-02T09:00:00Z, as in tests/test_examples_run.py
SECOND, MINUTE, HOUR, DAY = 1_000, 60_000, 3_600_000, 86_400_000


class VirtualClock:
    """Epoch milliseconds that move only when a test says so."""

    def __init__(self, start: int = T0) -> None:
        self.ms = start

    def __call__(self) -> int:
        return self.ms

    def advance(self, ms: int) -> None:
        self.ms += ms


def with_search_path(dsn: str, schema: str) -> str:
    """``dsn`` with ``options=-csearch_path=SCHEMA`` in its query string."""
    parts = urlsplit(dsn)
    query = [(k, v) for k, v in parse_qsl(parts.query) if k != "options"]
    query.append(("options", f"-csearch_path={schema}"))
    return urlunsplit(parts._replace(query=urlencode(query)))


@cache
def example(name: str) -> Table:
    """The compiled table of ``examples/NAME.wf``."""
    table = compile_workflow(parse_file(str(EXAMPLES / f"{name}.wf"))).table
    assert table is not None, name
    return table


@cache
def data_table(name: str) -> Table:
    """The compiled table of ``tests/data/durable/NAME.wf``."""
    path = REPO / "tests" / "data" / "durable" / f"{name}.wf"
    table = compile_workflow(parse_file(str(path))).table
    assert table is not None, name
    return table


def ok(result: Mapping[str, Value] | None = None) -> Handler:
    """A handler that always succeeds with ``result``."""

    def fn(**_: Value) -> Mapping[str, Value] | None:
        return None if result is None else dict(result)

    return fn


def fails(error: str, *, transient: bool = False) -> Handler:
    def fn(**_: Value) -> None:
        raise TaskError(error, f"{error} (scripted)", transient=transient)

    return fn


class Recorder:
    """Wraps handlers and records every call: (service, args, attempt, idempotency key)."""

    def __init__(self, handlers: Mapping[str, Handler]) -> None:
        self.calls: list[tuple[str, dict[str, Value], int, str]] = []
        self.handlers = {name: self._wrap(name, fn) for name, fn in handlers.items()}

    def _wrap(self, service: str, fn: Handler) -> Handler:
        from wflang.runtime.outcome import TaskCall, invoke

        def recorded(task: TaskCall, **args: Value) -> Any:
            self.calls.append((service, dict(args), task.attempt, task.idempotency_key))
            return invoke(fn, args, task)

        return recorded

    def services(self) -> list[str]:
        return [s for s, *_ in self.calls]

    def keys(self, service: str) -> list[str]:
        return [k for s, _, _, k in self.calls if s == service]


class Durable:
    """A client and a worker on one store, driven step by step on a virtual clock."""

    def __init__(
        self,
        store: Store,
        clock: VirtualClock,
        handlers: Mapping[str, Handler],
        *tables: Table,
        actor: str = "tester",
        lifecycle_outbox: StatusRows = StatusRows.INSTANCES,
    ) -> None:
        self.store, self.clock = store, clock
        self.recorder = Recorder(handlers)
        self.client = Client(store, actor=actor)
        for table in tables:
            self.client.deploy(table)
        # The kit serves every scenario: some deploy services it scripts for others, some
        # test the dead letters of a missing handler.
        self.worker = Worker(
            store,
            self.recorder.handlers,
            worker_id="w-test",
            allow_missing_handlers=True,
            allow_unused_handlers=True,
            lifecycle_outbox=lifecycle_outbox,
        )

    def run(self) -> int:
        return self.worker.run_until_idle()

    def start(self, workflow: str, input: Mapping[str, Value], iid: str, **kw: Any) -> str:
        self.client.start(workflow, input, instance_id=iid, **kw)
        self.run()
        return iid

    def advance(self, ms: int) -> None:
        """Move the clock by ``ms``, stopping at every wake-up on the way (as timers fire)."""
        target = self.clock.ms + ms
        while True:
            wakes = [
                i.wake_at
                for i in self.store.instances(limit=10_000)
                if i.wake_at is not None and self.clock.ms < i.wake_at <= target
            ]
            if not wakes:
                break
            self.clock.ms = min(wakes)
            self.run()
        self.clock.ms = target
        self.run()

    def task(self, node: str, instance_id: str | None = None) -> str:
        """The key of the one open human task at ``node``."""
        keys = [t.key for t in self.client.open_tasks(instance_id) if t.node == node]
        assert len(keys) == 1, (node, [t.key for t in self.client.open_tasks()])
        return keys[0]

    def complete(self, node: str, output: Mapping[str, Value], iid: str | None = None) -> None:
        self.client.complete_task(self.task(node, iid), output)
        self.run()

    def signal(self, iid: str, name: str, payload: Mapping[str, Value], **kw: Any) -> bool:
        sent = self.client.signal(iid, name, payload, **kw)
        self.run()
        return sent

    def instance(self, iid: str) -> rt.Instance:
        info = self.store.instance(iid)
        assert info.instance is not None, info
        return info.instance

    def status(self, iid: str) -> str:
        return self.store.instance(iid).status


def seq_problems(store: Store, iid: str) -> list[str]:
    """What is wrong with an instance's history numbering (empty: 1..n, as the instance says)."""
    seqs = [row.entry.seq for row in store.history(iid)]
    problems = []
    if seqs != list(range(1, len(seqs) + 1)):
        problems.append(f"{iid}: history seqs {seqs} are not 1..{len(seqs)}")
    info = store.instance(iid)
    if info.instance is not None and info.instance.seq != len(seqs):
        problems.append(f"{iid}: instance at seq {info.instance.seq}, history has {len(seqs)}")
    return problems


def replays_exactly(store: Store, iid: str, limits: Limits = DEFAULT_LIMITS) -> None:
    """The stored history, replayed on the pinned table (with the limits it ran with),
    gives the stored instance."""
    info = store.instance(iid)
    table = store.table_for(info.table_hash)
    assert info.instance is not None
    entries = [r.entry for r in store.history(iid)]
    got = replay(table, iid, entries, seed=info.instance.seed, limits=limits)
    assert got.ok, got.divergence
    assert got.reproduces(info.instance), (got.instance, info.instance)


def snapshot(store: Store, iid: str) -> tuple[object, ...]:
    """Everything an illegal action must leave unchanged."""
    info = store.instance(iid)
    return (
        info.status,
        info.instance,
        len(store.history(iid)),
        store.stats().pending_events,
        tuple(store.tasks(instance_id=iid)),
    )


def handlers_of(**named: Handler) -> dict[str, Handler]:
    """Handlers by service name; keyword names use ``__`` for the dot."""
    return {name.replace("__", "."): fn for name, fn in named.items()}


Factory = Callable[..., Store]


OPSFLOW = """\
// The store suite's own workflow: two service calls (the first retried with backoff),
// a human task and a signal.
workflow opsflow version {version}

input {{ id: string, amount: int = 1 }}

context {{ a: int = 0, b: int = 0, ok: bool = false, by: string? }}

output {{ a: int, b: int, ok: bool, by: string? }}

signal go {{ by: string }}

service svc.a(id: string, amount: int) -> {{ a: int }}

service svc.b(id: string, a: int) -> {{ b: int }}

start a

task a: service svc.a {{
    args {{ id: input.id, amount: input.amount }}
    output {{ a: result.a }}
    retry {{ attempts: 4, backoff: 1s..1m, factor: 2 }}
    next b
}}

task b: service svc.b {{
    args {{ id: input.id, a: context.a }}
    output {{ b: result.b }}
    next approve
}}

task approve: user "ops" {{
    form {{ ok: bool }}
    output {{ ok: result.ok }}
    next wait_go
}}

wait wait_go: signal go {{
    output {{ by: signal.by }}
    next {end}
}}

end {end}: completed {{
    output {{ a: context.a, b: context.b, ok: context.ok, by: context.by }}
}}
"""


def compile_text(text: str) -> Table:
    from wflang.dsl.parser import parse

    compiled = compile_workflow(parse(text))
    assert compiled.table is not None, [d.message for d in compiled.check.diagnostics]
    return compiled.table


def opsflow(version: int = 1, end: str = "done") -> Table:
    """The suite's workflow; another ``end`` name gives different content."""
    return compile_text(OPSFLOW.format(version=version, end=end))


def a_times(n: int) -> Handler:
    """svc.a: a = amount * n."""

    def fn(amount: int, **_: Value) -> Mapping[str, Value]:
        return {"a": amount * n}

    return fn


OPS_HANDLERS: dict[str, Handler] = {"svc.a": a_times(10), "svc.b": lambda a, **_: {"b": a + 1}}


def record_queries(monkeypatch: Any) -> list[tuple[str, tuple[Any, ...]]]:
    """The queries SQLite stores read from now on (``Tx.query``): SQL and parameters, in
    order, for a test to look at their plans."""
    seen: list[tuple[str, tuple[Any, ...]]] = []
    query = sqlite._Tx.query

    def recorded(tx: sqlite._Tx, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        seen.append((sql, tuple(params)))
        return query(tx, sql, params)

    monkeypatch.setattr(sqlite._Tx, "query", recorded)
    return seen
