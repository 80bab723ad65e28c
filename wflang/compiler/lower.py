"""Lowering: a checked workflow to its transition table (``wflang.runtime.table``).

States are numbered in source order (nested nodes right after the node that
holds them), events in order of first use, expressions in order of first use:
the same source always lowers to the same table. Expressions are lowered to the
runtime IR with the types the checker inferred where an operator depends on
them: a duration divided by an int stays a duration, and arithmetic whose type is
``decimal`` is decimal arithmetic (``add_decimal`` …) however its operands happen to
be held at run time (a whole decimal is held as an int, and must not compute as one).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import assert_never

from attrs import define, field

from wflang.compiler.inference import typing_of
from wflang.compiler.meaning import timestamp_ms
from wflang.compiler.model import Model
from wflang.compiler.types import DECIMAL, DURATION, UNKNOWN, ListT, Placed, Type, place_of, strip
from wflang.dsl import expr as ex
from wflang.dsl import spec as sp
from wflang.dsl.walk import walk_nodes
from wflang.runtime import ir
from wflang.runtime import table as tb
from wflang.runtime.table import holds_times

_BINARY = {
    "+": "add", "-": "sub", "*": "mul", "/": "div", "%": "mod",
    "==": "eq", "!=": "ne", "<": "lt", "<=": "le", ">": "gt", ">=": "ge",
    "in": "in", "not in": "not_in", "and": "and", "or": "or",
}  # fmt: skip
_UNARY = {"not": "not", "-": "neg", "+": "pos"}
#: Operators and builtins whose meaning depends on whether their type is int or decimal.
_BY_TYPE = frozenset({"add", "sub", "mul", "mod", "neg", "abs", "sum"})


@define
class _Lowering:
    model: Model
    states: list[tb.State] = field(factory=list)
    ids: dict[str, int] = field(factory=dict)
    events: list[str] = field(factory=lambda: ["enter", "done", "error"])
    expressions: list[ir.IR] = field(factory=list)
    expression_ids: dict[ir.IR, int] = field(factory=dict)
    rows: list[tb.Row] = field(factory=list)
    aliases: set[str] = field(factory=set)
    types: Mapping[Placed, Type] = field(factory=dict)  # what the checker inferred

    # -- numbering -------------------------------------------------------------

    def event(self, name: str) -> int:
        if name not in self.events:
            self.events.append(name)
        return self.events.index(name)

    def expression(self, e: ex.Expr) -> int:
        node = self.lower_expr(e)
        if node not in self.expression_ids:
            self.expression_ids[node] = len(self.expressions)
            self.expressions.append(node)
        return self.expression_ids[node]

    def target(self, ident: sp.Ident | None) -> int:
        return tb.NO_STATE if ident is None else self.ids[ident.text]

    # -- expressions -----------------------------------------------------------

    def lambda_body(self, fn: ex.Lambda) -> ir.IR:
        """A lambda's body, where its parameter hides a root of the same name."""
        if fn.param in self.aliases:
            return self.lower_expr(fn.body)
        self.aliases.add(fn.param)
        try:
            return self.lower_expr(fn.body)
        finally:
            self.aliases.discard(fn.param)

    def lower_expr(self, e: ex.Expr) -> ir.IR:
        match e:
            case ex.IntLit():
                return ir.Const(e.value)
            case ex.DecimalLit():
                return ir.Dec(str(e.value))
            case ex.StringLit():
                return ir.Const(e.value)
            case ex.BoolLit():
                return ir.Const(e.value)
            case ex.NullLit():
                return ir.Const(None)
            case ex.DurationLit():
                return ir.Const(e.millis)
            case ex.TimestampLit():
                return ir.Const(timestamp_ms(e.text))
            case ex.Ref() if e.name == "error" and e.name not in self.aliases:
                return ir.Load(ir.HANDLED_ERROR)  # the error an ``on`` route handles
            case ex.Ref():
                return ir.Load(e.name)
            case ex.Member():
                target = e.target
                if self.enum_named(target):
                    return ir.Const(e.name)  # an enum member is its name
                return ir.Get(self.lower_expr(target), e.name)
            case ex.Index():
                return ir.At(self.lower_expr(e.target), self.lower_expr(e.index))
            case ex.Call() if e.function in ex.LAMBDA_BUILTINS:
                items, fn = e.args
                if not isinstance(fn, ex.Lambda):  # WF323, which blocks compiling
                    raise ValueError(f"{e.function}() needs a lambda")
                body = self.lambda_body(fn)
                return ir.Each(e.function, self.lower_expr(items), fn.param, body)
            case ex.Call() if e.function == "now":
                return ir.Load(ir.NOW)
            case ex.Call():
                args = tuple(self.lower_expr(a) for a in e.args)
                return ir.Apply(self.typed_op(e.function, e), args)
            case ex.Project():
                return ir.Project(self.lower_expr(e.target), e.fields)
            case ex.Lambda():  # WF323, which blocks compiling
                raise ValueError(f"'{e.param} => …' out of place")
            case ex.Unary():
                return ir.Apply(self.typed_op(_UNARY[e.op], e), (self.lower_expr(e.operand),))
            case ex.Binary():
                op = _BINARY[e.op]
                if op == "div" and self.type_of(e.left) == DURATION:
                    op = "div_int"
                if op == "add" and isinstance(self.type_of(e), ListT):
                    op = "concat"
                op = self.typed_op(op, e)
                return ir.Apply(op, (self.lower_expr(e.left), self.lower_expr(e.right)))
            case ex.ListLit():
                return ir.MakeList(tuple(self.lower_expr(i) for i in e.items))
            case _:
                assert_never(e)

    def enum_named(self, e: ex.Expr) -> bool:
        """Whether ``e`` names an enum: ``Enum``, or ``alias.Enum`` of a file imported
        ``as alias`` (a name no map item or lambda parameter hides)."""
        if isinstance(e, ex.Member) and isinstance(e.target, ex.Ref):
            name, first = f"{e.target.name}.{e.name}", e.target.name
        elif isinstance(e, ex.Ref):
            name = first = e.name
        else:
            return False
        decl = self.model.types.get(name)
        return isinstance(decl, sp.EnumDecl) and first not in self.aliases

    def type_of(self, e: ex.Expr) -> Type:
        return strip(self.types.get(place_of(e), UNKNOWN))

    def typed_op(self, op: str, e: ex.Expr) -> str:
        """``op``, or its decimal form where the expression's type is ``decimal``: the
        generic operators compute two ints as 64-bit ints, which a whole decimal may be."""
        return f"{op}_decimal" if op in _BY_TYPE and self.type_of(e) == DECIMAL else op

    def callee_name(self, node: sp.CallNode) -> str:
        """The called workflow's own name (``kyc.kyc_check`` names ``kyc_check``)."""
        callee = self.model.workflows.get(node.workflow.text)
        header = callee.spec.header if callee is not None else None
        return header.name.text if header is not None else node.workflow.text

    # -- pieces of entries -----------------------------------------------------

    def mapping(self, entries: tuple[sp.Entry, ...], local: bool = False) -> tb.Mapping:
        """The entries that write the context (or, ``local``, a map item's variables)."""
        return tb.Mapping(
            tuple((en.name.text, self.expression(en.value)) for en in entries if en.local == local)
        )

    def load(self, root: str) -> int:
        """The index of an expression that reads a root the step binds (not a file)."""
        node = ir.Load(root)
        if node not in self.expression_ids:
            self.expression_ids[node] = len(self.expressions)
            self.expressions.append(node)
        return self.expression_ids[node]

    def timers(self, node: sp.Node) -> tuple[tb.Timer, ...]:
        return tuple(
            tb.Timer(
                self.expression(t.after),
                self.event(f"timeout:{k}"),
                t.interrupting,
                cycle=t.cycle is not None,
                times=None if t.cycle is None else t.cycle.times,
            )
            for k, t in enumerate(getattr(node, "timeouts", ()))
        )

    def catches(self, node: sp.Node) -> tuple[tb.Catch, ...]:
        """A node's boundary signals and messages, each raising ``catch:K``."""
        return tuple(
            tb.Catch(
                e.kind,
                e.name.text,
                self.event(f"catch:{k}"),
                e.interrupting,
                (
                    self.expression(e.trigger.correlation)
                    if isinstance(e.trigger, sp.MessageTrigger)
                    else None
                ),
            )
            for k, e in enumerate(getattr(node, "events", ()))
        )

    def arm(self, t: sp.ArmTrigger) -> tb.Arm:
        if isinstance(t, sp.SignalTrigger):
            return tb.Arm("signal", t.signal.text)
        if isinstance(t, sp.MessageTrigger):
            return tb.Arm("message", t.message.text, self.expression(t.correlation))
        if isinstance(t, sp.UntilTrigger):
            return tb.Arm("until", None, self.expression(t.at))
        return tb.Arm("after", None, self.expression(t.after))

    def read_only(self, work: sp.TaskWork) -> bool:
        """Whether a task calls a service declared ``reads``."""
        if not isinstance(work, sp.ServiceWork):
            return False
        service = self.model.services.get(work.service.text)
        return service is not None and service.read_only

    def send(self, work: sp.TaskWork) -> tb.Send | None:
        if not isinstance(work, sp.SendWork):
            return None
        return tb.Send(work.kind.value, work.name.text, self.expression(work.target))

    def raises(self, node: sp.TaskNode) -> tuple[str, ...] | None:
        """The errors a task may fail with by name: its service's (the checker made sure
        it is declared), or those a person may raise on a user or manual task."""
        work = node.work
        if isinstance(work, sp.UserWork | sp.ManualWork):
            # None for a person who may raise nothing, as before people raised errors:
            # the table keeps the bytes and the hash it had (``table.ADDED``)
            return tuple(e.text for e in node.raises) or None
        if not isinstance(work, sp.ServiceWork):
            return None
        service = self.model.services[work.service.text]
        return tuple(e.text for e in service.raises)

    def retry(self, r: sp.Retry | None) -> tb.Retry | None:
        if r is None:
            return None
        return tb.Retry(
            attempts=r.attempts if r.attempts is not None else 3,
            initial_delay_ms=r.initial_delay.millis if r.initial_delay else 1000,
            max_delay_ms=r.max_delay.millis if r.max_delay else None,
            factor=str(r.factor) if r.factor is not None else "2",
            jitter=str(r.jitter) if r.jitter is not None else "0",
            non_retryable=tuple(e.text for e in r.non_retryable or ()),
        )

    # -- states and rows --------------------------------------------------------

    def number(self, nodes: tuple[sp.Node, ...]) -> None:
        """Give every node a state id, in source order, nested nodes after their owner."""
        for placed in walk_nodes(nodes):
            owner = tb.NO_STATE if placed.owner is None else self.ids[placed.owner]
            self.ids[placed.name] = len(self.states)
            self.states.append(tb.State(placed.name, _kind(placed.node), owner, tb.ChoiceEntry()))

    def lower_nodes(self, nodes: tuple[sp.Node, ...]) -> None:
        for placed in walk_nodes(nodes):
            node = placed.node
            me = self.ids[placed.name]
            entry = self.entry(node)
            old = self.states[me]
            self.states[me] = tb.State(old.name, old.kind, old.owner, entry)
            self.add_rows(me, node)
            if isinstance(node, sp.MapNode):
                self.aliases.add(node.alias.text)  # seen by the expressions of its body

    def entry(self, node: sp.Node) -> tb.Entry:
        match node:
            case sp.TaskNode():
                work = node.work
                who = getattr(work, "assignee", None)  # a user or manual task's
                return tb.TaskEntry(
                    work=_kind_of_work(work),
                    service=work.service.text if isinstance(work, sp.ServiceWork) else None,
                    assignee=who.value if isinstance(who, ex.StringLit) else None,
                    assignee_from=(
                        None
                        if who is None or isinstance(who, ex.StringLit)
                        else self.expression(who)
                    ),
                    args=self.mapping(node.args),
                    form=tuple(f.name.text for f in node.form or ()),
                    retry=self.retry(node.retry),
                    timers=self.timers(node),
                    raises=self.raises(node),
                    read_only=self.read_only(work),
                    send=self.send(work),
                    asynchronous=isinstance(work, sp.ServiceWork) and work.asynchronous,
                    catches=self.catches(node),
                    heartbeat=None if node.heartbeat is None else self.expression(node.heartbeat),
                )
            case sp.ChoiceNode():
                return tb.ChoiceEntry()
            case sp.WaitNode():
                trig = node.trigger
                if isinstance(trig, sp.SignalTrigger):
                    return tb.WaitEntry("signal", trig.signal.text, None, self.timers(node))
                if isinstance(trig, sp.MessageTrigger):
                    correlation = self.expression(trig.correlation)
                    return tb.WaitEntry(
                        "message", trig.message.text, correlation, self.timers(node)
                    )
                return tb.WaitEntry("until", None, self.expression(trig.at), self.timers(node))
            case sp.FirstNode():
                return tb.FirstEntry(tuple(self.arm(arm.trigger) for arm in node.arms))
            case sp.SleepNode():
                return tb.SleepEntry(self.expression(node.duration))
            case sp.ParallelNode():
                join = node.join or sp.Join(sp.JoinKind.ALL)
                return tb.ParallelEntry(
                    branches=tuple(
                        self.ids[b.nodes[0].name.text] for b in node.branches if b.nodes
                    ),
                    join=join.kind.value,
                    count=join.count,
                    timers=self.timers(node),
                    catches=self.catches(node),
                )
            case sp.MapNode():
                return tb.MapEntry(
                    items=self.expression(node.items),
                    alias=node.alias.text,
                    body=self.ids[node.nodes[0].name.text] if node.nodes else tb.NO_STATE,
                    concurrency=1 if node.sequential else node.concurrency,
                    sequential=node.sequential,
                    tolerate=node.tolerate.value if node.tolerate else 0,
                    tolerate_percent=bool(node.tolerate and node.tolerate.percent),
                    timers=self.timers(node),
                    locals=tuple(
                        (f.name.text, None if f.default is None else self.expression(f.default))
                        for f in node.locals
                    ),
                    collects=tuple(self.expression(c.value) for c in node.collects),
                    catches=self.catches(node),
                )
            case sp.CallNode():
                return tb.CallEntry(
                    workflow=self.callee_name(node),
                    version=node.version,
                    args=self.mapping(node.args),
                    retry=self.retry(node.retry),
                    timers=self.timers(node),
                    catches=self.catches(node),
                )
            case sp.EndNode():
                return tb.EndEntry(
                    outcome=node.outcome.value,
                    output=self.mapping(node.output),
                    error=node.error.text if node.error else None,
                )
            case _:
                assert_never(node)

    def add_rows(self, me: int, node: sp.Node) -> None:
        def row(event: str, *transitions: tb.Transition) -> None:
            self.rows.append(tb.Row(me, self.event(event), transitions))

        if isinstance(node, sp.ChoiceNode):
            row(
                "enter",
                *(
                    tb.Transition(
                        None if arm.guard is None else self.expression(arm.guard),
                        self.target(arm.target),
                    )
                    for arm in node.arms
                ),
            )
            return
        if isinstance(node, sp.EndNode):
            return
        if isinstance(node, sp.FirstNode):  # each arm writes its own output on its route
            for k, arm in enumerate(node.arms):
                written = self.mapping(arm.output)
                mine = self.mapping(arm.output, local=True)
                writes = tuple(
                    tb.Action(kind, m) for kind, m in (("write", written), ("local", mine))
                    if m.entries
                )  # fmt: skip
                row(tb.arm_event(k), tb.Transition(None, self.target(arm.target), writes))
            return
        actions: list[tb.Action] = []
        output: tuple[sp.Entry, ...] = getattr(node, "output", ())
        written = self.mapping(output)
        if isinstance(node, sp.MapNode):  # the lists collected, with the map's output
            gathered = tuple(
                (c.target.text, self.load(tb.collected(i))) for i, c in enumerate(node.collects)
            )
            written = tb.Mapping(written.entries + gathered)
        if written.entries:
            actions.append(tb.Action("write", written))
        mine = self.mapping(output, local=True)
        if mine.entries:
            actions.append(tb.Action("local", mine))
        compensate = getattr(node, "compensate", None)
        if compensate is not None:
            actions.append(tb.Action("compensate", state=self.target(compensate)))
        row("done", tb.Transition(None, self.target(getattr(node, "next", None)), tuple(actions)))
        for h in getattr(node, "handlers", ()):
            for error in h.errors or ():
                row(f"error:{error.text}", tb.Transition(None, self.target(h.target)))
            if h.catch_all:
                row("error", tb.Transition(None, self.target(h.target)))
        for k, t in enumerate(getattr(node, "timeouts", ())):
            row(f"timeout:{k}", tb.Transition(None, self.target(t.target)))
        for k, e in enumerate(getattr(node, "events", ())):
            got = self.mapping(e.output)  # reads ``signal`` or ``message``, bound by the step
            writes = (tb.Action("write", got),) if got.entries else ()
            row(f"catch:{k}", tb.Transition(None, self.target(e.target), writes))


