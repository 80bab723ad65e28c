"""Type rules (WF3xx): every expression typed where it is used.

One walk (``typed_sites``) visits every expression of a workflow with the
names it may use (its roots) and the type it must have; the rules below report
the kinds of problem that walk finds. The walk is cached on the model, so the
rules share it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from attrs import frozen

from wflang.compiler.model import Model
from wflang.compiler.registry import Finding, Pass, rule
from wflang.compiler.rules.names import did_you_mean
from wflang.compiler.types import (
    BOOL,
    DURATION,
    TIMESTAMP,
    UNKNOWN,
    Enum,
    Inference,
    ListT,
    Record,
    Type,
    TypeEnv,
    TypeProblem,
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


def _env(m: Model) -> TypeEnv:
    env = TypeEnv(m.types)
    env.record("input", m.input)
    env.record("context", m.context)
    env.record("output", m.output)
    return env


def _required(f: sp.Field, env: TypeEnv) -> bool:
    from wflang.compiler.types import Opt

    return f.default is None and not isinstance(env.resolve(f.type), Opt)


def typing_of(m: Model) -> Typing:
    """Type every expression of the workflow once; the rules below share the result."""
    return m.memo("typing", _type_workflow)


def _type_workflow(m: Model) -> Typing:
    env = _env(m)
    base: dict[str, Type] = {"input": Record("input"), "context": Record("context")}
    problems: list[TypeProblem] = []
    missing: list[Missing] = []

    def inference(roots: Mapping[str, Type]) -> Inference:
        return Inference(env, roots, problems)

    # Field defaults are constants: no roots.
    from wflang.compiler.rules.names import all_fields

    for f in all_fields(m):
        if f.default is not None:
            inference({}).expect(f.default, env.resolve(f.type), f"the default of '{f.name.text}'")

    def walk(nodes: tuple[sp.Node, ...], roots: dict[str, Type]) -> None:
        for node in nodes:
            _type_node(m, env, node, roots, inference, missing)
            if isinstance(node, sp.ParallelNode):
                for b in node.branches:
                    walk(b.nodes, roots)
            elif isinstance(node, sp.MapNode):
                items = strip(inference(roots).expect(node.items, ListT(UNKNOWN), "map items"))
                elem = items.elem if isinstance(items, ListT) else UNKNOWN
                walk(node.nodes, {**roots, node.alias.text: elem})

    walk(m.spec.nodes, base)
    return Typing(tuple(problems), tuple(missing))


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
    if isinstance(node, sp.MapNode):
        return UNKNOWN
    return None


def _type_node(
    m: Model,
    env: TypeEnv,
    node: sp.Node,
    roots: dict[str, Type],
    inference: object,
    missing: list[Missing],
) -> None:
    infer = inference  # a factory: roots -> Inference
    assert callable(infer)
    here: Inference = infer(roots)
    if isinstance(node, sp.ChoiceNode):
        for arm in node.arms:
            if arm.guard is not None:
                here.expect(arm.guard, BOOL, "a guard")
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
            here.infer(trigger.correlation)
            mdecl = m.messages.get(trigger.message.text)
            out_roots["message"] = (
                env.record(f"payload of {mdecl.name.text}", mdecl.payload or ())
                if mdecl
                else UNKNOWN
            )
    result = _result_type(m, env, node)
    if result is not None:
        out_roots["result"] = result
    _type_args(m, env, node, here, missing)
    _type_output(m, env, node, infer(out_roots), missing)


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
) -> None:
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
            inf.expect(entry.value, env.resolve(f.type), f"'{entry.name.text}'")


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
) -> None:
    output: tuple[sp.Entry, ...] = getattr(node, "output", ())
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
        return
    _type_mapping(output, m.context, env, inf, "context")


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
    timestamp; mapped values fit the field they fill; operators get operands
    they apply to.

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
    the called workflow's output), ``signal.x``, ``message.x`` and ``item.x``
    follow their declarations; ``args`` name parameters; ``output`` names
    context fields (or, on an ``end``, the workflow's output fields).

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
    """A ``T?`` value may be null; reading a field of it, or passing it where a
    ``T`` is needed, fails at run time unless a guard checked it.

    Bad:

        choice c { when context.charge.amount > 0 -> refund else -> done }

    Good:

        choice c { when context.charge != null and context.charge.amount > 0 -> refund else -> done }
    """
    yield from _findings(m, "optional")


def _enum_cases(guard: ex.Expr, env: TypeEnv, inf: Inference) -> tuple[str, str] | None:
    """``subject == Enum.member``: (subject path, member) when a guard tests one case."""
    if isinstance(guard, ex.Binary) and guard.op == "==":
        for subject, value in ((guard.left, guard.right), (guard.right, guard.left)):
            if isinstance(value, ex.Member) and isinstance(inf.infer(value), Enum):
                from wflang.dsl.formatter import format_expr

                return format_expr(subject), value.name
    return None


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
    env = _env(m)
    for node in m.all_nodes():
        if not isinstance(node, sp.ChoiceNode) or not node.arms:
            continue
        if any(arm.guard is None for arm in node.arms):
            continue
        if _exhaustive(m, env, node):
            continue
        yield Finding(
            f"choice '{node.name.text}' has no 'else' and its guards may all be false",
            node.name.span,
            hint="add 'else -> …', or cover every case",
        )


def _exhaustive(m: Model, env: TypeEnv, node: sp.ChoiceNode) -> bool:
    from wflang.dsl.formatter import format_expr

    inf = Inference(env, {"input": Record("input"), "context": Record("context")}, [])
    guards = [arm.guard for arm in node.arms if arm.guard is not None]
    texts = {format_expr(g) for g in guards}
    for g in guards:
        if isinstance(g, ex.BoolLit) and g.value:
            return True
        if f"not {format_expr(g)}" in texts:
            return True
    cases: dict[str, set[str]] = {}
    enum_of: dict[str, str] = {}
    for g in guards:
        case = _enum_cases(g, env, inf)
        if case is not None:
            subject, member = case
            cases.setdefault(subject, set()).add(member)
            value = g.right if isinstance(g, ex.Binary) else g
            t = inf.infer(value)
            if isinstance(t, Enum):
                enum_of[subject] = t.name
    return any(
        members >= set(env.enum_members(enum_of.get(subject, ""))) and enum_of.get(subject)
        for subject, members in cases.items()
    )
