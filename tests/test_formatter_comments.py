"""The formatter keeps every comment where it was, wherever it is placed (issue 20 item 16).

Comments (and line breaks) are inserted between any two tokens of the examples
and of a file holding every kind of block. Formatting must then be idempotent,
keep the meaning (the parsed spec) and every comment's text, in order, and keep
each comment where it was: after the same tokens of the source. Punctuation
that the formatter adds or drops (commas, parentheses, braces) does not count,
and a comment inside an element that is printed on one line may move to the
start or the end of that line, but no further.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lark import Token

from wflang.dsl import parse
from wflang.dsl.formatter import format_spec
from wflang.dsl.parser import lex

ROOT = Path(__file__).parent.parent
EVERY_BLOCK = ROOT / "tests" / "data" / "fmt" / "every_block.wf"
SOURCES = [EVERY_BLOCK, *sorted((ROOT / "examples").glob("*.wf"))]
#: What is inserted between two tokens; ``@`` becomes a unique number.
INSERTS = (
    "  // c@\n",
    "\n// c@\n",
    " /* c@ */ ",
    "/* c@\n */",
    "\n\n// c@\n\n",
    "//c@\n//d@\n",
    "\n",
    "\n\n",
)
#: Punctuation that the formatter may add or drop.
_LOOSE = {"COMMA", "LPAR", "RPAR", "LBRACE", "RBRACE"}
_COMMENTS = {"LINE_COMMENT", "BLOCK_COMMENT"}


def _lex(text: str) -> list[Token]:
    return list(lex(text))


@cache
def _chunks(path: Path) -> tuple[str, ...]:
    """Each top-level item of a source with what precedes it, as a text of its own."""
    text = path.read_text(encoding="utf-8")
    spec = parse(text, str(path)).spec
    assert spec is not None
    lines = text.split("\n")
    chunks, start = [], spec.header.span.end_line if spec.header else 0
    for item in spec.items:
        end = item.span.end_line
        chunks.append("\n".join(lines[start:end]) + "\n")
        start = end
    return tuple(chunks)


def _places(text: str) -> tuple[int, ...]:
    """The offsets where something can be inserted: after each token, and before each
    comment (not after one, which would extend a ``//`` comment)."""
    places = {t.start_pos if t.type in _COMMENTS else t.end_pos for t in _lex(text)
              if t.type != "WS"}  # fmt: skip
    return tuple(sorted(p for p in places if p is not None))


def _tokens(text: str) -> tuple[list[Token], list[tuple[int, Token]]]:
    """The tokens that carry meaning, and each comment with how many of them precede it."""
    tokens: list[Token] = []
    comments: list[tuple[int, Token]] = []
    for t in _lex(text):
        if t.type in _COMMENTS:
            comments.append((len(tokens), t))
        elif t.type not in _LOOSE and t.type != "WS":
            tokens.append(t)
    return tokens, comments


def _kind(t: Token) -> tuple[str, str]:
    return (t.type, str(t) if t.type == "NAME" else "")


def _fmt(text: str) -> str:
    result = parse(text, "f.wf")
    assert result.spec is not None, result.diagnostics
    return format_spec(result.spec, text)


def check_comments_kept(source: str) -> None:
    """Formatting ``source`` is idempotent, keeps its meaning and keeps its comments in place."""
    before = parse(source, "f.wf")
    assert before.spec is not None, before.diagnostics
    once = format_spec(before.spec, source)
    after = parse(once, "f.wf")
    assert after.spec is not None and after.spec == before.spec, once
    assert format_spec(after.spec, once) == once, once
    tokens, comments = _tokens(source)
    new_tokens, new_comments = _tokens(once)
    assert [_kind(t) for t in new_tokens] == [_kind(t) for t in tokens], once
    assert [str(c).rstrip() for _, c in new_comments] == [str(c).rstrip() for _, c in comments]
    lines = once.split("\n")
    commented = {n for _, c in new_comments for n in range(c.line or 0, (c.end_line or 0) + 1)}
    for (k, c), (k2, c2) in zip(comments, new_comments, strict=True):
        if k == k2:
            continue
        # Moved across tokens: only across those of one line, and to that line's start or end.
        crossed = new_tokens[min(k, k2) : max(k, k2)]
        line = crossed[0].line or 0
        where = f"comment {str(c)!r} moved across {[str(t) for t in crossed]}\n{once}"
        assert all(t.line == line for t in crossed), where
        between = range((c2.end_line or 0) + 1, line)
        assert c2.line == line or all(
            n in commented or not lines[n - 1].strip() for n in between
        ), where


def _insert(text: str, at: list[tuple[int, str]]) -> str:
    for offset, piece in sorted(at, reverse=True):
        text = text[:offset] + piece.replace("@", str(offset)) + text[offset:]
    return text


def test_every_block_file_holds_every_block_kind_and_is_canonical() -> None:
    text = EVERY_BLOCK.read_text(encoding="utf-8")
    assert _fmt(text) == text
    for word in ("retry", "branch", "join", "concurrency", "sequential", "tolerate", "form",
                 "raises", "non-interrupting", "renamed", "compensate", "error", "sleep"):  # fmt: skip
        assert word in text


HEADER = "workflow w version 1\n"


def test_a_comment_at_every_place_in_every_block_kind() -> None:
    """Every gap between two tokens of each block of every kind, with every insert."""
    for chunk in _chunks(EVERY_BLOCK):
        text = HEADER + chunk
        for offset in _places(text):
            for piece in INSERTS:
                check_comments_kept(_insert(text, [(offset, piece)]))


@settings(
    max_examples=300,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(st.data())
def test_comments_anywhere_in_the_examples(data: st.DataObject) -> None:
    """Comments and line breaks in one to three consecutive items of an example."""
    chunks = _chunks(data.draw(st.sampled_from(SOURCES)))
    first = data.draw(st.integers(0, len(chunks) - 1))
    text = HEADER + "".join(chunks[first : first + data.draw(st.integers(1, 3))])
    places = data.draw(
        st.lists(st.sampled_from(_places(text)), min_size=1, max_size=4, unique=True)
    )
    inserts = [(p, data.draw(st.sampled_from(INSERTS))) for p in places]
    check_comments_kept(_insert(text, inserts))


def test_a_comment_after_a_join_without_target_stays_where_it_was() -> None:
    """Found by the fuzzer: ``join all`` has a span that ends nowhere (line 0), which
    took the next declaration's comment into the parallel on the first run only."""
    source = "parallel q {\n    join all\n}\nmessage z /* c\n */ { kj: int }\n"
    check_comments_kept(source)
    assert (
        _fmt(source) == "parallel q {\n    join all\n}\nmessage z {  /* c\n */\n    kj: int,\n}\n"
    )


@pytest.mark.parametrize(
    ("written", "formatted"),
    [
        # The case: a comment in an empty retry block stays in it.
        ("    retry { // why\n    }\n", "    retry {  // why\n    }\n"),
        ("    retry {\n        // why\n    }\n", "    retry {\n        // why\n    }\n"),
        # Before the first setting: stays before it, not after it.
        (
            "    retry {\n        // three\n        attempts: 3\n    }\n",
            "    retry {\n        // three\n        attempts: 3,\n    }\n",
        ),
        # Settings keep their order, comments beside them.
        (
            "    retry { backoff: 1s, // first\n attempts: 3 }\n",
            "    retry {\n        backoff: 1s,  // first\n        attempts: 3,\n    }\n",
        ),
        (
            "    retry { attempts: 3 /* c */ }\n",
            "    retry {\n        attempts: 3,  /* c */\n    }\n",
        ),
        # A trailing comment of a later element on the same line stays with that element.
        (
            "    retry { attempts: 3, backoff: 1s /* b */ }\n",
            "    retry {\n        attempts: 3,\n        backoff: 1s,  /* b */\n    }\n",
        ),
        # A // comment is never joined with another one after it.
        (
            "    timeout 5m // a\n    /* b */ -> e\n",
            "    // a\n    timeout 5m -> e  /* b */\n",
        ),
    ],
)
def test_comment_placements(written: str, formatted: str) -> None:
    def wrap(body: str) -> str:
        return f"workflow w version 1\ntask t: script {{\n{body}    next e\n}}\nend e: completed\n"

    assert _fmt(wrap(written)) == wrap(formatted)
    check_comments_kept(wrap(written))


#: Empty clauses the spec keeps no trace of (``args``, ``output``) or keeps empty (``form``).
EMPTY_CLAUSES = [
    'task t: user "x" {\n    form {}\n    next e\n}\n',
    'task t: user "x" {\n    args {}\n    next e\n}\n',
    "task t: script {\n    output {}\n    next e\n}\n",
    "call t: workflow w {\n    args {}\n    next e\n}\n",
    "end t: completed {\n    output {}\n}\n",
]


@pytest.mark.parametrize("clause", EMPTY_CLAUSES)
@pytest.mark.parametrize("piece", [p for p in INSERTS if "c@" in p])
def test_a_comment_in_an_empty_clause_stays_in_it(clause: str, piece: str) -> None:
    """Found in review (issue 12): a comment in an empty ``form {}`` moved after it, and
    an empty ``args {}`` holding one was dropped with the comment left outside."""
    text = HEADER + clause + "end e: completed\n"
    inside = text.index("{}") + 1
    # An empty args or output without a comment in it is left out: its tokens go.
    anywhere = "form" in clause
    for offset in (inside, *(p for p in _places(text) if p != inside and anywhere)):
        check_comments_kept(_insert(text, [(offset, piece)]))
    assert _fmt(_insert(text, [(inside, " /* c@ */ ")])).count("/* c") == 1
    kept = _fmt(_insert(text, [(inside, "\n// kept\n")]))
    keyword = clause.split("\n")[1].split(maxsplit=1)[0]
    assert f"    {keyword} {{\n        // kept\n    }}\n" in kept, kept
