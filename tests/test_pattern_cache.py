"""The lexer's regular expressions, compiled once and stored beside the parser
(``dsl/pattern_cache.py``; issue 13, the first parse of ``wf check``)."""

from __future__ import annotations

import marshal
import re
from pathlib import Path
from typing import Any

import pytest

from wflang.dsl import pattern_cache
from wflang.dsl.parser import make_parser
from wflang.dsl.parser_cache import cached_parser, save_patterns
from wflang.dsl.pattern_cache import Patterns

OPTIONS: dict[str, Any] = {"parser": "lalr", "lexer": "contextual"}
GREETING = 'start: "hello" NAME ("," NAME)*\nNAME: /[a-z]+/\n%ignore " "\n'
ROOT = Path(__file__).parent.parent
PATTERNS = [
    r"(?P<NAME>[a-z_][a-z0-9_]*)|(?P<INT>\d+)|(?P<ARROW>\->)",
    r"(?P<STRING>\"(?:[^\"\\\n]|\\.)*\")|(?P<WS>[ \t\f\r\n]+)",
    r"(?s:(?P<BLOCK>/\*.*?\*/))|(?P<LINE>//[^\n]*)",
    r"(?i:select)",
]


def _refuse_compile(*args: object) -> None:
    raise AssertionError("compiled, not made from the stored program")


def test_a_cached_parser_s_lexers_compile_once_then_load_their_programs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = cached_parser(GREETING, OPTIONS, tmp_path)
    tree = first.parse("hello ann, bob")
    save_patterns(first)
    (stored,) = tmp_path.glob("patterns-*.marshal")
    assert marshal.loads(stored.read_bytes())  # the scanners the parse met
    monkeypatch.setattr(Patterns, "_compile", _refuse_compile)
    again = cached_parser(GREETING, OPTIONS, tmp_path)  # another process's parser
    assert again.parse("hello ann, bob") == tree


def test_a_stored_program_makes_the_pattern_re_compile_makes(tmp_path: Path) -> None:
    path = tmp_path / "patterns.marshal"
    first = Patterns(path)
    compiled = [first.compile(p, re.MULTILINE if "select" in p else 0) for p in PATTERNS]
    first.save()
    again = Patterns(path)
    for pattern, before in zip(PATTERNS, compiled, strict=True):
        flags = re.MULTILINE if "select" in pattern else 0
        made = again.compile(pattern, flags)
        assert made == re.compile(pattern, flags) == before
        assert (made.groupindex, made.groups, made.flags) == (
            before.groupindex,
            before.groups,
            before.flags,
        )
    assert again.match(PATTERNS[0], "abc1") is not None
    assert again.match(PATTERNS[0], "abc1").lastgroup == "NAME"  # type: ignore[union-attr]


def test_a_bad_pattern_fails_as_in_re(tmp_path: Path) -> None:
    patterns = Patterns(tmp_path / "patterns.marshal")
    assert patterns.error is re.error
    with pytest.raises(re.error, match="missing \\)"):
        patterns.compile("(a")
    patterns.save()
    assert not (tmp_path / "patterns.marshal").exists()  # nothing was compiled


@pytest.mark.parametrize("damage", [b"", b"not marshal", marshal.dumps([1, 2, 3])])
def test_a_damaged_file_costs_only_the_compile(tmp_path: Path, damage: bytes) -> None:
    path = tmp_path / "patterns.marshal"
    path.write_bytes(damage)
    patterns = Patterns(path)
    assert patterns.compile(PATTERNS[0]) == re.compile(PATTERNS[0])
    patterns.save()
    assert Patterns(path).compile(PATTERNS[0]) == re.compile(PATTERNS[0])
    assert (PATTERNS[0], 0) in marshal.loads(path.read_bytes())


def test_a_program_the_engine_refuses_is_compiled_again(tmp_path: Path) -> None:
    path = tmp_path / "patterns.marshal"
    first = Patterns(path)
    first.compile(PATTERNS[1])
    first.save()
    stored = marshal.loads(path.read_bytes())
    flags, code, groups, groupindex, indexgroup = stored[(PATTERNS[1], 0)]
    stored[(PATTERNS[1], 0)] = (flags, [17, 4, 0] + code[3:], groups, groupindex, indexgroup)
    path.write_bytes(marshal.dumps(stored))
    assert Patterns(path).compile(PATTERNS[1]) == re.compile(PATTERNS[1])


def test_an_unwritable_folder_only_costs_the_compile(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    patterns = Patterns(blocker / "patterns.marshal")
    assert patterns.compile(PATTERNS[2]) == re.compile(PATTERNS[2])
    patterns.save()  # never raises
    assert blocker.read_text() == "not a folder"


def test_the_programs_are_named_by_the_parser_and_the_interpreter(tmp_path: Path) -> None:
    one = pattern_cache.patterns_path(tmp_path, "a" * 64)
    assert one == pattern_cache.patterns_path(tmp_path, "a" * 64)
    assert one != pattern_cache.patterns_path(tmp_path, "b" * 64)
    assert one.parent == tmp_path


def _syntax_error_sources() -> list[Path]:
    return sorted((ROOT / "tests" / "data").rglob("*.wf"))


def _error_outcome(err: Exception) -> object:
    """What an error says, with its expected and allowed terminals as sets: Lark
    prints them from a set, whose order differs between a parser built now and
    one loaded from the cache, so comparing the text made the test flaky."""
    expected = getattr(err, "expected", None) or getattr(err, "allowed", None)
    where = (getattr(err, "line", None), getattr(err, "column", None))
    token = str(getattr(err, "token", getattr(err, "char", "")))
    if expected is not None:
        return (type(err).__name__, where, token, frozenset(expected))
    return (type(err).__name__, str(err))


def test_the_language_parser_lexes_the_same_with_stored_programs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every example and test file, lexed by a parser without the programs, with the
    programs compiled now, and with them loaded, gives the same tree or the same error."""
    files = sorted((ROOT / "examples").rglob("*.wf")) + _syntax_error_sources()
    texts = [f.read_text(encoding="utf-8") for f in files]

    def outcomes() -> list[object]:
        parser = make_parser()
        found: list[object] = []
        for text in texts:
            try:
                found.append(parser.parse(text))
            except Exception as err:
                found.append(_error_outcome(err))
        save_patterns(parser)
        return found

    monkeypatch.setenv("WFLANG_CACHE_DIR", "")
    plain = outcomes()
    monkeypatch.setenv("WFLANG_CACHE_DIR", str(tmp_path))
    assert outcomes() == plain  # the programs compiled and stored
    assert list(tmp_path.glob("patterns-*.marshal"))
    monkeypatch.setattr(Patterns, "_compile", _refuse_compile)
    assert outcomes() == plain  # every one loaded
