"""Members of an enum imported ``as alias`` (``levels.Tier.gold``, issue 14 leftovers,
item 2) on SQLite and PostgreSQL: a default, comparisons and a choice's guards written
with qualified members run as on the engine (tests/test_qualified_enums.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from wflang.compiler.compile import compile_workflow
from wflang.dsl.parser import parse_file
from wflang.runtime.ir import Value
from wflang.store import Store

from .kit import Durable, VirtualClock, replays_exactly

DATA = Path(__file__).parent.parent / "data" / "qualified"


@pytest.mark.parametrize(
    ("given", "want"),
    [
        ({}, {"best": False, "tier": "gold", "label": "midtrue"}),
        ({"tier": "platinum"}, {"best": True, "tier": "platinum", "label": "toptrue"}),
        ({"tier": "standard"}, {"best": False, "tier": "standard", "label": "lowfalse"}),
    ],
)
def test_qualified_members_run_on_the_store(
    store: Store, clock: VirtualClock, given: dict[str, Value], want: dict[str, Value]
) -> None:
    compiled = compile_workflow(parse_file(str(DATA / "tiers.wf")))
    assert compiled.table is not None, [d.message for d in compiled.check.diagnostics]
    d = Durable(store, clock, {}, compiled.table)
    iid = d.start("tiers", given, "tiers-1")
    assert d.status(iid) == "completed"
    assert d.instance(iid).output == want
    replays_exactly(store, iid)