def _kind(node: sp.Node) -> str:
    return type(node).__name__.removesuffix("Node").lower()


def _kind_of_work(work: sp.TaskWork) -> str:
    return type(work).__name__.removesuffix("Work").lower()


def lower(model: Model) -> tb.Table:
    """The table of a workflow the checker found free of errors."""
    spec = model.spec
    assert spec.header is not None, "only workflows compile"
    low = _Lowering(model, types=typing_of(model).types)
    low.number(spec.nodes)
    low.lower_nodes(spec.nodes)
    start = model.start
    assert start is not None
    context = tuple(
        (name, None if f.default is None else low.expression(f.default))
        for name, f in model.context.items()
    )
    inputs = tuple(
        tb.InputField(name, str(f.type), None if f.default is None else low.expression(f.default))
        for name, f in model.input.items()
    )
    types = _types(model, low)  # before the expressions are taken: defaults add some
    return tb.Table(
        schema=tb.SCHEMA_VERSION,
        workflow=spec.header.name.text,
        version=spec.header.version,
        # surrogatepass: text given through the API may hold a lone surrogate, which no file can
        source_hash=hashlib.sha256(model.text.encode("utf-8", "surrogatepass")).hexdigest(),
        start=low.ids[start.target.text],
        states=tuple(low.states),
        events=tuple(low.events),
        rows=tuple(sorted(low.rows, key=lambda r: (r.state, r.event))),
        expressions=tuple(low.expressions),
        input=inputs,
        context=context,
        errors=tuple(sorted(model.errors)),
        types=types,
        time_types=_time_types(model, types),
    )


