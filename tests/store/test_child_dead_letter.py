"""A dead-lettered child is no outcome for its parent (issue 12, item 7's rule: an
instance finishes once; a dead letter is its own event).

An operator may retry, force-complete or cancel a dead-lettered instance, so a parent
whose call's child dead-letters keeps waiting at the call, and gets the child's real
outcome when there is one: its output when ops retry or force-complete it, a failure
(routed by the call's ``on``) when ops cancel it. The same on the in-memory engine, the
test kit, SQLite and PostgreSQL.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from wflang.compiler.compile import compile_workflow
from wflang.dsl.parser import parse_file
from wflang.runtime.engine import Engine, TaskError
from wflang.runtime.ir import Value
from wflang.runtime.table import Table
from wflang.store import Store
from wflang.testing import WorkflowEnv

from .kit import Durable, VirtualClock, replays_exactly, seq_problems

KID = """\
workflow dlkid version 1
input { id: string }
context { got: int = 0 }
output { got: int }
error Broken
service k.work(id: string) -> { got: int } raises Broken
start work
task work: service k.work {
    args { id: input.id }
    output { got: result.got }
    next done
}
end done: completed {
    output { got: context.got }
}
"""

PARENT = """\
workflow dlparent version 1
import "dlkid.wf"
input { id: string }
context { got: int = 0, gave_up: bool = false }
output { got: int, gave_up: bool }
start c
call c: workflow dlkid version 1 {
    args { id: input.id }
    output { got: result.got }
    on any -> gave_up
    next done
}
task gave_up: script {
    output { gave_up: true }
    next done
}
end done: completed {
    output { got: context.got, gave_up: context.gave_up }
}
"""

#: What ops do to the dead-lettered child, and the parent's output after it.
OPS = {
    "retry": {"got": 7, "gave_up": False},  # the call runs again and succeeds
    "force-complete": {"got": 3, "gave_up": False},  # the step's output, given by ops
    "cancel": {"got": 0, "gave_up": True},  # a failure of the call: its `on any`
}


@pytest.fixture(scope="module")
def tables(tmp_path_factory: pytest.TempPathFactory) -> tuple[Table, Table]:
    folder = tmp_path_factory.mktemp("dlchild")
    (folder / "dlkid.wf").write_text(KID)
    (folder / "dlparent.wf").write_text(PARENT)
    compiled = [compile_workflow(parse_file(folder / f"{n}.wf")) for n in ("dlkid", "dlparent")]
    kid, parent = (c.table for c in compiled)
    assert kid is not None and parent is not None
    return kid, parent


def first_fails() -> Callable[..., dict[str, Value]]:
    """``k.work``: fails for good once (the child dead-letters), then returns 7."""
    calls: list[str] = []

    def work(id: str) -> dict[str, Value]:
        calls.append(id)
        if len(calls) == 1:
            raise TaskError("Broken", "scripted")
        return {"got": 7}

    return work


@pytest.mark.parametrize("op", OPS)
def test_engine_parent_waits_for_a_dead_lettered_child(
    tables: tuple[Table, Table], op: str
) -> None:
    engine = Engine(list(tables), {"k.work": first_fails()})
    iid = engine.start("dlparent", {"id": "x"}, instance_id="p-1")
    (kid,) = [k for k, r in engine.records.items() if r.parent and r.parent[0] == iid]
    assert engine.instance(kid).status.value == "dead_lettered"
    assert engine.instance(iid).status.value == "waiting"  # still at its call
    if op == "retry":
        engine.retry(kid)
    elif op == "force-complete":
        engine.complete_step(kid, "work", {"got": 3})
    else:
        engine.cancel(kid)
    assert engine.instance(iid).status.value == "completed"
    assert engine.instance(iid).output == OPS[op]


@pytest.mark.parametrize("op", OPS)
def test_test_kit_parent_waits_for_a_dead_lettered_child(
    tables: tuple[Table, Table], op: str
) -> None:
    env = WorkflowEnv(tables, {"k.work": first_fails()})
    iid = env.start("dlparent", {"id": "x"})
    (kid,) = [k for k, r in env.engine.records.items() if r.parent and r.parent[0] == iid]
    assert env.status(kid) == "dead_lettered"
    assert env.status(iid) == "waiting"
    if op == "retry":
        env.retry(kid)
    elif op == "force-complete":
        env.force_complete(kid, "work", {"got": 3})
    else:
        env.cancel(kid)
    assert env.status(iid) == "completed"
    assert env.instance(iid).output == OPS[op]
    assert env.replay(iid).ok


@pytest.mark.parametrize("op", OPS)
def test_store_parent_waits_for_a_dead_lettered_child(
    store: Store, clock: VirtualClock, tables: tuple[Table, Table], op: str
) -> None:
    d = Durable(store, clock, {"k.work": first_fails()}, *tables)
    iid = d.start("dlparent", {"id": "x"}, "p-1")
    (kid,) = [i.id for i in store.instances() if i.parent_id == iid]
    assert d.status(kid) == "dead_lettered"
    assert d.status(iid) == "waiting"
    assert d.run() == 0  # nothing reached the parent: it waits
    if op == "retry":
        d.client.retry(kid, reason="fixed")
    elif op == "force-complete":
        d.client.force_complete(kid, "work", {"got": 3}, reason="done by hand")
    else:
        d.client.cancel(kid, compensate=False, reason="given up")
    d.run()
    assert d.status(iid) == "completed"
    assert d.instance(iid).output == OPS[op]
    for i in (iid, kid):
        assert seq_problems(store, i) == []
        replays_exactly(store, i)
    kinds = [(e.instance_id, e.kind) for e in store.outbox(limit=100)]
    assert kinds.count((kid, "instance.dead_lettered")) == 1
    assert kinds.count((kid, "instance.finished")) == 1
    assert kinds.count((iid, "instance.finished")) == 1


def _timed(folder: Path) -> tuple[Table, Table]:
    """The pair, with a one-hour timeout on the parent's call."""
    (folder / "dlkid.wf").write_text(KID)
    timed = PARENT.replace(
        "    on any -> gave_up\n", "    timeout 1h -> gave_up\n    on any -> gave_up\n"
    )
    (folder / "dlparent.wf").write_text(timed)
    compiled = [compile_workflow(parse_file(folder / f"{n}.wf")) for n in ("dlkid", "dlparent")]
    kid, parent = (c.table for c in compiled)
    assert kid is not None and parent is not None
    return kid, parent


