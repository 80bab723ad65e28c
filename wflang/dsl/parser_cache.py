"""The built LALR parser, cached on disk: building it from the grammar takes most of
a short command's time (``wf check`` on one file), loading it a few milliseconds.

The cache file is named by a hash of everything the built parser depends on (the
grammar's text, the construction options, Lark's and Python's versions), so a
changed grammar or an upgraded Lark never loads a stale parser: it builds and
stores a new one. The folder is ``$XDG_CACHE_HOME/wflang`` (else
``~/.cache/wflang``); ``WFLANG_CACHE_DIR`` overrides it and ``WFLANG_CACHE_DIR=``
(empty) turns the cache off. A folder that cannot be made or written, or a file
that cannot be read back, only costs the build: the cache never fails a parse.
Files are written whole (a temporary file renamed over), so a concurrent reader
sees the old file or the new one, never half of one. Beside each parser, the
programs of its lexers' regular expressions (``dsl/pattern_cache.py``): the
lexers of a cached parser compile through them (``save_patterns`` after a parse
stores those compiled for the first time).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import sys
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import lark
from lark import Lark

from wflang.dsl.pattern_cache import Patterns, available, patterns_path
from wflang.user_cache import cache_dir

#: Options given to ``Lark.load``: the callbacks are functions of this process and
#: are never stored (they do not change the tables).
_NOT_STORED = ("transformer", "lexer_callbacks")


def cache_key(grammar: str, options: Mapping[str, object]) -> str:
    """The hash that names a built parser: it changes whenever the parser could."""
    stored = sorted((k, repr(v)) for k, v in options.items() if k not in _NOT_STORED)
    parts = (grammar, repr(stored), lark.__version__, repr(sys.version_info[:2]))
    return hashlib.sha256("\0".join(parts).encode("utf-8", "surrogatepass")).hexdigest()


def cached_parser(grammar: str, options: Mapping[str, Any], folder: Path | None = None) -> Lark:
    """``Lark(grammar, **options)``, loaded from the cache when built before."""
    folder = cache_dir() if folder is None else folder
    if folder is None:
        return Lark(grammar, **options)
    key = cache_key(grammar, options)
    path = folder / f"parser-{key[:32]}.lark"
    callbacks = {k: v for k, v in options.items() if k in _NOT_STORED}
    parser = _load(path, key, callbacks)
    if parser is None:
        parser = Lark(grammar, **options)
        _store(path, key, lambda f: parser.save(f, exclude_options=_NOT_STORED))
    if available():
        _use_patterns(parser, Patterns(patterns_path(folder, key)))
    return parser


def save_patterns(parser: Lark) -> None:
    """Store the regular expressions the parser's lexers compiled for the first time."""
    patterns = getattr(getattr(parser.parser, "lexer", None), "root_lexer", None)
    patterns = getattr(patterns, "re", None)
    if isinstance(patterns, Patterns):
        patterns.save()


def _use_patterns(parser: Lark, patterns: Patterns) -> None:
    """Give each of the parser's lexers ``patterns`` as its ``re`` module (the
    contextual lexer's one per set of terminals, and its root lexer); a parser made
    otherwise keeps ``re``."""
    lexer = getattr(parser.parser, "lexer", None)
    lexers = getattr(lexer, "lexers", None)
    root = getattr(lexer, "root_lexer", None)
    if not isinstance(lexers, dict) or root is None:
        return
    for basic in (*lexers.values(), root):
        if getattr(basic, "re", None) is not re or getattr(basic, "_scanner", True) is not None:
            return  # not Lark's lexer as this module knows it: left as it is
    for basic in (*lexers.values(), root):
        basic.re = patterns


def _load(path: Path, key: str, callbacks: Mapping[str, Any]) -> Lark | None:
    try:
        with open(path, "rb") as file:
            if file.readline().rstrip(b"\n") != key.encode():
                return None  # another parser under a colliding name: rebuilt, replaced
            # Lark.load takes no options; _load is the same with the callbacks given.
            return Lark.__new__(Lark)._load(file, **callbacks)
    except Exception:  # missing, unreadable, truncated or from another Lark: rebuild
        return None


def _store(path: Path, key: str, save: Callable[[Any], None]) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=".parser-", suffix=".tmp")
    except OSError:  # not writable: run without a cache
        return
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(key.encode() + b"\n")
            save(file)
        os.replace(temporary, path)
    except Exception:  # a full disk, a rename refused: the built parser is still used
        with contextlib.suppress(OSError):
            os.unlink(temporary)
