"""How large the values a workflow computes may grow (issue 20 item 3).

Expressions have no loops, but a workflow does: ``s + s`` written back into the
context on every turn of a loop doubles a string each time. Ints and decimals are
bounded by their types (``wflang.runtime.numbers``); strings, lists and the context
by a ``Limits``, given to the engine, the test kit or a worker (the defaults suit
most uses). A value over a limit is a workflow error that names the limit.

A replay must use the limits the instance ran with to take the same path.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from attrs import frozen

from wflang.runtime.numbers import ExpressionError

if TYPE_CHECKING:
    from wflang.runtime.ir import Value


@frozen
class Limits:
    """The largest values an instance may compute."""

    #: characters of a string an expression builds (``+``, ``upper``, ``string``...)
    string_chars: int = 1_000_000
    #: items of a list an expression builds (a list literal, ``keys``, ``+`` of lists)
    list_items: int = 100_000
    #: list items one evaluation of an expression may touch (``xs[*].a``, ``any``,
    #: ``all``, ``filter``, ``map``, ``sum``, ``min``, ``max``, ``contains``, ``in``,
    #: ``+`` of lists each count the items they read): ``wflang.runtime.lists``
    list_elements: int = 1_000_000
    #: the context's size as JSON text (about: a string counts its characters), checked
    #: when a step writes a string of more than ``LONG`` characters, a list or a map
    context_chars: int = 16_000_000

    def __attrs_post_init__(self) -> None:
        for name in ("string_chars", "list_items", "list_elements", "context_chars"):
            if getattr(self, name) < 1:
                raise ValueError(f"Limits.{name} must be at least 1")


DEFAULT = Limits()

#: Writes of shorter strings (and of numbers, booleans, null) grow a context by little.
LONG = 1_000


def grows(value: Value) -> bool:
    """Whether writing ``value`` may grow a context by much."""
    t = type(value)
    return t is list or t is dict or (t is str and len(value) > LONG)  # type: ignore[arg-type]


def check_context(context: dict[str, Value], limits: Limits) -> None:
    """An ExpressionError when the context is larger than the limit."""
    size = _size(context)
    if size > limits.context_chars:
        raise ExpressionError(
            f"the context is {size:,} characters as JSON; the limit is {limits.context_chars:,}"
        )


def _size(value: Value) -> int:
    if isinstance(value, str):
        return len(value) + 2
    if isinstance(value, dict):
        return 1 + sum(len(k) + 4 + _size(v) for k, v in value.items())
    if isinstance(value, list):
        return 1 + sum(_size(v) + 1 for v in value)
    if isinstance(value, bool) or value is None:
        return 5
    return len(str(value))
