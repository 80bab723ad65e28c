"""The language server on a ``first`` (issue 15 item 1), over stdio against ``wf lsp``:
completion of the signal and message names in its arms and of each arm's own payload
fields, hover on an arm's signal, and references of a signal that reach its arm."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsprotocol import types as lsp
from pytest_lsp import LanguageClient

from tests.lsp.conftest import change_file, open_file, uri
from tests.lsp.sample import position

pytestmark = pytest.mark.asyncio(loop_scope="module")

FIRST = """workflow approval version 1

input { order_id: string }

context { approver: string = "", paid: decimal = 0.0 }

signal approve { by: string, at: timestamp }

signal reject

message paid { amount: decimal, currency: string }

start outcome

first outcome {
    on signal approve -> done {
        output { approver: signal.by }
    }
    on signal reject -> refused
    on message paid correlate input.order_id -> done {
        output { paid: message.amount }
    }
    after 2d -> refused
}

end done: completed

end refused: failed
"""


def doc(path: Path) -> lsp.TextDocumentIdentifier:
    return lsp.TextDocumentIdentifier(uri(path))


async def opened(client: LanguageClient, folder: Path) -> Path:
    (folder / "pyproject.toml").write_text("")
    path = folder / "approval.wf"
    assert await open_file(client, path, FIRST) == []
    return path


async def completed(
    client: LanguageClient, folder: Path, old: str, new: str
) -> dict[str, str | None]:
    """Open the file, change ``old`` into ``new``: what completes at the end of ``new``."""
    path = await opened(client, folder)
    text = FIRST.replace(old, new, 1)
    await change_file(client, path, text, 2)
    line, character = position(text, new, 0, len(new))
    got = await client.text_document_completion_async(
        lsp.CompletionParams(doc(path), lsp.Position(line, character))
    )
    items = got.items if isinstance(got, lsp.CompletionList) else got or []
    return {i.label: i.detail for i in items}


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ("on signal reject", "on signal re", {"approve": "signal", "reject": "signal"}),
        ("on message paid correlate", "on message p", {"paid": "message"}),
    ],
)
async def test_names_in_an_arm(
    client: LanguageClient, tmp_path: Path, old: str, new: str, expected: dict[str, str]
) -> None:
    assert await completed(client, tmp_path, old, new) == expected


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ("approver: signal.by", "approver: signal.", {"by": "string", "at": "timestamp"}),
        ("paid: message.amount", "paid: message.", {"amount": "decimal", "currency": "string"}),
    ],
)
async def test_each_arm_completes_its_own_payload(
    client: LanguageClient, tmp_path: Path, old: str, new: str, expected: dict[str, str]
) -> None:
    assert await completed(client, tmp_path, old, new) == expected


async def test_hover_on_an_arm_s_signal(client: LanguageClient, tmp_path: Path) -> None:
    path = await opened(client, tmp_path)
    line, character = position(FIRST, "on signal approve", 0, len("on signal a"))
    got = await client.text_document_hover_async(
        lsp.HoverParams(doc(path), lsp.Position(line, character))
    )
    assert got is not None and isinstance(got.contents, lsp.MarkupContent)
    assert "signal approve { by: string, at: timestamp }" in got.contents.value


async def test_references_of_a_signal_reach_its_arm(client: LanguageClient, tmp_path: Path) -> None:
    path = await opened(client, tmp_path)
    line, character = position(FIRST, "signal reject", 0, len("signal r"))
    found = await client.text_document_references_async(
        lsp.ReferenceParams(
            context=lsp.ReferenceContext(True),
            text_document=doc(path),
            position=lsp.Position(line, character),
        )
    )
    where = sorted((loc.range.start.line, loc.range.start.character) for loc in found or [])
    assert where == sorted([position(FIRST, "reject", 0), position(FIRST, "reject", 1)])
