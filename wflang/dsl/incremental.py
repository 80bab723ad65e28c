"""Parsing an edit: only the top-level items it touches are parsed again.

An editor sends a keystroke at a time; parsing a 1,000-line file for each costs
most of the language server's answer. The top-level items of a file (declarations
and nodes) are independent in the grammar, so when an edit keeps the number of
lines and lies within whole lines that hold only some items (or the comments and
blank lines between them), those lines are parsed alone, at their place (the lines
before them blank, so every span is the full parse's), and the new items and
comments replace the old ones there. Anything else (a changed line count, the
header, a syntax error in either text, a file with any finding, CR line breaks) is
parsed whole: the answer is always ``parse(text)``'s (``tests/test_incremental.py``
checks it against the full parse over many random edits).
"""

from __future__ import annotations

from wflang.dsl import spec as sp
from wflang.dsl.parser import ParseResult, parse, suppressions_of


def reparse(old: ParseResult, text: str) -> ParseResult:
    """The parse of ``text``, an edit of ``old``'s text, in the file ``old.file``."""
    spliced = _splice(old, text)
    return spliced if spliced is not None else parse(text, old.file)


def _splice(old: ParseResult, text: str) -> ParseResult | None:
    spec = old.spec
    if spec is None or old.diagnostics or old.normalized or "\r" in text or not spec.items:
        return None
    before = old.text
    if before.count("\n") != text.count("\n") or before == text:
        return None if before != text else old
    first, last = _changed_lines(before, text)
    header_line = spec.header.span.end_line if spec.header else 0
    if first <= header_line:
        return None
    # Grow the lines to whole items: no item outside them may share a line with them.
    items = list(spec.items)
    while True:
        touching = [i for i in items if i.span.line <= last and i.span.end_line >= first]
        lo = min([first, *(i.span.line for i in touching)])
        hi = max([last, *(i.span.end_line for i in touching)])
        if (lo, hi) == (first, last):
            break
        first, last = lo, hi
    lines = text.split("\n")
    fragment = "\n" * (first - 1) + "\n".join(lines[first - 1 : last]) + "\n"
    part = parse(fragment, old.file)
    if part.spec is None or part.diagnostics or part.spec.header is not None:
        return None
    kept_before = [i for i in items if i.span.end_line < first]
    kept_after = [i for i in items if i.span.line > last]
    new_items = (*kept_before, *part.spec.items, *kept_after)
    comments = tuple(
        sorted(
            (
                *(c for c in spec.comments if not first <= c.span.line <= last),
                *part.spec.comments,
            ),
            key=lambda c: (c.span.line, c.span.column),
        )
    )
    ends = [x.span for x in (spec.header, *new_items) if x is not None]
    whole = ends[0].to(ends[-1]) if ends else spec.span
    new = sp.WorkflowSpec(
        spec.file,
        spec.header,
        new_items,
        suppressions=suppressions_of(comments),
        comments=comments,
        span=whole,
    )
    return ParseResult(old.file, text, new, ())


def _changed_lines(before: str, after: str) -> tuple[int, int]:
    """The first and last line (1-based, of either text: they have as many) that differ."""
    old_lines, new_lines = before.split("\n"), after.split("\n")
    first = 0
    while first < len(old_lines) and old_lines[first] == new_lines[first]:
        first += 1
    last = len(old_lines) - 1
    while last > first and old_lines[last] == new_lines[last]:
        last -= 1
    return first + 1, last + 1
