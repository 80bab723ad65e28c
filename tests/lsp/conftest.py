"""A real LSP client (pytest-lsp) over stdio against ``wf lsp`` in a subprocess.

One server per test module (starting one costs the checker's imports); each test
writes its files under a folder of its own, so no test sees another's documents.
Diagnostics are not debounced in the tests (``{"debounce": 0}``), and every test
waits for the notification it expects, never for a clock.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import pytest_lsp
from lsprotocol import types as lsp
from pytest_lsp import ClientServerConfig, LanguageClient

SERVER = [sys.executable, "-m", "wflang.cli", "lsp"]


class Published:
    """Every publishDiagnostics the client received, by document, in order: a test
    notes how many it has seen, acts, then waits for the next one (no race with a
    notification that arrives before the test starts waiting)."""

    def __init__(self) -> None:
        self.by_uri: dict[str, list[list[lsp.Diagnostic]]] = {}
        self.arrived = asyncio.Condition()
        self._wakes: set[asyncio.Future[None]] = set()

    def receive(self, params: lsp.PublishDiagnosticsParams) -> None:
        self.by_uri.setdefault(params.uri, []).append(list(params.diagnostics))
        self._wakes.add(wake := asyncio.ensure_future(self._wake()))
        wake.add_done_callback(self._wakes.discard)

    async def _wake(self) -> None:
        async with self.arrived:
            self.arrived.notify_all()

    def seen(self, path: Path) -> int:
        return len(self.by_uri.get(uri(path), []))

    async def after(self, path: Path, seen: int) -> list[lsp.Diagnostic]:
        """The first diagnostics of ``path`` published after the first ``seen``."""
        async with self.arrived:
            await self.arrived.wait_for(lambda: self.seen(path) > seen)
            return self.by_uri[uri(path)][seen]


PUBLISHED: dict[int, Published] = {}


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER), scope="module")  # type: ignore[untyped-decorator]
async def client(lsp_client: LanguageClient) -> AsyncIterator[None]:
    published = PUBLISHED[id(lsp_client)] = Published()

    def on_publish(params: lsp.PublishDiagnosticsParams) -> None:
        lsp_client.diagnostics[params.uri] = params.diagnostics
        published.receive(params)

    lsp_client.protocol.fm.features[lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS] = on_publish
    params = lsp.InitializeParams(
        capabilities=pytest_lsp.client_capabilities("visual-studio-code"),
        initialization_options={"debounce": 0, "rulesUrl": "https://rules.example/rules.md"},
    )
    await lsp_client.initialize_session(params)
    yield
    await lsp_client.shutdown_session()


def uri(path: Path) -> str:
    return path.resolve().as_uri()


def published(client: LanguageClient) -> Published:
    return PUBLISHED[id(client)]


async def open_file(
    client: LanguageClient, path: Path, text: str | None = None
) -> Sequence[lsp.Diagnostic]:
    """Open ``path`` (with ``text``, else what is on disk) and return its diagnostics."""
    if text is None:
        text = path.read_text(encoding="utf-8")
    elif not path.exists():
        path.write_text(text, encoding="utf-8")
    seen = published(client).seen(path)
    client.text_document_did_open(
        lsp.DidOpenTextDocumentParams(lsp.TextDocumentItem(uri(path), "wflang", 1, text))
    )
    return await published(client).after(path, seen)


async def change_file(
    client: LanguageClient, path: Path, text: str, version: int
) -> Sequence[lsp.Diagnostic]:
    """Replace the buffer's text and return the new diagnostics."""
    seen = published(client).seen(path)
    client.text_document_did_change(
        lsp.DidChangeTextDocumentParams(
            lsp.VersionedTextDocumentIdentifier(version, uri(path)),
            [lsp.TextDocumentContentChangeWholeDocument(text)],
        )
    )
    return await published(client).after(path, seen)
