"""The snippets and the language configuration of the VS Code extension.

Every snippet, its placeholders filled with their defaults, is wflang the parser reads
without an error; together the node snippets write every node kind, task kind and
wait trigger, and the declaration snippets every declaration. The indentation rules
predict the formatter's indentation of every example.
"""

from __future__ import annotations

import itertools
import json
import plistlib
import re
import typing
from pathlib import Path

import pytest

from tests.editor import EXTENSION, ROOT
from wflang.dsl import spec as sp
from wflang.dsl.parser import parse
from wflang.dsl.walk import walk_nodes

SNIPPETS: dict[str, dict[str, typing.Any]] = json.loads(
    (EXTENSION / "snippets" / "wflang.code-snippets").read_text(encoding="utf-8")
)
CONFIGURATION: dict[str, typing.Any] = json.loads(
    (EXTENSION / "language-configuration.json").read_text(encoding="utf-8")
)
#: Snippets of a clause, tried inside a service task.
CLAUSES = {"retry", "on", "timeout"}
_PLACEHOLDER = re.compile(r"\$\{\d+:([^}]*)\}|\$\{\d+\|([^,|]*)[^}]*\|\}|\$\d+")


def expanded(name: str) -> str:
    """The snippet's text as inserted when every placeholder keeps its default."""
    body = "\n".join(SNIPPETS[name]["body"])
    text = _PLACEHOLDER.sub(lambda m: m.group(1) or m.group(2) or "", body)
    if name in CLAUSES:
        text = f"task t: service a.b {{\n    {text}\n    next done\n}}\n"
    return text + "\n"


def parsed(name: str) -> sp.WorkflowSpec:
    result = parse(expanded(name), f"{name}.wf")
    assert result.spec is not None, (name, [d.message for d in result.diagnostics])
    syntax = [d for d in result.diagnostics if d.code.startswith("WF0")]
    assert not syntax, (name, [d.message for d in syntax])
    return result.spec


def test_every_snippet_is_wflang_the_parser_reads() -> None:
    for name in SNIPPETS:
        parsed(name)


def test_the_snippets_write_every_node_kind_task_kind_and_wait_trigger() -> None:
    written: set[type] = set()
    for name in SNIPPETS:
        for placed in walk_nodes(parsed(name).nodes):
            node = placed.node
            written.add(type(node))
            if isinstance(node, sp.TaskNode):
                written.add(type(node.work))
            if isinstance(node, sp.WaitNode):
                written.add(type(node.trigger))
    every = {
        *typing.get_args(sp.Node),
        *typing.get_args(sp.TaskWork),
        *typing.get_args(sp.WaitTrigger),
    }
    assert every - written == set()


def test_the_snippets_write_every_declaration() -> None:
    written = {type(d) for name in SNIPPETS for d in parsed(name).declarations}
    assert set(typing.get_args(sp.Declaration)) - written == set()
    assert parsed("workflow").header is not None


def test_the_indentation_rules_predict_the_formatter_s_indentation_of_every_example() -> None:
    rules = CONFIGURATION["indentationRules"]
    increase = re.compile(rules["increaseIndentPattern"])
    decrease = re.compile(rules["decreaseIndentPattern"])
    for path in sorted((ROOT / "examples").glob("*.wf")):
        lines = [ln for ln in _code_lines(path) if ln.strip()]
        for before, line in itertools.pairwise(lines):
            expected = _indent(before) + (4 if increase.search(before) else 0)
            expected -= 4 if decrease.search(line) else 0
            assert _indent(line) == expected, f"{path.name}: {before!r} then {line!r}"


def test_the_comment_tokens_are_the_grammar_s() -> None:
    comments = CONFIGURATION["comments"]
    grammar = (ROOT / "wflang" / "grammar" / "wflang.lark").read_text(encoding="utf-8")
    line = re.search(r"^LINE_COMMENT: /(.*)/$", grammar, re.MULTILINE)
    assert line is not None and re.match(line.group(1), comments["lineComment"] + " x")
    block = re.search(r"^BLOCK_COMMENT: /(.*)/$", grammar, re.MULTILINE)
    assert block is not None and re.fullmatch(block.group(1), " x ".join(comments["blockComment"]))


def _code_lines(path: Path) -> list[str]:
    """The example's lines outside block comments."""
    text = re.sub(
        r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), path.read_text(), flags=re.DOTALL
    )
    return text.split("\n")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def test_the_documented_conversion_for_sublime_text_gives_the_same_grammar(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    doc = (ROOT / "docs" / "editors.md").read_text(encoding="utf-8")
    section = doc[doc.index("### Sublime Text") :]
    code = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert code is not None
    (tmp_path / "editors").symlink_to(ROOT / "editors")
    monkeypatch.chdir(tmp_path)
    exec(compile(code.group(1), "docs/editors.md", "exec"), {})
    converted = plistlib.loads((tmp_path / "wflang.tmLanguage").read_bytes())
    grammar = EXTENSION / "syntaxes" / "wflang.tmLanguage.json"
    assert converted == json.loads(grammar.read_text(encoding="utf-8"))
    assert converted["scopeName"] == "source.wf" and converted["fileTypes"] == ["wf"]
