"""A Python caller of the durable client may give a float for a decimal, as it may to the
engine: the store keeps the exact decimal its shortest repr reads as (``420.1``, never
``420.09999999999999431566``) and the step computes exactly, for a start input, a
signal, a form and an operator's forced output, on SQLite and PostgreSQL. (The client
does not take these values through ``validate.exact`` as the engine does; the store's
codec writes a float as its shortest repr and reads a number with a point as a decimal,
and this test holds it to that.)"""

from __future__ import annotations

from decimal import Decimal
from typing import cast

from wflang.runtime.instance import Status
from wflang.runtime.ir import Value
from wflang.store import Store

from .kit import Durable, VirtualClock, compile_text, replays_exactly

SOURCE = """
workflow floats version 1

input { amount: decimal }
output { total: decimal, extra: decimal, form: decimal, forced: decimal }
context { extra: decimal = 0.0, form: decimal = 0.0, forced: decimal = 0.0 }

signal bump { by: decimal }

service rates.get(amount: decimal) -> { rate: decimal }

start for_bump

wait for_bump: signal bump {
    output { extra: signal.by }
    next approve
}
task approve: user "finance" {
    form { amount: decimal }
    output { form: result.amount }
    next fetch
}
task fetch: service rates.get {
    args { amount: input.amount }
    output { forced: result.rate }
    next done
}
end done: completed {
    output {
        total: input.amount + context.extra + context.form + context.forced,
        extra: context.extra,
        form: context.form,
        forced: context.forced,
    }
}
"""


def floats(**fields: float) -> dict[str, Value]:
    """Fields as a Python caller may give them: floats, outside the typed ``Value``."""
    return cast("dict[str, Value]", fields)


def test_floats_from_a_python_caller_are_kept_as_exact_decimals(
    store: Store, clock: VirtualClock
) -> None:
    def broken(**_: object) -> None:
        raise RuntimeError("down")

    durable = Durable(store, clock, {"rates.get": broken}, compile_text(SOURCE))
    iid = durable.start("floats", floats(amount=420.1), "f-1")
    durable.signal(iid, "bump", floats(by=0.1))
    durable.complete("approve", floats(amount=0.2))
    for _ in range(10):  # until the retries give up and it is dead-lettered
        if durable.status(iid) == Status.DEAD_LETTERED.value:
            break
        durable.advance(3_600_000)
    assert durable.status(iid) == Status.DEAD_LETTERED.value
    durable.client.force_complete(iid, "fetch", floats(rate=0.3), reason="by hand")
    durable.run()
    info = store.instance(iid)
    assert info.status == Status.COMPLETED.value, info
    assert info.instance is not None
    out = info.instance.output
    assert out == {
        "total": Decimal("420.7"),
        "extra": Decimal("0.1"),
        "form": Decimal("0.2"),
        "forced": Decimal("0.3"),
    }
    assert all(type(v) is Decimal for v in out.values()), out
    assert type(info.input["amount"]) is Decimal
    replays_exactly(store, iid)
