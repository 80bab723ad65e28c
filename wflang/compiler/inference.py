"""Typing a workflow: every expression typed where it is used, once per model.

One walk visits every expression with the names it may use (its roots) and the
type it must have; the type rules (``rules/typing.py``) report the problems it
finds. A first walk finds what each node writes that cannot be null; with the
guards of choices, a must-analysis over each scope's flow says which paths are
known not to be null where, and the second walk types with that knowledge.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

from attrs import field, frozen

from wflang.compiler.dataflow import must_analysis
from wflang.compiler.handled_errors import error_type
from wflang.compiler.map_items import body_roots, element, item_outputs
from wflang.compiler.model import ABORTED, Model
from wflang.compiler.null_facts import non_null_paths, null_checked_paths
from wflang.compiler.symbols import all_fields, did_you_mean
from wflang.compiler.types import (
    ASSIGNEE,
    BOOL,
    COLLECT_TYPE,
    DURATION,
    INT,
    LOCAL_OUTSIDE,
    LOCAL_ROOT,
    LOCAL_TYPE,
    NULL,
    STRING,
    TIMESTAMP,
    UNKNOWN,
    UNKNOWN_LOCAL,
    Fit,
    Inference,
    ListT,
    Opt,
    Placed,
    Record,
    Type,
    TypeEnv,
    TypeProblem,
    Unknown,
    strip,
)
from wflang.dsl import expr as ex
from wflang.dsl import spec as sp
from wflang.dsl import types as ty
from wflang.dsl.formatter import format_expr
from wflang.dsl.span import Span
from wflang.dsl.walk import sub_flows, subexpressions

#: Makes the ``Inference`` of one node for the roots it sees (its null facts are fixed).
InferenceFactory = Callable[[Mapping[str, Type]], Inference]


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
    #: The type of every expression of the workflow (and of its parts) by where it was
    #: written (``types.place_of``): the lowering chooses int or decimal arithmetic by it.
    types: Mapping[Placed, Type] = field(eq=False)
    #: The records the typing met (results, payloads, errors' shapes), by name: what a
    #: field read resolves against (the language server's hover and completion).
    env: TypeEnv | None = field(default=None, eq=False)


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
    types: dict[Placed, Type] = {}

    # Field defaults are constants: no roots.
    for f in all_fields(m):
        if f.default is not None:
            Inference(env, {}, problems, seen=types).expect(
                f.default, env.resolve(f.type), f"the default of '{f.name.text}'"
            )
            problems.extend(_clock_reads(f.default, f.name.text))
    # Types do not depend on null checks: a first walk types only what each node writes,
    # to find what it writes that cannot be null; with the guards of choices that says
    # what is checked where, and the second walk types every expression knowing it.
    written: dict[str, set[str]] = {}

    def note_writes(node: sp.Node, roots: dict[str, Type]) -> dict[str, Type]:
        written[node.name.text] = _non_null_writes(m, env, node, roots)
        return body_roots(env, roots, node) if isinstance(node, sp.MapNode) else roots

    _walk(m, note_writes)
    checked = _null_checked(m, written)

    def type_node(node: sp.Node, roots: dict[str, Type]) -> dict[str, Type]:
        known = checked.get(node.name.text, frozenset())

        def inference(roots: Mapping[str, Type], known: frozenset[str] = known) -> Inference:
            return Inference(env, roots, problems, known, types)

        _type_node(m, env, node, roots, inference, missing)
        if not isinstance(node, sp.MapNode):
            return roots
        inference(roots).expect(node.items, ListT(UNKNOWN), "map items")
        inner = body_roots(env, roots, node)
        if node.collects:
            ends = [checked.get(e, frozenset()) for e in _completed_ends(node)]
            facts = frozenset.intersection(*ends) if ends else frozenset()
            outputs = item_outputs(Inference(env, roots, []), env, node)
            collected = {**inner, "result": element(outputs)}
            _type_collects(m, env, node, Inference(env, collected, problems, facts, types))
        return inner

    _walk(m, type_node)
    return Typing(tuple(problems), tuple(missing), types, env)


def _clock_reads(default: ex.Expr, name: str) -> Iterator[TypeProblem]:
    """A default is a constant, filled in where no step runs (a service result's
    missing field): it cannot read the step's clock."""
    for e in subexpressions(default):
        if isinstance(e, ex.Call) and e.function == "now":
            yield TypeProblem(
                "mismatch",
                f"the default of '{name}' cannot call now(): a default is a constant",
                e.span,
                "write now() where the value is used, in an 'output' or 'args'",
            )


