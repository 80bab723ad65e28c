"""A compensated end reports the error it declares, or none: never its own name as an
error name (issue 12, checker item 4). The stores' side is in
tests/store/test_compensated_end.py."""

from __future__ import annotations

import pytest

from wflang.compiler.compile import compile_workflow
from wflang.dsl.parser import parse
from wflang.runtime.table import Table
from wflang.testing import WorkflowEnv, permanent, succeed

SAGA = """\
workflow undo_end version 1

error Declined

service s.book() raises Declined

service s.charge() raises Declined

service s.unbook()

input { how: string }

start book

task book: service s.book {
    compensate unbook
    next charge
}

task charge: service s.charge {
    on Declined -> which
    next done
}

choice which {
    when input.how == "plain" -> rolled_back
    when input.how == "named" -> declined
    else -> gave_up
}

task unbook: service s.unbook {}

end done: completed

end rolled_back: compensated

end declined: compensated {
    error Declined
}

end gave_up: failed
"""

#: (how, status, error): a failed end with no error still names where it stopped.
CASES = [
    ("plain", "compensated", None),
    ("named", "compensated", "Declined"),
    ("other", "failed", "gave_up"),
]


def saga_table() -> Table:
    result = compile_workflow(parse(SAGA, "undo_end.wf"))
    assert result.table is not None, [d.message for d in result.check.diagnostics]
    return result.table


@pytest.mark.parametrize(("how", "status", "error"), CASES)
def test_a_compensated_end_reports_the_error_it_declares(
    how: str, status: str, error: str | None
) -> None:
    env = WorkflowEnv(
        [saga_table()],
        {"s.book": succeed(), "s.charge": permanent("Declined"), "s.unbook": succeed()},
    )
    iid = env.start("undo_end", {"how": how})
    assert (env.status(iid), env.instance(iid).error) == (status, error)  # was "rolled_back"
    assert env.services_called().count("s.unbook") == (status == "compensated")
    assert env.replay(iid).ok
