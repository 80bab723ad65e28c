"""The spec's names and declarations: identifiers, comments and suppressions, fields,
the header and one class per declaration (``spec`` re-exports each, so every stage
writes ``sp.SignalDecl`` as it writes ``sp.TaskNode``); frozen attrs values with a span
on each.
"""

from __future__ import annotations

from attrs import frozen

from wflang.dsl.expr import Expr
from wflang.dsl.span import Span, span_field
from wflang.dsl.types import NamedType, TypeSpec


@frozen
class Ident:
    """A name as written, with its own span (for 'unknown target' and friends)."""

    text: str
    span: Span = span_field()


@frozen
class Comment:
    """A ``//`` or ``/* */`` comment, kept verbatim for the formatter."""

    text: str
    span: Span = span_field()


@frozen
class Suppression:
    """``// wf: ignore[WF201, unreachable-node]``; ``file`` for ``ignore-file``.

    An empty ``codes`` tuple is a blanket suppression.
    """

    codes: tuple[str, ...]
    file_level: bool
    line: int
    span: Span = span_field()


# ----------------------------------------------------------------- declarations


@frozen
class Field:
    """``name: type = default`` in a record, input, context, payload or form."""

    name: Ident
    type: TypeSpec
    default: Expr | None = None
    span: Span = span_field()


@frozen
class Header:
    """``workflow NAME version N``."""

    name: Ident
    version: int
    span: Span = span_field()


@frozen
class ImportDecl:
    """``import "path.wf" [as alias]``: types, services and workflows of another file."""

    path: str
    alias: Ident | None = None
    span: Span = span_field()


@frozen
class TypeDecl:
    """``type Item { sku: string, qty: int }``: a record type."""

    name: Ident
    fields: tuple[Field, ...]
    span: Span = span_field()


@frozen
class EnumDecl:
    """``enum Priority { low, normal, high }``."""

    name: Ident
    members: tuple[Ident, ...]
    span: Span = span_field()


@frozen
class InputDecl:
    """The workflow's typed input; fields with a default are optional."""

    fields: tuple[Field, ...]
    span: Span = span_field()


@frozen
class ContextDecl:
    """The workflow's typed state, written by ``output`` mappings."""

    fields: tuple[Field, ...]
    span: Span = span_field()


@frozen
class OutputDecl:
    """The workflow's typed result, produced by the ``output`` of its ``end`` nodes."""

    fields: tuple[Field, ...]
    span: Span = span_field()


@frozen
class SignalDecl:
    """``signal approval { approved: bool }``: a typed event sent to one instance."""

    name: Ident
    payload: tuple[Field, ...] | None = None
    span: Span = span_field()


@frozen
class MessageDecl:
    """``message paid { order_id: string }``: an event correlated to instances by value."""

    name: Ident
    payload: tuple[Field, ...] | None = None
    span: Span = span_field()


@frozen
class ErrorDecl:
    """``error OutOfStock, PaymentDeclined``: business errors tasks may raise.

    ``payloads``: the typed payload of an error declared alone with one
    (``error InsufficientFunds { missing: decimal }``), by name."""

    names: tuple[Ident, ...]
    payloads: tuple[tuple[str, tuple[Field, ...]], ...] = ()
    span: Span = span_field()

    def payload(self, name: str) -> tuple[Field, ...] | None:
        """The payload fields declared for ``name`` (None: it declares none)."""
        return next((fields for n, fields in self.payloads if n == name), None)


@frozen
class ServiceDecl:
    """``service inventory.reserve(items: list[Item]) -> { id: string } raises OutOfStock``.

    The result is a record written inline (its fields), a record type by name
    (``-> Quote``, ``-> pricing.Quote``), or None (no result). ``read_only``: the
    service is declared ``reads`` (it changes nothing, so there is nothing to undo)."""

    name: Ident
    params: tuple[Field, ...]
    result: tuple[Field, ...] | NamedType | None = None
    raises: tuple[Ident, ...] = ()
    read_only: bool = False
    span: Span = span_field()


@frozen
class StartDecl:
    """``start NAME``: the node an instance begins at."""

    target: Ident
    span: Span = span_field()


Declaration = (
    ImportDecl
    | TypeDecl
    | EnumDecl
    | InputDecl
    | ContextDecl
    | OutputDecl
    | SignalDecl
    | MessageDecl
    | ErrorDecl
    | ServiceDecl
    | StartDecl
)
