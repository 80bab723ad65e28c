"""Type rules (WF3xx): every expression typed where it is used.

One walk (``typed_sites``) visits every expression of a workflow with the
names it may use (its roots) and the type it must have; the rules below report
the kinds of problem that walk finds. The walk is cached on the model, so the
rules share it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from attrs import frozen

from wflang.compiler.dataflow import must_analysis
from wflang.compiler.map_items import element, item_outputs
from wflang.compiler.model import ABORTED, Model, context_writes
from wflang.compiler.registry import Finding, Pass, rule
from wflang.compiler.rules.names import did_you_mean
from wflang.compiler.types import (
    BOOL,
    DURATION,
    INT,
    NULL,
    STRING,
    TIMESTAMP,
    UNKNOWN,
    Enum,
    EnumNamespace,
    Inference,
    ListT,
    Opt,
    Record,
    Type,
    TypeEnv,
    TypeProblem,
    Unknown,
    non_null_paths,
    null_checked_paths,
    strip,
)
from wflang.dsl import expr as ex
from wflang.dsl import spec as sp
from wflang.dsl.diagnostics import Severity
from wflang.dsl.span import Span


@frozen
class Missing:
    """A required field a mapping does not give."""

    message: str
    span: Span
    hint: str | None = None


@frozen
class Typing:
    problems: tuple[TypeProblem, ...]
    missing: tuple[Missing, ...]


def type_env(m: Model) -> TypeEnv:
    """The types a workflow's expressions see: its declarations and its records."""
    env = TypeEnv(m.types)
    env.record("input", m.input)
    env.record("context", m.context)
    env.record("output", m.output)
    return env


def _required(f: sp.Field, env: TypeEnv) -> bool:
    return f.default is None and not isinstance(env.resolve(f.type), Opt)


def typing_of(m: Model) -> Typing:
    """Type every expression of the workflow once; the rules below share the result."""
    return m.memo("typing", _type_workflow)


def _type_workflow(m: Model) -> Typing:
    env = type_env(m)
    problems: list[TypeProblem] = []
    missing: list[Missing] = []

    # Field defaults are constants: no roots.
    from wflang.compiler.rules.names import all_fields

    for f in all_fields(m):
        if f.default is not None:
            Inference(env, {}, problems).expect(
                f.default, env.resolve(f.type), f"the default of '{f.name.text}'"
            )
    # Types do not depend on null checks: a first walk finds what each node writes
    # that cannot be null, which with the guards of choices says what is checked where.
    written: dict[str, set[str]] = {}
    _walk(m, env, {}, [], [], written)
    _walk(m, env, _null_checked(m, written), problems, missing, {})
    return Typing(tuple(problems), tuple(missing))


def _walk(
    m: Model,
    env: TypeEnv,
    checked: Mapping[str, frozenset[str]],
    problems: list[TypeProblem],
    missing: list[Missing],
    written: dict[str, set[str]],
) -> None:
    """Type every node; ``written`` gets the context fields each sets to a non-null value."""

    def walk(nodes: tuple[sp.Node, ...], roots: dict[str, Type]) -> None:
        for node in nodes:
            known = checked.get(node.name.text, frozenset())

            def inference(roots: Mapping[str, Type], known: frozenset[str] = known) -> Inference:
                return Inference(env, roots, problems, known)

            written[node.name.text] = _type_node(m, env, node, roots, inference, missing)
            if isinstance(node, sp.ParallelNode):
                for b in node.branches:
                    walk(b.nodes, roots)
            elif isinstance(node, sp.MapNode):
                items = strip(inference(roots).expect(node.items, ListT(UNKNOWN), "map items"))
                walk(node.nodes, {**roots, node.alias.text: element(items)})

    walk(m.spec.nodes, {"input": Record("input"), "context": Record("context")})


