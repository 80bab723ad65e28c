"""Source positions: where in which file an element of a spec was written."""

from __future__ import annotations

from attrs import field, frozen


@frozen
class Span:
    """A range of source text: 1-based lines, 1-based columns counted in code points.

    ``end_column`` is exclusive, as in Lark and SARIF. A span is metadata: the
    elements that carry one compare equal wherever they were written.
    """

    file: str
    line: int
    column: int
    end_line: int
    end_column: int

    def to(self, other: Span) -> Span:
        """The span from the start of this one to the end of ``other``."""
        return Span(self.file, self.line, self.column, other.end_line, other.end_column)

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"


NO_SPAN = Span("<generated>", 0, 0, 0, 0)


def span_field() -> Span:
    """An attrs field for a span that takes no part in equality or hashing."""
    return field(eq=False, default=NO_SPAN, kw_only=True)
