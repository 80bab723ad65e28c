"""Hand-made version-2 edits of the examples, each with exactly the codes it should get.

Every case is a realistic edit a team would make to ``examples/*.wf``; the
expected codes are sorted, duplicates kept (one finding per element).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from wflang.compiler.diff import diff_specs
from wflang.dsl.parser import parse_bytes
from wflang.dsl.spec import WorkflowSpec

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

Edit = tuple[str, str]


def _spec(text: str, name: str) -> WorkflowSpec:
    parsed = parse_bytes(text.encode("utf-8"), name)
    assert parsed.spec is not None, parsed.diagnostics
    return parsed.spec


def evolve(name: str, *edits: Edit) -> tuple[WorkflowSpec, WorkflowSpec]:
    text = (EXAMPLES / name).read_text(encoding="utf-8")
    new = text
    for a, b in edits:
        assert a in new, a
        new = new.replace(a, b, 1)
    return _spec(text, name), _spec(new, "v2-" + name)


CASES: list[tuple[str, str, tuple[Edit, ...], list[str]]] = [
    (
        "optional-input-field",
        "payment_retry.wf",
        (
            ("workflow payment_retry version 2", "workflow payment_retry version 3"),
            ("    max_rounds: int = 3,\n", "    max_rounds: int = 3,\n    note: string?,\n"),
        ),
        ["WF606"],
    ),
    (
        "rename-a-node",
        "payment_retry.wf",
        (
            ("workflow payment_retry version 2", "workflow payment_retry version 3"),
            ("    next settle_delay\n", "    next cool_down\n"),
            ("sleep settle_delay 2m next charge", "sleep cool_down 2m next charge"),
        ),
        ["WF641", "WF643"],
    ),
    (
        "rename-a-node-declared",
        "payment_retry.wf",
        (
            ("    next settle_delay\n", "    next cool_down\n"),
            (
                "sleep settle_delay 2m next charge",
                "sleep cool_down 2m {\n    renamed from settle_delay\n    next charge\n}",
            ),
        ),
        ["WF656"],
    ),
    (
        "add-a-compensation",
        "payment_retry.wf",
        (
            (
                "    retry { attempts: 10, backoff: 1s..5m, factor: 2, jitter: 0.25 }\n",
                "    retry { attempts: 10, backoff: 1s..5m, factor: 2, jitter: 0.25 }\n"
                "    compensate reverse_entry\n",
            ),
            (
                "\nend paid: completed",
                "\ntask reverse_entry: service ledger.reverse {\n"
                "    args { payment_id: input.payment_id }\n}\n\nend paid: completed",
            ),
            (
                "service ops.dead_letter",
                "service ledger.reverse(payment_id: string)\n\nservice ops.dead_letter",
            ),
        ),
        ["WF648", "WF651"],
    ),
    (
        "change-a-retry",
        "payment_retry.wf",
        (
            (
                "    retry { attempts: 3, backoff: 30s }",
                "    retry { attempts: 5, backoff: 30s..2m }",
            ),
        ),
        ["WF649"],
    ),
    (
        "add-a-failed-end",
        "order_saga.wf",
        (
            (
                "    on any -> not_reserved\n",
                "    on ServiceUnavailable -> inventory_down\n    on any -> not_reserved\n",
            ),
            (
                "end not_reserved: failed\n",
                "end not_reserved: failed\n\nend inventory_down: failed\n",
            ),
        ),
        ["WF623"],
    ),
    (
        "retype-a-context-field",
        "payment_retry.wf",
        (
            ("workflow payment_retry version 2", "workflow payment_retry version 3"),
            ("last_error: string? }", "last_error: list[string]? }"),
            ('last_error: "card declined"', 'last_error: ["card declined"]'),
            ('reason: coalesce(context.last_error, "charge failed")', 'reason: "charge failed"'),
        ),
        ["WF647"],
    ),
    (
        "remove-a-signal",
        "loan_approval.wf",
        (
            ("workflow loan_approval version 1", "workflow loan_approval version 2"),
            ("signal documents_uploaded { count: int }\n\n", ""),
            (
                "wait await_documents: signal documents_uploaded {\n    timeout 14d -> withdrawn\n"
                "    next underwrite\n}",
                "sleep await_documents 14d next underwrite",
            ),
        ),
        ["WF609", "WF642", "WF644", "WF650"],
    ),
    (
        "bump-a-call-version",
        "customer_onboarding.wf",
        (("call kyc: workflow kyc_check version 2 {", "call kyc: workflow kyc_check version 3 {"),),
        ["WF627"],
    ),
    (
        "add-a-step-on-a-path",
        "order_saga.wf",
        (
            (
                "    next shipped\n}",
                "    next audit\n}\n\ntask audit: script {\n    output { total: context.total }\n    next shipped\n}",
            ),
        ),
        ["WF643", "WF648"],
    ),
    (
        "change-a-join-policy",
        "kyc_check.wf",
        (("    join all -> check_documents", "    join any -> check_documents"),),
        ["WF653"],
    ),
    (
        "make-a-timeout-longer",
        "kyc_check.wf",
        (("    timeout 1h -> manual_review", "    timeout 4h -> manual_review"),),
        ["WF650"],
    ),
]


@pytest.mark.parametrize(
    ("example", "edits", "expected"),
    [pytest.param(e, ed, x, id=i) for i, e, ed, x in CASES],
)
def test_evolution(example: str, edits: tuple[Edit, ...], expected: list[str]) -> None:
    old, new = evolve(example, *edits)
    got = sorted(c.diagnostic.code for c in diff_specs(old, new).changes)
    assert got == expected
