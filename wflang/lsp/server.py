"""The language server: the protocol's requests wired to the modules that answer them.

Diagnostics are debounced: a change schedules a check of the file (and of the open
files that import it) ``delay`` seconds later, and a newer change of the same file
moves it. The delay is an initialization option (``{"debounce": 0.05}``, seconds;
the tests give 0) so that no test waits on a clock.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from typing import Any

from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path
from pygls.workspace import TextDocument

from wflang import __version__
from wflang.dsl.span import Span
from wflang.lsp import report
from wflang.lsp.analysis import Analysis, Checked
from wflang.lsp.navigate import Index
from wflang.lsp.positions import from_position, to_range

#: seconds between the last keystroke and the check it starts
DEFAULT_DEBOUNCE = 0.05


class WflangServer(LanguageServer):
    """pygls's server with the buffers' analysis and the pending checks."""

    def __init__(self) -> None:
        super().__init__("wf-lsp", __version__)
        self.analysis = Analysis()
        self.index = Index(self.analysis)
        self.debounce = DEFAULT_DEBOUNCE
        self.rules_url = report.rules_url(None)
        self._pending: dict[str, asyncio.TimerHandle] = {}
        self._told: set[str] = set()  # configuration problems already shown

    def document(self, path: str) -> TextDocument:
        """The editor's document of a file, else pygls's reading of the file."""
        return self.workspace.get_text_document(report.uri_of(path))

    def configure(self, options: Any) -> None:
        if isinstance(options, dict):
            delay = options.get("debounce")
            if isinstance(delay, int | float) and not isinstance(delay, bool) and delay >= 0:
                self.debounce = float(delay)
            url = options.get("rulesUrl")
            if isinstance(url, str) and url:
                self.rules_url = url

    def schedule(self, path: str) -> None:
        """Check ``path`` and the open files that import it after the debounce delay."""
        old = self._pending.pop(path, None)
        if old is not None:
            old.cancel()
        loop = asyncio.get_running_loop()
        self._pending[path] = loop.call_later(self.debounce, self._run, path)

    def _run(self, path: str) -> None:
        self._pending.pop(path, None)
        for target in self.analysis.affected(path):
            self.publish(self.analysis.checked(target))

    def publish(self, checked: Checked) -> None:
        problem = checked.config_problem
        if problem and problem not in self._told:
            self._told.add(problem)
            self.window_show_message(lsp.ShowMessageParams(lsp.MessageType.Warning, problem))
        doc = self.document(checked.path)
        diagnostics = [
            report.to_lsp(d, self.document, self.rules_url)
            for d in checked.result.diagnostics
            if d.span.file == checked.path
        ]
        self.text_document_publish_diagnostics(
            lsp.PublishDiagnosticsParams(doc.uri, diagnostics, doc.version)
        )

    def checked(self, uri: str) -> Checked | None:
        """The current check of an open document (made now if a change is pending)."""
        path = path_of(uri)
        if path not in self.analysis.buffers:
            return None
        return self.analysis.checked(path)

    def where(self, uri: str, position: lsp.Position) -> tuple[str, int, int]:
        """A request's file and cursor as a span's (line, column)."""
        line, column = from_position(position, self.workspace.get_text_document(uri))
        return path_of(uri), line, column

    def location(self, span: Span) -> lsp.Location:
        return lsp.Location(report.uri_of(span.file), to_range(span, self.document(span.file)))


def path_of(uri: str) -> str:
    return to_fs_path(uri) or uri


def create_server() -> WflangServer:
    server = WflangServer()
    from wflang.lsp import features

    features.register(server)
    return server


def serve() -> None:
    """Speak LSP on standard input and output until the client says exit.

    The protocol gets its own copies of the two descriptors (pygls closes what it
    was given) and anything else printed goes to standard error, where it cannot
    break a message."""
    with (
        os.fdopen(os.dup(0), "rb") as stdin,
        os.fdopen(os.dup(1), "wb") as stdout,
        contextlib.redirect_stdout(sys.stderr),
    ):
        create_server().start_io(stdin, stdout)