def _null_checked(m: Model, written: Mapping[str, set[str]]) -> dict[str, frozenset[str]]:
    """Paths known not to be null when each node starts: on every path to it a guard
    checked them, or a step wrote a value that cannot be null, and nothing wrote since."""
    facts: dict[str, frozenset[str]] = {}
    for scope in m.scopes:
        entry = m.entry(scope)
        if entry is None:
            continue
        owner = m.nodes[entry].owner
        start = facts.get(owner, frozenset()) if owner else frozenset()
        g = m.graph  # edges stay inside their scope: a search from the entry stays too

        def transfer(source: str, target: str, known: frozenset[str]) -> frozenset[str]:
            return _after(m, source, target, known, written)

        facts.update(must_analysis(g, entry, start, transfer))
    return facts


def _after(
    m: Model, source: str, target: str, known: frozenset[str], written: Mapping[str, set[str]]
) -> frozenset[str]:
    """What is known not to be null when the flow goes from ``source`` to ``target``."""
    node = m.nodes[source].node
    changed = context_writes(node)
    kept = frozenset(p for p in known if _field_of(p) not in changed) if changed else known
    if isinstance(node, sp.ChoiceNode):
        return kept | _arm_facts(node, target)
    kinds = m.edge_kinds.get((source, target), frozenset())
    if kinds and not kinds & ABORTED:
        kept |= {f"context.{name}" for name in written.get(source, ())}
    return kept


def _arm_facts(node: sp.ChoiceNode, target: str) -> frozenset[str]:
    """Paths not null whenever a choice goes to ``target``: what its guard checks, and
    what the guards before it checked by being false (``when x == null -> …``)."""
    facts: frozenset[str] | None = None
    before: frozenset[str] = frozenset()
    for arm in node.arms:
        here = before | (non_null_paths(arm.guard) if arm.guard is not None else frozenset())
        if arm.target.text == target:
            facts = here if facts is None else facts & here
        if arm.guard is not None:
            before |= null_checked_paths(arm.guard)
    return facts or frozenset()


def _field_of(path: str) -> str | None:
    """The context field a path reads: ``context.charge.id`` -> ``charge``."""
    if not path.startswith("context."):
        return None
    return path.removeprefix("context.").split(".")[0].split("[")[0]


def _result_type(m: Model, env: TypeEnv, node: sp.Node) -> Type | None:
    """What ``result`` means in a node's output mapping (None: there is no result)."""
    work = getattr(node, "work", None)
    if isinstance(work, sp.ServiceWork):
        service = m.services.get(work.service.text)
        if service is None:
            return UNKNOWN
        return env.record(f"result of {service.name.text}", service.result or ())
    if isinstance(work, sp.UserWork | sp.ManualWork):
        return env.record(f"form of {node.name.text}", getattr(node, "form", None) or ())
    if isinstance(node, sp.CallNode):
        callee = m.workflows.get(node.workflow.text)
        if callee is None:
            return UNKNOWN
        outputs = [d for d in callee.spec.declarations if isinstance(d, sp.OutputDecl)]
        return env.record(f"output of {node.workflow.text}", outputs[0].fields if outputs else ())
    return None  # a map's ``result`` is its items' outputs: see ``item_outputs``


def _in_map_body(m: Model, node: sp.Node) -> bool:
    """Whether a node is in the body of a map itself (not in a branch inside it)."""
    info = m.nodes.get(node.name.text)
    return info is not None and info.owner is not None and info.scope == info.owner


