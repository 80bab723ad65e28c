"""A map item's own variables and what a map collects (issue 14 item 2), wherever a
workflow runs: the engine, the test kit, SQLite and PostgreSQL (``test_semantics.Run``).

Each item starts with its own copy of ``local { … }``, which its body writes with
``output { local.NAME: … }`` and reads as ``local.NAME``; ``collect`` gathers a value
per completed item, in item order. The variables live in the item's token, so they
are stored with the instance and survive a restart of the store.
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

from wflang.runtime import instance as rt
from wflang.runtime.codec import dump_instance, load_instance
from wflang.runtime.table import LOCALS
from wflang.store import open_store

from .kit import Durable, VirtualClock
from .test_semantics import Run, unchecked
from .test_semantics import run as run  # noqa: PLC0414  (the fixture: one Run per place)

BIDS = """\
workflow bids version 1

input { suppliers: list[string] }

context { amounts: list[decimal] = [], rounds: list[int] = [] }

output { amounts: list[decimal], rounds: list[int] }

start ask

map ask over input.suppliers as supplier {
    tolerate 1
    local { amount: decimal?, rounds: int = 0 }
    choice known {
        when supplier == "gone" -> missing
        else -> offer
    }
    end missing: failed
    task offer: user "buyer" {
        args { supplier: supplier, round: local.rounds }
        form { amount: decimal }
        output { local.amount: result.amount, local.rounds: local.rounds + 1 }
        next check
    }
    // a second round when the first offer is too high
    choice check {
        when local.amount > 100 and local.rounds < 2 -> offer
        else -> offered
    }
    end offered: completed {
        output { supplier: supplier, rounds: local.rounds }
    }
    collect local.amount into context.amounts
    collect result.rounds into context.rounds
    next done
}

end done: completed {
    output { amounts: context.amounts, rounds: context.rounds }
}
"""


def _offers(run: Run, iid: str) -> dict[tuple[str, int], str]:
    """The open offers: (supplier, round) -> task key."""
    return {
        (str(args["supplier"]), int(str(args["round"]))): key
        for key, args in run.open_tasks(iid).items()
    }


def _item_variables(inst: rt.Instance) -> dict[int, object]:
    """Each running item's variables, by item index."""
    return {t.index: dict(t.locals)[LOCALS] for t in inst.tokens if LOCALS in dict(t.locals)}


def test_each_item_has_its_own_variables_and_the_map_collects_in_item_order(run: Run) -> None:
    run.deploy({}, BIDS)
    iid = run.start("bids", {"suppliers": ["acme", "gone", "bolt", "core"]}, "bids-1")
    offers = _offers(run, iid)
    assert sorted(offers) == [("acme", 0), ("bolt", 0), ("core", 0)]
    run.complete(offers["core", 0], {"amount": Decimal("120.5")})  # too high: a round more
    run.complete(offers["bolt", 0], {"amount": Decimal("90")})
    inst = run.instance(iid)
    assert _item_variables(inst) == {
        0: {"amount": None, "rounds": 0},  # acme: not offered yet, its own copy
        3: {"amount": Decimal("120.5"), "rounds": 1},  # core, waiting for its second round
    }
    offers = _offers(run, iid)
    assert sorted(offers) == [("acme", 0), ("core", 1)]
    run.complete(offers["core", 1], {"amount": Decimal("99.5")})
    run.complete(offers["acme", 0], {"amount": 80})
    inst = run.instance(iid)
    assert inst.status is rt.Status.COMPLETED
    assert inst.output == {
        # acme, bolt, core: item order, whatever order they finished in; "gone" failed
        # within `tolerate`, so it has no value, as it has no entry in `result`
        "amounts": [Decimal("80"), Decimal("90"), Decimal("99.5")],
        "rounds": [1, 1, 2],
    }
    rounds = inst.output["rounds"]
    assert isinstance(rounds, list)
    assert [type(n) for n in rounds] == [int, int, int]  # ints, not bools


def test_an_items_variables_survive_storing_the_instance(run: Run) -> None:
    """The variables are part of the item's token: the stored form keeps them whole."""
    run.deploy({}, BIDS)
    iid = run.start("bids", {"suppliers": ["acme", "bolt"]}, "bids-2")
    run.complete(_offers(run, iid)["acme", 0], {"amount": Decimal("150.25")})
    inst = run.instance(iid)
    again = load_instance(dump_instance(inst))
    assert again == inst
    assert _item_variables(again)[0] == {"amount": Decimal("150.25"), "rounds": 1}
    assert type(_item_variables(again)[1]) is dict


def _durable(url: str, clock: VirtualClock) -> Durable:
    from .kit import compile_text

    store = open_store(url, clock=clock, pool=2)
    store.migrate()
    return Durable(store, clock, {}, compile_text(BIDS))


def test_an_items_variables_survive_a_restart_on_sqlite(tmp_path: Path) -> None:
    _restart(f"sqlite:///{tmp_path / 'state.db'}")


def test_an_items_variables_survive_a_restart_on_postgresql() -> None:
    import uuid

    from .kit import PG_DSN, with_search_path
    from .test_semantics import _pg_admin

    assert PG_DSN, "WFLANG_TEST_PG_DSN is not set"
    schema = f"wf_t_{uuid.uuid4().hex[:12]}"
    _pg_admin(f"CREATE SCHEMA {schema}")
    try:
        _restart(with_search_path(PG_DSN, schema))
    finally:
        _pg_admin(f"DROP SCHEMA {schema} CASCADE")


def _restart(url: str) -> None:
    """An item's variables written, the store closed (a crash between steps), then a
    new store, client and worker on the same database finish the items."""
    clock = VirtualClock()
    first = _durable(url, clock)
    first.start("bids", {"suppliers": ["acme", "bolt"]}, "bids-3")
    key = next(t.key for t in first.client.open_tasks("bids-3") if t.args["supplier"] == "acme")
    first.client.complete_task(key, {"amount": Decimal("130")})
    first.run()
    first.store.close()

    second = _durable(url, clock)
    inst = second.instance("bids-3")
    assert _item_variables(inst) == {
        0: {"amount": Decimal("130"), "rounds": 1},
        1: {"amount": None, "rounds": 0},
    }
    for task in second.client.open_tasks("bids-3"):
        amount = Decimal("95") if task.args["supplier"] == "acme" else Decimal("70")
        second.client.complete_task(task.key, {"amount": amount})
    second.run()
    inst = second.instance("bids-3")
    second.store.close()
    assert inst.status is rt.Status.COMPLETED
    assert inst.output == {"amounts": [Decimal("95"), Decimal("70")], "rounds": [2, 1]}


OUTSIDE = """\
workflow outside version 1
context { n: int = 0 }
start t
task t: script {
    output { n: 1, local.tries: 2 }
    next done
}
end done: completed
"""


def test_a_variable_written_outside_any_map_is_a_workflow_error_and_writes_nothing(
    run: Run,
) -> None:
    """What the checker refuses (WF350), lowered without it: the step that would write
    the variable stops the instance with a clear error, and writes no context either."""
    run.deploy({}, unchecked(OUTSIDE))
    iid = run.start("outside", {}, "outside-1")
    inst = run.instance(iid)
    assert inst.status is rt.Status.DEAD_LETTERED
    assert inst.error == "workflow error: 't' runs in no map item with variables"
    assert inst.context == {"n": 0}  # the step's other write did not happen either
    assert "instance completed" not in run.decisions(iid)
