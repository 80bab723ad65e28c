"""Where the formatter's lines go, and the source's comments and blank lines with them.

The printer (``wflang.dsl.formatter``) says what to print and where each element
was written; the ``Writer`` here places the comments of the source around it,
by position in the text:

* a comment before an element (and not at the end of the line before it) is
  printed on its own line before the element;
* a comment inside an element printed on one line, or after it on the line where
  it ends (before anything else starts), is printed at the end of that line. A
  ``//`` comment can only end a line, so when one would be followed by another
  comment it goes on its own line before the element instead;
* a comment before a block's closing brace stays inside the block, and a block
  or clause that holds a comment is never joined onto one line.

Every comment is printed exactly once and in source order, so a second run finds
each comment where the first one put it: formatting is idempotent.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence

from wflang.dsl import spec as sp
from wflang.dsl.span import Span

INDENT = "    "
WIDTH = 100
_STRING = re.compile(r'"([^"\\\n]|\\[^\n])*"')
_TRIVIA = " \t\f\r\n,"


class Writer:
    """Emits lines, and the source's comments and blank lines at the right places."""

    def __init__(self, text: str, comments: Sequence[sp.Comment]) -> None:
        self.out: list[str] = []
        self.depth = 0
        self.src = text.split("\n") if text else []
        self.line_starts = [0] + [m.end() for m in re.finditer("\n", text)]
        self.comments = sorted(comments, key=lambda c: (c.span.line, c.span.column))
        self._starts = [self.start(c.span) for c in self.comments]
        self.masked = self._mask(text)
        self.next_comment = 0
        self.block_start = True
        self.last_line = 0  # the source line where the last printed element ended

    def _mask(self, text: str) -> str:
        """The text with comments and strings blanked, for finding braces and keywords."""
        chars = list(text)
        for c, start in zip(self.comments, self._starts, strict=True):
            end = self.end(c.span)
            if start >= 0:
                chars[start:end] = (" " if ch != "\n" else ch for ch in chars[start:end])
        masked = "".join(chars)
        return _STRING.sub(lambda m: " " * len(m.group()), masked)

    # -- positions -------------------------------------------------------------

    def start(self, span: Span) -> int:
        """The offset where ``span`` starts; -1 for a generated element (no source)."""
        if span.line <= 0 or span.line > len(self.line_starts):
            return -1
        return self.line_starts[span.line - 1] + span.column - 1

    def end(self, span: Span) -> int:
        """The offset where ``span`` ends; -1 if it has none (``join all`` ends nowhere)."""
        if span.end_line < max(span.line, 1) or span.end_line > len(self.line_starts):
            return -1
        return self.line_starts[span.end_line - 1] + span.end_column - 1

    def line_of(self, offset: int) -> int:
        return bisect.bisect_right(self.line_starts, offset)

    def span(self, file: str, start: int, end: int) -> Span:
        """The span of the text from offset ``start`` to ``end``."""
        sl, el = self.line_of(start), self.line_of(end)
        return Span(
            file, sl, start - self.line_starts[sl - 1] + 1, el, end - self.line_starts[el - 1] + 1
        )

    def find(self, char: str, after: int) -> int:
        """The offset of the first ``char`` at or after ``after`` outside comments and strings."""
        return -1 if after < 0 else self.masked.find(char, after)

    def rfind(self, char: str, before: int) -> int:
        return -1 if before < 0 else self.masked.rfind(char, 0, before)

    def braces(self, span: Span, opener: str = "{", closer: str = "}") -> tuple[int, int]:
        """The offsets of the first ``{`` and the last ``}`` within ``span`` (-1 if none)."""
        start, end = self.start(span), self.end(span)
        if start < 0:
            return -1, -1
        return self.masked.find(opener, start, end), self.masked.rfind(closer, start, end)

    def _limit(self, end: int) -> int:
        """Where the next element starts after ``end``: the first non-blank, non-comma.

        A closing parenthesis is skipped too: an expression's span leaves out the
        parentheses around its last operand.
        """
        i = end
        masked = self.masked
        while i < len(masked) and masked[i] in _TRIVIA + ")":
            i += 1
        return i

    # -- comments and blank lines ------------------------------------------

    def _blank_before(self, line: int) -> None:
        if self.block_start or line < 2 or line - 2 >= len(self.src):
            return
        if line <= self.last_line + 1:  # nothing between this and what came before
            return
        if not self.src[line - 2].strip() and self.out and self.out[-1] != "":
            self.out.append("")

    def _emit_comment(self, c: sp.Comment) -> None:
        self._blank_before(c.span.line)
        first, *rest = c.text.rstrip().split("\n")
        self.out.append(INDENT * self.depth + first)
        self.out.extend(r.rstrip() for r in rest)
        self.block_start = False
        self.last_line = max(self.last_line, c.span.end_line)

    def leading(self, before: int) -> None:
        """Emit, each on its own line, the comments that start before offset ``before``."""
        while self.next_comment < len(self.comments) and self._starts[self.next_comment] < before:
            self._emit_comment(self.comments[self.next_comment])
            self.next_comment += 1

    def _trailing(self, end: int) -> str:
        """The comments that end the line of an element ending at offset ``end``.

        They are the comments inside the element and those after it on its last
        line, up to where the next element starts. Any of them that a ``//``
        comment would swallow are printed before the element instead.
        """
        if end < 0:
            return ""
        limit, line = self._limit(end), self.line_of(end)
        first = self.next_comment
        last = first
        while last < len(self.comments):
            start = self._starts[last]
            if start >= limit or (start >= end and self.line_of(start) != line):
                break
            # A comment after a block comment ending on a later line is on that line.
            line = max(line, self.comments[last].span.end_line)
            last += 1
        attached = self.comments[first:last]
        cut = max((i for i, c in enumerate(attached[:-1]) if c.text.startswith("//")), default=-1)
        for c in attached[: cut + 1]:
            self._emit_comment(c)
        self.next_comment = last
        for c in attached[cut + 1 :]:
            self.last_line = max(self.last_line, c.span.end_line)
        parts = [c.text.rstrip() for c in attached[cut + 1 :]]
        return ("  " + " ".join(parts)) if parts else ""

    def has_comment_inside(self, span: Span, until: int | None = None) -> bool:
        """Whether a comment sits within ``span``, or from its start to offset ``until``.

        A block with one inside its braces is not joined onto one line.
        """
        return self.comment_between(self.start(span), self.end(span) if until is None else until)

    def comment_between(self, start: int, end: int) -> bool:
        """Whether a comment starts after offset ``start`` and before ``end``."""
        if start < 0 or end < 0:
            return False
        i = bisect.bisect_right(self._starts, start)
        return i < len(self._starts) and self._starts[i] < end

    # -- lines and blocks -----------------------------------------------------

    def _begin(self, span: Span) -> None:
        if span.line > 0:
            self.leading(self.start(span))
            self._blank_before(span.line)

    def _put(self, text: str, trailing: str, last_line: int) -> None:
        self.out.append(INDENT * self.depth + text + trailing)
        self.last_line = max(self.last_line, last_line)

    def line(self, text: str, span: Span) -> None:
        """One line for an element written at ``span``."""
        self._begin(span)
        trailing = self._trailing(self.end(span))
        self._put(text, trailing, span.end_line)
        self.block_start = False

    def open(self, text: str, span: Span, head_end: int, opener: str = " {") -> None:
        """The first line of a block, ``text {``, whose head ends at offset ``head_end``
        (after its brace, if written).

        The comments in the head and after it on its line end this line.
        """
        self._begin(span)
        trailing = self._trailing(head_end)
        self._put(text + opener, trailing, self.line_of(head_end) if head_end >= 0 else 0)
        self.depth += 1
        self.block_start = True

    def turn(self, text: str, closer: int, brace: int) -> None:
        """End one bracketed part and open the next on the same line, as ``) -> {``."""
        self.leading(closer)
        trailing = self._trailing(brace + 1) if brace >= 0 else ""
        self.depth -= 1
        self._put(text, trailing, self.line_of(brace) if brace >= 0 else 0)
        self.depth += 1
        self.block_start = True

    def close(self, span: Span, closer_at: int, suffix: str = "", closer: str = "}") -> None:
        """The closing brace (at offset ``closer_at``) of a block written at ``span``."""
        self.leading(closer_at)
        end = self.end(span)
        # Comments a // comment would swallow stay inside, before the brace.
        trailing = self._trailing(max(end, closer_at + 1) if closer_at >= 0 else end)
        self.depth -= 1
        self._put(closer + suffix, trailing, span.end_line)
        self.block_start = False

    def enclosing(self, keyword: str, first: Span, last: Span) -> Span:
        """The span of ``keyword { … }`` around items spanning ``first``..``last``.

        The spec keeps the items of a clause, not the clause; its keyword and
        braces are found in the source, so that comments stay on their lines.
        """
        start, end = self.start(first), self.end(last)
        brace = self.rfind("{", start)
        kw = self.masked.rfind(keyword, 0, brace) if brace >= 0 else -1
        close = self.find("}", end)
        if kw < 0 or close < 0:
            return first.to(last)
        return self.span(first.file, kw, close + 1)

    def empty_clause(self, keyword: str, span: Span) -> Span | None:
        """The span of ``keyword {}`` written with nothing but comments inside, within
        ``span`` (a node without nested nodes), or None.

        The spec keeps no clause without items (an empty ``args`` is no ``args``);
        its braces are found in the source so that the comments stay inside them.
        """
        start, end = self.start(span), self.end(span)
        if start < 0:
            return None
        found = re.compile(rf"\b{keyword}\s*\{{\s*\}}").search(self.masked, start, end)
        return None if found is None else self.span(span.file, found.start(), found.end())

    def keywords(self, pattern: str, span: Span, skip: Sequence[Span]) -> dict[str, Span]:
        """Where the parts matching ``pattern`` (a regex whose group 1 names the part)
        are written within ``span``, outside the spans in ``skip``; each part ends
        where the next one (or the closing brace) starts.

        The spec keeps retry settings and map options as plain values; their
        positions are found in the source so that comments stay beside them.
        """
        start, end = self.start(span), self.end(span)
        if start < 0:
            return {}
        holes = [(self.start(s), self.end(s)) for s in skip if s.line > 0]
        found = [
            (m.group(1), m.start())
            for m in re.compile(pattern).finditer(self.masked, start, end)
            if not any(a <= m.start() < b for a, b in holes)
        ]
        stops = sorted([at for _, at in found] + [a for a, _ in holes] + [end - 1])
        spans = {}
        for name, at in found:
            stop = next(s for s in stops if s > at)
            text_end = len(self.masked[:stop].rstrip(_TRIVIA + "{}"))
            spans[name] = self.span(span.file, at, max(text_end, at + 1))
        return spans

    def fits(self, text: str) -> bool:
        return len(INDENT * self.depth) + len(text) <= WIDTH

    def finish(self) -> None:
        self.leading(1 << 62)
