"""The `.wf` samples in README.md and docs/*.md are kept honest, as the commands are
(tests/test_docs.py): every ```` ```wf ```` block parses, and a block that is a whole
workflow (it has its `workflow` line) checks without errors, read as if it sat beside
the examples (so that `import "shared_types.wf"` finds examples/shared_types.wf).

A fragment (a node, a type, a clause) is parsed after a `workflow` line of its own. A
whole workflow that is shown only in part (a header alone) is marked ```` ```wf partial ````
and is only parsed. docs/rules.md is left out: its bad examples are bad on purpose,
and tests/test_rules.py runs each against its rule."""

from __future__ import annotations

import re
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from attrs import frozen

from wflang.compiler.check import check
from wflang.dsl.diagnostics import Severity
from wflang.dsl.parser import parse

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
_FENCE = re.compile(r"^( *)```wf\b([^\n]*)\n(.*?)^\1```", re.M | re.S)
_HEADER = re.compile(r"^workflow ", re.M)


@frozen
class Sample:
    where: str  # file:line, for the test id
    text: str
    partial: bool

    @property
    def whole(self) -> bool:
        return bool(_HEADER.search(self.text))


def _samples() -> Iterator[Sample]:
    for doc in DOCS:
        if doc.name == "rules.md":
            continue
        text = doc.read_text(encoding="utf-8")
        for m in _FENCE.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            body = textwrap.dedent(m.group(3)) if m.group(1) else m.group(3)
            partial = "partial" in m.group(2).split()
            yield Sample(f"{doc.relative_to(ROOT)}:{line}", body, partial)


SAMPLES = list(_samples())


def test_the_docs_have_samples_to_check() -> None:
    """The fence pattern still finds them (a changed fence would pass every test below)."""
    assert len(SAMPLES) > 40
    assert sum(s.whole and not s.partial for s in SAMPLES) >= 4


@pytest.mark.parametrize("sample", SAMPLES, ids=[s.where for s in SAMPLES])
def test_every_sample_parses(sample: Sample) -> None:
    text = sample.text if sample.whole else "workflow doc version 1\n\n" + sample.text
    parsed = parse(text, sample.where)
    errors = [d.message for d in parsed.diagnostics if d.severity is Severity.ERROR]
    assert errors == [], f"{sample.where}: {errors}"


WHOLE = [s for s in SAMPLES if s.whole and not s.partial]


@pytest.mark.parametrize("sample", WHOLE, ids=[s.where for s in WHOLE])
def test_every_whole_workflow_checks(sample: Sample) -> None:
    beside_the_examples = str(ROOT / "examples" / "docs_sample.wf")
    result = check([parse(sample.text, beside_the_examples)])
    errors = [f"{d.code} {d.message}" for d in result.diagnostics if d.severity is Severity.ERROR]
    assert errors == [], f"{sample.where}: {errors}"
