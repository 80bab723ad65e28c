"""The grammar rules of nodes and their clauses."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from decimal import Decimal
from typing import Any

from lark import Token, v_args

from wflang.dsl import diagnostics as diag
from wflang.dsl import expr as ex
from wflang.dsl import spec as sp
from wflang.dsl.build.base import Block, BuilderBase, Clause, Fields, T
from wflang.dsl.build.literals import bounded_int
from wflang.dsl.span import Span

#: The boundary signal and message clauses: on a task, a call, a parallel and a map.
EVENTS = frozenset({"on signal", "on message"})
#: Which clauses each node kind accepts (the rest are WF003), and the spec field
#: each one fills. Repeatable clauses collect into tuples.
NODE_CLAUSES: dict[str, frozenset[str]] = {
    "task": frozenset(
        {
            "args",
            "output",
            "form",
            "retry",
            "timeout",
            "every",
            "on",
            "on signal",
            "on message",
            "compensate",
            "next",
            "renamed",
            "raises",
            "heartbeat",
        }
    ),
    # A send is done in its step: nothing to retry, time out, catch or undo.
    "send task": frozenset({"args", "output", "next", "renamed"}),
    "choice": frozenset({"renamed"}),
    "wait": frozenset({"output", "timeout", "every", "next", "renamed"}),
    "first": frozenset({"renamed"}),
    # An arm's block only writes its payload into the context; its route is its arrow.
    "signal or message arm": frozenset({"output"}),
    "sleep": frozenset({"next", "renamed"}),
    "parallel": frozenset({"timeout", "every", "on", "next", "renamed"} | EVENTS),
    "map": frozenset(
        {"output", "timeout", "every", "on", "next", "concurrency", "sequential", "tolerate"}
        | {"renamed"}
        | {"local", "collect"}
        | EVENTS
    ),
    "call": frozenset(
        {"args", "output", "retry", "timeout", "every", "on", "compensate", "next", "renamed"}
        | EVENTS
    ),
    "end": frozenset({"output", "error", "next", "renamed"}),
}
CLAUSE_FIELDS = {
    "args": "args",
    "output": "output",
    "form": "form",
    "retry": "retry",
    "timeout": "timeouts",
    "every": "timeouts",  # a repeating boundary timer: one of the node's timers, in order
    "on": "handlers",
    "on signal": "events",  # boundary signals and messages: the node's events, in order
    "on message": "events",
    "compensate": "compensate",
    "next": "next",
    "error": "error",
    "concurrency": "concurrency",
    "sequential": "sequential",
    "tolerate": "tolerate",
    "renamed": "renamed_from",
    "raises": "raises",
    "heartbeat": "heartbeat",
    "local": "locals",
    "collect": "collects",
}
REPEATABLE = frozenset({"timeout", "every", "on", "collect"} | EVENTS)


class NodeRules(BuilderBase):
    """The grammar rules of nodes and their clauses."""

    def _assemble(self, kind: str, name: sp.Ident, clauses: Sequence[Clause]) -> dict[str, Any]:
        """Place clauses into node fields; report clauses the kind does not take."""
        allowed = NODE_CLAUSES[kind]
        noun = kind if " " in kind else f"{kind} node"
        out: dict[str, Any] = {}
        seen: dict[str, Clause] = {}
        for c in clauses:
            if c.kind not in allowed:
                takes = ", ".join(sorted(allowed))
                self._report(
                    diag.MISPLACED_CLAUSE,
                    f"a {noun} does not take '{c.kind}'",
                    c.span,
                    hint=f"a {noun} takes: {takes}",
                )
                continue
            attr = CLAUSE_FIELDS[c.kind]
            if c.kind in REPEATABLE:
                out[attr] = (*out.get(attr, ()), c.value)
            elif c.kind in seen:
                first = seen[c.kind].span
                self.ctx.diagnostics.append(
                    diag.Diagnostic.of(
                        diag.MISPLACED_CLAUSE,
                        f"'{c.kind}' is given twice in node '{name.text}'",
                        c.span,
                        related=(diag.Related(first, "first given here"),),
                    )
                )
            else:
                seen[c.kind] = c
                out[attr] = c.value
        return out

    def _make_node(self, cls: Callable[..., T], kind: str, kw: Token, name: Token,
              parts: Sequence[Any], end: Span, **fields: Any) -> T:  # fmt: skip
        ident = self._ident(name)
        clauses = [p for p in parts if isinstance(p, Clause)]
        for p in parts:
            if isinstance(p, Block):
                clauses.extend(p.clauses)
        fields.update(self._assemble(kind, ident, clauses))
        return cls(ident, span=self._tspan(kw).to(end), **fields)

    @v_args(inline=True)
    def task_node(self, kw: Token, name: Token, work: sp.TaskWork, block: Block) -> sp.TaskNode:
        kind = "send task" if isinstance(work, sp.SendWork) else "task"
        node = self._make_node(sp.TaskNode, kind, kw, name, (block,), block.span, work=work)
        if node.heartbeat is not None and not (
            isinstance(work, sp.ServiceWork) and work.asynchronous
        ):
            self._report(
                diag.MISPLACED_CLAUSE,
                f"'heartbeat' is for an async service task: '{node.name.text}' is not async",
                next(c.span for c in block.clauses if c.kind == "heartbeat"),
                hint="mark its service 'async' (its handler then heartbeats with the token)",
            )
        if node.form is not None and isinstance(work, sp.ServiceWork | sp.ScriptWork):
            kind = "service" if isinstance(work, sp.ServiceWork) else "script"
            self._report(
                diag.MISPLACED_CLAUSE,
                f"a {kind} task does not take 'form'",
                next(c.span for c in block.clauses if c.kind == "form"),
                hint="only user and manual tasks have a form; a service declares its result",
            )
        if node.raises and isinstance(work, sp.ServiceWork | sp.ScriptWork):
            kind = "service" if isinstance(work, sp.ServiceWork) else "script"
            self._report(
                diag.MISPLACED_CLAUSE,
                f"a {kind} task does not take 'raises'",
                next(c.span for c in block.clauses if c.kind == "raises"),
                hint="a person raises errors on a user or manual task; a service declares "
                "them in its signature (service ... raises E)",
            )
        return node

    @v_args(inline=True)
    def service_kind(self, kw: Token, service: sp.Ident, mark: Token | None) -> sp.ServiceWork:
        end = service.span if mark is None else self._tspan(mark)
        return sp.ServiceWork(service, span=self._tspan(kw).to(end), asynchronous=mark is not None)

    @v_args(inline=True)
    def script_kind(self, kw: Token) -> sp.ScriptWork:
        return sp.ScriptWork(span=self._tspan(kw))

    @v_args(inline=True)
    def user_kind(self, kw: Token, assignee: ex.Expr | None) -> sp.UserWork:
        span = self._tspan(kw)
        return sp.UserWork(assignee, span=span if assignee is None else span.to(assignee.span))

    @v_args(inline=True)
    def manual_kind(self, kw: Token, assignee: ex.Expr | None) -> sp.ManualWork:
        span = self._tspan(kw)
        return sp.ManualWork(assignee, span=span if assignee is None else span.to(assignee.span))

    @v_args(inline=True)
    def send_signal(self, kw: Token, _: Token, name: Token, to: ex.Expr) -> sp.SendWork:
        return sp.SendWork(
            sp.SendKind.SIGNAL, self._ident(name), to, span=self._tspan(kw).to(to.span)
        )

    @v_args(inline=True)
    def send_message(self, kw: Token, _: Token, name: Token, key: ex.Expr) -> sp.SendWork:
        return sp.SendWork(
            sp.SendKind.MESSAGE, self._ident(name), key, span=self._tspan(kw).to(key.span)
        )

    def choice_node(self, children: list[Any]) -> sp.ChoiceNode:
        kw, name, *parts, close = children
        arms = tuple(p for p in parts if isinstance(p, sp.ChoiceArm))
        clauses = [p for p in parts if isinstance(p, Clause)]
        node = self._make_node(
            sp.ChoiceNode, "choice", kw, name, clauses, self._tspan(close), arms=arms
        )
        return self._nest(node, *(a.guard for a in arms))

    @v_args(inline=True)
    def when_arm(self, kw: Token, guard: ex.Expr, target: Token) -> sp.ChoiceArm:
        span = self._tspan(kw).to(self._tspan(target))
        return sp.ChoiceArm(guard, self._ident(target), span=span)

    @v_args(inline=True)
    def else_arm(self, kw: Token, target: Token) -> sp.ChoiceArm:
        return sp.ChoiceArm(None, self._ident(target), span=self._tspan(kw).to(self._tspan(target)))

    @v_args(inline=True)
    def wait_node(
        self, kw: Token, name: Token, trigger: sp.WaitTrigger, block: Block
    ) -> sp.WaitNode:
        return self._make_node(sp.WaitNode, "wait", kw, name, (block,), block.span, trigger=trigger)

    @v_args(inline=True)
    def signal_wait(self, kw: Token, signal: Token) -> sp.SignalTrigger:
        return sp.SignalTrigger(self._ident(signal), span=self._tspan(kw).to(self._tspan(signal)))

    @v_args(inline=True)
    def message_wait(self, kw: Token, message: Token, correlation: ex.Expr) -> sp.MessageTrigger:
        span = self._tspan(kw).to(correlation.span)
        return sp.MessageTrigger(self._ident(message), correlation, span=span)

    @v_args(inline=True)
    def until_wait(self, kw: Token, at: ex.Expr) -> sp.UntilTrigger:
        return sp.UntilTrigger(at, span=self._tspan(kw).to(at.span))

    def first_node(self, children: list[Any]) -> sp.FirstNode:
        kw, name, *parts, close = children
        arms = tuple(p for p in parts if isinstance(p, sp.EventArm))
        clauses = [p for p in parts if isinstance(p, Clause)]
        node = self._make_node(
            sp.FirstNode, "first", kw, name, clauses, self._tspan(close), arms=arms
        )
        return self._nest(node, *arms)

    def _arm(self, kw: Token, trigger: sp.ArmTrigger, target: Token, block: Block | None
             ) -> sp.EventArm:  # fmt: skip
        ident = self._ident(target)
        end = block.span if block is not None else ident.span
        fields = self._assemble(
            "signal or message arm", ident, block.clauses if block is not None else ()
        )
        arm = sp.EventArm(trigger, ident, span=self._tspan(kw).to(end), **fields)
        return self._nest(arm, trigger, *(e.value for e in arm.output))

    @v_args(inline=True)
    def signal_arm(self, kw: Token, trigger: sp.SignalTrigger, target: Token,
                   block: Block | None) -> sp.EventArm:  # fmt: skip
        return self._arm(kw, trigger, target, block)

    @v_args(inline=True)
    def message_arm(self, kw: Token, trigger: sp.MessageTrigger, target: Token,
                    block: Block | None) -> sp.EventArm:  # fmt: skip
        return self._arm(kw, trigger, target, block)

    @v_args(inline=True)
    def after_arm(self, kw: Token, after: ex.Expr, target: Token) -> sp.EventArm:
        trigger = sp.AfterTrigger(after, span=self._tspan(kw).to(after.span))
        return self._arm(kw, trigger, target, None)

    @v_args(inline=True)
    def until_arm(self, kw: Token, at: ex.Expr, target: Token) -> sp.EventArm:
        return self._arm(kw, self.until_wait(kw, at), target, None)

    @v_args(inline=True)
    def sleep_node(
        self, kw: Token, name: Token, duration: ex.Expr, rest: Block | Clause
    ) -> sp.SleepNode:
        return self._make_node(
            sp.SleepNode, "sleep", kw, name, (rest,), rest.span, duration=duration
        )

    @v_args(inline=True)
    def short_next(self, kw: Token, target: Token) -> Clause:
        return Clause("next", self._ident(target), self._tspan(kw).to(self._tspan(target)))

    def parallel_node(self, children: list[Any]) -> sp.ParallelNode:
        kw, name, *parts, close = children
        branches = tuple(p for p in parts if isinstance(p, sp.Branch))
        joins = [p for p in parts if isinstance(p, tuple) and p and isinstance(p[0], sp.Join)]
        clauses = [p for p in parts if isinstance(p, Clause)]
        join: sp.Join | None = None
        if joins:
            join, target = joins[0]
            if target is not None:
                clauses.append(Clause("next", target, join.span))
            for extra, _ in joins[1:]:
                self.ctx.diagnostics.append(
                    diag.Diagnostic.of(
                        diag.MISPLACED_CLAUSE,
                        f"'join' is given twice in node '{name}'",
                        extra.span,
                        related=(diag.Related(join.span, "first given here"),),
                    )
                )
        node = self._make_node(
            sp.ParallelNode, "parallel", kw, name, clauses, self._tspan(close),
            branches=branches, join=join,
        )  # fmt: skip
        return self._nest(node, *branches)

    def branch(self, children: list[Any]) -> sp.Branch:
        kw, name, *nodes, close = children
        span = self._tspan(kw).to(self._tspan(close))
        return self._nest(sp.Branch(self._ident(name), tuple(nodes), span=span), *nodes)

    @v_args(inline=True)
    def join_clause(
        self, kw: Token, policy: sp.Join, target: Token | None
    ) -> tuple[sp.Join, sp.Ident | None]:
        end = self._tspan(target) if target is not None else policy.span
        join = sp.Join(policy.kind, policy.count, policy.of, span=self._tspan(kw).to(end))
        return (join, None if target is None else self._ident(target))

    def join_all(self, _: list[Any]) -> sp.Join:
        return sp.Join(sp.JoinKind.ALL)

    def join_any(self, _: list[Any]) -> sp.Join:
        return sp.Join(sp.JoinKind.ANY)

    @v_args(inline=True)
    def join_n(self, count: Token, of: Token | None) -> sp.Join:
        span = self._tspan(count).to(self._tspan(of or count))
        return sp.Join(
            sp.JoinKind.N_OF_M, self._int(count), None if of is None else self._int(of), span=span
        )

    def map_node(self, children: list[Any]) -> sp.MapNode:
        kw, name, items, alias, *parts, close = children
        nodes = tuple(p for p in parts if not isinstance(p, Clause))
        clauses = [p for p in parts if isinstance(p, Clause)]
        node = self._make_node(
            sp.MapNode, "map", kw, name, clauses, self._tspan(close),
            items=items, alias=self._ident(alias), nodes=nodes,
        )  # fmt: skip
        return self._nest(node, items, *nodes)

    @v_args(inline=True)
    def concurrency_option(self, kw: Token, n: Token) -> Clause:
        return Clause("concurrency", self._int(n), self._tspan(kw).to(self._tspan(n)))

    @v_args(inline=True)
    def sequential_option(self, kw: Token) -> Clause:
        return Clause("sequential", True, self._tspan(kw))

    @v_args(inline=True)
    def tolerate_option(self, kw: Token, n: Token, percent: Token | None) -> Clause:
        span = self._tspan(kw).to(self._tspan(percent or n))
        value = sp.Tolerance(self._int(n), percent is not None, span=span)
        return Clause("tolerate", value, span)

    @v_args(inline=True)
    def local_option(self, kw: Token, block: Fields) -> Clause:
        return Clause("local", block.fields, self._tspan(kw).to(block.span))

    @v_args(inline=True)
    def collect_option(self, kw: Token, value: ex.Expr, _ctx: Token, target: Token) -> Clause:
        span = self._tspan(kw).to(self._tspan(target))
        return Clause("collect", sp.Collect(value, self._ident(target), span=span), span)

    @v_args(inline=True)
    def call_node(self, kw: Token, name: Token, workflow: sp.Ident, version: Token | None,
                  block: Block) -> sp.CallNode:  # fmt: skip
        pinned = None if version is None else self._int(version)
        return self._make_node(
            sp.CallNode, "call", kw, name, (block,), block.span, workflow=workflow, version=pinned
        )

    @v_args(inline=True)
    def end_node(self, kw: Token, name: Token, outcome: Token, block: Block | None) -> sp.EndNode:
        end = block.span if block else self._tspan(outcome)
        return self._make_node(
            sp.EndNode, "end", kw, name, (block,) if block else (), end,
            outcome=sp.Outcome(str(outcome)),
        )  # fmt: skip

    # -- clauses -------------------------------------------------------------

    def block(self, children: list[Any]) -> Block:
        *clauses, close = children
        close_span = self._tspan(close)
        start = clauses[0].span if clauses else close_span
        return Block(tuple(clauses), start.to(close_span))

    @v_args(inline=True)
    def args_clause(self, kw: Token, entries: tuple[tuple[sp.Entry, ...], Span]) -> Clause:
        return Clause("args", entries[0], self._tspan(kw).to(entries[1]))

    @v_args(inline=True)
    def output_clause(self, kw: Token, entries: tuple[tuple[sp.Entry, ...], Span]) -> Clause:
        return Clause("output", entries[0], self._tspan(kw).to(entries[1]))

    @v_args(inline=True)
    def form_clause(self, kw: Token, block: Fields) -> Clause:
        return Clause("form", block.fields, self._tspan(kw).to(block.span))

    @v_args(inline=True)
    def next_clause(self, kw: Token, target: Token) -> Clause:
        return Clause("next", self._ident(target), self._tspan(kw).to(self._tspan(target)))

    @v_args(inline=True)
    def raises_clause(self, *names: Token) -> Clause:
        idents = tuple(self._ident(n) for n in names)
        return Clause("raises", idents, idents[0].span.to(idents[-1].span))

    @v_args(inline=True)
    def compensate_clause(self, kw: Token, target: Token) -> Clause:
        return Clause("compensate", self._ident(target), self._tspan(kw).to(self._tspan(target)))

    @v_args(inline=True)
    def renamed_clause(self, kw: Token, old: Token) -> Clause:
        return Clause("renamed", self._ident(old), self._tspan(kw).to(self._tspan(old)))

    @v_args(inline=True)
    def error_clause(self, kw: Token, error: Token) -> Clause:
        return Clause("error", self._ident(error), self._tspan(kw).to(self._tspan(error)))

    @v_args(inline=True)
    def on_clause(self, kw: Token, errors: tuple[sp.Ident, ...], target: Token) -> Clause:
        span = self._tspan(kw).to(self._tspan(target))
        return Clause("on", sp.OnError(errors, self._ident(target), span=span), span)

    def event_clause(self, children: list[Any]) -> Clause:
        """``on signal S [non-interrupting] -> NODE [{ output { ... } }]`` (or a message)."""
        kw, trigger, mode, target, block = children
        span = self._tspan(kw).to(block.span if block is not None else self._tspan(target))
        kind = f"on {'signal' if isinstance(trigger, sp.SignalTrigger) else 'message'}"
        output: tuple[sp.Entry, ...] = ()
        for c in block.clauses if block is not None else ():
            if c.kind != "output" or output:
                what = f"'{c.kind}' is given twice" if c.kind == "output" else f"'{c.kind}'"
                self._report(
                    diag.MISPLACED_CLAUSE,
                    f"a boundary {kind[3:]} does not take {what}",
                    c.span,
                    hint=f"an '{kind}' route takes one 'output' that reads the payload",
                )
                continue
            output = c.value
        for entry in (e for e in output if e.local):
            self._report(
                diag.MISPLACED_CLAUSE,
                f"a boundary {kind[3:]} writes the context, not 'local.{entry.name.text}'",
                entry.span,
                hint="write it in the node the route leads to",
            )
        output = tuple(e for e in output if not e.local)
        event = sp.OnEvent(trigger, self._ident(target), mode is None, output, span=span)
        return Clause(kind, event, span)

    def on_any(self, _: list[Any]) -> tuple[sp.Ident, ...]:
        return ()

    def on_errors(self, children: list[Token]) -> tuple[sp.Ident, ...]:
        return tuple(self._ident(t) for t in children)

    @v_args(inline=True)
    def heartbeat_clause(self, kw: Token, every: ex.Expr) -> Clause:
        return Clause("heartbeat", every, self._tspan(kw).to(every.span))

    @v_args(inline=True)
    def timeout_clause(
        self, kw: Token, after: ex.Expr, mode: Token | None, target: Token
    ) -> Clause:
        span = self._tspan(kw).to(self._tspan(target))
        value = sp.Timeout(after, self._ident(target), mode is None, span=span)
        return Clause("timeout", value, span)

    @v_args(inline=True)
    def every_clause(self, kw: Token, after: ex.Expr, times: Token | None, target: Token) -> Clause:
        span = self._tspan(kw).to(self._tspan(target))
        bound = None if times is None else bounded_int(str(times))
        cycle = sp.Cycle(bound, span=span if times is None else self._tspan(times))
        value = sp.Timeout(after, self._ident(target), False, span=span, cycle=cycle)
        return Clause("every", value, span)

    @v_args(inline=True)
    def every_cycle(self, kw: Token, written: Token, target: Token) -> Clause:
        """``every R3/PT10M``: the repetitions, then the duration as a literal of its own."""
        span = self._tspan(kw).to(self._tspan(target))
        count, _, duration = str(written).partition("/")
        start = len(count) + 1  # the duration's literal begins after ``R3/``
        token = Token.new_borrow_pos("DURATION", duration, written)
        token.column = (written.column or 0) + start
        token.start_pos = (written.start_pos or 0) + start
        after = self._duration(token)
        times = bounded_int(count[1:]) if count[1:] else None
        cycle = sp.Cycle(times, iso=True, span=self._tspan(written))
        value = sp.Timeout(after, self._ident(target), False, span=span, cycle=cycle)
        return Clause("every", value, span)

    def retry_clause(self, children: list[Any]) -> Clause:
        kw, *settings, close = children
        span = self._tspan(kw).to(self._tspan(close))
        values: dict[str, Any] = {}
        first: dict[str, Span] = {}
        for key, value, setting_span in (s for s in settings if s is not None):
            if key in first:
                self.ctx.diagnostics.append(
                    diag.Diagnostic.of(
                        diag.MISPLACED_CLAUSE,
                        f"retry setting '{key}' is given twice",
                        setting_span,
                        related=(diag.Related(first[key], "first given here"),),
                    )
                )
                continue
            first[key] = setting_span
            if key == "backoff":
                values["initial_delay"], values["max_delay"] = value
            else:
                values[key] = value
        return Clause("retry", sp.Retry(**values, span=span), span)

    @v_args(inline=True)
    def retry_attempts(self, kw: Token, n: Token) -> tuple[str, int, Span]:
        return ("attempts", self._int(n), self._tspan(kw).to(self._tspan(n)))

    @v_args(inline=True)
    def retry_backoff(self, kw: Token, low: Token, high: Token | None) -> tuple[str, Any, Span]:
        pair = (self._duration(low), None if high is None else self._duration(high))
        return ("backoff", pair, self._tspan(kw).to(self._tspan(high or low)))

    @v_args(inline=True)
    def retry_factor(self, kw: Token, n: Token) -> tuple[str, Decimal, Span]:
        return ("factor", Decimal(str(n)), self._tspan(kw).to(self._tspan(n)))

    @v_args(inline=True)
    def retry_jitter(self, kw: Token, n: Token) -> tuple[str, Decimal, Span]:
        return ("jitter", Decimal(str(n)), self._tspan(kw).to(self._tspan(n)))

    def retry_non_retryable(self, children: list[Any]) -> tuple[str, Any, Span]:
        kw, *names, close = children
        idents = tuple(self._ident(t) for t in names if t is not None)
        return ("non_retryable", idents, self._tspan(kw).to(self._tspan(close)))

    def mapping(self, children: list[Any]) -> tuple[tuple[sp.Entry, ...], Span]:
        open_, *entries, close = children
        return (
            tuple(e for e in entries if e is not None),
            self._tspan(open_).to(self._tspan(close)),
        )

    @v_args(inline=True)
    def entry(self, name: Token, value: ex.Expr) -> sp.Entry:
        return sp.Entry(self._ident(name), value, span=self._tspan(name).to(value.span))

    @v_args(inline=True)
    def local_entry(self, root: Token, name: Token, value: ex.Expr) -> sp.Entry:
        """``local.name: value``: only a map item's variable is written with a dot."""
        if str(root) != "local":
            self._report(
                diag.SYNTAX_ERROR,
                f"'{root}.{name}' cannot be written: a mapping names a field, or 'local.NAME'",
                self._tspan(root).to(self._tspan(name)),
                hint=f"write '{name}: …'",
            )
        span = self._tspan(root).to(value.span)
        return sp.Entry(self._ident(name), value, span=span, local=str(root) == "local")
