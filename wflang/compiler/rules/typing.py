"""Type rules (WF3xx, WF211): every expression typed where it is used.

The typing itself is the compiler's (``compiler/inference.py``, computed once per
model); each rule here reports one kind of problem it found.
"""

from __future__ import annotations

from collections.abc import Iterator

from wflang.compiler.guards import uncovered_cases
from wflang.compiler.handled_errors import PAYLOAD_PROBLEM
from wflang.compiler.inference import type_env, typing_of
from wflang.compiler.model import Model
from wflang.compiler.registry import Finding, Pass, rule
from wflang.compiler.types import ASSIGNEE, LAMBDA, LIST_ELEMENT, PREDICATE, PROJECTION
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
    "WF320",
    "list-item-type",
    severity=Severity.ERROR,
    category="type",
    pass_=Pass.TYPES,
    summary="Checks that what reads the items of a list gets items it applies to.",
)
def list_item_type(m: Model) -> Iterator[Finding]:
    """``sum``, ``min`` and ``max`` of a list add or order its items, which must be
    numbers or durations; ``+`` joins two lists whose items are of one type;
    ``contains`` and ``in`` look for a value of the items' type; ``any``, ``all``,
    ``filter`` and ``map`` go over a list.

    Bad:

        type Line { sku: string, amount: decimal }
        input { lines: list[Line], skus: list[string] }
        output { total: decimal, all_skus: list[string] }
        start done
        end done: completed { output { total: sum(input.skus), all_skus: input.skus + input.lines } }

    Good:

        type Line { sku: string, amount: decimal }
        input { lines: list[Line], skus: list[string] }
        output { total: decimal, all_skus: list[string] }
        start done
        end done: completed { output { total: sum(input.lines[*].amount), all_skus: input.skus + input.lines[*].sku } }
    """
    yield from _findings(m, LIST_ELEMENT)


@rule(
    "WF340",
    "assignee-type",
    severity=Severity.ERROR,
    category="type",
    pass_=Pass.TYPES,
    summary="Checks that the assignee of a user or manual task is a string.",
)
def assignee_type(m: Model) -> Iterator[Finding]:
    """A user or manual task is assigned to a person or a group by name: its assignee,
    evaluated when the task is entered, is a ``string`` (a ``string?`` must be checked
    or given a fallback with ``coalesce``, WF302).

    Bad:

        input { manager_id: int }
        start approve
        task approve: user input.manager_id { next done }
        end done: completed

    Good:

        input { manager: string?, manager_id: int }
        start approve
        task approve: user coalesce(input.manager, "finance-team") { next done }
        end done: completed
    """
    yield from _findings(m, ASSIGNEE)


@rule(
    "WF321",
    "predicate-not-bool",
    severity=Severity.ERROR,
    category="type",
    pass_=Pass.TYPES,
    summary="Checks that the predicate of any, all and filter is a bool.",
)
def predicate_not_bool(m: Model) -> Iterator[Finding]:
    """The lambda given to ``any``, ``all`` or ``filter`` says whether an item is
    taken: its body is a ``bool``, not the value of a field.

    Bad:

        type Line { sku: string, qty: int }
        input { lines: list[Line] }
        start c
        choice c { when any(input.lines, l => l.qty) -> done else -> done }
        end done: completed

    Good:

        type Line { sku: string, qty: int }
        input { lines: list[Line] }
        start c
        choice c { when any(input.lines, l => l.qty > 5) -> done else -> done }
        end done: completed
    """
    yield from _findings(m, PREDICATE)


