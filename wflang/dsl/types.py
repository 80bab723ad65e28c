"""Type expressions as written in a .wf file: ``string``, ``list[Item]``, ``decimal?``."""

from __future__ import annotations

from attrs import frozen

from wflang.dsl.span import Span, span_field

PRIMITIVE_TYPES = ("string", "int", "decimal", "bool", "duration", "timestamp")


@frozen
class NamedType:
    """A primitive (``int``) or a declared record or enum (``Item``)."""

    name: str
    span: Span = span_field()

    def __str__(self) -> str:
        return self.name


@frozen
class GenericType:
    """``list[T]`` or ``map[string, T]``."""

    name: str
    args: tuple[TypeSpec, ...]
    span: Span = span_field()

    def __str__(self) -> str:
        return f"{self.name}[{', '.join(str(a) for a in self.args)}]"


@frozen
class OptionalType:
    """``T?``: a value of T, or null."""

    inner: NamedType | GenericType
    span: Span = span_field()

    def __str__(self) -> str:
        return f"{self.inner}?"


TypeSpec = NamedType | GenericType | OptionalType
