"""What the rules say and where: messages, spans and related locations that the
fixture tests (codes and lines only) do not pin down."""

from __future__ import annotations

from wflang.compiler.check import check
from wflang.compiler.config import Config
from wflang.compiler.registry import Preset
from wflang.dsl.diagnostics import Diagnostic
from wflang.dsl.parser import parse


def diagnostics(source: str, code: str | None = None) -> list[Diagnostic]:
    """The findings of one source under the ``all`` preset (of one code, if given)."""
    result = check([parse(source, "w.wf")], Config(Preset.ALL))
    return [d for d in result.diagnostics if code is None or d.code == code]


def messages(source: str, code: str) -> list[str]:
    return [d.message for d in diagnostics(source, code)]


def test_a_choice_missing_enum_members_names_them() -> None:
    source = """workflow w version 1
enum Color { red, green, blue }
input { c: Color, d: Color? }
start one
choice one { when input.c == Color.red -> two when input.c == Color.green -> two }
choice two { when input.c == Color.red -> three }
choice three {
    when input.d == Color.red -> done
    when input.d == Color.green -> done
    when input.d == Color.blue -> done
}
end done: completed
"""
    assert messages(source, "WF211") == [
        "choice 'one' has no 'else' and Color.blue is not covered",
        "choice 'two' has no 'else' and Color.green and Color.blue are not covered",
        "choice 'three' has no 'else' and null is not covered",
    ]


def test_a_compensation_with_nothing_to_undo_is_reported_at_the_registering_step() -> None:
    source = """workflow w version 1
service pay.refund()
start total
task total: script {
    compensate refund
    next done
}
task refund: service pay.refund {}
end done: completed
"""
    [found] = diagnostics(source, "WF403")
    assert found.message == "'total' has no external effect for 'refund' to undo"
    assert (found.span.line, found.span.column) == (4, 6)  # the step, not its clause
    [related] = found.related
    assert (related.span.line, related.span.column) == (8, 6)  # the handler
    assert related.message == "the compensation it registers"
