"""Workflows of the console's tests, deployed from files so that their source is kept
(the diagram is drawn from it)."""

from __future__ import annotations

from pathlib import Path

from wflang.compiler.compile import compile_workflow
from wflang.dsl.parser import parse_file
from wflang.runtime.table import Table

from ..store.kit import OPSFLOW

BOTTOM = """\
workflow child_flow version 1

output { reached: int }

signal go {}

start bottom

wait bottom: signal go {
    next done
}

end done: completed {
    output { reached: 1 }
}
"""

TOP = """\
workflow parent_flow version 1

import "child_flow.wf"

output { reached: int }

context { reached: int = 0 }

start deeper

call deeper: workflow child_flow version 1 {
    output { reached: result.reached }
    next done
}

end done: completed {
    output { reached: context.reached + 1 }
}
"""


REVIEW = """\
workflow review_flow version 1

enum Level { low, high }

input { id: string }

context { amount: decimal = 0, level: Level = Level.low, ok: bool = false, note: string? }

start review

task review: user "finance" {
    form { ok: bool, amount: decimal, level: Level, note: string?, count: int = 1 }
    output { ok: result.ok, amount: result.amount, level: result.level, note: result.note }
    next done
}

end done: completed
"""


def written(folder: Path) -> dict[str, tuple[Table, str]]:
    """Each workflow's table and the file it was compiled from, by name."""
    texts = {"opsflow": OPSFLOW.format(version=1, end="done"), "child_flow": BOTTOM,
             "parent_flow": TOP, "review_flow": REVIEW}  # fmt: skip
    found = {}
    for name, text in texts.items():
        path = folder / f"{name}.wf"
        path.write_text(text)
        compiled = compile_workflow(parse_file(path))
        assert compiled.table is not None, [d.message for d in compiled.check.diagnostics]
        found[name] = (compiled.table, str(path))
    return found
