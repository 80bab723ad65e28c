"""Completion in each position and signature help (issue 16), over stdio against
``wf lsp``: the buffer is edited as a user types, so most of these lines do not parse
and the server answers from the last text that did."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from lsprotocol import types as lsp
from pytest_lsp import LanguageClient

from tests.lsp.conftest import change_file, open_file, uri
from tests.lsp.sample import SHIP, position, project
from wflang.dsl.expr import BUILTINS
from wflang.lsp.builtins import SIGNATURES

DOCS = Path(__file__).resolve().parents[2] / "docs" / "language.md"


def test_the_builtins_signatures_are_those_of_the_language_docs() -> None:
    assert set(SIGNATURES) == set(BUILTINS)
    rows = re.findall(r"^\| `(\w+)(\([^`]*\))` \| [^|]* \| (.*) \|$", DOCS.read_text(), re.M)
    documented = {name: (name + args, text) for name, args, text in rows if name in BUILTINS}
    assert documented == SIGNATURES


async def typed(
    client: LanguageClient, folder: Path, old: str, new: str
) -> tuple[Path, lsp.Position]:
    """Open the sample, then change the first ``old`` to ``new``; the cursor at its end."""
    ship, _ = project(folder)
    assert await open_file(client, ship) == []
    text = SHIP.replace(old, new, 1)
    await change_file(client, ship, text, 2)
    end = SHIP.index(old) + len(new)
    line = text.count("\n", 0, end)
    return ship, lsp.Position(line, end - (text.rfind("\n", 0, end) + 1))


async def labels(client: LanguageClient, folder: Path, old: str, new: str) -> dict[str, str | None]:
    ship, where = await typed(client, folder, old, new)
    got = await client.text_document_completion_async(
        lsp.CompletionParams(lsp.TextDocumentIdentifier(uri(ship)), where)
    )
    items = got.items if isinstance(got, lsp.CompletionList) else got or []
    return {i.label: i.detail for i in items}


@pytest.mark.asyncio(loop_scope="module")
async def test_node_names_after_next(client: LanguageClient, tmp_path: Path) -> None:
    found = await labels(client, tmp_path, "    next done", "    next d")
    assert found == {"send": "task", "done": "end", "failed": "end"}


@pytest.mark.asyncio(loop_scope="module")
async def test_node_names_after_an_arrow(client: LanguageClient, tmp_path: Path) -> None:
    found = await labels(client, tmp_path, "on Lost -> failed", "on Lost -> ")
    assert set(found) == {"send", "done", "failed"}


@pytest.mark.asyncio(loop_scope="module")
async def test_fields_after_input_and_context(client: LanguageClient, tmp_path: Path) -> None:
    found = await labels(client, tmp_path, "input.parcel.weight * 2", "input.")
    assert found == {"parcel": "Parcel", "speed": "Speed"}
    (deeper := tmp_path / "deeper").mkdir()  # a file of its own: a fresh buffer
    found = await labels(client, deeper, "input.parcel.weight * 2", "input.parcel.")
    assert found == {"weight": "decimal"}
    found = await labels(client, tmp_path, "input.parcel.weight * 2", "context.")
    assert found == {"total": "decimal"}


@pytest.mark.asyncio(loop_scope="module")
async def test_fields_after_result_and_error(client: LanguageClient, tmp_path: Path) -> None:
    found = await labels(client, tmp_path, "input.parcel.weight * 2", "result.")
    assert found == {"tracking": "string"}
    ship = tmp_path / "handled.wf"
    handler = "task failed: script {\n    output { total: 0.0 }\n    next done\n}"
    text = SHIP.replace("end failed: failed", handler)
    assert await open_file(client, ship, text) == []
    typing = text.replace("total: 0.0", "total: error.")
    await change_file(client, ship, typing, 2)
    line, character = position(typing, "total: error.", 0, len("total: error."))
    got = await client.text_document_completion_async(
        lsp.CompletionParams(lsp.TextDocumentIdentifier(uri(ship)), lsp.Position(line, character))
    )
    items = got.items if isinstance(got, lsp.CompletionList) else got or []
    assert {i.label: i.detail for i in items} == {"name": "string", "message": "string"}


@pytest.mark.asyncio(loop_scope="module")
async def test_enum_members(client: LanguageClient, tmp_path: Path) -> None:
    found = await labels(client, tmp_path, "Speed.fast", "Speed.")
    assert found == {"slow": "Speed", "fast": "Speed"}


@pytest.mark.asyncio(loop_scope="module")
async def test_services_after_service(client: LanguageClient, tmp_path: Path) -> None:
    found = await labels(client, tmp_path, "task send: service post.send {", "task send: service p")
    assert found == {"post.send": "post.send(weight: decimal, express: bool)"}


@pytest.mark.asyncio(loop_scope="module")
async def test_types_in_a_declaration(client: LanguageClient, tmp_path: Path) -> None:
    found = await labels(client, tmp_path, "context { total: decimal = 0.0 }", "context { total: ")
    assert {"decimal", "string", "list", "Parcel", "Speed"} <= set(found)


@pytest.mark.asyncio(loop_scope="module")
async def test_keywords_in_place(client: LanguageClient, tmp_path: Path) -> None:
    top = await labels(client, tmp_path, "start send\n", "start send\n\nta")
    assert {"task", "service", "choice", "enum"} <= set(top)
    assert "next" not in top
    inside = await labels(client, tmp_path, "    next done\n", "    next done\n    ")
    assert {"next", "retry", "timeout", "compensate"} <= set(inside)
    assert "service" not in inside


@pytest.mark.asyncio(loop_scope="module")
async def test_builtins_and_roots_in_an_expression(client: LanguageClient, tmp_path: Path) -> None:
    found = await labels(client, tmp_path, "total: input.parcel.weight * 2", "total: ")
    assert found["len"] == "len(x)"
    assert found["coalesce"] == "coalesce(a, b, ...)"
    assert {"input", "context", "result", "Speed"} <= set(found)
    assert "error" not in found  # no `on` route leads to the task


async def signature(
    client: LanguageClient, folder: Path, old: str, new: str
) -> lsp.SignatureHelp | None:
    ship, where = await typed(client, folder, old, new)
    return await client.text_document_signature_help_async(
        lsp.SignatureHelpParams(text_document=lsp.TextDocumentIdentifier(uri(ship)), position=where)
    )


@pytest.mark.asyncio(loop_scope="module")
async def test_signature_help_of_a_service(client: LanguageClient, tmp_path: Path) -> None:
    got = await signature(client, tmp_path, "express: input.speed == Speed.fast }", "express: ")
    assert got is not None
    [info] = got.signatures
    assert info.label == "post.send(weight: decimal, express: bool)"
    assert got.active_parameter == 1


@pytest.mark.asyncio(loop_scope="module")
async def test_signature_help_of_a_builtin(client: LanguageClient, tmp_path: Path) -> None:
    got = await signature(
        client, tmp_path, "input.parcel.weight * 2", "round(input.parcel.weight, "
    )
    assert got is not None
    [info] = got.signatures
    assert info.label == "round(x[, places])"
    assert got.active_parameter == 1


WAITS = """workflow waits version 1

