"""Child instance ids stay short at any depth (issue 12 item 4).

A child's id was its parent's id, a slash and the call's key, which starts with the
parent's id again: the id doubled at every level (13 levels: 73,719 characters), and
on PostgreSQL the row outgrew the primary key's index. Ids come from one runtime
function (``wflang.runtime.keys.child_id``) in memory and in the stores: the root's id
and 17 characters, the same on every runtime and on every replay.
"""

from __future__ import annotations

import pytest

from wflang.compiler.compile import compile_workflow
from wflang.dsl.parser import parse_file
from wflang.durable.client import Client
from wflang.durable.worker import Worker
from wflang.runtime import instance as rt
from wflang.runtime.engine import Engine
from wflang.runtime.keys import child_id
from wflang.runtime.table import Table
from wflang.store import Store

from .kit import seq_problems

BOTTOM = """\
workflow nest0 version 1

output { reached: int }

signal go {}

start bottom

wait bottom: signal go {
    next done
}

end done: completed {
    output { reached: 1 }
}
"""

LEVEL = """\
workflow nest{n} version 1

import "nest{below}.wf"

output {{ reached: int }}

context {{ reached: int = 0 }}

start deeper

call deeper: workflow nest{below} version 1 {{
    output {{ reached: result.reached }}
    next done
}}

end done: completed {{
    output {{ reached: context.reached + 1 }}
}}
"""


DEPTH = 20


@pytest.fixture(scope="module")
def levels(tmp_path_factory: pytest.TempPathFactory) -> tuple[Table, ...]:
    """Workflows nest0 .. nest20, each calling the one below (a call may not come back
    to its own workflow); nest0 waits for a signal."""
    folder = tmp_path_factory.mktemp("nest")
    (folder / "nest0.wf").write_text(BOTTOM)
    for n in range(1, DEPTH + 1):
        (folder / f"nest{n}.wf").write_text(LEVEL.format(n=n, below=n - 1))
    tables = []
    for n in range(DEPTH + 1):
        compiled = compile_workflow(parse_file(folder / f"nest{n}.wf"))
        assert compiled.table is not None, [d.message for d in compiled.check.diagnostics]
        tables.append(compiled.table)
    return tuple(tables)


ROOT = "order-2026-000042"


def _chain(parent_of: dict[str, str | None]) -> list[str]:
    """The ids from the root down, following the parent links."""
    chain = [ROOT]
    while True:
        below = [iid for iid, parent in parent_of.items() if parent == chain[-1]]
        if not below:
            return chain
        assert len(below) == 1, below
        chain.append(below[0])


def test_child_ids_are_short_at_any_depth_in_memory(levels: tuple[Table, ...]) -> None:
    engine = Engine(list(levels), {})
    engine.start(f"nest{DEPTH}", {}, instance_id=ROOT)
    parents = {iid: (r.parent[0] if r.parent else None) for iid, r in engine.records.items()}
    chain = _chain(parents)
    assert len(chain) == DEPTH + 1
    assert max(len(iid) for iid in chain) == len(ROOT) + 17
    assert all(iid.startswith(f"{ROOT}/") for iid in chain[1:])
    engine.signal(chain[-1], "go", {})
    assert engine.instance(ROOT).status is rt.Status.COMPLETED
    assert engine.instance(ROOT).output == {"reached": DEPTH + 1}


def test_child_ids_are_short_at_any_depth_in_a_store(
    store: Store, levels: tuple[Table, ...]
) -> None:
    """20 levels: every id is the root's and 17 characters (was 73,719 at 13 levels,
    beyond PostgreSQL's index limit), the same ids as in memory."""
    client = Client(store, actor="tester")
    for table in levels:
        client.deploy(table)
    client.start(f"nest{DEPTH}", {}, instance_id=ROOT)
    worker = Worker(store, {})
    worker.run_until_idle()
    infos = store.instances(limit=1000)
    chain = _chain({i.id: i.parent_id for i in infos})
    assert len(chain) == DEPTH + 1
    assert max(len(iid) for iid in chain) == len(ROOT) + 17

    engine = Engine(list(levels), {})
    engine.start(f"nest{DEPTH}", {}, instance_id=ROOT)
    assert sorted(chain) == sorted(engine.records)  # deterministic: the same everywhere

    client.signal(chain[-1], "go", {})
    worker.run_until_idle()
    for iid in chain:
        assert store.instance(iid).status == "completed", iid
        assert not seq_problems(store, iid)
    root = store.instance(ROOT).instance
    assert root is not None and root.output == {"reached": DEPTH + 1}


def test_cancelling_a_parent_reaches_its_child_by_either_id_form(
    store: Store, levels: tuple[Table, ...]
) -> None:
    """A cancel goes down the chain to the waiting bottom; a child started before ids
    were bounded (``PARENT/KEY``) is found too."""
    client = Client(store, actor="tester")
    for table in levels[:3]:
        client.deploy(table)
    client.start("nest2", {}, instance_id=ROOT)
    worker = Worker(store, {})
    worker.run_until_idle()
    chain = _chain({i.id: i.parent_id for i in store.instances(limit=100)})
    assert len(chain) == 3
    # Give the bottom instance the id of the old form, as an old store has it.
    with store.backend.transaction() as tx:
        (key,) = tx.query("SELECT parent_key FROM wf_instance WHERE id = ?", (chain[2],))[0]
        legacy = f"{chain[1]}/{key}"
        for name in ("wf_history", "wf_inbox"):
            tx.execute(f"UPDATE {name} SET instance_id = ? WHERE instance_id = ?",
                       (legacy, chain[2]))  # fmt: skip
        tx.execute("UPDATE wf_instance SET id = ? WHERE id = ?", (legacy, chain[2]))
    assert child_id(chain[1], str(key)) == chain[2]

    client.cancel(ROOT, compensate=False, reason="no longer needed")
    worker.run_until_idle()
    for iid in (ROOT, chain[1], legacy):
        assert store.instance(iid).status == "cancelled", iid


def test_a_child_id_is_its_root_and_a_hash_of_the_call() -> None:
    assert child_id("o-1", "o-1:kyc:1:0:1") == child_id("o-1", "o-1:kyc:1:0:1")
    assert child_id("o-1", "o-1:kyc:1:0:1") != child_id("o-1", "o-1:kyc:1:0:2")
    first = child_id("o-1", "o-1:kyc:1:0:1")
    second = child_id(first, f"{first}:kyc:1:0:1")
    assert first.startswith("o-1/") and second.startswith("o-1/")
    assert len(first) == len(second) == len("o-1") + 17
    # A root id with slashes of its own keeps them.
    assert child_id("tenant/7", "tenant/7:k:1:0:1").startswith("tenant/7/")
