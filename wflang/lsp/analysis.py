"""What the server knows about the files: the editor's buffers, each file's parse and
each open file's check, kept while their text stays the same.

This module holds no protocol: it is the checker of ``wf check`` (``compiler/check``,
its configuration and suppressions) run on buffers instead of files. A keystroke
parses the one file it changed; the files it imports come from the parse cache
(keyed by their text), and only the open files that import it, directly or not,
are checked again (``affected``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from attrs import define, field, frozen

from wflang.compiler.check import CheckResult, check
from wflang.compiler.config import Config, ConfigError, load_config
from wflang.compiler.model import Model
from wflang.dsl.incremental import reparse
from wflang.dsl.parser import ParseResult, parse
from wflang.dsl.source import SourceError, read_source


@frozen
class Checked:
    """One open file's check: its findings (this file's only), the models and the
    text of every file it read, and the configuration's problem if it had one."""

    path: str
    result: CheckResult
    config_problem: str | None = None

    @property
    def model(self) -> Model | None:
        return self.result.models.get(self.path)

    @property
    def parsed(self) -> ParseResult | None:
        program = self.result.program
        module = program.modules.get(self.path) if program else None
        return module.parsed if module else None

    @property
    def reads(self) -> frozenset[str]:
        """The files the check read: this one and everything it imports."""
        program = self.result.program
        return frozenset(program.modules) if program else frozenset({self.path})


@define
class Analysis:
    """The buffers the editor has open and what was computed from them."""

    #: path -> the text of the editor's buffer (which wins over the file on disk)
    buffers: dict[str, str] = field(factory=dict)
    #: path -> (text, parse): a file is parsed again only when its text changes
    _parses: dict[str, tuple[str, ParseResult]] = field(factory=dict)
    #: path -> the last check of an open file, and the texts it was made from
    _checks: dict[str, tuple[dict[str, str], Checked]] = field(factory=dict)
    #: path -> the last check whose text parsed (what to answer from while typing)
    _good: dict[str, Checked] = field(factory=dict)

    def open(self, path: str, text: str) -> None:
        self.buffers[path] = text

    def close(self, path: str) -> None:
        self.buffers.pop(path, None)
        self._checks.pop(path, None)
        self._good.pop(path, None)

    def text(self, path: str) -> str | None:
        """The buffer's text, else the file's, else None (unreadable)."""
        if path in self.buffers:
            return self.buffers[path]
        try:
            return read_source(path, regular_only=True).decode("utf-8", "replace")
        except SourceError:
            return None

    def parsed(self, path: str) -> ParseResult:
        """The parse of a file's current text (the buffer's when open)."""
        text = self.text(path)
        if text is None:
            raise SourceError("it cannot be read")
        return self._parse(path, text)

    def _parse(self, path: str, text: str) -> ParseResult:
        cached = self._parses.get(path)
        if cached is not None and cached[0] == text:
            return cached[1]
        source = text.removeprefix("\ufeff")
        # a keystroke: only the items it touched are parsed again
        result = reparse(cached[1], source) if cached is not None else parse(source, path)
        self._parses[path] = (text, result)
        return result

    def _read(self, path: str) -> ParseResult:
        """The checker's reader of imports: buffers first, then the disk (as ``wf check``
        reads them: regular files only, within the size limit)."""
        if path in self.buffers:
            return self._parse(path, self.buffers[path])
        data = read_source(path, regular_only=True)
        return self._parse(path, data.decode("utf-8", "replace"))

    def checked(self, path: str) -> Checked:
        """The check of an open file, made again only when a file it read changed."""
        cached = self._checks.get(path)
        if cached is not None and all(self._same(p, t) for p, t in cached[0].items()):
            return cached[1]
        config, problem = _config(path)
        result = check([self.parsed(path)], config, self._read)
        done = Checked(path, result, problem)
        texts = {p: self._parses[p][0] for p in done.reads if p in self._parses}
        self._checks[path] = (texts, done)
        if done.model is not None:
            self._good[path] = done
        return done

    def good(self, path: str) -> Checked | None:
        """The last check of the file whose text parsed (this one when it does)."""
        self.checked(path)
        return self._good.get(path)

    def _same(self, path: str, text: str) -> bool:
        return self.text(path) == text

    def affected(self, changed: str) -> list[str]:
        """The open files to check again after ``changed`` changed: itself when open,
        then every open file whose last check read it."""
        found = [changed] if changed in self.buffers else []
        for path, (texts, _) in self._checks.items():
            if path != changed and path in self.buffers and changed in texts:
                found.append(path)
        return found

    def importers(self, path: str) -> list[str]:
        """Open files whose check read ``path`` (for rename and references)."""
        return sorted(p for p, (texts, _) in self._checks.items() if path in texts)

    def known(self) -> Iterable[Checked]:
        return (checked for _, checked in self._checks.values())


def _config(path: str) -> tuple[Config, str | None]:
    """``[tool.wflang]`` of the nearest pyproject.toml above the file (``wf check`` reads
    the one above the working folder; an editor has none, the file's is the project's)."""
    start = Path(os.path.dirname(path)) if os.path.isabs(path) else None
    try:
        return load_config(start), None
    except ConfigError as err:
        return Config(), f"configuration: {err}; checking with the defaults"
