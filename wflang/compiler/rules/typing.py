"""Type rules (WF3xx, WF211): every expression typed where it is used.

The typing itself is the compiler's (``compiler/inference.py``, computed once per
model); each rule here reports one kind of problem it found.
"""

from __future__ import annotations

from collections.abc import Iterator

from wflang.compiler.guards import uncovered_cases
from wflang.compiler.inference import type_env, typing_of
from wflang.compiler.model import Model
from wflang.compiler.registry import Finding, Pass, rule
from wflang.dsl import spec as sp
from wflang.dsl.diagnostics import Severity


def _findings(m: Model, kind: str) -> Iterator[Finding]:
    for p in typing_of(m).problems:
        if p.kind == kind:
            yield Finding(p.message, p.span, p.hint)


@rule(
    "WF301",
    "type-mismatch",
    severity=Severity.ERROR,
    category="type",
    pass_=Pass.TYPES,
    summary="Checks that every expression has the type its place needs.",
)
def type_mismatch(m: Model) -> Iterator[Finding]:
    """Guards are ``bool``; timeouts and sleeps are durations; ``until`` is a
    timestamp; a message's correlation is a ``string`` or an ``int``; mapped
    values fit the field they fill; operators get operands they apply to.

    Bad:

        choice c { when input.amount -> big else -> small }

    Good:

        choice c { when input.amount > 1000 -> big else -> small }
    """
    yield from _findings(m, "mismatch")


@rule(
    "WF310",
    "unknown-field",
    severity=Severity.ERROR,
    category="type",
    pass_=Pass.TYPES,
    summary="Checks that every path and every mapped name exists.",
)
def unknown_field(m: Model) -> Iterator[Finding]:
    """``input.x``, ``context.x``, ``result.x`` (the service result, the form,
    the called workflow's output; on a map, ``result[i].x``, its items' outputs),
    ``signal.x``, ``message.x`` and ``item.x``
    follow their declarations; ``args`` name parameters; ``output`` names
    context fields (or, on an ``end``, the workflow's output fields; in a map's
    body, an ``end`` gives the item's own fields, which the map reads in
    ``result``).

    Bad:

        task t: service inv.reserve { output { reservation: result.reservation } next done }

    Good:

        task t: service inv.reserve { output { reservation: result.reservation_id } next done }
    """
    yield from _findings(m, "unknown-field")


@rule(
    "WF311",
    "missing-field",
    severity=Severity.ERROR,
    category="type",
    pass_=Pass.TYPES,
    summary="Checks that required parameters and outputs are given.",
)
def missing_field(m: Model) -> Iterator[Finding]:
    """A service's or sub-workflow's required inputs (no default, not optional)
    are passed in ``args``; a ``completed`` end gives every required output.

    Bad:

        service pay.charge(amount: decimal, card: string)
        task charge: service pay.charge { args { amount: input.amount } next done }

    Good:

        task charge: service pay.charge { args { amount: input.amount, card: input.card } next done }
    """
    for miss in typing_of(m).missing:
        yield Finding(miss.message, miss.span, miss.hint)


@rule(
    "WF302",
    "optional-unchecked",
    severity=Severity.WARNING,
    category="type",
    pass_=Pass.TYPES,
    summary="Checks that optional values are checked for null before use.",
)
def optional_unchecked(m: Model) -> Iterator[Finding]:
    """A ``T?`` value may be null; reading a field of it, computing with it, or
    passing it where a ``T`` is needed fails at run time unless it was checked:
    by a guard before it in the same expression, by a choice on every path to
    it, or by a step on every path to it writing a value that cannot be null.

    Bad:

        choice c { when context.charge.amount > 0 -> refund else -> done }

    Good:

        choice c { when context.charge != null and context.charge.amount > 0 -> refund else -> done }
    """
    yield from _findings(m, "optional")


@rule(
    "WF211",
    "non-exhaustive-choice",
    severity=Severity.WARNING,
    category="graph",
    pass_=Pass.TYPES,
    summary="Checks that a choice without 'else' covers every case of what it tests.",
)
def non_exhaustive_choice(m: Model) -> Iterator[Finding]:
    """Without ``else``, an instance whose data matches no guard is stuck. A
    choice is exhaustive without ``else`` when its guards cover every member of
    an enum, or a boolean and its negation.

    Bad:

        choice c { when input.priority == Priority.high -> fast }

    Good:

        choice c { when input.priority == Priority.high -> fast else -> normal }
    """
    env = type_env(m)
    for node in m.all_nodes():
        if not isinstance(node, sp.ChoiceNode) or not node.arms:
            continue
        if any(arm.guard is None for arm in node.arms):
            continue
        uncovered = uncovered_cases(env, node)
        if uncovered is None:
            continue
        why = "its guards may all be false"
        if uncovered:
            names = [f"{enum}.{member}" if member else "null" for enum, member in uncovered]
            verb = "is" if len(names) == 1 else "are"
            why = f"{_listing(names)} {verb} not covered"
        yield Finding(
            f"choice '{node.name.text}' has no 'else' and {why}",
            node.name.span,
            hint="add 'else -> …', or cover every case",
        )


def _listing(names: list[str]) -> str:
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"
