"""``compiler/fixes.py``: quick fixes as edits computed from findings (the language
server's code actions; ``wf check --fix`` applies the safe ones)."""

from __future__ import annotations

from wflang.compiler.check import check
from wflang.compiler.fixes import Edit, apply, fixes, safe_edits, suppression
from wflang.dsl.parser import parse
from wflang.dsl.span import Span

FLOW = """workflow w version 1

service s.a()

start a

task a: service s.a {
    next don
}

task b: service s.a {
    next a
}

end done: completed
"""


def _check(text: str) -> tuple[list[str], str]:
    result = check([parse(text, "w.wf")])
    return [d.code for d in result.diagnostics], text


def test_apply_makes_edits_from_the_last() -> None:
    text = "abc\ndef\n"
    edits = [Edit(Span("f", 1, 1, 1, 2), "X"), Edit(Span("f", 2, 4, 2, 4), "!")]
    assert apply(text, edits) == "Xbc\ndef!\n"


def test_safe_edits_repair_the_misspelt_names_only() -> None:
    result = check([parse(FLOW, "w.wf")])
    assert [d.code for d in result.diagnostics] == ["WF102"]
    fixed = apply(FLOW, safe_edits(result.diagnostics, result.models["w.wf"], FLOW))
    assert fixed == FLOW.replace("next don", "next done")
    # the unreachable node, found now, is a choice for the author: no safe fix
    assert _check(fixed)[0] == ["WF201"]
    again = check([parse(fixed, "w.wf")])
    assert safe_edits(again.diagnostics, again.models["w.wf"], fixed) == []


FIXED = FLOW.replace("next don", "next done")


def test_every_finding_can_be_suppressed_and_suppressions_merge() -> None:
    result = check([parse(FIXED, "w.wf")])
    spec = result.program.modules["w.wf"].spec if result.program else None
    unreachable = next(d for d in result.diagnostics if d.code == "WF201")
    fix = suppression(unreachable, spec, FIXED)
    assert fix is not None
    quiet = apply(FIXED, fix.edits)
    assert "task b: service s.a {  // wf: ignore[WF201]" in quiet
    again = check([parse(quiet.replace("[WF201]", "[WF203]"), "w.wf")])
    d = next(d for d in again.diagnostics if d.code == "WF201")
    spec = again.program.modules["w.wf"].spec if again.program else None
    merged = suppression(d, spec, quiet.replace("[WF201]", "[WF203]"))
    assert merged is not None
    assert "// wf: ignore[WF203, WF201]" in apply(quiet.replace("[WF201]", "[WF203]"), merged.edits)


def test_a_line_with_a_comment_is_suppressed_from_the_line_above() -> None:
    text = FIXED.replace("task b: service s.a {", "task b: service s.a {  // kept")
    result = check([parse(text, "w.wf")])
    d = next(d for d in result.diagnostics if d.code == "WF201")
    spec = result.program.modules["w.wf"].spec if result.program else None
    fix = suppression(d, spec, text)
    assert fix is not None
    quiet = apply(text, fix.edits)
    assert "// wf: ignore[WF201]\ntask b: service s.a {  // kept" in quiet
    assert "WF201" not in _check(quiet)[0]


def test_fixes_of_a_finding_name_its_code() -> None:
    result = check([parse(FLOW, "w.wf")])
    d = result.diagnostics[0]
    [fix] = fixes(d, result.models["w.wf"], FLOW)
    assert (fix.title, fix.code, fix.safe) == ("Change to 'done'", "WF102", True)
