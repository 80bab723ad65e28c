"""Code actions and rename (issue 16), over stdio against ``wf lsp``: each quick fix is
applied to the buffer and the file checked again, clean."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest
from lsprotocol import types as lsp
from pytest_lsp import LanguageClient

from tests.lsp.conftest import change_file, open_file, published, uri
from tests.lsp.sample import SHIP, TYPES, position, project

pytestmark = pytest.mark.asyncio(loop_scope="module")

CHOICE = SHIP.replace("start send", "start pick").replace(
    "// Sends the parcel.",
    "choice pick {\n    when input.speed == Speed.fast -> send\n}\n\n// Sends the parcel.",
)
SIGNAL = SHIP.replace(
    "    next done\n}",
    "    next approval\n}\n\nwait approval: signal approve {\n    timeout 1d -> done\n    next done\n}",
)
SERVICE = SHIP.replace(
    "    next done\n}",
    '    next track\n}\n\ntask track: service post.track {\n    args { id: "x", weight: input.parcel.weight }\n    next done\n}',
)


def applied(text: str, edits: Sequence[lsp.TextEdit]) -> str:
    lines = text.splitlines(keepends=True)

    def at(p: lsp.Position) -> int:
        return sum(len(x) for x in lines[: p.line]) + p.character

    for e in sorted(edits, key=lambda e: at(e.range.start), reverse=True):
        text = text[: at(e.range.start)] + e.new_text + text[at(e.range.end) :]
    return text


async def fixed(client: LanguageClient, folder: Path, text: str, title: str, code: str) -> None:
    """Open ``text``, take the action ``title`` on its finding ``code``, apply it: the
    file checks clean."""
    ship, _ = project(folder)
    [finding] = [d for d in await open_file(client, ship, text) if d.code == code]
    actions = await client.text_document_code_action_async(
        lsp.CodeActionParams(
            lsp.TextDocumentIdentifier(uri(ship)), finding.range, lsp.CodeActionContext([finding])
        )
    )
    found = {a.title: a for a in actions or [] if isinstance(a, lsp.CodeAction)}
    assert title in found, list(found)
    edit = found[title].edit
    assert edit is not None and edit.changes is not None
    assert list(edit.changes) == [uri(ship)]
    assert await change_file(client, ship, applied(text, edit.changes[uri(ship)]), 2) == []


async def test_a_did_you_mean_is_a_quick_fix(client: LanguageClient, tmp_path: Path) -> None:
    await fixed(
        client, tmp_path, SHIP.replace("next done", "next don"), "Change to 'done'", "WF102"
    )


async def test_add_a_missing_next(client: LanguageClient, tmp_path: Path) -> None:
    await fixed(client, tmp_path, SHIP.replace("    next done\n", ""), "Add 'next done'", "WF203")


async def test_add_a_missing_else(client: LanguageClient, tmp_path: Path) -> None:
    await fixed(client, tmp_path, CHOICE, "Add 'else -> send'", "WF211")


async def test_add_the_uncovered_enum_members(client: LanguageClient, tmp_path: Path) -> None:
    await fixed(client, tmp_path, CHOICE, "Add the uncovered cases (Speed.slow)", "WF211")


async def test_declare_an_unknown_signal(client: LanguageClient, tmp_path: Path) -> None:
    await fixed(client, tmp_path, SIGNAL, "Declare 'signal approve'", "WF104")


async def test_declare_an_unknown_service(client: LanguageClient, tmp_path: Path) -> None:
    title = "Declare 'service post.track(id: string, weight: decimal)'"
    await fixed(client, tmp_path, SERVICE, title, "WF104")


async def test_suppress_a_finding_on_its_line(client: LanguageClient, tmp_path: Path) -> None:
    spare = SHIP.replace("end failed: failed", "end failed: failed\n\nend spare: completed")
    await fixed(client, tmp_path, spare, "Suppress WF201 on this line", "WF201")


async def rename(
    client: LanguageClient, path: Path, where: tuple[int, int], new: str
) -> lsp.WorkspaceEdit | None:
    return await client.text_document_rename_async(
        lsp.RenameParams(lsp.TextDocumentIdentifier(uri(path)), lsp.Position(*where), new)
    )


async def test_rename_a_type_across_two_files(client: LanguageClient, tmp_path: Path) -> None:
    ship, types = project(tmp_path)
    assert await open_file(client, types) == []
    assert await open_file(client, ship) == []
    got = await rename(client, types, (0, 7), "Package")
    assert got is not None and got.changes is not None
    new_types = applied(TYPES, got.changes[uri(types)])
    new_ship = applied(SHIP, got.changes[uri(ship)])
    assert new_types == "type Package { weight: decimal }\n"
    assert new_ship == SHIP.replace("parcel: Parcel", "parcel: Package")
    seen = published(client).seen(ship)
    await change_file(client, types, new_types, 2)
    await published(client).after(ship, seen)  # ship.wf checked again, with the old name
    assert await change_file(client, ship, new_ship, 2) == []


async def test_rename_a_node_declares_its_old_name(client: LanguageClient, tmp_path: Path) -> None:
    ship, _ = project(tmp_path)
    assert await open_file(client, ship) == []
    got = await rename(client, ship, position(SHIP, "start send", 0, 7), "dispatch")
    assert got is not None and got.changes is not None
    new = applied(SHIP, got.changes[uri(ship)])
    assert new == SHIP.replace("start send", "start dispatch").replace(
        "task send: service post.send {", "task dispatch: service post.send {"
    ).replace("    next done\n}", "    next done\n    renamed from send\n}")
    assert await change_file(client, ship, new, 2) == []


async def test_a_rename_that_changes_behaviour_is_refused(
    client: LanguageClient, tmp_path: Path
) -> None:
    ship, _ = project(tmp_path)
    assert await open_file(client, ship) == []
    with pytest.raises(Exception, match="'Lost' is not renamed: handlers raise errors by name"):
        await rename(client, ship, position(SHIP, "error Lost", 0, 7), "Missing")
    with pytest.raises(Exception, match="there is a node 'done' already"):
        await rename(client, ship, position(SHIP, "start send", 0, 7), "done")
    with pytest.raises(
        Exception, match=r"'post\.send' is not renamed: a service's name is the key"
    ):
        await client.text_document_prepare_rename_async(
            lsp.PrepareRenameParams(
                lsp.TextDocumentIdentifier(uri(ship)),
                lsp.Position(*position(SHIP, "post.send {", 0, 2)),
            )
        )
