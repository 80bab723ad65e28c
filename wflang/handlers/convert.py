"""The classes ``wf gen python`` writes, to and from the runtime's values (cattrs).

The runtime's values are JSON-like (``wflang.runtime.values``): a decimal is a
``Decimal``, a duration whole milliseconds, a timestamp milliseconds since the Unix
epoch, an enum member its name. A generated class holds ``Decimal``, ``timedelta``,
an aware ``datetime`` and enum members: ``to_value`` and ``from_value`` convert at
the boundary, both ways, and nothing in between (a bool is never an int, a decimal
never a float). A field Python cannot name as the language does (a keyword: ``from``
is ``from_``) carries its language name in ``metadata["wf"]``.
"""

from __future__ import annotations

import datetime
import decimal
import enum
import types
import typing
from collections.abc import Mapping
from typing import Any, TypeVar

import attrs
import cattrs
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override

from wflang.runtime.ir import Value

T = TypeVar("T")

EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
MILLISECOND = datetime.timedelta(milliseconds=1)


def _millis_since_epoch(value: datetime.datetime) -> int:
    if value.tzinfo is None:  # a naive time is no instant: which zone was meant?
        raise ValueError(f"the timestamp {value.isoformat()} has no time zone")
    return (value - EPOCH) // MILLISECOND


def _timestamp(value: object, _: object) -> datetime.datetime:
    if isinstance(value, datetime.datetime):
        return value
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"a timestamp is whole milliseconds, not {type(value).__name__}")
    return EPOCH + value * MILLISECOND


def _duration(value: object, _: object) -> datetime.timedelta:
    if isinstance(value, datetime.timedelta):
        return value
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"a duration is whole milliseconds, not {type(value).__name__}")
    return value * MILLISECOND


def _decimal(value: object, _: object) -> decimal.Decimal:
    if isinstance(value, decimal.Decimal):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return decimal.Decimal(value)
    if isinstance(value, str):  # exact, as written
        return decimal.Decimal(value)
    raise TypeError(f"a decimal is a Decimal, an int or its text, not {type(value).__name__}")


def _renamed(cls: type) -> dict[str, Any]:
    return {
        a.name: override(rename=a.metadata["wf"]) for a in attrs.fields(cls) if "wf" in a.metadata
    }


def _converter() -> cattrs.Converter:
    conv = cattrs.Converter()
    conv.register_unstructure_hook(datetime.datetime, _millis_since_epoch)
    conv.register_structure_hook(datetime.datetime, _timestamp)
    conv.register_unstructure_hook(datetime.timedelta, lambda d: d // MILLISECOND)
    conv.register_structure_hook(datetime.timedelta, _duration)
    conv.register_unstructure_hook(decimal.Decimal, lambda d: d)
    conv.register_structure_hook(decimal.Decimal, _decimal)
    conv.register_unstructure_hook_factory(
        attrs.has, lambda cls: make_dict_unstructure_fn(cls, conv, **_renamed(cls))
    )
    conv.register_structure_hook_factory(
        attrs.has,
        lambda cls: make_dict_structure_fn(
            cls, conv, _cattrs_forbid_extra_keys=True, **_renamed(cls)
        ),
    )
    return conv


CONVERTER = _converter()


def to_value(obj: object) -> dict[str, Value]:
    """A generated class (or a mapping holding them, or times and decimals) as the
    runtime's value: the object a handler returns, a payload, an input."""
    value = CONVERTER.unstructure(obj)
    if not isinstance(value, dict):
        raise TypeError(f"{type(obj).__name__} is not a record")
    return value


def from_value(value: Mapping[str, Value], cls: type[T]) -> T:
    """A runtime value (a result, a payload, an input) as the generated class ``cls``."""
    return CONVERTER.structure(dict(value), cls)


def needs_conversion(hint: object) -> bool:
    """Whether a parameter annotated ``hint`` takes something other than the runtime's
    value: a generated class, an enum, a time, a decimal, an optional one or a list or
    map of them. A union of other types (``Value``, ``int | Decimal``) takes the value
    as it is."""
    if isinstance(hint, type):
        if attrs.has(hint) or issubclass(hint, enum.Enum):
            return True
        return hint in (datetime.datetime, datetime.timedelta, decimal.Decimal)
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (list, dict) and args:
        return needs_conversion(args[-1])
    if origin in (typing.Union, types.UnionType):
        members = [a for a in args if a is not type(None)]
        return len(members) == 1 and needs_conversion(members[0])
    return False


def structure(value: object, hint: object) -> Any:
    """``value`` from the runtime as a parameter annotated ``hint`` takes it."""
    return CONVERTER.structure(value, hint)  # type: ignore[arg-type]