def _time_types(model: Model, types: tb.Types) -> tuple[tuple[str, str], ...]:
    """The context's and the output's fields whose values may hold times, with their
    types as written (``Table.time_types``)."""
    records = {r.name: r.fields for r in types.records}
    return tuple(
        sorted(
            (f"{part}.{name}", str(f.type))
            for part, fields in (("context", model.context), ("output", model.output))
            for name, f in fields.items()
            if holds_times(records, str(f.type))
        )
    )


def _types(model: Model, low: _Lowering) -> tb.Types:
    """The declared shapes the runtime checks outside values against (sorted: stable hash)."""

    def _fields(fields: tuple[sp.Field, ...] | None) -> tuple[tb.FieldType, ...]:
        return tuple(
            tb.FieldType(
                f.name.text,
                str(f.type),
                f.default is not None,
                None if f.default is None else low.expression(f.default),
            )
            for f in fields or ()
        )

    records, enums = [], []
    for name, decl in sorted(model.types.items()):
        if isinstance(decl, sp.EnumDecl):
            enums.append(tb.Enum(name, tuple(m.text for m in decl.members)))
        else:
            records.append(tb.Shape(name, _fields(decl.fields)))
    results = []
    for name, info in sorted(model.nodes.items()):
        node = info.node
        if not isinstance(node, sp.TaskNode):
            continue
        if isinstance(node.work, sp.ServiceWork):
            service = model.services.get(node.work.service.text)
            fields = None if service is None else model.result_fields(service)
            if fields is not None:
                results.append(tb.Shape(name, _fields(fields)))
        elif node.form is not None:
            results.append(tb.Shape(name, _fields(node.form)))
    return tb.Types(
        records=tuple(records),
        enums=tuple(enums),
        signals=tuple(tb.Shape(n, _fields(d.payload)) for n, d in sorted(model.signals.items())),
        messages=tuple(tb.Shape(n, _fields(d.payload)) for n, d in sorted(model.messages.items())),
        results=tuple(results),
        errors=tuple(tb.Shape(n, _fields(f)) for n, f in sorted(model.error_payloads.items())),
    )


def constant(model: Model, e: ex.Expr) -> object:
    """The value of a constant expression of ``model``'s file (a field's default) as the
    runtime computes it: the value a left-out field gets, which ``wf gen json-schema``
    writes as the field's ``default``. A ValueError says why it cannot be computed."""
    low = _Lowering(model, types=typing_of(model).types)
    try:
        return ir.evaluate(low.lower_expr(e), {})
    except ir.ExpressionError as err:
        raise ValueError(str(err)) from err