def _type_node(
    m: Model,
    env: TypeEnv,
    node: sp.Node,
    roots: dict[str, Type],
    inference: object,
    missing: list[Missing],
) -> set[str]:
    infer = inference  # a factory: roots -> Inference
    assert callable(infer)
    here: Inference = infer(roots)
    if isinstance(node, sp.ChoiceNode):
        before: frozenset[str] = frozenset()  # an arm is tried when those before it failed
        for arm in node.arms:
            if arm.guard is not None:
                here.guarded(before).expect(arm.guard, BOOL, "a guard")
                before |= null_checked_paths(arm.guard)
    for t in getattr(node, "timeouts", ()):
        here.expect(t.after, DURATION, "a timeout")
    if isinstance(node, sp.SleepNode):
        here.expect(node.duration, DURATION, "a sleep")
    out_roots = dict(roots)
    if isinstance(node, sp.WaitNode):
        trigger = node.trigger
        if isinstance(trigger, sp.UntilTrigger):
            here.expect(trigger.at, TIMESTAMP, "'until'")
        elif isinstance(trigger, sp.SignalTrigger):
            decl = m.signals.get(trigger.signal.text)
            out_roots["signal"] = (
                env.record(f"payload of {decl.name.text}", decl.payload or ()) if decl else UNKNOWN
            )
        elif isinstance(trigger, sp.MessageTrigger):
            # Messages are matched on the correlation's text: a string or an int.
            got = here.value(trigger.correlation, "a correlation")
            if not isinstance(got, Unknown) and got not in (STRING, INT):
                here.problem(
                    "mismatch",
                    f"a correlation must be string or int, not {got}",
                    trigger.correlation.span,
                )
            mdecl = m.messages.get(trigger.message.text)
            out_roots["message"] = (
                env.record(f"payload of {mdecl.name.text}", mdecl.payload or ())
                if mdecl
                else UNKNOWN
            )
    result = _result_type(m, env, node)
    if isinstance(node, sp.MapNode):
        result = item_outputs(here, env, node)
    if result is not None:
        out_roots["result"] = result
    _type_args(m, env, node, here, missing)
    return _type_output(m, env, node, infer(out_roots), missing)


def _parameters(m: Model, node: sp.Node) -> tuple[str, tuple[sp.Field, ...]] | None:
    work = getattr(node, "work", None)
    if isinstance(work, sp.ServiceWork):
        service = m.services.get(work.service.text)
        return None if service is None else (f"service {service.name.text}", service.params)
    if isinstance(node, sp.CallNode):
        callee = m.workflows.get(node.workflow.text)
        if callee is None:
            return None
        inputs = [d for d in callee.spec.declarations if isinstance(d, sp.InputDecl)]
        return f"workflow {node.workflow.text}", inputs[0].fields if inputs else ()
    return None


def _type_mapping(
    entries: tuple[sp.Entry, ...],
    fields: Mapping[str, sp.Field],
    env: TypeEnv,
    inf: Inference,
    owner: str,
) -> set[str]:
    """Type a mapping; the names it gives a value that cannot be null."""
    non_null: set[str] = set()
    for entry in entries:
        f = fields.get(entry.name.text)
        if f is None:
            inf.infer(entry.value)
            inf.problem(
                "unknown-field",
                f"{owner} has no field '{entry.name.text}'",
                entry.name.span,
                hint=did_you_mean(entry.name.text, fields)
                or f"fields: {', '.join(fields) or 'none'}",
            )
        else:
            got = inf.expect(entry.value, env.resolve(f.type), f"'{entry.name.text}'")
            if not isinstance(got, Opt | Unknown) and got != NULL:
                non_null.add(entry.name.text)
    return non_null


def _type_args(
    m: Model, env: TypeEnv, node: sp.Node, inf: Inference, missing: list[Missing]
) -> None:
    args: tuple[sp.Entry, ...] = getattr(node, "args", ())
    params = _parameters(m, node)
    if params is None:
        for entry in args:
            inf.infer(entry.value)
        return
    owner, fields = params
    by_name = {f.name.text: f for f in fields}
    _type_mapping(args, by_name, env, inf, owner)
    given = {e.name.text for e in args}
    for f in fields:
        if f.name.text not in given and _required(f, env):
            missing.append(
                Missing(
                    f"'{node.name.text}' does not pass '{f.name.text}', which {owner} requires",
                    node.name.span,
                    hint=f"add it: args {{ {f.name.text}: … }}",
                )
            )


