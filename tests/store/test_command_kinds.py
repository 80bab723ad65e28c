"""The engine and a store agree on every kind of command (issue 13 item 1).

``wflang.runtime.commands`` is the one interpreter of a step's commands; the engine
and the stores only carry out or persist what it decides. The random workflows of
``test_differential.py`` have service tasks, timers and parallels; here scenarios
built to emit every other kind too (a human task opened, completed and cancelled, a
child workflow started, finished, failed and cancelled with its parent, a saga's
compensation) run through the engine and through a store with the same handlers,
people and clock, and must give identical histories (event, decisions, commands and
time of every step) and instances, the children's included. The scenarios together
emit every kind of ``rt.Command``: a new kind fails here until a scenario has it.
"""

from __future__ import annotations

import typing
from collections.abc import Callable

import pytest

from wflang.compiler.compile import compile_workflow
from wflang.dsl.parser import parse_file
from wflang.runtime import codec
from wflang.runtime import instance as rt
from wflang.runtime.engine import Engine, Handler, TaskCall, TaskError
from wflang.runtime.ids import instance_seed
from wflang.runtime.ir import Value
from wflang.runtime.table import Table
from wflang.store import Store

from ..literals import same
from .kit import Durable, VirtualClock
from .test_differential import difference

CHILD = """\
workflow cmd_child version 1

input { n: int }
output { n: int }

signal go {}
message told { n: int }

start hold

wait hold: signal go {
    timeout 1h -> late
    next tell
}

task tell: send message told correlate input.n {
    args { n: input.n }
    next done
}

end done: completed {
    output { n: input.n + 1 }
}

end late: failed
"""

PARENT = """\
workflow cmd_parent version 1

import "cmd_child.wf"

input { n: int }
output { n: int }
context { n: int = 0, ok: bool = false }

error Bad

service s.reserve(n: int) -> { n: int } raises Bad
service s.release(n: int)

start reserve

task reserve: service s.reserve {
    args { n: input.n }
    output { n: result.n }
    compensate release
    next review
}

task review: user "reviewers" {
    args { n: context.n }
    form { ok: bool }
    output { ok: result.ok }
    timeout 1h -> undo
    next check
}

choice check {
    when context.ok -> sub
    else -> undo
}

call sub: workflow cmd_child version 1 {
    args { n: context.n }
    output { n: result.n }
    timeout 2h -> undo
    on any -> undo
    next done
}

end done: completed {
    output { n: context.n }
}

end undo: compensated

task release: service s.release {
    args { n: context.n }
}
"""


@pytest.fixture(scope="module")
def tables(tmp_path_factory: pytest.TempPathFactory) -> tuple[Table, Table]:
    folder = tmp_path_factory.mktemp("cmd")
    (folder / "cmd_child.wf").write_text(CHILD)
    (folder / "cmd_parent.wf").write_text(PARENT)
    compiled = [
        compile_workflow(parse_file(folder / f"{n}.wf")) for n in ("cmd_child", "cmd_parent")
    ]
    child, parent = (c.table for c in compiled)
    assert child is not None and parent is not None, [
        d.message for c in compiled for d in c.check.diagnostics
    ]
    return child, parent


