"""The language server and boundary signals and messages (issue 15 item 1): the index
finds a signal or message named by an ``on signal`` / ``on message`` route (its
references, definition and hover), the route's target node, the context field its
``output`` writes; completion offers the signals after ``on signal`` and the payload's
fields after ``signal.`` in the route's ``output``."""

from __future__ import annotations

from pathlib import Path

from wflang.compiler.check import check
from wflang.compiler.model import Model
from wflang.dsl.parser import parse_file
from wflang.lsp.complete import completions
from wflang.lsp.index import occurrences

EVENTS = Path(__file__).resolve().parents[1] / "data" / "boundary" / "events.wf"


def model() -> Model:
    result = check([parse_file(EVENTS)])
    return result.models[str(EVENTS)]


def line_of(text: str, needle: str, nth: int = 1) -> int:
    """The 1-based line of the ``nth`` line holding ``needle``."""
    found = [i + 1 for i, line in enumerate(text.splitlines()) if needle in line]
    return found[nth - 1]


def test_the_index_finds_signals_messages_targets_and_fields_of_boundary_events() -> None:
    m = model()
    text = EVENTS.read_text()
    found = occurrences(m)
    cancel = [o for o in found if o.kind == "signal" and o.name == "cancel"]
    declared = m.signals["cancel"].name.span
    # The declaration and the four routes that catch it (task, user task, call, parallel).
    assert sorted(o.span.line for o in cancel) == sorted(
        [declared.line, *(line_of(text, "on signal cancel", n) for n in range(1, 5))]
    )
    assert all(o.target == declared for o in cancel)
    scanned = [o for o in found if o.kind == "message" and o.name == "scanned"]
    assert len(scanned) == 3  # declared, caught by the task and by the map
    # A route's target is a reference to its node; its output writes a context field.
    seen = line_of(text, "non-interrupting -> seen")
    assert any(o.kind == "node" and o.name == "seen" and o.span.line == seen for o in found)
    tracking = line_of(text, "output { tracking: message.tracking }")
    assert any(
        o.kind == "field" and o.name == "tracking" and o.span.line == tracking for o in found
    )


def test_completion_after_on_signal_and_in_a_route_s_output() -> None:
    m = model()
    text = EVENTS.read_text()
    after = {i.label for i in completions(m, "    on signal ", line_of(text, "on signal nudge"))}
    assert after == {"cancel", "nudge"}
    line = line_of(text, "output { reason: signal.reason }")
    fields = {i.label for i in completions(m, "        output { reason: signal.", line)}
    assert fields == {"reason"}
    line = line_of(text, "output { tracking: message.tracking }")
    fields = {i.label for i in completions(m, "        output { tracking: message.", line)}
    assert fields == {"tracking"}
