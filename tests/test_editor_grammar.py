"""The TextMate grammar of the VS Code extension (editors/vscode/syntaxes), run as VS
Code runs it (vscode-textmate + vscode-oniguruma under node).

Every example is tokenized and compared with its committed snapshot
(editors/vscode/test/snapshots; after a deliberate change of the grammar regenerate
them with ``WFLANG_UPDATE_GOLDEN=1 pytest tests/test_editor_grammar.py`` and review
the diff). Every keyword of the Lark grammar, every builtin function and every
primitive type must be highlighted as one: a keyword added to wflang.lark fails here
until the TextMate grammar knows it.
"""

from __future__ import annotations

import json
import os
import re
from functools import cache
from pathlib import Path

import pytest
from lark import Lark
from lark.lexer import PatternRE, PatternStr

from tests.editor import EXTENSION, ROOT, Token, tokenize
from wflang.compiler.types import GENERICS
from wflang.dsl.expr import BUILTINS
from wflang.dsl.types import PRIMITIVE_TYPES
from wflang.grammar import grammar_text

EXAMPLES = sorted((ROOT / "examples").glob("*.wf"))
SNAPSHOTS = EXTENSION / "test" / "snapshots"
UPDATE = os.environ.get("WFLANG_UPDATE_GOLDEN") == "1"
#: The scopes a keyword may have: a keyword, a storage word (declarations, node kinds)
#: or a language constant (true, false, null, the kinds of end).
KEYWORD_SCOPES = ("keyword.", "storage.", "constant.language.")
_WORDS = re.compile(r"\(\?:([a-z_-]+(?:\|[a-z_-]+)*)\)")


def snapshot(lines: list[list[Token]], text: str) -> str:
    """Each source line, then its tokens (blank ones left out) and their scopes."""
    out: list[str] = []
    for number, (source, tokens) in enumerate(zip(text.split("\n"), lines, strict=True), 1):
        out.append(f"{number:>4} | {source}".rstrip())
        out.extend(
            f"     {json.dumps(token)} {' '.join(scopes) or '-'}"
            for token, scopes in tokens
            if token.strip()
        )
    return "\n".join(out) + "\n"


def test_examples_match_their_snapshots() -> None:
    texts = {path.name: path.read_text(encoding="utf-8") for path in EXAMPLES}
    tokenized = tokenize(texts)
    stale = []
    for name, text in texts.items():
        expected = snapshot(tokenized[name], text)
        path = SNAPSHOTS / f"{name}.snap"
        if UPDATE:
            SNAPSHOTS.mkdir(exist_ok=True)
            path.write_text(expected, encoding="utf-8")
        elif not path.exists() or path.read_text(encoding="utf-8") != expected:
            stale.append(name)
    assert not stale, (
        f"the grammar tokenizes {stale} differently from the snapshots; if that is "
        "intended, run WFLANG_UPDATE_GOLDEN=1 pytest tests/test_editor_grammar.py"
    )
    orphans = {p.name for p in SNAPSHOTS.glob("*.snap")} - {f"{n}.snap" for n in texts}
    assert not orphans, f"snapshots of no example: {sorted(orphans)}"


def test_every_token_of_the_examples_has_a_scope_and_none_is_invalid() -> None:
    texts = {path.name: path.read_text(encoding="utf-8") for path in EXAMPLES}
    for name, lines in tokenize(texts).items():
        for number, tokens in enumerate(lines, 1):
            for text, scopes in tokens:
                where = f"{name}:{number}: {text!r}"
                assert scopes or not text.strip(), f"{where} has no scope"
                assert not any(s.startswith("invalid.") for s in scopes), f"{where}: {scopes}"


def keywords_of(grammar: str) -> set[str]:
    """The words the Lark grammar reserves somewhere: its terminals that are a word
    (named, ``NEXT: "next"``, or written in a rule, ``"version"``) or an alternation
    of words (``END_KIND``)."""
    words: set[str] = set()
    for terminal in Lark(grammar, parser="lalr").terminals:
        pattern = terminal.pattern
        if isinstance(pattern, PatternStr) and re.fullmatch(r"[a-z][a-z_-]*", pattern.value):
            words.add(pattern.value)
        elif isinstance(pattern, PatternRE) and (alternation := _WORDS.fullmatch(pattern.value)):
            words.update(alternation.group(1).split("|"))
    return words


def not_highlighted(keywords: set[str]) -> dict[str, tuple[str, ...]]:
    """The keywords that the TextMate grammar does not highlight as keywords, each
    alone on a line at the top level of a file, with the scopes it gets instead."""
    tokenized = tokenize({word: word for word in sorted(keywords)})
    missing = {}
    for word, [tokens] in tokenized.items():
        scopes = tokens[0][1] if len(tokens) == 1 and tokens[0][0] == word else ()
        if not any(s.startswith(KEYWORD_SCOPES) for s in scopes):
            missing[word] = scopes
    return missing


