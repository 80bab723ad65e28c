"""The built parser is cached on disk, keyed by the grammar (issue 13, startup)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from lark import Lark

from wflang.dsl import parser_cache
from wflang.dsl.parser import make_parser, parse
from wflang.dsl.parser_cache import cached_parser
from wflang.user_cache import cache_dir

OPTIONS: dict[str, Any] = {"parser": "lalr", "lexer": "contextual"}
GREETING = 'start: "hello" NAME\nNAME: /[a-z]+/\n%ignore " "\n'
FAREWELL = 'start: "bye" NAME\nNAME: /[a-z]+/\n%ignore " "\n'


class _NoBuild(Lark):
    def __init__(self, *args: object, **kwargs: object) -> None:
        raise AssertionError("built, not loaded from the cache")


def test_a_parser_built_once_is_loaded_from_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = cached_parser(GREETING, OPTIONS, tmp_path)
    assert len(list(tmp_path.glob("parser-*.lark"))) == 1
    monkeypatch.setattr(parser_cache, "Lark", _NoBuild)
    loaded = cached_parser(GREETING, OPTIONS, tmp_path)
    assert loaded.parse("hello world") == first.parse("hello world")


def test_a_changed_grammar_is_not_served_from_a_stale_cache(tmp_path: Path) -> None:
    cached_parser(GREETING, OPTIONS, tmp_path)
    changed = cached_parser(FAREWELL, OPTIONS, tmp_path)
    assert changed.parse("bye world").children[0] == "world"
    with pytest.raises(Exception, match=r"hello|Unexpected"):
        changed.parse("hello world")
    assert len(list(tmp_path.glob("parser-*.lark"))) == 2


def test_a_file_under_the_right_name_with_another_key_is_rebuilt(tmp_path: Path) -> None:
    cached_parser(GREETING, OPTIONS, tmp_path)
    (path,) = tmp_path.glob("parser-*.lark")
    path.write_bytes(path.read_bytes().replace(b"\n", b"x\n", 1))  # the key no longer matches
    assert cached_parser(GREETING, OPTIONS, tmp_path).parse("hello you")
    assert path.read_bytes().split(b"\n", 1)[0].decode() == parser_cache.cache_key(
        GREETING, OPTIONS
    )


def test_a_truncated_cache_file_is_rebuilt(tmp_path: Path) -> None:
    cached_parser(GREETING, OPTIONS, tmp_path)
    (path,) = tmp_path.glob("parser-*.lark")
    path.write_bytes(path.read_bytes()[:200])
    assert cached_parser(GREETING, OPTIONS, tmp_path).parse("hello you")
    assert path.stat().st_size > 200


def test_an_unwritable_cache_folder_still_parses(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    folder = blocker / "wflang"  # cannot be made, whoever runs the test
    assert cached_parser(GREETING, OPTIONS, folder).parse("hello you")
    assert not folder.exists()


def test_the_cache_folder_follows_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("WFLANG_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", "/somewhere")
    assert cache_dir() == Path("/somewhere/wflang")
    monkeypatch.setenv("WFLANG_CACHE_DIR", "/elsewhere")
    assert cache_dir() == Path("/elsewhere")
    monkeypatch.setenv("WFLANG_CACHE_DIR", "")
    assert cache_dir() is None


def test_the_language_parser_loaded_from_the_cache_parses_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = (Path(__file__).parent.parent / "examples" / "order_saga.wf").read_text(encoding="utf-8")
    monkeypatch.setenv("WFLANG_CACHE_DIR", str(tmp_path))
    built = make_parser().parse(text)
    monkeypatch.setattr(parser_cache, "Lark", _NoBuild)
    assert make_parser().parse(text) == built
    assert parse(text, "order_saga.wf").ok
