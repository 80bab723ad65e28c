"""Spans (1-based lines, 1-based columns in code points, end exclusive) to and from the
protocol's positions (0-based, in the code units the client and server agreed on).

pygls's ``TextDocument`` converts code points to the client's units; every span of
the checker is in code points, as pygls's "server" positions are.
"""

from __future__ import annotations

from lsprotocol import types as lsp
from pygls.workspace import TextDocument
from pygls.workspace.position_codec import ServerTextPosition, ServerTextRange

from wflang.dsl.span import Span


def server_range(span: Span) -> ServerTextRange:
    start = ServerTextPosition(max(span.line - 1, 0), max(span.column - 1, 0))
    end = ServerTextPosition(max(span.end_line - 1, 0), max(span.end_column - 1, 0))
    return ServerTextRange(start, max(start, end))


def to_range(span: Span, doc: TextDocument) -> lsp.Range:
    """The protocol's range of a span of the document."""
    return doc.range_to_client_units(server_range(span))


def to_position(span_line: int, span_column: int, doc: TextDocument) -> lsp.Position:
    return doc.position_to_client_units(
        ServerTextPosition(max(span_line - 1, 0), max(span_column - 1, 0))
    )


def from_position(position: lsp.Position, doc: TextDocument) -> tuple[int, int]:
    """A protocol position as a span's (line, column)."""
    at = doc.position_from_client_units(position)
    return at.line + 1, at.character + 1


def contains(span: Span, line: int, column: int) -> bool:
    """Whether (line, column) lies in the span, its end included (a cursor just after a
    name is on the name, as editors expect)."""
    return (span.line, span.column) <= (line, column) <= (span.end_line, span.end_column)