def test_every_keyword_of_the_lark_grammar_is_highlighted() -> None:
    keywords = keywords_of(grammar_text())
    # the three ways the grammar writes one: a named terminal, a word in a rule, END_KIND
    assert {"workflow", "non-interrupting", "version", "correlate", "compensated"} <= keywords
    assert not_highlighted(keywords) == {}


def test_a_keyword_added_to_the_lark_grammar_fails_until_the_textmate_grammar_has_it() -> None:
    grammar = grammar_text().replace(
        "_declaration: import_decl", "_declaration: frob_decl | import_decl"
    )
    grammar += '\nfrob_decl: FROB NAME "quux"\nFROB: "frobnicate"\n'
    added = keywords_of(grammar) - keywords_of(grammar_text())
    assert added == {"frobnicate", "quux"}
    assert set(not_highlighted(added)) == {"frobnicate", "quux"}


FORMS = [
    ('input { s: string = "a\\"b\\\\c\\n\\u{1F600}" }', '\\"', "constant.character.escape.wf"),
    ('input { s: string = "a\\qb" }', "\\q", "invalid.illegal.escape.wf"),
    ("input { d: duration = 1h30m }", "1h30m", "constant.numeric.duration.wf"),
    ("input { d: duration = P1DT2H }", "P1DT2H", "constant.numeric.duration.wf"),
    ("input { d: duration = PT0.5S }", "PT0.5S", "constant.numeric.duration.wf"),
    ("input { d: duration = 500ms }", "500ms", "constant.numeric.duration.wf"),
    ("input { t: timestamp = 2026-01-31T09:00+01:00 }", "2026-01-31T09:00+01:00",
     "constant.numeric.timestamp.wf"),
    ("input { x: decimal = 4.95 }", "4.95", "constant.numeric.decimal.wf"),
    ("input { x: int = 42 }", "42", "constant.numeric.integer.wf"),
    ("input { x: shared.Address? }", "shared", "entity.name.namespace.wf"),
    ("input { x: shared.Address? }", "Address", "entity.name.type.wf"),
    ("input { x: map[string, list[Item]] }", "Item", "entity.name.type.wf"),
    ("input { next: string }", "next", "variable.other.property.wf"),
    ("/* a block */ workflow w version 1", "/*", "comment.block.wf"),
    ("// wf: ignore[WF201, unreachable-node]", "WF201, unreachable-node",
     "constant.other.rule-code.wf"),
    ("task t: script { output { a: input.items[*].qty } }", "[*]", "keyword.operator.spread.wf"),
    ("task t: script { output { a: any(input.xs, x => x > 1) } }", "x", "variable.parameter.wf"),
    ("task t: script { output { a: input.map } }", "map", "variable.other.property.wf"),
    ("end done: compensated", "compensated", "constant.language.end-kind.wf"),
    ("task t: user input.manager { timeout 1h non-interrupting -> remind }", "remind",
     "entity.name.function.node.wf"),
]  # fmt: skip
#: A call of each builtin function, and a field of each builtin type.
CALLS = {name: f"task t: script {{ output {{ a: {name}(input.x) }} }}" for name in BUILTINS}
FIELDS = {
    name: f"input {{ a: {name}[string], b: int }}"
    if name in GENERICS
    else f"input {{ a: {name}? }}"
    for name in (*PRIMITIVE_TYPES, *GENERICS)
}


@cache
def one_liners() -> dict[str, list[list[Token]]]:
    """The one-line documents of the tests below, tokenized by one run of node."""
    documents = [*(d for d, _, _ in FORMS), *CALLS.values(), *FIELDS.values()]
    return tokenize({d: d for d in documents})


def scopes_in(document: str, word: str) -> tuple[str, ...]:
    """The scopes of the first token ``word`` of a one-line document."""
    [tokens] = one_liners()[document]
    return next(scopes for text, scopes in tokens if text.strip() == word)


@pytest.mark.parametrize("name", sorted(CALLS))
def test_every_builtin_function_is_highlighted_in_a_call(name: str) -> None:
    assert "support.function.builtin.wf" in scopes_in(CALLS[name], name)


@pytest.mark.parametrize("name", sorted(FIELDS))
def test_every_builtin_type_is_highlighted_in_a_field(name: str) -> None:
    scopes = scopes_in(FIELDS[name], name)
    assert any(s.startswith("support.type.") for s in scopes), scopes


@pytest.mark.parametrize(("document", "word", "scope"), FORMS)
def test_literal_comment_and_type_forms(document: str, word: str, scope: str) -> None:
    assert scope in scopes_in(document, word)


def test_the_grammar_file_is_the_one_package_json_names() -> None:
    manifest = json.loads((EXTENSION / "package.json").read_text(encoding="utf-8"))
    [grammar] = manifest["contributes"]["grammars"]
    path = EXTENSION / grammar["path"]
    assert json.loads(path.read_text(encoding="utf-8"))["scopeName"] == grammar["scopeName"]
    assert Path(path).name == "wflang.tmLanguage.json"