def _type_output(
    m: Model, env: TypeEnv, node: sp.Node, inf: Inference, missing: list[Missing]
) -> set[str]:
    output: tuple[sp.Entry, ...] = getattr(node, "output", ())
    if isinstance(node, sp.EndNode) and _in_map_body(m, node):
        for entry in output:  # the item's output: any fields (see ``item_outputs``)
            inf.infer(entry.value)
        return set()
    if isinstance(node, sp.EndNode):
        _type_mapping(output, m.output, env, inf, "the workflow output")
        finishes_workflow = node.name.text in m.main_flow
        if node.outcome is sp.Outcome.COMPLETED and m.output and finishes_workflow:
            given = {e.name.text for e in output}
            for f in m.output.values():
                if f.name.text not in given and _required(f, env):
                    missing.append(
                        Missing(
                            f"end '{node.name.text}' does not give output '{f.name.text}'",
                            node.name.span,
                            hint=f"add it: output {{ {f.name.text}: … }}",
                        )
                    )
        return set()
    return _type_mapping(output, m.context, env, inf, "context")


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


def _enum_case(guard: ex.Expr, inf: Inference) -> tuple[ex.Expr, Enum | None, str | None] | None:
    """``subject == Enum.member``: (subject, the enum, the member) when a guard tests
    one case; ``subject == null``: (subject, None, None)."""
    if isinstance(guard, ex.Binary) and guard.op == "==":
        for subject, value in ((guard.left, guard.right), (guard.right, guard.left)):
            if isinstance(value, ex.NullLit):
                return subject, None, None
            if isinstance(value, ex.Member) and isinstance(inf.infer(value.target), EnumNamespace):
                enum = inf.infer(value)
                return subject, enum if isinstance(enum, Enum) else None, value.name
    return None


def _polarity(guard: ex.Expr) -> tuple[ex.Expr, bool]:
    """A boolean guard as (what it tests, whether it holds when that is true):
    ``not x`` and ``x == false`` test ``x`` negatively, ``a != b`` tests ``a == b``."""
    if isinstance(guard, ex.Unary) and guard.op == "not":
        subject, positive = _polarity(guard.operand)
        return subject, not positive
    if isinstance(guard, ex.Binary) and guard.op in ("==", "!="):
        for subject, value in ((guard.left, guard.right), (guard.right, guard.left)):
            if isinstance(value, ex.BoolLit) and not isinstance(subject, ex.BoolLit):
                inner, positive = _polarity(subject)
                return inner, positive == (value.value == (guard.op == "=="))
        if guard.op == "!=":
            return ex.Binary("==", guard.left, guard.right), False
    return guard, True


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
        uncovered = _uncovered(m, env, node)
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


def _uncovered(m: Model, env: TypeEnv, node: sp.ChoiceNode) -> list[tuple[str, str | None]] | None:
    """None when the guards cover every case; else the (enum, member) cases of the
    enum they test that no guard covers (a None member: null), or [] when they
    test no enum."""
    from wflang.dsl.formatter import format_expr

    inf = Inference(env, {"input": Record("input"), "context": Record("context")}, [])
    guards = [arm.guard for arm in node.arms if arm.guard is not None]
    if any(isinstance(g, ex.BoolLit) and g.value for g in guards):
        return None
    tested: dict[str, set[bool]] = {}
    for g in guards:
        subject, positive = _polarity(g)
        tested.setdefault(format_expr(subject), set()).add(positive)
    if any(len(both) == 2 for both in tested.values()):
        return None  # a boolean and its negation
    cases: dict[str, set[str | None]] = {}
    enums: dict[str, Enum] = {}
    subjects: dict[str, ex.Expr] = {}
    for g in guards:
        case = _enum_case(g, inf)
        if case is None:
            continue
        subject, enum, member = case
        key = format_expr(subject)
        subjects[key] = subject
        cases.setdefault(key, set()).add(member)
        if enum is not None:
            enums[key] = enum
    missing: list[tuple[str, str | None]] = []
    for key, enum in enums.items():
        needed: list[str | None] = list(env.enum_members(enum.name))
        if isinstance(inf.infer(subjects[key]), Opt):
            needed.append(None)  # a null matches no member
        left = [(enum.name, member) for member in needed if member not in cases[key]]
        if not left:
            return None
        if not missing or len(left) < len(missing):
            missing = left  # the enum the guards come closest to covering
    return missing