@rule(
    "WF322",
    "projection-field",
    severity=Severity.ERROR,
    category="type",
    pass_=Pass.TYPES,
    summary="Checks that 'xs[*].field' projects a field the items of a list have.",
)
def projection_field(m: Model) -> Iterator[Finding]:
    """``xs[*].a.b`` is the list of every item's ``.a.b``: ``xs`` is a list, its
    items are records with a field ``a`` (and so on), and ``[*]`` is followed by
    the field it projects.

    Bad:

        type Line { sku: string, amount: decimal }
        input { lines: list[Line] }
        output { total: decimal }
        start done
        end done: completed { output { total: sum(input.lines[*].price) } }

    Good:

        type Line { sku: string, amount: decimal }
        input { lines: list[Line] }
        output { total: decimal }
        start done
        end done: completed { output { total: sum(input.lines[*].amount) } }
    """
    yield from _findings(m, PROJECTION)


@rule(
    "WF323",
    "misplaced-lambda",
    severity=Severity.ERROR,
    category="type",
    pass_=Pass.TYPES,
    summary="Checks that lambdas are only given to any, all, filter and map, with a new name.",
    blocks=True,
)
def misplaced_lambda(m: Model) -> Iterator[Finding]:
    """``x => …`` is the second argument of ``any``, ``all``, ``filter`` or ``map``
    and nothing else; those four take one. Its name is new where it is written: it
    may not hide a root (``input``, ``context``, ``result``…), a map's item, an
    outer lambda's name or a type, so that a name always means one thing.

    Bad:

        type Line { sku: string, qty: int }
        input { lines: list[Line] }
        start each
        map each over input.lines as line {
            choice c { when any(input.lines, line => line.qty > 5) -> ok else -> ok }
            end ok: completed
            next done
        }
        end done: completed

    Good:

        type Line { sku: string, qty: int }
        input { lines: list[Line] }
        start each
        map each over input.lines as line {
            choice c { when any(input.lines, other => other.qty > line.qty) -> ok else -> ok }
            end ok: completed
            next done
        }
        end done: completed
    """
    yield from _findings(m, LAMBDA)


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


@rule(
    "WF330",
    "error-unavailable",
    severity=Severity.ERROR,
    category="type",
    pass_=Pass.TYPES,
    summary="Checks that 'error' is read only where an error is being handled.",
)
def error_unavailable(m: Model) -> Iterator[Finding]:
    """``error`` (the error being handled: ``error.name``, ``error.message``,
    ``error.payload``) is read in the node an ``on`` route leads to, and there
    only when every way into that node is an error route: a node also reached by
    a ``next``, a guard or a timeout, the first node of a flow, or a compensation
    would have no error to read.

    Bad:

        task charge: service pay.charge { on Declined -> notify next notify }
        task notify: service mail.send { args { why: error.message } next done }

    Good:

        task charge: service pay.charge { on Declined -> notify next done }
        task notify: service mail.send { args { why: error.message } next done }
    """
    yield from _findings(m, "error-unavailable")


@rule(
    "WF331",
    "error-payload",
    severity=Severity.ERROR,
    category="type",
    pass_=Pass.TYPES,
    summary="Checks that an error's payload is read only where it is known, by its fields.",
)
def error_payload(m: Model) -> Iterator[Finding]:
    """``error.payload`` is the payload declared with the error
    (``error InsufficientFunds { missing: decimal }``), typed by its fields. It can
    be read only when exactly one error can arrive, declared with a payload, and
    every route there brings it: a task's, or a parallel's, a map's or a call's
    whose branches, items or called workflow let the error out only with its
    payload (raised by a task, or re-raised by an end that handles it; a called
    workflow must declare the error with the same fields). Elsewhere only
    ``error.name`` and ``error.message`` are known. A field the payload does not
    declare is an error too.

    Bad:

        error InsufficientFunds { missing: decimal }
        task debit: service bank.debit { on InsufficientFunds, Frozen -> topup next done }
        task topup: service bank.ask { args { amount: error.payload.missing } next done }

    Good:

        error InsufficientFunds { missing: decimal }
        task debit: service bank.debit { on InsufficientFunds -> topup on Frozen -> done next done }
        task topup: service bank.ask { args { amount: error.payload.missing } next done }
    """
    yield from _findings(m, PAYLOAD_PROBLEM)
