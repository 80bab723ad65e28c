"""The language server's index knows what a send task names (issue 15): the signal or
message it sends and the payload fields its ``args`` fill, so that references, hover
and rename reach them as they reach a wait's. In process, on the server's own index
(the stdio round trip of these queries: tests/lsp/test_queries.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.lsp.sample import position
from wflang.lsp.analysis import Analysis
from wflang.lsp.edits import RenameRefused, rename_edits, renamed
from wflang.lsp.navigate import Index, hover_text

SOURCE = """\
workflow relay version 1

input { order: string, peer: string }

signal nudge { reason: string }

message shipped { order: string, carrier: string }

start poke

task poke: send signal nudge to input.peer {
    args { reason: "late" }
    next publish
}

task publish: send message shipped correlate input.order {
    args { order: input.order, carrier: "acme" }
    next listen
}

wait listen: signal nudge {
    next done
}

end done: completed
"""


def index_of(tmp_path: Path) -> tuple[Index, str]:
    path = str(tmp_path / "relay.wf")
    analysis = Analysis()
    analysis.open(path, SOURCE)
    assert analysis.checked(path).result.diagnostics == ()
    return Index(analysis), path


def spot(needle: str, nth: int = 0, offset: int = 0) -> tuple[int, int]:
    """The cursor on ``needle`` as a span's 1-based (line, column)."""
    line, character = position(SOURCE, needle, nth, offset)
    return line + 1, character + 1


def lines_of(index: Index, path: str, needle: str, nth: int = 0, offset: int = 0) -> list[str]:
    """Where the name under ``needle`` occurs, as ``LINE:COLUMN``, in source order."""
    found = index.under(path, *spot(needle, nth, offset))
    assert found is not None and found.target is not None, needle
    return [f"{o.span.line}:{o.span.column}" for o in index.references(found.target, path)]


def test_a_sent_signal_is_a_reference_of_its_declaration(tmp_path: Path) -> None:
    index, path = index_of(tmp_path)
    # declared on line 5, sent on line 11, waited for on line 21: one name
    expected = ["5:8", "11:24", "21:21"]
    assert lines_of(index, path, "signal nudge {", 0, 7) == expected
    assert lines_of(index, path, "send signal nudge", 0, 12) == expected


def test_a_sent_message_and_its_payload_fields(tmp_path: Path) -> None:
    index, path = index_of(tmp_path)
    assert lines_of(index, path, "send message shipped", 0, 13) == ["7:9", "16:28"]
    # the args of a send fill the payload: 'carrier' is the message's field
    assert lines_of(index, path, "carrier: string") == ["7:34", "17:32"]
    assert lines_of(index, path, 'reason: "late"') == ["5:16", "12:12"]


def test_hover_on_a_send_target_shows_its_declaration(tmp_path: Path) -> None:
    index, path = index_of(tmp_path)
    checked = index.analysis.checked(path)
    text = hover_text(index, checked, *spot("send message shipped", 0, 13))
    assert text == "```wf\nmessage shipped { order: string, carrier: string }\n```"
    text = hover_text(index, checked, *spot('carrier: "acme"'))
    assert text is not None and text.startswith("```wf\ncarrier: string\n```")


def test_a_rename_at_a_send_is_the_rename_of_its_signal(tmp_path: Path) -> None:
    """Renaming a signal is refused wherever it is asked (senders outside the file
    deliver it by name), at a send as at its declaration; what it would edit is every
    occurrence, the sends among them."""
    index, path = index_of(tmp_path)
    with pytest.raises(RenameRefused) as at_send:
        renamed(index, path, *spot("send signal nudge", 0, 12))
    with pytest.raises(RenameRefused) as at_declaration:
        renamed(index, path, *spot("signal nudge {", 0, 7))
    assert str(at_send.value) == str(at_declaration.value)
    assert "senders deliver a signal by its name" in str(at_send.value)
    found = index.under(path, *spot("send signal nudge", 0, 12))
    assert found is not None
    edits = rename_edits(index, path, found, "poke_peer")
    assert sorted((e.span.line, e.span.column, e.text) for e in edits) == [
        (5, 8, "poke_peer"), (11, 24, "poke_peer"), (21, 21, "poke_peer"),
    ]  # fmt: skip