class Both:
    """The engine and a store (client and worker) driven alike on one clock; without a
    store, the engine alone."""

    def __init__(
        self, store: Store | None, clock: VirtualClock, tables: tuple[Table, ...], bad: bool
    ) -> None:
        def reserve(n: int, task: TaskCall) -> dict[str, Value]:
            if bad:
                raise TaskError("Bad", "declared failure")
            return {"n": n * 10}

        def release(n: int) -> None:
            return None

        handlers: dict[str, Handler] = {"s.reserve": reserve, "s.release": release}
        self.store, self.clock = store, clock
        self.engine = Engine(list(tables), handlers, now=clock.ms)
        self.durable = None if store is None else Durable(store, clock, handlers, *tables)

    def start(self, iid: str) -> None:
        self.engine.seed = instance_seed(iid)  # as a store seeds it
        self.engine.start("cmd_parent", {"n": 2}, instance_id=iid)
        if self.durable:
            self.durable.start("cmd_parent", {"n": 2}, iid)

    def review(self, iid: str, ok: bool) -> None:
        (key,) = [t.key for t in self.engine.human_tasks() if t.node == "review"]
        self.engine.complete_task(key, {"ok": ok})
        if self.durable:
            self.durable.complete("review", {"ok": ok}, iid)

    def go(self, iid: str) -> None:
        child = self.engine.records[iid].children[_call_key(self, iid)]
        self.engine.signal(child, "go")
        if self.durable:
            self.durable.signal(child, "go", {})

    def advance(self, ms: int) -> None:
        self.engine.advance(ms)
        if self.durable:
            self.durable.advance(ms)
        else:
            self.clock.advance(ms)

    def cancel(self, iid: str) -> None:
        self.engine.send(iid, rt.CancelRequested(False, "cancelled by an operator"))
        if self.durable:
            self.durable.client.cancel(iid, compensate=False, reason=None)
            self.durable.run()

    def kinds(self) -> set[type]:
        """The kinds of command the engine's instances emitted."""
        return {
            type(c)
            for one in self.engine.records
            for e in self.engine.history(one)
            for c in e.commands
        }

    def compare(self) -> None:
        """Both sides gave the same histories and instances, the children's included."""
        assert self.store is not None and self.durable is not None
        for one in self.engine.records:
            want = [codec.unstructure_entry(e) for e in self.engine.history(one)]
            got = [codec.unstructure_entry(r.entry) for r in self.store.history(one)]
            if not same(want, got):
                raise AssertionError(difference(f"history of {one}", want, got))
            want_i = codec.unstructure_instance(self.engine.instance(one))
            got_i = codec.unstructure_instance(self.durable.instance(one))
            if not same(want_i, got_i):
                raise AssertionError(difference(f"instance {one}", want_i, got_i))


def _call_key(b: Both, iid: str) -> str:
    (key,) = b.engine.records[iid].children
    return key


Scenario = Callable[[Both, str], None]


def child_completes(b: Both, iid: str) -> None:
    b.review(iid, True)
    b.go(iid)


def review_rejected(b: Both, iid: str) -> None:
    b.review(iid, False)  # compensated: the reservation is released


def review_times_out(b: Both, iid: str) -> None:
    b.advance(3_600_000)  # the human task is cancelled, the saga compensates


def child_fails(b: Both, iid: str) -> None:
    b.review(iid, True)
    b.advance(3_600_000)  # the child's wait times out: it fails, the call's error route


def parent_cancelled(b: Both, iid: str) -> None:
    b.review(iid, True)
    b.cancel(iid)  # the running child is cancelled with it


def handler_fails(b: Both, iid: str) -> None:
    pass  # the reservation raised a declared error with no route: the instance fails


SCENARIOS: dict[str, tuple[Scenario, bool]] = {
    "child_completes": (child_completes, False),
    "review_rejected": (review_rejected, False),
    "review_times_out": (review_times_out, False),
    "child_fails": (child_fails, False),
    "parent_cancelled": (parent_cancelled, False),
    "handler_fails": (handler_fails, True),
}


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_the_engine_and_the_store_agree_on_every_command(
    store: Store, clock: VirtualClock, tables: tuple[Table, Table], name: str
) -> None:
    scenario, bad = SCENARIOS[name]
    both = Both(store, clock, tables, bad)
    iid = f"cmd-{name}"
    both.start(iid)
    scenario(both, iid)
    assert both.engine.instance(iid).status.finished, both.engine.instance(iid).status
    both.compare()


def test_the_scenarios_emit_every_kind_of_command(tables: tuple[Table, Table]) -> None:
    kinds: set[type] = set()
    for name, (scenario, bad) in SCENARIOS.items():
        both = Both(None, VirtualClock(), tables, bad)
        both.start(f"cmd-{name}")
        scenario(both, f"cmd-{name}")
        kinds |= both.kinds()
    assert kinds == set(typing.get_args(rt.Command))
