"""Hover, definitions, references, highlights, outline, folding, formatting and
semantic tokens (issue 16), over stdio against ``wf lsp``."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest
from lsprotocol import types as lsp
from pytest_lsp import LanguageClient

from tests.lsp.conftest import open_file, uri
from tests.lsp.sample import SHIP, TYPES, position, project

pytestmark = pytest.mark.asyncio(loop_scope="module")


def doc(path: Path) -> lsp.TextDocumentIdentifier:
    return lsp.TextDocumentIdentifier(uri(path))


def at(text: str, needle: str, nth: int = 0, offset: int = 0) -> lsp.Position:
    return lsp.Position(*position(text, needle, nth, offset))


async def opened(client: LanguageClient, folder: Path) -> tuple[Path, Path]:
    ship, types = project(folder)
    assert await open_file(client, ship) == []
    return ship, types


async def hover(client: LanguageClient, path: Path, where: lsp.Position) -> str:
    got = await client.text_document_hover_async(lsp.HoverParams(doc(path), where))
    assert got is not None
    assert isinstance(got.contents, lsp.MarkupContent)
    return got.contents.value


async def test_hover_gives_the_type_of_an_expression(
    client: LanguageClient, tmp_path: Path
) -> None:
    ship, _ = await opened(client, tmp_path)
    text = await hover(client, ship, at(SHIP, "weight: input.parcel.weight", 0, 22))
    assert text.startswith("```wf\ninput.parcel.weight: decimal\n```")
    # then the field's declaration, in types.wf
    assert text.endswith(f"```wf\nweight: decimal\n```\n\n(declared in `{tmp_path / 'types.wf'}`)")


async def test_hover_on_a_node_gives_its_kind_and_routes(
    client: LanguageClient, tmp_path: Path
) -> None:
    ship, _ = await opened(client, tmp_path)
    text = await hover(client, ship, at(SHIP, "start send", 0, 7))
    assert text == (
        "**task** `send`: service `post.send`\n\nRoutes:\n"
        "- error → `failed` (Lost)\n- next → `done`"
    )


async def test_hover_on_a_service_gives_its_signature(
    client: LanguageClient, tmp_path: Path
) -> None:
    ship, _ = await opened(client, tmp_path)
    text = await hover(client, ship, at(SHIP, "service post.send {", 0, 9))
    assert (
        "service post.send(weight: decimal, express: bool) -> { tracking: string } raises Lost"
        in text
    )


async def test_hover_on_a_finding_explains_its_rule(client: LanguageClient, tmp_path: Path) -> None:
    ship, _ = project(tmp_path)
    broken = SHIP.replace("end failed: failed", "end failed: failed\n\nend spare: completed")
    [finding] = await open_file(client, ship, broken)
    text = await hover(client, ship, finding.range.start)
    assert "**WF201** `unreachable-node`: Checks that every node can be reached" in text


async def test_definition_of_a_node_and_of_an_imported_type(
    client: LanguageClient, tmp_path: Path
) -> None:
    ship, types = await opened(client, tmp_path)
    got = await client.text_document_definition_async(
        lsp.DefinitionParams(doc(ship), at(SHIP, "next done", 0, 6))
    )
    assert got == lsp.Location(
        uri(ship), lsp.Range(at(SHIP, "done: completed"), at(SHIP, "done: completed", 0, 4))
    )
    got = await client.text_document_definition_async(
        lsp.DefinitionParams(doc(ship), at(SHIP, "parcel: Parcel", 0, 9))
    )
    assert got == lsp.Location(
        uri(types), lsp.Range(at(TYPES, "Parcel"), at(TYPES, "Parcel", 0, 6))
    )


async def test_references_across_files(client: LanguageClient, tmp_path: Path) -> None:
    ship, types = await opened(client, tmp_path)
    found = await client.text_document_references_async(
        lsp.ReferenceParams(
            context=lsp.ReferenceContext(True),
            text_document=doc(ship),
            position=at(SHIP, "weight", 2),
        )
    )
    where = sorted(
        (loc.uri, loc.range.start.line, loc.range.start.character) for loc in found or []
    )
    assert where == sorted(
        [
            (uri(types), 0, 14),  # the declaration
            (uri(ship), *position(SHIP, "weight", 2)),  # input.parcel.weight in args
            (uri(ship), *position(SHIP, "weight", 3)),  # and in output
        ]
    )


async def test_highlights_of_an_error(client: LanguageClient, tmp_path: Path) -> None:
    ship, _ = await opened(client, tmp_path)
    found = await client.text_document_document_highlight_async(
        lsp.DocumentHighlightParams(doc(ship), at(SHIP, "error Lost", 0, 7))
    )
    assert [(h.range.start.line, h.kind) for h in found or []] == [
        (10, lsp.DocumentHighlightKind.Write),
        (12, lsp.DocumentHighlightKind.Read),
        (21, lsp.DocumentHighlightKind.Read),
    ]


async def test_the_outline(client: LanguageClient, tmp_path: Path) -> None:
    ship, _ = await opened(client, tmp_path)
    found = await client.text_document_document_symbol_async(lsp.DocumentSymbolParams(doc(ship)))
    outline = [(s.name, s.detail, s.kind) for s in found or [] if isinstance(s, lsp.DocumentSymbol)]
    K = lsp.SymbolKind
    assert outline == [
        ("Speed", "enum", K.Enum),
        ("input", "input", K.Object),
        ("context", "context", K.Object),
        ("Lost", "error", K.Class),
        ("post.send", "service", K.Interface),
        ("send", "task", K.Function),
        ("done", "end", K.Constant),
        ("failed", "end", K.Constant),
    ]


async def test_folding_ranges(client: LanguageClient, tmp_path: Path) -> None:
    ship, _ = await opened(client, tmp_path)
    found = await client.text_document_folding_range_async(lsp.FoldingRangeParams(doc(ship)))
    assert [(f.start_line, f.end_line, f.kind) for f in found or []] == [
        (18, 23, None),
        (16, 17, lsp.FoldingRangeKind.Comment),
    ]


async def test_formatting_the_file_and_a_range(client: LanguageClient, tmp_path: Path) -> None:
    ship, _ = project(tmp_path)
    messy = SHIP.replace("enum Speed { slow, fast }", "enum Speed {slow,fast}").replace(
        "    next done", "        next    done"
    )
    ship.write_text(messy)
    await open_file(client, ship)
    whole = await client.text_document_formatting_async(
        lsp.DocumentFormattingParams(doc(ship), lsp.FormattingOptions(4, True))
    )
    assert _applied(messy, whole or []) == SHIP
    line = position(messy, "next    done")[0]
    part = await client.text_document_range_formatting_async(
        lsp.DocumentRangeFormattingParams(
            doc(ship),
            lsp.Range(lsp.Position(line, 0), lsp.Position(line, 5)),
            lsp.FormattingOptions(4, True),
        )
    )
    assert _applied(messy, part or []) == messy.replace("        next    done", "    next done")


def _applied(text: str, edits: Sequence[lsp.TextEdit]) -> str:
    lines = text.splitlines(keepends=True)
    for e in sorted(edits, key=lambda e: e.range.start.line, reverse=True):
        assert e.range.start.character == e.range.end.character == 0
        lines[e.range.start.line : e.range.end.line] = [e.new_text]
    return "".join(lines)


async def test_semantic_tokens(client: LanguageClient, tmp_path: Path) -> None:
    ship, _ = await opened(client, tmp_path)
    got = await client.text_document_semantic_tokens_full_async(lsp.SemanticTokensParams(doc(ship)))
    assert got is not None
    legend = [
        "class",
        "enumMember",
        "event",
        "function",
        "interface",
        "parameter",
        "property",
        "type",
    ]
    tokens, line, column = [], 0, 0
    data = list(got.data)
    for i in range(0, len(data), 5):
        dl, dc, length, kind, mods = data[i : i + 5]
        line, column = line + dl, (column + dc if dl == 0 else dc)
        tokens.append((SHIP.splitlines()[line][column : column + length], legend[kind], mods))
    assert tokens[:4] == [
        ("Speed", "type", 1),
        ("slow", "enumMember", 1),
        ("fast", "enumMember", 1),
        ("parcel", "property", 1),
    ]
    assert ("post.send", "interface", 0) in tokens
    assert ("done", "function", 0) in tokens
    assert ("weight", "parameter", 0) in tokens