#: Types one node under the roots it sees; gives the roots of the flows inside it.
NodeTyping = Callable[[sp.Node, dict[str, Type]], dict[str, Type]]


def _walk(m: Model, visit: NodeTyping) -> None:
    """Visit every node, outer nodes before the flows inside them, with its roots."""

    def walk(nodes: tuple[sp.Node, ...], roots: dict[str, Type]) -> None:
        for node in nodes:
            inner = visit(node, roots)
            for _, body in sub_flows(node):
                walk(body, inner)

    walk(m.spec.nodes, {"input": Record("input"), "context": Record("context")})


def _completed_ends(node: sp.MapNode) -> list[str]:
    """The ends of a map's body that complete an item (where it is collected)."""
    return [
        n.name.text
        for n in node.nodes
        if isinstance(n, sp.EndNode) and n.outcome is sp.Outcome.COMPLETED
    ]


def _type_collects(m: Model, env: TypeEnv, node: sp.MapNode, here: Inference) -> None:
    """``collect EXPR into context.FIELD``: the field is a list whose items ``EXPR`` fits,
    and what is known not to be null at every completed end is known there."""
    for c in node.collects:
        got = here.infer(c.value)
        name = c.target.text
        f = m.context.get(name)
        if f is None:
            here.problem(
                "unknown-field",
                f"context has no field '{name}'",
                c.target.span,
                hint=did_you_mean(name, m.context) or f"fields: {', '.join(m.context) or 'none'}",
            )
            continue
        want = strip(env.resolve(f.type))
        if isinstance(want, Unknown):
            continue
        what = f"map '{node.name.text}' collects {got}"
        if not isinstance(want, ListT):
            here.problem(COLLECT_TYPE, f"{what}: 'context.{name}' is {want}, not a list", c.span)
            continue
        fit = env.conforms(got, want.elem)
        if fit is Fit.MISMATCH:
            here.problem(COLLECT_TYPE, f"{what}, and 'context.{name}' holds {want.elem}", c.span)
        elif fit is Fit.OPTIONAL and format_expr(c.value) not in here.checked:
            here.problem(
                "optional",
                f"{what}, which may be null, and 'context.{name}' holds {want.elem}",
                c.value.span,
                hint="check it on the way to every completed end, or collect coalesce(…, …)",
            )


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
        around = m.nodes[owner].node if owner else None
        if isinstance(around, sp.MapNode) and around.locals:  # each item's own, fresh
            start = frozenset(p for p in start if _field_of(p, LOCAL_ROOT) is None)
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
    changed = m.writes(source)
    kept = frozenset(p for p in known if _field_of(p) not in changed) if changed else known
    mine = {e.name.text for e in getattr(node, "output", ()) if e.local}
    if mine:
        kept = frozenset(p for p in kept if _field_of(p, LOCAL_ROOT) not in mine)
    if isinstance(node, sp.ChoiceNode):
        return kept | m.memo("arm facts", _arm_facts)[source].get(target, frozenset())
    kinds = m.edge_kinds.get((source, target), frozenset())
    if kinds and not kinds & ABORTED:
        kept |= written.get(source, set())
    return kept


def _arm_facts(m: Model) -> dict[str, dict[str, frozenset[str]]]:
    """Paths not null whenever a choice goes to a target, by choice and target: what the
    guards of the arms to it check, and what the guards before each checked by being
    false (``when x == null -> …``). Found once per choice, not at each of its edges."""
    found: dict[str, dict[str, frozenset[str]]] = {}
    for name, info in m.nodes.items():
        if not isinstance(info.node, sp.ChoiceNode):
            continue
        facts = found[name] = {}
        before: frozenset[str] = frozenset()
        for arm in info.node.arms:
            here = before | (non_null_paths(arm.guard) if arm.guard is not None else frozenset())
            target = arm.target.text
            facts[target] = facts[target] & here if target in facts else here
            if arm.guard is not None:
                before |= null_checked_paths(arm.guard)
    return found


def _field_of(path: str, root: str = "context") -> str | None:
    """The field of ``root`` a path reads: ``context.charge.id`` -> ``charge``."""
    if not path.startswith(f"{root}."):
        return None
    return path.removeprefix(f"{root}.").split(".")[0].split("[")[0]


def _result_type(m: Model, env: TypeEnv, node: sp.Node) -> Type | None:
    """What ``result`` means in a node's output mapping (None: there is no result)."""
    work = getattr(node, "work", None)
    if isinstance(work, sp.ServiceWork):
        service = m.services.get(work.service.text)
        if service is None:
            return UNKNOWN
        if isinstance(service.result, ty.NamedType):  # a record type: its fields, typed
            return env.resolve(service.result)
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


