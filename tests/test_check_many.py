"""One workflow with 25 distinct mistakes: one run reports all of them, each in place."""

from __future__ import annotations

from pathlib import Path

from wflang.compiler.check import check
from wflang.compiler.config import Config
from wflang.compiler.registry import Preset
from wflang.dsl.parser import parse_file

FILE = Path(__file__).parent / "data" / "many" / "twenty_five.wf"

EXPECTED = [
    ("WF105", 4, 6),  # type Item declared twice
    ("WF104", 7, 79),  # unknown type Timestmp
    ("WF304", 12, 8),  # signal never used
    ("WF304", 13, 17),  # error never used
    ("WF310", 21, 39),  # output into a context field that does not exist
    ("WF211", 24, 8),  # choice without else, enum not covered
    ("WF210", 26, 10),  # a guard repeated
    ("WF311", 28, 6),  # a required service parameter not passed
    ("WF310", 30, 25),  # result field that the service does not return
    ("WF306", 31, 40),  # max delay below initial delay
    ("WF306", 32, 13),  # a zero timeout
    ("WF307", 33, 5),  # 'on any' before another handler
    ("WF302", 43, 14),  # optional used unchecked
    ("WF212", 46, 6),  # a loop without a pause
    ("WF303", 50, 10),  # context read before any write
    ("WF213", 53, 10),  # a one-branch parallel
    ("WF207", 54, 12),  # a branch that never completes
    ("WF208", 57, 5),  # join 2 of 1 branch
    ("WF301", 60, 21),  # a string into a decimal field
    ("WF108", 63, 20),  # call of an unknown workflow
    ("WF205", 68, 10),  # an end with a successor
    ("WF311", 71, 6),  # a compensation without its argument
    ("WF404", 72, 16),  # compensation inside a compensation
    ("WF206", 77, 6),  # a node connected to nothing
    ("WF201", 79, 6),  # an unreachable node
]


def test_all_25_mistakes_are_reported_in_one_run_at_their_place() -> None:
    # Its fields are there to carry the other mistakes: unread-field would add noise.
    result = check([parse_file(str(FILE))], Config(Preset.ALL, {"WF305": None}))
    found = [(d.code, d.span.line, d.span.column) for d in result.diagnostics]
    assert len(EXPECTED) == 25
    assert found == EXPECTED
