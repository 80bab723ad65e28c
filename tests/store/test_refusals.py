"""What the engine and the test kit refuse (tests/test_engine_refusals.py), a durable
store refuses the same way (issue 12): a start input that does not fit, with the same
words and nothing stored; a ``call`` of a workflow that is not deployed fails the call,
and the workflow's own routes see it."""

from __future__ import annotations

import re

import pytest

from wflang.durable.client import InvalidValue as ClientInvalidValue
from wflang.runtime.engine import Engine
from wflang.runtime.ir import Value
from wflang.runtime.validate import InvalidValue
from wflang.store import Store

from ..test_engine_refusals import BAD_INPUTS, TYPED, routed
from .kit import Durable, VirtualClock, compile_text, data_table, replays_exactly


@pytest.mark.parametrize(("input", "says"), BAD_INPUTS)
def test_a_store_refuses_an_input_as_the_engine_does(
    store: Store, clock: VirtualClock, input: dict[str, Value], says: str
) -> None:
    durable = Durable(store, clock, {}, compile_text(TYPED))
    with pytest.raises(InvalidValue) as on_store:
        durable.client.start("typed", input, instance_id="t-1")
    assert isinstance(on_store.value, ClientInvalidValue)  # a store's refusal as well
    with pytest.raises(InvalidValue) as on_engine:
        Engine([compile_text(TYPED)], {}).start("typed", input)
    assert str(on_store.value) == str(on_engine.value)
    assert re.search(re.escape(says), str(on_store.value))
    assert store.instances() == []


def test_a_call_of_a_workflow_that_is_not_deployed_fails_the_call_on_a_store(
    store: Store, clock: VirtualClock
) -> None:
    """A version deployed without its callee (the client refuses that; the store takes
    it): the call fails with the engine's words, and ``on any`` sees it."""
    durable = Durable(store, clock, {})
    store.deploy(data_table("parent"))
    store.deploy(routed())
    durable.start("parent", {"id": "p"}, "p-1")
    engine = Engine([data_table("parent")], {})
    expected = engine.instance(engine.start("parent", {"id": "p"}))
    info = store.instance("p-1")
    assert info.instance is not None
    assert (info.status, info.instance.error) == (expected.status.value, expected.error)
    durable.start("routed", {}, "r-1")
    assert durable.status("r-1") == "completed"
    assert durable.instance("r-1").output == {"how": "gave up"}
    replays_exactly(store, "r-1")