def _with_error(m: Model, env: TypeEnv, node: sp.Node, roots: dict[str, Type]) -> dict[str, Type]:
    """The roots of a node's expressions: with the error its routes handled, if any."""
    handled = error_type(m, env, node)
    return roots if handled is None else {**roots, "error": handled}


def _non_null_writes(m: Model, env: TypeEnv, node: sp.Node, roots: dict[str, Type]) -> set[str]:
    """The paths a node writes a value that cannot be null, found by typing its ``output``
    alone (an end writes its flow's output, not the context)."""
    if isinstance(node, sp.EndNode | sp.FirstNode):  # (a first's arms: see ``ABORTED``)
        return set()
    roots = _with_error(m, env, node, roots)
    out_roots = _output_roots(m, env, node, Inference(env, roots))
    return _type_output(m, env, node, Inference(env, out_roots), [])


def _type_node(
    m: Model,
    env: TypeEnv,
    node: sp.Node,
    roots: dict[str, Type],
    infer: InferenceFactory,
    missing: list[Missing],
) -> None:
    here = infer(_with_error(m, env, node, roots))
    if isinstance(node, sp.ChoiceNode):
        before: frozenset[str] = frozenset()  # an arm is tried when those before it failed
        for arm in node.arms:
            if arm.guard is not None:
                here.guarded(before).expect(arm.guard, BOOL, "a guard")
                before |= null_checked_paths(arm.guard)
    for t in getattr(node, "timeouts", ()):
        here.expect(t.after, DURATION, "a timeout")
    if isinstance(node, sp.TaskNode) and node.heartbeat is not None:
        here.expect(node.heartbeat, DURATION, "a heartbeat")
    if isinstance(node, sp.SleepNode):
        here.expect(node.duration, DURATION, "a sleep")
    who = getattr(node.work, "assignee", None) if isinstance(node, sp.TaskNode) else None
    if who is not None:
        got = strip(here.value(who, "the assignee"))
        if not isinstance(got, Unknown) and got != STRING:
            here.problem(ASSIGNEE, f"the assignee must be a string, not {got}", who.span)
    work = getattr(node, "work", None)
    if isinstance(work, sp.SendWork):
        if work.kind is sp.SendKind.MESSAGE:
            _type_correlation(here, work.target)
        else:
            here.expect(work.target, STRING, "the id of the instance signalled")
    if isinstance(node, sp.WaitNode):
        trigger = node.trigger
        if isinstance(trigger, sp.UntilTrigger):
            here.expect(trigger.at, TIMESTAMP, "'until'")
        elif isinstance(trigger, sp.MessageTrigger):
            _type_correlation(here, trigger.correlation)
    if isinstance(node, sp.FirstNode):  # each arm's output reads its own payload
        for event_arm in node.arms:
            t, arm_roots = event_arm.trigger, dict(here.roots)
            if isinstance(t, sp.AfterTrigger):
                here.expect(t.after, DURATION, "'after'")
            elif isinstance(t, sp.UntilTrigger):
                here.expect(t.at, TIMESTAMP, "'until'")
            else:
                if isinstance(t, sp.MessageTrigger):
                    _type_correlation(here, t.correlation)
                arm_roots["signal" if isinstance(t, sp.SignalTrigger) else "message"] = _payload(
                    m, env, t
                )
            _type_output(m, env, node, infer(arm_roots), missing, event_arm.output)
        return
    out_roots = _output_roots(m, env, node, here)
    _type_args(m, env, node, here, missing)
    _type_output(m, env, node, infer(out_roots), missing)
    for event in getattr(node, "events", ()):  # each reads what arrived, as a wait does
        if isinstance(event.trigger, sp.MessageTrigger):
            _type_correlation(here, event.trigger.correlation)
        event_roots = {**here.roots, event.kind: _payload(m, env, event.trigger)}
        _type_mapping(event.output, m.context, env, infer(event_roots), "context")


def _output_roots(m: Model, env: TypeEnv, node: sp.Node, here: Inference) -> dict[str, Type]:
    """The roots of a node's ``output``: those of its other expressions (``here``), and
    what it got: a signal's or a message's payload, a ``result``."""
    out_roots = dict(here.roots)
    if isinstance(node, sp.WaitNode) and not isinstance(node.trigger, sp.UntilTrigger):
        root = "signal" if isinstance(node.trigger, sp.SignalTrigger) else "message"
        out_roots[root] = _payload(m, env, node.trigger)
    if isinstance(node, sp.MapNode):
        result: Type | None = item_outputs(here, env, node)
    else:
        result = _result_type(m, env, node)
    if result is not None:
        out_roots["result"] = result
    return out_roots


