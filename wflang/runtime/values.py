"""Runtime values: what expressions compute and instances hold, and when two are the same.

Values are JSON-like: None, bool, int, Decimal, str, list and dict (numbers in the one
form of ``wflang.runtime.numbers``). Python's ``==`` is not the runtime's equality:
it says ``True == 1``, ``Decimal("1.0") == 1`` and ``1.5 == Decimal("1.50")``. The
language's ``==`` is ``wflang.runtime.ops.equal`` (numbers by value, a bool never a
number); ``identical`` is the strict one, for deciding whether two runs or two
requests gave the same values.
"""

from __future__ import annotations

from decimal import Decimal

import attrs

Value = None | bool | int | Decimal | str | list["Value"] | dict[str, "Value"]


def identical(a: object, b: object) -> bool:
    """Equal in type and value all the way down, through lists, tuples, dicts and attrs
    classes (an instance, an event, a command): ``True`` is not ``1``, ``Decimal("1.0")``
    is not ``1`` nor ``Decimal("1.00")``. What a replay and a repeated request compare."""
    if type(a) is not type(b):
        return False
    if isinstance(a, Decimal) and isinstance(b, Decimal):
        return a.as_tuple() == b.as_tuple()
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(identical(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(identical(v, b[k]) for k, v in a.items())
    cls = type(a)
    if attrs.has(cls):
        return all(identical(getattr(a, f.name), getattr(b, f.name)) for f in attrs.fields(cls))
    return a == b
