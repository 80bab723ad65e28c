"""An engine that is dropped is freed at once: running workflows makes no reference
cycle (the history of a long run would otherwise wait for the garbage collector,
which then walks all of it; issue 13, step speed)."""

from __future__ import annotations

import gc

import pytest

from tests.test_step_common import FANOUT, LOOP, table_of
from wflang.runtime.engine import Engine
from wflang.runtime.ir import Value


def _value(**kw: Value) -> dict[str, Value]:
    return {"v": 1}


@pytest.mark.parametrize("source", [LOOP, FANOUT.replace("JOIN", "all")])
def test_a_dropped_engine_leaves_no_cycle(source: str) -> None:
    table = table_of(source)
    Engine([table], handlers={"s.work": _value}).start(table.workflow, {})  # warmed up
    gc.collect()
    enabled = gc.isenabled()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)  # what the collector finds stays in gc.garbage
    try:
        engine = Engine([table], handlers={"s.work": _value})
        iid = engine.start(table.workflow, {})
        assert len(engine.history(iid)) > 2
        del engine
        found = gc.collect()
        kinds = sorted({type(o).__name__ for o in gc.garbage})
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        if enabled:
            gc.enable()
    assert found == 0, kinds
