"""Specs to and from plain JSON-ready data, through cattrs.

Unions (expressions, types, nodes, declarations) are tagged with ``kind``; a
decimal travels as a string so that no precision is lost. ``structure`` of an
``unstructure``d spec gives back an equal spec, spans included.
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

import cattrs
from cattrs.strategies import configure_tagged_union

from wflang.dsl import expr as ex
from wflang.dsl import spec as sp
from wflang.dsl import types as ty

_SUFFIXES = ("Node", "Decl", "Lit", "Type", "Work", "Trigger")


def kind_tag(cls: type) -> str:
    """``TaskNode`` -> ``task``, ``IntLit`` -> ``int``, ``ServiceDecl`` -> ``service``."""
    name = cls.__name__
    for suffix in _SUFFIXES:
        if name.endswith(suffix) and name != suffix:
            name = name[: -len(suffix)]
            break
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def make_converter() -> cattrs.Converter:
    conv = cattrs.Converter(forbid_extra_keys=True)
    conv.register_unstructure_hook(Decimal, str)
    conv.register_structure_hook(Decimal, lambda v, _: Decimal(str(v)))
    leaves: tuple[Any, ...] = (ex.Expr, ty.TypeSpec, ty.NamedType | ty.GenericType)
    for union in leaves:
        configure_tagged_union(union, conv, tag_generator=kind_tag, tag_name="kind")
    # Member hooks are made when a union is configured: optional expressions first.
    _optional(conv, ex.Expr)
    _service_result(conv)
    for union in (sp.TaskWork, sp.WaitTrigger, sp.Node, sp.Item):
        configure_tagged_union(union, conv, tag_generator=kind_tag, tag_name="kind")
    return conv


def _optional(conv: cattrs.Converter, union: Any) -> None:
    """Route ``union | None`` through the tagged hooks of ``union``."""
    unstructure_union = conv.get_unstructure_hook(union)
    structure_union = conv.get_structure_hook(union)
    optional: Any = union | None
    conv.register_unstructure_hook_func(
        lambda t: t == optional, lambda v: None if v is None else unstructure_union(v)
    )
    conv.register_structure_hook_func(
        lambda t: t == optional, lambda v, _: None if v is None else structure_union(v, union)
    )


def _service_result(conv: cattrs.Converter) -> None:
    """A service's result: none (null), its fields (a list) or a record type's name
    (a tagged type, ``{"kind": "named", ...}``)."""
    result: Any = tuple[sp.Field, ...] | ty.NamedType | None
    fields: Any = tuple[sp.Field, ...]
    typed: Any = ty.TypeSpec

    def unstructure(v: tuple[sp.Field, ...] | ty.NamedType | None) -> Any:
        return (
            None
            if v is None
            else conv.unstructure(v, typed if isinstance(v, ty.NamedType) else fields)
        )

    def structure(v: Any, _: Any) -> tuple[sp.Field, ...] | ty.NamedType | None:
        if v is None:
            return None
        if isinstance(v, dict):
            named: ty.NamedType = conv.structure(v, typed)
            return named
        return conv.structure(v, fields)  # type: ignore[no-any-return]

    conv.register_unstructure_hook_func(lambda t: t == result, unstructure)
    conv.register_structure_hook_func(lambda t: t == result, structure)


CONVERTER = make_converter()


def unstructure(spec: sp.WorkflowSpec) -> dict[str, Any]:
    data: dict[str, Any] = CONVERTER.unstructure(spec)
    return data


def structure(data: dict[str, Any]) -> sp.WorkflowSpec:
    return CONVERTER.structure(data, sp.WorkflowSpec)
