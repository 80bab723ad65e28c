"""Diagnostics as you type (issue 16): the findings of ``wf check`` with their codes
linked to docs/rules.md, related locations, the same suppressions and configuration,
for the open file and the open files that import it."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsprotocol import types as lsp
from pytest_lsp import LanguageClient

from tests.lsp.conftest import change_file, open_file, published, uri

GOOD = """workflow ship version 1

type Parcel { weight: decimal }

input { parcel: Parcel }

service post.send(weight: decimal)

start send

task send: service post.send {
    args { weight: input.parcel.weight }
    next done
}

end done: completed
"""

UNREACHABLE = GOOD.replace("end done: completed", "end done: completed\n\nend spare: completed")


@pytest.mark.asyncio(loop_scope="module")
async def test_a_clean_file_has_no_diagnostics(client: LanguageClient, tmp_path: Path) -> None:
    assert await open_file(client, tmp_path / "ship.wf", GOOD) == []


@pytest.mark.asyncio(loop_scope="module")
async def test_a_finding_has_its_code_link_range_and_severity(
    client: LanguageClient, tmp_path: Path
) -> None:
    [d] = await open_file(client, tmp_path / "ship.wf", UNREACHABLE)
    assert d.code == "WF201"
    assert d.source == "wf"
    assert d.severity == lsp.DiagnosticSeverity.Error
    assert d.code_description is not None
    assert d.code_description.href == "https://rules.example/rules.md#wf201"
    assert d.range == lsp.Range(lsp.Position(17, 4), lsp.Position(17, 9))
    assert "spare" in d.message
    assert list(d.tags or ()) == [lsp.DiagnosticTag.Unnecessary]


@pytest.mark.asyncio(loop_scope="module")
async def test_diagnostics_follow_the_changes(client: LanguageClient, tmp_path: Path) -> None:
    path = tmp_path / "ship.wf"
    assert await open_file(client, path, GOOD) == []
    [d] = await change_file(client, path, UNREACHABLE, 2)
    assert d.code == "WF201"
    assert await change_file(client, path, GOOD, 3) == []
    [syntax] = await change_file(client, path, GOOD.replace("next done", "nxt done"), 4)
    assert syntax.code == "WF001"


@pytest.mark.asyncio(loop_scope="module")
async def test_related_locations(client: LanguageClient, tmp_path: Path) -> None:
    text = GOOD.replace(
        "    next done\n}", "    on Lost -> done\n    on Lost -> done\n    next done\n}"
    ).replace(
        "service post.send(weight: decimal)",
        "error Lost\n\nservice post.send(weight: decimal) raises Lost",
    )
    found = await open_file(client, tmp_path / "ship.wf", text)
    [d] = [d for d in found if d.related_information]
    [related] = d.related_information or []
    assert related.message == "first handled here"
    assert related.location.uri == uri(tmp_path / "ship.wf")
    assert related.location.range == lsp.Range(lsp.Position(14, 7), lsp.Position(14, 11))


@pytest.mark.asyncio(loop_scope="module")
async def test_suppressions_are_those_of_wf_check(client: LanguageClient, tmp_path: Path) -> None:
    text = UNREACHABLE.replace("end spare: completed", "end spare: completed  // wf: ignore[WF201]")
    assert await open_file(client, tmp_path / "ship.wf", text) == []


@pytest.mark.asyncio(loop_scope="module")
async def test_the_configuration_is_that_of_the_project(
    client: LanguageClient, tmp_path: Path
) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.wflang.rules]\nWF201 = "warning"\n')
    [d] = await open_file(client, tmp_path / "ship.wf", UNREACHABLE)
    assert d.severity == lsp.DiagnosticSeverity.Warning


@pytest.mark.asyncio(loop_scope="module")
async def test_a_change_to_an_imported_file_rechecks_its_importers(
    client: LanguageClient, tmp_path: Path
) -> None:
    types = tmp_path / "types.wf"
    main = tmp_path / "main.wf"
    (tmp_path / "pyproject.toml").write_text("")
    shared = "type Parcel { weight: decimal }\n"
    importer = GOOD.replace("type Parcel { weight: decimal }", 'import "types.wf"')
    assert await open_file(client, types, shared) == []
    assert await open_file(client, main, importer) == []
    # the buffer's text counts, not the file's: the file on disk still declares Parcel
    seen = published(client).seen(main)
    await change_file(client, types, "type Box { weight: decimal }\n", 2)
    found = await published(client).after(main, seen)
    assert [d.code for d in found] == ["WF104"]
    assert "Parcel" in found[0].message


@pytest.mark.asyncio(loop_scope="module")
async def test_closing_a_file_clears_its_diagnostics(
    client: LanguageClient, tmp_path: Path
) -> None:
    path = tmp_path / "ship.wf"
    assert len(await open_file(client, path, UNREACHABLE)) == 1
    seen = published(client).seen(path)
    client.text_document_did_close(
        lsp.DidCloseTextDocumentParams(lsp.TextDocumentIdentifier(uri(path)))
    )
    assert await published(client).after(path, seen) == []