signal approval { by: string, at: timestamp }

message scanned { tracking: string, count: int }

input { key: string }

context { who: string = "", seen: int = 0 }

start approve

wait approve: signal approval {
    output { who: signal.by }
    next scan
}

wait scan: message scanned correlate input.key {
    output { seen: message.count }
    next done
}

end done: completed
"""


@pytest.mark.asyncio(loop_scope="module")
@pytest.mark.parametrize(
    ("old", "typed", "expected"),
    [
        ("who: signal.by", "who: signal.", {"by": "string", "at": "timestamp"}),
        ("seen: message.count", "seen: message.", {"tracking": "string", "count": "int"}),
    ],
)
async def test_payload_fields_after_signal_and_message(
    client: LanguageClient, tmp_path: Path, old: str, typed: str, expected: dict[str, str]
) -> None:
    """In a wait's output, ``signal.`` and ``message.`` offer the payload's fields of
    the signal or message that node waits for, with their types."""
    (tmp_path / "pyproject.toml").write_text("")
    waits = tmp_path / "waits.wf"
    assert await open_file(client, waits, WAITS) == []
    text = WAITS.replace(old, typed, 1)
    await change_file(client, waits, text, 2)
    line, character = position(text, typed, 0, len(typed))
    got = await client.text_document_completion_async(
        lsp.CompletionParams(lsp.TextDocumentIdentifier(uri(waits)), lsp.Position(line, character))
    )
    items = got.items if isinstance(got, lsp.CompletionList) else got or []
    assert {i.label: i.detail for i in items} == expected