def _payload(m: Model, env: TypeEnv, trigger: sp.SignalTrigger | sp.MessageTrigger) -> Type:
    """The type of what a signal or message brings: its declared payload, as a record."""
    if isinstance(trigger, sp.SignalTrigger):
        decl: sp.SignalDecl | sp.MessageDecl | None = m.signals.get(trigger.signal.text)
    else:
        decl = m.messages.get(trigger.message.text)
    return env.record(f"payload of {decl.name.text}", decl.payload or ()) if decl else UNKNOWN


def _type_correlation(here: Inference, correlation: ex.Expr) -> None:
    """Messages are matched on the correlation's text: a string or an int."""
    got = here.value(correlation, "a correlation")
    if not isinstance(got, Unknown) and got not in (STRING, INT):
        here.problem(
            "mismatch", f"a correlation must be string or int, not {got}", correlation.span
        )


def _parameters(m: Model, node: sp.Node) -> tuple[str, tuple[sp.Field, ...]] | None:
    work = getattr(node, "work", None)
    if isinstance(work, sp.ServiceWork):
        service = m.services.get(work.service.text)
        return None if service is None else (f"service {service.name.text}", service.params)
    if isinstance(work, sp.SendWork):  # the payload of what it sends
        sent = (m.signals if work.kind is sp.SendKind.SIGNAL else m.messages).get(work.name.text)
        return None if sent is None else (f"{work.kind.value} {work.name.text}", sent.payload or ())
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
    for entry in (e for e in args if e.local):
        inf.infer(entry.value)
        inf.problem(
            LOCAL_OUTSIDE,
            f"'args' passes values: 'local.{entry.name.text}' is written in an 'output'",
            entry.span,
        )
    args = tuple(e for e in args if not e.local)
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
    m: Model,
    env: TypeEnv,
    node: sp.Node,
    inf: Inference,
    missing: list[Missing],
    entries: tuple[sp.Entry, ...] | None = None,
) -> set[str]:
    """Type a node's ``output`` (``entries``: one arm's of a ``first``)."""
    output: tuple[sp.Entry, ...] = getattr(node, "output", ()) if entries is None else entries
    locals_ = _type_local_writes(node, tuple(e for e in output if e.local), env, inf)
    output = tuple(e for e in output if not e.local)
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
    written = _type_mapping(output, m.context, env, inf, "context")
    return {f"context.{name}" for name in written} | locals_


def _type_local_writes(
    node: sp.Node, entries: tuple[sp.Entry, ...], env: TypeEnv, inf: Inference
) -> set[str]:
    """``output { local.NAME: … }``: the variables of the item the node runs in, each
    written a value of its type; the paths it gives a value that cannot be null."""
    record = inf.roots.get(LOCAL_ROOT)
    fields = env.field_types(record) if isinstance(record, Record) else None
    non_null: set[str] = set()
    for entry in entries:
        got = inf.infer(entry.value)
        name, where = entry.name.text, f"'local.{entry.name.text}'"
        if isinstance(node, sp.EndNode) or fields is None:
            why = (
                "an end gives the output of its flow"
                if isinstance(node, sp.EndNode)
                else "no map around it declares 'local { … }'"
            )
            inf.problem(LOCAL_OUTSIDE, f"{where} cannot be written here: {why}", entry.span)
            continue
        want = fields.get(name)
        if want is None:
            owner = record.name.removeprefix("locals of ") if isinstance(record, Record) else ""
            inf.problem(
                UNKNOWN_LOCAL,
                f"map '{owner}' declares no variable '{name}'",
                entry.name.span,
                hint=did_you_mean(name, fields) or f"variables: {', '.join(fields)}",
            )
            continue
        fit = env.conforms(got, want)
        if fit is Fit.MISMATCH:
            inf.problem(LOCAL_TYPE, f"{where} is {want}: it cannot be written {got}", entry.span)
        elif fit is Fit.OPTIONAL and format_expr(entry.value) not in inf.checked:
            inf.problem(
                "optional",
                f"{where} may be written null ({got}) where {want} is expected",
                entry.value.span,
                hint="check it first, or use coalesce()",
            )
        if not isinstance(got, Opt | Unknown) and got != NULL:
            non_null.add(f"{LOCAL_ROOT}.{name}")
    return non_null
