"""The lexer's compiled regular expressions, cached on disk beside the built parser.

Lark's contextual lexer compiles one scanner (a union of the terminals' patterns)
for each set of terminals a parser state accepts, the first time the parse meets
that state: about 60 of them in a small file, and most of a first parse's time is
Python's ``re`` turning their text into the program its matcher runs (its parser
and compiler are Python code). ``Patterns`` stands in for the ``re`` module of
those lexers (the ``re`` attribute Lark gives each of them): a pattern compiled
before, in any process, is made from its stored program by ``_sre.compile``, the
last step of ``re.compile``, and is equal to what ``re.compile`` makes.

The programs are CPython's own and may change with any release, so the file is
named by the exact interpreter build and the format of its programs
(``_sre.MAGIC``) as well as the parser's key; a program is stored only after the
pattern made from it compared equal (pattern, flags and program) to
``re.compile``'s; and a file that cannot be read or a program that ``_sre``
refuses costs only the compile. Not on other Pythons (``available``). New
programs are written once the parse is over (``save``), the whole file renamed
over the old one, as the parser cache does.
"""

from __future__ import annotations

import contextlib
import hashlib
import marshal
import os
import re
import sys
from pathlib import Path
from typing import Any

try:  # CPython's regular expression engine and its compiler (not on other Pythons)
    import _sre  # type: ignore[import-not-found]  # no stubs: C module of ``re``
    from re import _compiler, _parser  # type: ignore[attr-defined]  # private modules
except ImportError:  # pragma: no cover - another implementation: plain ``re``
    _sre = None

#: (flags with the pattern's own, program, groups, group index, index group): the
#: arguments ``re._compiler.compile`` gives ``_sre.compile`` after the pattern.
Program = tuple[int, list[int], int, dict[str, int], tuple[str | None, ...]]


def available() -> bool:
    """Whether compiled programs can be stored: CPython's engine is there."""
    return _sre is not None and sys.implementation.name == "cpython"


def patterns_path(folder: Path, parser_key: str) -> Path:
    """The file of the programs of the lexers of the parser named by ``parser_key``,
    on this interpreter build."""
    build = "\0".join((parser_key, sys.version, str(getattr(_sre, "MAGIC", "")), sys.platform))
    return folder / f"patterns-{hashlib.sha256(build.encode()).hexdigest()[:32]}.marshal"


class Patterns:
    """The part of the ``re`` module Lark's lexers call (``compile``, ``match``,
    ``error``), answering ``compile`` from the stored programs when it can."""

    error = re.error

    def __init__(self, path: Path) -> None:
        self.path = path
        self._compiled: dict[tuple[str, int], re.Pattern[str]] = {}
        self._stored: dict[tuple[str, int], Program] | None = None  # read when first needed
        self._new = False

    def compile(self, pattern: str, flags: int = 0) -> re.Pattern[str]:
        key = (pattern, flags)
        compiled = self._compiled.get(key)
        if compiled is None:
            compiled = self._from_store(key)
            if compiled is None:
                compiled = self._compile(pattern, flags)
            self._compiled[key] = compiled
        return compiled

    def match(self, pattern: str, string: str, flags: int = 0) -> re.Match[str] | None:
        return self.compile(pattern, flags).match(string)

    def save(self) -> None:
        """Store the programs compiled since the file was read (if any); never raises."""
        if not self._new or self._stored is None:
            return
        self._new = False
        # written whole, then renamed over: a concurrent reader sees one file or the other
        temporary = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        try:
            temporary.write_bytes(marshal.dumps(self._stored))
            os.replace(temporary, self.path)
        except (OSError, ValueError):  # not writable, full: compiled again next time
            with contextlib.suppress(OSError):
                temporary.unlink()

    def _read(self) -> dict[tuple[str, int], Program]:
        if self._stored is None:
            try:
                loaded: Any = marshal.loads(self.path.read_bytes())
                self._stored = loaded if isinstance(loaded, dict) else {}
            except (OSError, EOFError, ValueError, TypeError):  # none yet, or damaged
                self._stored = {}
        return self._stored

    def _from_store(self, key: tuple[str, int]) -> re.Pattern[str] | None:
        program = self._read().get(key)
        if program is None:
            return None
        try:
            made: re.Pattern[str] = _sre.compile(key[0], *program)
        except Exception:  # refused by the engine's check of a program: compile it
            return None
        return made

    def _compile(self, pattern: str, flags: int) -> re.Pattern[str]:
        """``re.compile``, keeping its program when it makes the same pattern."""
        compiled = re.compile(pattern, flags)  # errors (re.error, AssertionError) as re's
        try:
            # ``re._compiler.compile`` in steps, to keep the arguments of its last one
            parsed = _parser.parse(pattern, flags)
            code = [int(op) for op in _compiler._code(parsed, flags)]  # named ints: not marshalled
            groupindex = dict(parsed.state.groupdict)
            indexgroup: list[str | None] = [None] * parsed.state.groups
            for name, i in groupindex.items():
                indexgroup[i] = name
            program: Program = (
                flags | parsed.state.flags,
                code,
                parsed.state.groups - 1,
                groupindex,
                tuple(indexgroup),
            )
            if _sre.compile(pattern, *program) == compiled:
                self._read()[(pattern, flags)] = program
                self._new = True
        except Exception:  # a CPython whose compiler differs: only this cache is lost
            pass
        return compiled