def test_parent_timeout_cancels_a_dead_lettered_child(tmp_path: Path) -> None:
    """A parent that gives up on the call (its timeout) cancels the dead-lettered child."""
    env = WorkflowEnv(_timed(tmp_path), {"k.work": first_fails()})
    iid = env.start("dlparent", {"id": "x"})
    (kid,) = [k for k, r in env.engine.records.items() if r.parent and r.parent[0] == iid]
    assert (env.status(kid), env.status(iid)) == ("dead_lettered", "waiting")
    env.advance(hours=1)
    assert (env.status(kid), env.status(iid)) == ("cancelled", "completed")
    assert env.instance(iid).output == {"got": 0, "gave_up": True}


def test_store_parent_timeout_cancels_a_dead_lettered_child(
    store: Store, clock: VirtualClock, tmp_path: Path
) -> None:
    d = Durable(store, clock, {"k.work": first_fails()}, *_timed(tmp_path))
    iid = d.start("dlparent", {"id": "x"}, "p-1")
    (kid,) = [i.id for i in store.instances() if i.parent_id == iid]
    assert (d.status(kid), d.status(iid)) == ("dead_lettered", "waiting")
    d.advance(3_600_000)
    assert (d.status(kid), d.status(iid)) == ("cancelled", "completed")
    assert d.instance(iid).output == {"got": 0, "gave_up": True}
    for i in (iid, kid):
        assert seq_problems(store, i) == []
        replays_exactly(store, i)
