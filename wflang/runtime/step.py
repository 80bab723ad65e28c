"""The pure step function: ``step(table, instance, event, now) -> Step``.

No I/O, no clock (``now`` is an argument), no randomness (jitter comes from the
instance's seed): the same table, instance, event and time always give the same
new instance and commands, which is what makes histories replayable.

Inside one step a ``_Run`` works on mutable copies of the instance's parts and
freezes them at the end. What happens when a token enters a state is decided by
the state's kind, through the ``ENTER`` registry of small strategies.

The commonest event, a task's completion that moves its token on to the next task
(through writes and choices) or to the end of a parallel's branch, takes a common
path (``_complete``) that builds the new instance from a few dict copies without a
``_Run``; it gives exactly the step the general path would, and hands anything
else to it.
"""

from __future__ import annotations

import hashlib
import operator
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from decimal import Decimal
from typing import Any, Generic, TypeVar

from attrs import frozen

from wflang.runtime import instance as rt
from wflang.runtime import table as tb
from wflang.runtime.ids import delivery_key
from wflang.runtime.instance import NO_TOKEN, Status
from wflang.runtime.ir import ExpressionError, Value, compile_ir, root_field
from wflang.runtime.limits import DEFAULT as DEFAULT_LIMITS
from wflang.runtime.limits import Limits, check_context, grows
from wflang.runtime.validate import undeclared_error

FINISHED = frozenset(s for s in Status if s.finished)
_ID = operator.attrgetter("id")
_JOIN_TOKEN = operator.attrgetter("token")

#: Transitions one step may take before it stops a loop that never waits.
STEP_BUDGET = 100_000


#: The last instant a timer may be due at (9999-12-31T23:59:59.999Z), in epoch ms.
LAST_INSTANT = 253_402_300_799_999


class WorkflowError(Exception):
    """A failure of the workflow itself (not of a handler): an expression, a budget."""


@frozen(slots=False)
class Step:
    """The outcome of one step: the new instance, what to do, and why (for the history)."""

    instance: rt.Instance
    commands: tuple[rt.Command, ...]
    decisions: tuple[str, ...]


class Compiled:
    """A table with its expressions compiled to closures and its rows indexed, once.

    Everything a step looks up per state is prepared here, when the table is first
    used: the entry strategy, the rows by event with their guards, writes and
    mappings compiled to closures, and the decision texts that never change.
    """

    def __init__(self, table: tb.Table, limits: Limits = DEFAULT_LIMITS) -> None:
        self.table = table
        self.limits = limits
        self.expressions = [compile_ir(e, limits) for e in table.expressions]
        self.rows: dict[tuple[int, str], tuple[tb.Transition, ...]] = {
            (r.state, table.events[r.event]): r.transitions for r in table.rows
        }
        self.names = [s.name for s in table.states]
        self.entries = [s.entry for s in table.states]
        by_state: list[dict[str, tuple[_Transition, ...]]] = [{} for _ in table.states]
        for (state, event), transitions in self.rows.items():
            by_state[state][event] = tuple(_Transition(self, t) for t in transitions)
        self.states = [
            _StateInfo(self, i, state, by_state[i]) for i, state in enumerate(table.states)
        ]
        for info in self.states:  # parallels whose every branch begins with a plain task
            entry = info.entry
            info.fans_to_tasks = (
                isinstance(entry, tb.ParallelEntry)
                and bool(entry.branches)
                and all(
                    self.states[b].arrive == _TASK and not self.states[b].walk
                    for b in entry.branches
                )
            )

    def row(self, state: int, event: str) -> tuple[tb.Transition, ...] | None:
        return self.rows.get((state, event))

    def mapping(self, m: tb.Mapping) -> Callable[[Env], dict[str, Value]]:
        """A mapping as one closure from an environment to a new dict."""
        pairs = [(name, self.expressions[i]) for name, i in m.entries]
        if not pairs:
            return lambda env: {}
        if len(pairs) == 1:
            ((name, fn),) = pairs
            read = root_field(self.table.expressions[m.entries[0][1]])
            if read is not None:  # ``args { n: context.n }``
                return _one_field(name, read[0], read[1], fn)
            return lambda env: {name: fn(env)}
        return lambda env: {name: fn(env) for name, fn in pairs}

    def write(self, m: tb.Mapping) -> _Write:
        """A ``write`` action as one closure: (environment, context) to the new context,
        which is measured against the limit when a write may have grown it by much."""
        pairs = [(name, self.expressions[i]) for name, i in m.entries]
        limits = self.limits
        if len(pairs) == 1:
            ((name, fn),) = pairs

            def write_one(env: Env, ctx: dict[str, Value]) -> dict[str, Value]:
                value = fn(env)
                new = {**ctx, name: value}
                if grows(value):
                    check_context(new, limits)
                return new

            return write_one
        mapping = self.mapping(m)

        def write(env: Env, ctx: dict[str, Value]) -> dict[str, Value]:
            values = mapping(env)
            new = {**ctx, **values}
            if any(map(grows, values.values())):
                check_context(new, limits)
            return new

        return write


Env = Mapping[str, Value]
_Write = Callable[[Env, dict[str, Value]], dict[str, Value]]


def _one_field(
    name: str, root: str, field: str, read: Callable[[Env], Value]
) -> Callable[[Env], dict[str, Value]]:
    """The mapping ``{name: root.field}`` as one closure that reads the field itself
    when the root is a dict (else ``read``, the expression, for its error)."""

    def mapping(env: Env) -> dict[str, Value]:
        record = env.get(root)
        if type(record) is dict:
            return {name: record.get(field)}
        return {name: read(env)}

    return mapping


class _Transition:
    """A transition with its guard and actions compiled.

    Most transitions only write into the context (or do nothing): for them
    ``plain`` is true and ``write`` does all their writes in one call.
    """

    __slots__ = ("actions", "guard", "plain", "target", "write")

    def __init__(self, c: Compiled, t: tb.Transition) -> None:
        self.guard = None if t.guard is None else c.expressions[t.guard]
        self.target = t.target
        # (write mapping, None) or (None, compensation state), in order
        self.actions: tuple[tuple[_Write | None, int], ...] = tuple(
            (c.write(a.mapping), tb.NO_STATE) if a.kind == "write" and a.mapping is not None
            else (None, a.state)
            for a in t.actions
            if (a.kind == "write" and a.mapping is not None) or a.kind == "compensate"
        )  # fmt: skip
        writes = [write for write, _ in self.actions if write is not None]
        self.plain = len(writes) == len(self.actions)  # no compensation to register
        self.write = None if not writes else writes[0] if len(writes) == 1 else _chain(writes)


def _chain(writes: list[_Write]) -> _Write:
    """Several writes of one transition as one: each sees the same environment."""

    def write(env: Env, ctx: dict[str, Value]) -> dict[str, Value]:
        for w in writes:
            ctx = w(env, ctx)
        return ctx

    return write


class _StateInfo:
    """What a step needs of one state, prepared once per table."""

    __slots__ = (
        "args", "arrive", "completed", "done", "ends_ok", "enter", "enter_decision", "entry",
        "fans_to_tasks", "has_output", "id", "name", "on_enter", "rows", "service", "walk",
    )  # fmt: skip

    def __init__(
        self, c: Compiled, index: int, state: tb.State, rows: dict[str, tuple[_Transition, ...]]
    ) -> None:
        entry = state.entry
        self.id = index
        self.name = state.name
        self.entry = entry
        self.enter = _entering(entry)
        self.arrive = _arrival(entry)
        self.fans_to_tasks = False  # set by ``Compiled``, which sees every state
        # an end's outcome is "completed", and it has an output
        self.ends_ok = isinstance(entry, tb.EndEntry) and entry.outcome == "completed"
        self.has_output = isinstance(entry, tb.EndEntry) and bool(entry.output.entries)
        # a service task's service ("" for any other state)
        self.service = (entry.service or "") if isinstance(entry, tb.TaskEntry) else ""
        self.enter_decision = f"enter {state.name}"
        self.completed = f"{state.name} completed"
        self.rows = rows
        self.done = rows.get("done")
        self.on_enter = rows.get("enter")  # a choice's arms
        # the task's or call's arguments, or the end's output
        mapping: tb.Mapping | None = getattr(entry, "args", None) or getattr(entry, "output", None)
        self.args = c.mapping(mapping if mapping is not None else tb.Mapping(()))
        # whether a token here may have map items bound above it: a map encloses the state
        owner, walk = state.owner, False
        while owner != tb.NO_STATE and not walk:
            walk = isinstance(c.table.states[owner].entry, tb.MapEntry)
            owner = c.table.states[owner].owner
        self.walk = walk


_COMPILED: dict[int, Compiled] = {}
_COMPILED_MAX = 256  # compiled tables kept (each holds its table alive)


def compiled(table: tb.Table, limits: Limits = DEFAULT_LIMITS) -> Compiled:
    """The compiled form of a table under some limits (cached by identity: tables are
    immutable; one set of limits per table at a time, as a process uses one)."""
    key = id(table)
    hit = _COMPILED.get(key)
    if hit is None or hit.table is not table or hit.limits is not limits:
        if len(_COMPILED) >= _COMPILED_MAX:  # a process that loads tables again and again
            del _COMPILED[next(iter(_COMPILED))]
        hit = _COMPILED[key] = Compiled(table, limits)
    return hit


def start(
    table: tb.Table,
    instance_id: str,
    input: dict[str, Value],
    now: int,
    seed: int = 0,
    limits: Limits = DEFAULT_LIMITS,
) -> Step:
    """Create an instance and run it until it waits for the world."""
    c = compiled(table, limits)
    data = dict(input)
    inst = rt.Instance(
        instance_id, table.workflow, table.version, Status.RUNNING, data, {}, seed=seed
    )
    run = _Run(c, inst, now)
    run.decide(f"start {table.workflow} v{table.version}")
    try:
        for field in table.input:  # defaults of the fields the caller left out
            if field.name not in data and field.default is not None:
                data[field.name] = c.expressions[field.default]({})
        env = {"input": run.input, "context": run.context}
        for name, default in table.context:
            run.context[name] = None if default is None else run.eval(default, env)
        run.enter(run.new_token(table.start), table.start)
        run.drain()
    except (ExpressionError, WorkflowError) as err:
        run.workflow_error(err)
    return run.freeze()


def step(
    table: tb.Table,
    instance: rt.Instance,
    event: rt.Event,
    now: int,
    limits: Limits = DEFAULT_LIMITS,
) -> Step:
    """Apply one event to an instance."""
    c = _COMPILED.get(id(table))
    if c is None or c.table is not table or c.limits is not limits:
        c = compiled(table, limits)
    if type(event) is rt.TaskCompleted:
        common = _complete(c, instance, event)
        if common is not None:
            return common
    run = _Run(c, instance, now)
    status = instance.status
    if (
        (status is not _RUNNING and status is not _COMPENSATING)
        and not isinstance(event, _OPS_ON_DEAD_LETTERS)
        # an operator may give up on a dead-lettered instance (and compensate it)
        and not (status is Status.DEAD_LETTERED and isinstance(event, rt.CancelRequested))
    ):
        run.decide(f"ignored {type(event).__name__}: the instance is {instance.status.value}")
        if type(event) is rt.TimerFired:  # gone once fired, or a store would fire it forever
            run.timers.pop(event.timer, None)
        return run.freeze()
    try:
        HANDLERS[type(event)](run, event)
        run.drain()
    except (ExpressionError, WorkflowError) as err:
        run.workflow_error(err)
    return run.freeze()


def dead_letter(table: tb.Table, instance: rt.Instance, now: int, reason: str) -> Step:
    """The instance dead-lettered with ``reason``, as one transition.

    What a durable store writes when stepping or storing an instance failed outside
    the workflow's semantics (a value it cannot store, a bug), so that one instance's
    failure never holds up the others; `wf ops retry` takes it up from where it was.
    """
    run = _Run(compiled(table), instance, now)
    run.decide(f"dead-lettered: {reason}")
    run.dead_letter(reason)
    return run.freeze()


_RUNNING, _COMPENSATING = Status.RUNNING, Status.COMPENSATING
#: What an operator may do to a dead-lettered instance (besides cancelling it).
_OPS_ON_DEAD_LETTERS = rt.RetryFrom | rt.ForceComplete | rt.CompleteStep | rt.SkipCompensation
#: The error of a call whose worker stopped after starting it (an at-most-once call
#: is not run again): its effect may have happened.
INTERRUPTED = "Interrupted"
_new = object.__new__
_set_dict = object.__setattr__
#: Where a frozen instance keeps its timers and joins by id for the next step (and its
#: tokens, under ``rt.TOKENS_BY_ID``): beside its fields, not one of them (not
#: compared, not serialised).
_INDEX = "_step_index"
_TOKENS_BY_ID = rt.TOKENS_BY_ID


class _Draft:
    """A token changed during one step: mutable, and frozen into a ``Token`` by ``freeze``.

    A step changes a token two or three times (it enters a state, then waits there,
    or moves on through a choice): building a frozen value for each change cost more
    than the rest of the change. A draft never leaves its step.

    Its ``__dict__`` holds exactly a ``Token``'s fields: a draft of an existing token
    is a copy of the token's ``__dict__`` (one C call), and ``freeze`` makes the new
    token by handing it the draft's ``__dict__``, without a copy or a constructor:
    together less than half the cost of the two constructors.
    """

    id: int
    state: int
    parent: int
    index: int
    attempt: int
    waiting: str
    side: bool
    compensating: bool
    locals: tuple[tuple[str, Value], ...]
    visit: int

    def __init__(self, id: int, state: int, parent: int = NO_TOKEN, index: int = 0,
                 side: bool = False, compensating: bool = False,
                 locals: tuple[tuple[str, Value], ...] = ()) -> None:  # fmt: skip
        """A new token (the defaults of ``Token`` for the rest), in field order."""
        self.id, self.state, self.parent, self.index = id, state, parent, index
        self.attempt, self.waiting, self.side, self.compensating = 1, "", side, compensating
        self.locals, self.visit = locals, 0


def _draft_of(token: rt.Token | _Draft) -> _Draft:
    """A draft with the fields of ``token`` (a copy of its ``__dict__``)."""
    draft: _Draft = _new(_Draft)
    draft.__dict__ = token.__dict__.copy()
    return draft


def _token_of(draft: _Draft) -> rt.Token:
    """The frozen token of a draft, which must not change afterwards (it shares its dict)."""
    token: rt.Token = _new(rt.Token)
    _set_dict(token, "__dict__", draft.__dict__)
    return token


def _token_with(fields: dict[str, object]) -> rt.Token:
    """A frozen token with these fields (all of them, owned by the token from now on):
    no constructor, which costs more than copying a dict of fields and setting three."""
    token: rt.Token = _new(rt.Token)
    _set_dict(token, "__dict__", fields)
    return token


#: A token as a step sees it: the instance's, or this step's draft of it.
_Token = rt.Token | _Draft
_Index = tuple[dict[int, _Token], dict[str, rt.Timer], dict[int, rt.Join]]
#: The timers and joins by id a frozen instance keeps under ``_INDEX``.
_Index2 = tuple[dict[str, rt.Timer], dict[int, rt.Join]]


def _index(inst: rt.Instance) -> _Index:
    """Fresh dicts of an instance's tokens, timers and joins by id, in their order.

    The step that made an instance leaves these beside its fields, so that the next
    step copies dicts (C speed) instead of rebuilding them one value at a time: a
    wide parallel has many tokens on every step.
    """
    fields = inst.__dict__
    index: tuple[dict[str, rt.Timer], dict[int, rt.Join]] | None = fields.get(_INDEX)
    by_id: dict[int, _Token] | None = fields.get(rt.TOKENS_BY_ID)
    if index is not None and by_id is not None:
        timers, joins = index
        return by_id.copy(), timers.copy(), joins.copy()
    return (
        dict(zip(map(_ID, inst.tokens), inst.tokens, strict=True)),
        dict(zip(map(_ID, inst.timers), inst.timers, strict=True)),
        dict(zip(map(_JOIN_TOKEN, inst.joins), inst.joins, strict=True)),
    )


_T = TypeVar("_T")


class _Rare(Generic[_T]):
    """A field of the instance that a step seldom changes, read from the old instance
    until the step writes it (then kept in ``run.rare`` for ``freeze``).

    Copying all of them into every run, and back into every new instance, cost more
    than the few steps that change them.
    """

    __slots__ = ("field",)

    def __init__(self, field: str) -> None:
        self.field = field

    def __get__(self, run: _Run, owner: type | None = None) -> _T:
        rare = run.rare
        if rare is not None and self.field in rare:
            return rare[self.field]  # type: ignore[no-any-return]
        return getattr(run.inst, self.field)  # type: ignore[no-any-return]

    def __set__(self, run: _Run, value: _T) -> None:
        if run.rare is None:
            run.rare = {}
        run.rare[self.field] = value


#: The rare fields that an instance keeps as tuples (a step may keep lists).
_TUPLES = frozenset(("compensations", "buffered", "seen_keys"))


class _Run:
    """The working state of one step."""

    __slots__ = (
        "agenda", "budget", "c", "commands", "context", "decisions", "drafts", "input", "inst",
        "joins", "next_token", "now", "rare", "states", "status", "timers", "tokens",
    )  # fmt: skip

    # Seldom changed (kept as the instance's values until written; sequences may
    # be replaced by lists, frozen into tuples by ``freeze``).
    compensations: _Rare[Sequence[int]] = _Rare("compensations")
    buffered: _Rare[Sequence[rt.Signal]] = _Rare("buffered")
    seen: _Rare[Sequence[str]] = _Rare("seen_keys")
    output: _Rare[dict[str, Value] | None] = _Rare("output")
    error: _Rare[str | None] = _Rare("error")
    after_saga: _Rare[str] = _Rare("outcome_after_compensation")
    saga_error: _Rare[str | None] = _Rare("error_after_compensation")
    snapshot: _Rare[dict[str, Value] | None] = _Rare("snapshot")

    def __init__(self, c: Compiled, inst: rt.Instance, now: int) -> None:
        self.c, self.inst, self.now = c, inst, now
        self.states = c.states
        self.status = inst.status
        self.input = inst.input
        self.context = inst.context  # replaced, never changed in place (see ``follow``)
        fields = inst.__dict__  # the dicts the step that made ``inst`` left (see ``_index``)
        by_id: dict[int, _Token] | None = fields.get(rt.TOKENS_BY_ID)
        rest: tuple[dict[str, rt.Timer], dict[int, rt.Join]] | None = fields.get(_INDEX)
        if by_id is not None and rest is not None:
            self.tokens, self.timers, self.joins = by_id.copy(), rest[0].copy(), rest[1].copy()
        else:
            self.tokens, self.timers, self.joins = _index(inst)
        self.next_token = inst.next_token
        self.rare: dict[str, Any] | None = None
        self.commands: list[rt.Command] = []
        self.decisions: list[str] = []
        self.agenda: deque[tuple[int, int]] = deque()
        self.drafts: list[_Draft] = []
        self.budget = STEP_BUDGET

    # -- bookkeeping -----------------------------------------------------------------

    def freeze(self) -> Step:
        # The dicts keep insertion order, and tokens are inserted in id order, so the
        # tuples come out in a stable order without sorting.
        #
        # The new instance is the old one's fields (its id, workflow, version and
        # seed never change) with those a step may change replaced: a copy of the old
        # one's ``__dict__``, about half the cost of calling the 19-field constructor.
        old = self.inst
        tokens, timers, joins = self.tokens, self.timers, self.joins
        for d in self.drafts:  # the tokens changed in this step, frozen once each
            if tokens.get(d.id) is d:
                tokens[d.id] = _token_of(d)
        fields = old.__dict__.copy()
        fields["status"] = self.status
        fields["input"] = self.input  # changed only by an operator's retry with new input
        fields["context"] = self.context
        fields.pop("tokens", None)  # built from the dict when read: see ``rt.TOKENS_BY_ID``
        fields[rt.TOKENS_BY_ID] = tokens
        fields["timers"] = tuple(timers.values()) if timers else ()
        fields["joins"] = tuple(joins.values()) if joins else ()
        fields["seq"] = old.seq + 1
        fields["next_token"] = self.next_token
        if self.rare is not None:
            for name, value in self.rare.items():
                fields[name] = tuple(value) if name in _TUPLES else value
        fields[_INDEX] = (timers, joins)  # this run is over: no more changes to these
        inst = _new(rt.Instance)
        _set_dict(inst, "__dict__", fields)
        return Step(inst, tuple(self.commands), tuple(self.decisions))

    def decide(self, text: str) -> None:
        self.decisions.append(text)

    def name(self, state: int) -> str:
        return "(end of scope)" if state == tb.NO_STATE else self.c.names[state]

    def new_token(self, state: int, parent: int = NO_TOKEN, index: int = 0, side: bool = False,
                  compensating: bool = False,
                  locals: tuple[tuple[str, Value], ...] = ()) -> _Draft:  # fmt: skip
        token = _Draft(self.next_token, state, parent, index, side, compensating, locals)
        self.next_token += 1
        self.tokens[token.id] = token
        self.drafts.append(token)
        return token

    def draft(self, token: _Token) -> _Draft:
        """The token as this step's draft of it: made (from ``token``) on its first change."""
        if type(token) is _Draft and self.tokens.get(token.id) is token:
            return token
        new = _draft_of(token)
        self.tokens[token.id] = new
        self.drafts.append(new)
        return new

    def update(self, token: _Token, state: int | None = None, waiting: str | None = None,
               attempt: int | None = None) -> _Draft:  # fmt: skip
        """The token with a new state, wait or attempt."""
        new = self.draft(token)
        if state is not None:
            new.state = state
        if waiting is not None:
            new.waiting = waiting
        if attempt is not None:
            new.attempt = attempt
        return new

    def wait(self, token: _Token, waiting: str) -> _Draft:
        """The token, now waiting for ``waiting`` (``update`` without its keywords)."""
        new = self.draft(token)
        new.waiting = waiting
        return new

    def key(self, token: _Token) -> str:
        state = token.state
        name = "(end of scope)" if state == tb.NO_STATE else self.c.names[state]
        return f"{self.inst.id}:{name}:{token.visit}:{token.id}:{token.attempt}"

    def env(self, token: _Token, extra: dict[str, Value] | None = None) -> dict[str, Value]:
        """The roots an expression at the token's state reads, with ``extra`` (a result,
        a signal) and the items of the maps around it."""
        if token.locals or (token.parent != NO_TOKEN and self.states[token.state].walk):
            return self.scoped_env(token, extra)
        if extra is None:
            return {"input": self.input, "context": self.context}
        return {"input": self.input, "context": self.context, **extra}

    def scoped_env(self, token: _Token, extra: dict[str, Value] | None) -> dict[str, Value]:
        """``env`` of a token with map items bound in it or in a map around it."""
        env: dict[str, Value] = {"input": self.input, "context": self.context}
        if token.parent != NO_TOKEN and self.states[token.state].walk:
            parent = self.tokens.get(token.parent)
            chain = []
            while parent is not None:  # map aliases of every enclosing map
                chain.append(parent)
                parent = self.tokens.get(parent.parent)
            for p in reversed(chain):
                env.update(p.locals)
        if token.locals:
            env.update(token.locals)
        if extra:
            env.update(extra)
        return env

    def eval(self, index: int, env: Mapping[str, Value]) -> Value:
        return self.c.expressions[index](env)

    def mapping(self, m: tb.Mapping, env: dict[str, Value]) -> dict[str, Value]:
        return {name: self.eval(i, env) for name, i in m.entries}

    def start_timer(self, token: _Token, purpose: str, due: int) -> None:
        name = self.name(token.state)
        if not 0 <= due <= LAST_INSTANT:  # a store keeps due times as 64-bit integers
            raise WorkflowError(
                f"the {purpose} timer of '{name}' would be due at {due} ms, outside 1970..9999"
            )
        timer_id = f"{self.inst.id}:{name}:{token.visit}:{token.id}:{token.attempt}:{purpose}"
        timer = rt.Timer(timer_id, token.id, purpose, due)
        self.timers[timer.id] = timer
        self.commands.append(rt.StartTimer(timer.id, due))

    def cancel_timers(self, token: _Token, keep_boundary: bool = False) -> None:
        if not self.timers:
            return
        for timer in [t for t in self.timers.values() if t.token == token.id]:
            if keep_boundary and timer.purpose.startswith("boundary:"):
                continue
            del self.timers[timer.id]
            self.commands.append(rt.CancelTimer(timer.id))

    def workflow_error(self, err: Exception) -> None:
        self.decide(f"workflow error: {err}")
        self.dead_letter(f"workflow error: {err}")

    def dead_letter(self, reason: str) -> None:
        if self.status is _COMPENSATING:  # kept for the end of the saga (``resume``)
            self.saga_error = self.error
        self.status = Status.DEAD_LETTERED
        self.error = reason
        self.snapshot = dict(self.context)
        self.commands.append(rt.Finish(Status.DEAD_LETTERED, None, reason))

    # -- moving tokens -----------------------------------------------------------------

    def enter(self, token: _Token, state: int) -> None:
        """Move a token to a state; the state acts on it when the agenda gets there.

        Entering is queued, not called, so that a long chain of inline steps (a
        loop of scripts and choices, a map of a thousand items) runs in a loop,
        not in ever deeper recursion.
        """
        new = self.draft(token)
        new.state, new.attempt, new.waiting, new.visit = state, 1, "entering", self.inst.seq + 1
        self.agenda.append((new.id, state))

    def drain(self) -> None:
        """Let every queued token act, until all of them wait for the world."""
        agenda, tokens, states = self.agenda, self.tokens, self.states
        while agenda:
            status = self.status
            if status is not _RUNNING and status is not _COMPENSATING:
                return
            token_id, state = agenda.popleft()
            token = tokens.get(token_id)
            if token is None or token.state != state or token.waiting != "entering":
                continue  # stopped (a lost race, a cancelled branch) before it acted
            self.spend()
            if state == tb.NO_STATE:
                self.scope_end(token, "completed", {})
                continue
            info = states[state]
            self.decisions.append(info.enter_decision)
            info.enter(self, token, info.entry)

    def spend(self) -> None:
        """Count one more transition of this step: a loop that never waits is stopped."""
        self.budget -= 1
        if self.budget <= 0:
            raise WorkflowError("a loop ran more than 100,000 steps without waiting")

    def take(self, token: _Token, event: str, env: dict[str, Value]) -> bool:
        """Follow the first transition of (state, event) whose guard holds."""
        row = self.states[token.state].rows.get(event)
        return row is not None and self.follow(token, row, env)

    def follow(self, token: _Token, row: tuple[_Transition, ...], env: dict[str, Value]) -> bool:
        """Follow the first transition of a row whose guard holds."""
        for transition in row:
            guard = transition.guard
            if guard is None or guard(env) is True:
                if transition.target == tb.NO_STATE and not token.compensating:
                    # Only a compensation handler stops without an end: anything else
                    # would finish its flow with an outcome no end declares.
                    raise WorkflowError(
                        f"'{self.name(token.state)}' has nowhere to go: it has no 'next' "
                        "(its 'on' and 'timeout' routes are taken only on an error or a "
                        "timeout)"
                    )
                if not transition.plain:
                    self.act(transition, env)
                elif transition.write is not None:
                    self.context = transition.write(env, self.context)
                if self.timers:
                    self.cancel_timers(token)
                self.enter(token, transition.target)
                return True
        return False

    def act(self, transition: _Transition, env: dict[str, Value]) -> None:
        """A transition's writes and compensations, in their order."""
        for write, compensation in transition.actions:
            if write is not None:
                self.context = write(env, self.context)
            else:
                self.compensations = [*self.compensations, compensation]
                self.decide(f"registered compensation {self.name(compensation)}")

    def outcome_unknown(self, token: _Token) -> None:
        """The call at the token's state was dispatched and its outcome will never be
        known (timed out, interrupted): its effect may have happened, so a compensable
        step registers its compensation as if it had completed."""
        if token.compensating or token.state == tb.NO_STATE:
            return
        for transition in self.states[token.state].done or ():
            for write, compensation in transition.actions:
                if write is None:
                    self.compensations = [*self.compensations, compensation]
                    self.decide(
                        f"registered compensation {self.name(compensation)} "
                        f"({self.name(token.state)}: outcome unknown)"
                    )

    def done(self, token: _Token, extra: dict[str, Value] | None = None) -> None:
        """The work at a token's state finished: go on along its ``done`` row."""
        row = self.states[token.state].done
        if row is None or not self.follow(token, row, self.env(token, extra)):
            raise WorkflowError(f"'{self.name(token.state)}' has nowhere to go")

    def fail(
        self, token: _Token, error: str, transient: bool, message: str = "", catch_all: str = ""
    ) -> None:
        """Route an error as Step Functions does: retry a transient error while attempts
        remain, then ``on ERROR`` / ``on any``, else dead letters (or a failed saga).

        A parallel or map that fails because of an error raised in a branch or item
        routes the error by its own name first, then by ``catch_all`` (``BranchFailed``
        or ``MapFailed``, which catches any failure of its body), then by ``on any``."""
        env = self.env(token)
        state = self.c.table.states[token.state]
        retry = getattr(state.entry, "retry", None)
        if (
            retry is not None
            and transient
            and error not in retry.non_retryable
            and token.attempt < retry.attempts
        ):
            delay = backoff_ms(retry, token.attempt, self.inst.seed, token.id)
            token = self.update(token, waiting="retry")
            self.start_timer(token, "retry", self.now + delay)
            self.decide(f"{state.name}: {error}; retry {token.attempt + 1} in {delay} ms")
            return
        named = bool(catch_all) and catch_all != error  # "Rejected (BranchFailed)"
        shown = f"{error} ({catch_all})" if named else error
        if error == INTERRUPTED:
            self.outcome_unknown(token)
        if (
            self.take(token, f"error:{error}", env)
            or (named and self.take(token, f"error:{catch_all}", env))
            or self.take(token, "error", env)
        ):
            self.decide(f"{state.name}: {shown} handled")
            return
        if token.compensating:
            # Never swallowed, and the saga does not end here: the instance waits for
            # an operator to retry, complete or skip this compensation; the rest follow.
            self.decide(
                f"{state.name}: {shown} after {token.attempt} attempt(s): "
                "compensation dead-lettered"
            )
            self.wait(token, "")  # not in flight any more: its outcome is known
            self.dead_letter(f"compensation '{state.name}' failed: {shown} {message}".strip())
            return
        if token.parent != NO_TOKEN and not token.side:
            # Unhandled inside a branch or map item: that flow fails, and its
            # parallel or map decides (join policy, tolerate, its own `on`).
            self.decide(f"{state.name}: {shown} unhandled: its flow failed")
            self.scope_end(token, "failed", {}, error)
            return
        self.decide(f"{state.name}: {shown} after {token.attempt} attempt(s): dead-lettered")
        self.wait(token, "")  # not in flight any more: its outcome is known
        self.dead_letter(f"{state.name}: {shown} {message}".strip())

    def interrupt(self, token: _Token, undo: bool = True) -> None:
        """Cancel the task or child a token waits for. ``undo``: a saga may still run,
        and the call's outcome is now unknown, so its compensation is registered."""
        if token.waiting in ("task", "human"):
            self.commands.append(rt.CancelTask(self.key(token)))
        elif token.waiting == "child":
            self.commands.append(rt.CancelChild(self.key(token)))
        else:
            return
        if undo:
            self.outcome_unknown(token)

    def stop_token(self, token: _Token, undo: bool = True) -> None:
        """Remove a token and everything running for it (tasks, children, timers, its
        body); ``undo`` as for ``interrupt``."""
        for child in [t for t in self.tokens.values() if t.parent == token.id]:
            self.stop_token(child, undo)
        self.cancel_timers(token)
        self.interrupt(token, undo)
        self.joins.pop(token.id, None)
        self.tokens.pop(token.id, None)

    def stop_everything(self, undo: bool = True) -> None:
        """Stop every token; ``undo=False`` when the instance ends without a saga."""
        for token in [t for t in self.tokens.values() if t.parent == NO_TOKEN]:
            self.stop_token(token, undo)

    def resume(self) -> None:
        """Back to work after a dead letter: compensating again if a compensation had
        failed (the saga then ends with the error it began with)."""
        if any(t.compensating for t in self.tokens.values()):
            self.status, self.error = Status.COMPENSATING, self.saga_error
            self.saga_error = None
        else:
            self.status, self.error = Status.RUNNING, None
        self.snapshot = None

    # -- ends of scopes -----------------------------------------------------------------

    def scope_end(
        self, token: _Token, outcome: str, output: dict[str, Value], error: str | None = None
    ) -> None:
        """A token reached an end (or the end of a compensation handler)."""
        self.tokens.pop(token.id, None)
        if self.timers:
            self.cancel_timers(token)
        if token.compensating:
            self.next_compensation()
        elif token.side:
            self.decide("side path ended")
        elif token.parent == NO_TOKEN:
            self.finish_instance(outcome, output, error)
        else:
            self.child_ended(token, outcome == "completed", output, error)

    def finish_instance(self, outcome: str, output: dict[str, Value], error: str | None) -> None:
        # A failed, cancelled or compensated end keeps the output it declares (a
        # status for the caller, say); a completed end always has one.
        self.output = output if output or outcome == "completed" else None
        self.error = error if outcome != "completed" else None
        if outcome == "compensated":
            self.after_saga = "compensated"
            self.begin_saga()
            return
        self.stop_everything(undo=False)
        self.status = Status(outcome)
        self.decide(f"instance {outcome}")
        self.commands.append(rt.Finish(self.status, self.output, self.error))

    def begin_saga(self) -> None:
        self.stop_everything()  # a call stopped in flight is compensated too
        self.status = Status.COMPENSATING
        self.decide(f"compensating {len(self.compensations)} step(s)")
        self.next_compensation()

    def next_compensation(self) -> None:
        if not self.compensations:
            self.status = Status(self.after_saga)
            self.decide(f"instance {self.status.value}")
            self.commands.append(rt.Finish(self.status, self.output, self.error))
            return
        state = self.compensations[-1]
        self.compensations = self.compensations[:-1]
        self.decide(f"compensate with {self.name(state)}")
        self.enter(self.new_token(state, compensating=True), state)

    def child_ended(
        self, token: _Token, ok: bool, output: dict[str, Value], error: str | None
    ) -> None:
        """A branch or map item ended (``error``: the error it raised by name, if any)."""
        parent = self.tokens.get(token.parent)
        join = self.joins.get(token.parent)
        if parent is None or join is None:
            return
        entry = self.states[parent.state].entry
        keeps_results = ok and isinstance(entry, tb.MapEntry)  # a parallel has no result
        join = rt.Join(
            join.token,
            join.total,
            join.completed + ok,
            join.failed + (not ok),
            join.started,
            (*join.results, (token.index, output)) if keeps_results else join.results,
        )
        self.joins[parent.id] = join
        JOINED[type(entry)](self, parent, join, error)


def backoff_ms(retry: tb.Retry, attempt: int, seed: int, token: int) -> int:
    """The delay before attempt ``attempt + 1``: exponential with seeded jitter, then
    capped (the maximum is a promise to whoever waits: jitter never goes past it)."""
    delay = Decimal(retry.initial_delay_ms) * Decimal(retry.factor) ** (attempt - 1)
    if retry.max_delay_ms is not None:  # first here too: a huge power stays small
        delay = min(delay, Decimal(retry.max_delay_ms))
    jitter = Decimal(retry.jitter)
    if jitter:
        digest = hashlib.sha256(f"{seed}:{token}:{attempt}".encode()).digest()
        fraction = Decimal(int.from_bytes(digest[:4], "big")) / Decimal(2**32)  # 0 .. 1
        delay *= 1 + jitter * (2 * fraction - 1)
    if retry.max_delay_ms is not None:
        delay = min(delay, Decimal(retry.max_delay_ms))
    return max(0, int(delay))


# --------------------------------------------------------------- entering states


def _enter_task(run: _Run, token: _Token, entry: tb.TaskEntry) -> None:
    if entry.work == "script":
        run.done(token, {"result": {}})
        return
    token = _submit_task(run, token, entry)
    if entry.timers:
        _boundary_timers(run, token, entry.timers)


def _enter_service_task(run: _Run, token: _Token, entry: tb.TaskEntry) -> None:
    """``_enter_task`` of the commonest node, a service task without boundary timers."""
    _schedule(run, token, entry)


def _schedule(
    run: _Run, token: _Token, entry: tb.TaskEntry, env: dict[str, Value] | None = None
) -> _Token:
    """Hand the work of a service task to its handler (``env``: the token's, if known)."""
    info = run.states[token.state]
    args = info.args(run.env(token) if env is None else env)
    token = run.wait(token, "task")
    run.commands.append(_call(run.inst.id, info, token.id, token.visit, token.attempt, args))
    return token


def _call(
    iid: str, info: _StateInfo, token: int, visit: int, attempt: int, args: dict[str, Value]
) -> rt.ScheduleTask:
    """The command calling a service task's handler; its idempotency key names the
    instance, the node, the step its visit began, the token and the attempt."""
    name = info.name
    return rt.ScheduleTask(
        f"{iid}:{name}:{visit}:{token}:{attempt}", token, name, info.service, args, attempt
    )


def _submit_task(run: _Run, token: _Token, entry: tb.TaskEntry) -> _Token:
    """Hand the work to a handler or a person (again, on a retry)."""
    if entry.work == "service":
        return _schedule(run, token, entry)
    args = run.states[token.state].args(run.env(token))
    token = run.wait(token, "human")
    run.commands.append(
        rt.CreateHumanTask(
            run.key(token),
            token.id,
            run.name(token.state),
            entry.work,
            entry.assignee,
            entry.form,
            args,
        )
    )
    return token


def _boundary_timers(
    run: _Run, token: _Token, timers: tuple[tb.Timer, ...], env: dict[str, Value] | None = None
) -> None:
    if not timers:
        return
    env = env if env is not None else run.env(token)
    for k, timer in enumerate(timers):
        after = run.eval(timer.after, env)
        if not isinstance(after, int) or isinstance(after, bool):
            raise WorkflowError(f"timeout of '{run.name(token.state)}' is not a duration")
        run.start_timer(token, f"boundary:{k}", run.now + after)


def _enter_choice(run: _Run, token: _Token, entry: tb.ChoiceEntry) -> None:
    row = run.states[token.state].on_enter
    if row is None or not run.follow(token, row, run.env(token)):
        raise WorkflowError(f"no arm of choice '{run.name(token.state)}' matched")


def _enter_wait(run: _Run, token: _Token, entry: tb.WaitEntry) -> None:
    env = run.env(token)
    if entry.trigger == "until":
        assert entry.expression is not None
        at = run.eval(entry.expression, env)
        if not isinstance(at, int) or isinstance(at, bool):
            raise WorkflowError(f"'until' of '{run.name(token.state)}' is not a timestamp")
        token = run.update(token, waiting="timer")
        run.start_timer(token, "until", max(at, run.now))
    else:
        awaited = f"{entry.trigger}:{entry.name}"
        correlation = None
        if entry.trigger == "message":
            correlation = _correlation(run, token, entry, env)
            awaited += f":{correlation}"
        for i, sig in enumerate(run.buffered):
            if (
                sig.kind == entry.trigger
                and sig.name == entry.name
                and (sig.correlation is None or sig.correlation == correlation)
            ):
                run.buffered = [*run.buffered[:i], *run.buffered[i + 1 :]]
                run.decide(f"{run.name(token.state)} takes buffered {sig.kind} {sig.name}")
                run.done(token, {sig.kind: sig.payload})
                return
        token = run.update(token, waiting=awaited)
    _boundary_timers(run, token, entry.timers, env)


def _correlation(run: _Run, token: _Token, entry: tb.WaitEntry, env: Env) -> str:
    """The text a message wait is matched on: its correlation's value when it begins."""
    assert entry.expression is not None
    value = run.eval(entry.expression, env)
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise WorkflowError(
            f"the correlation of '{run.name(token.state)}' is {type(value).__name__}, "
            "not a string or an int"
        )
    return str(value)


def _enter_sleep(run: _Run, token: _Token, entry: tb.SleepEntry) -> None:
    duration = run.eval(entry.duration, run.env(token))
    if not isinstance(duration, int) or isinstance(duration, bool):
        raise WorkflowError(f"sleep '{run.name(token.state)}' is not a duration")
    token = run.update(token, waiting="timer")
    run.start_timer(token, "sleep", run.now + duration)


def _enter_parallel(run: _Run, token: _Token, entry: tb.ParallelEntry) -> None:
    token = run.update(token, waiting="join")
    run.joins[token.id] = rt.Join(token.id, len(entry.branches))
    _boundary_timers(run, token, entry.timers)
    if (
        run.states[token.state].fans_to_tasks
        and not run.agenda
        and run.budget > len(entry.branches)
    ):
        _enter_tasks_now(run, token.id, entry.branches)
        return
    for i, first in enumerate(entry.branches):
        run.enter(run.new_token(first, token.id, i), first)
    if not entry.branches:
        run.done(token)


def _enter_tasks_now(run: _Run, parent: int, branches: tuple[int, ...]) -> None:
    """Branches that each begin with a service task (no timers, outside maps) entered
    at once rather than queued and drained one by one: the same step when nothing was
    queued before them and the budget outlasts them. A wide parallel enters all its
    branches in its first step.

    Their tokens are made final (waiting at their task) and frozen, not drafted; an
    argument's error leaves the branches not yet scheduled entering, as the agenda
    would have left them.
    """
    run.budget -= len(branches)
    visit = run.inst.seq + 1
    env: dict[str, Value] = {"input": run.input, "context": run.context}  # only read
    first_id = run.next_token
    run.next_token += len(branches)
    tokens, states, commands, decisions = run.tokens, run.states, run.commands, run.decisions
    iid, call = run.inst.id, rt.ScheduleTask
    fields = rt.Token(0, 0, parent, attempt=1, waiting="task", visit=visit).__dict__
    for index, first in enumerate(branches):
        token_id = first_id + index
        info = states[first]
        decisions.append(info.enter_decision)
        try:
            args = info.args(env)
        except ExpressionError:
            for j in range(index, len(branches)):  # left entering
                tokens[first_id + j] = _token_with(
                    {**fields, "id": first_id + j, "state": branches[j], "index": j,
                     "waiting": "entering"}
                )  # fmt: skip
            raise
        token = fields.copy()
        token["id"], token["state"], token["index"] = token_id, first, index
        tokens[token_id] = frozen = _new(rt.Token)
        _set_dict(frozen, "__dict__", token)
        name = info.name  # ``_call``, inline
        commands.append(
            call(f"{iid}:{name}:{visit}:{token_id}:1", token_id, name, info.service, args, 1)
        )


def _enter_map(run: _Run, token: _Token, entry: tb.MapEntry) -> None:
    env = run.env(token)
    items = run.eval(entry.items, env)
    if not isinstance(items, list):
        raise WorkflowError(f"map '{run.name(token.state)}' needs a list of items")
    token = run.update(token, waiting="join")
    run.joins[token.id] = rt.Join(token.id, len(items))
    _boundary_timers(run, token, entry.timers, env)
    if not items:
        run.done(token, {"result": []})
        return
    _fill(run, token, entry, items)


def _fill(run: _Run, parent: _Token, entry: tb.MapEntry, items: list[Value]) -> None:
    """Start items until the map runs as many as its concurrency allows."""
    join = run.joins[parent.id]
    limit = join.total if entry.concurrency is None else max(1, entry.concurrency)
    while join.started < join.total and join.started - join.completed - join.failed < limit:
        i = join.started
        join = rt.Join(join.token, join.total, join.completed, join.failed, i + 1, join.results)
        run.joins[parent.id] = join
        child = run.new_token(
            entry.body, parent=parent.id, index=i, locals=((entry.alias, items[i]),)
        )
        run.enter(child, entry.body)


def _enter_call(run: _Run, token: _Token, entry: tb.CallEntry) -> None:
    token = _submit_call(run, token, entry)
    _boundary_timers(run, token, entry.timers)


def _submit_call(run: _Run, token: _Token, entry: tb.CallEntry) -> _Token:
    token = run.update(token, waiting="child")
    run.commands.append(
        rt.StartChild(
            run.key(token),
            token.id,
            entry.workflow,
            entry.version,
            run.states[token.state].args(run.env(token)),
        )
    )
    return token


#: The outcomes whose end, declaring no error, gives the instance its own name as the
#: error. A compensated end is no failure: its saga ran, and its error is the one it
#: declares or none (docs/language.md, end).
_UNNAMED = frozenset({"failed", "cancelled"})


def _enter_end(run: _Run, token: _Token, entry: tb.EndEntry) -> None:
    output = run.states[token.state].args(run.env(token)) if entry.output.entries else {}
    error = entry.error
    if error is None and entry.outcome in _UNNAMED and token.parent == NO_TOKEN:
        error = run.name(token.state)  # an instance's error names the end it stopped at
    run.scope_end(token, entry.outcome, output, error)


ENTER: dict[type, Callable[[_Run, _Token, object], None]] = {
    tb.TaskEntry: _enter_task,  # type: ignore[dict-item]
    tb.ChoiceEntry: _enter_choice,  # type: ignore[dict-item]
    tb.WaitEntry: _enter_wait,  # type: ignore[dict-item]
    tb.SleepEntry: _enter_sleep,  # type: ignore[dict-item]
    tb.ParallelEntry: _enter_parallel,  # type: ignore[dict-item]
    tb.MapEntry: _enter_map,  # type: ignore[dict-item]
    tb.CallEntry: _enter_call,  # type: ignore[dict-item]
    tb.EndEntry: _enter_end,  # type: ignore[dict-item]
}


def _entering(entry: tb.Entry) -> Callable[[_Run, _Token, object], None]:
    """What entering a state with this entry does: its kind's strategy, or a shorter
    one for the commonest node, a service task without boundary timers."""
    if isinstance(entry, tb.TaskEntry) and entry.work == "service" and not entry.timers:
        return _enter_service_task  # type: ignore[return-value]
    return ENTER[type(entry)]


#: What a retry does: hand the same work out again, boundary timers left running.
SUBMIT: dict[type, Callable[[_Run, _Token, object], object]] = {
    tb.TaskEntry: _submit_task,  # type: ignore[dict-item]
    tb.CallEntry: _submit_call,  # type: ignore[dict-item]
}

# ----------------------------------------------------------------- joins


def _need(entry: tb.ParallelEntry, join: rt.Join) -> int:
    """How many branches of a parallel must complete for its join."""
    policy = entry.join
    return join.total if policy == "all" else 1 if policy == "any" else entry.count or join.total


def _joined_parallel(run: _Run, parent: _Token, join: rt.Join, error: str | None) -> None:
    """A branch ended (``error``: the error it raised, if it failed with one by name)."""
    entry = run.states[parent.state].entry
    assert isinstance(entry, tb.ParallelEntry)
    need = _need(entry, join)
    if join.completed >= need:
        run.decide(f"{run.name(parent.state)}: join {entry.join} satisfied")
        for child in [t for t in run.tokens.values() if t.parent == parent.id]:
            run.stop_token(child)  # the losers of 'any' and 'n of m'
        run.joins.pop(parent.id, None)
        run.done(parent)
    elif join.total - join.failed < need:
        for child in [t for t in run.tokens.values() if t.parent == parent.id]:
            run.stop_token(child)
        run.joins.pop(parent.id, None)
        # the failure that made the join impossible names the error
        run.fail(
            parent,
            error or "BranchFailed",
            transient=False,
            catch_all="BranchFailed",
        )


def _joined_map(run: _Run, parent: _Token, join: rt.Join, error: str | None) -> None:
    """An item ended (``error``: the error it raised, if it failed with one by name)."""
    entry = run.c.table.states[parent.state].entry
    assert isinstance(entry, tb.MapEntry)
    allowed = entry.tolerate * join.total // 100 if entry.tolerate_percent else entry.tolerate
    if join.failed > allowed:
        for child in [t for t in run.tokens.values() if t.parent == parent.id]:
            run.stop_token(child)
        run.joins.pop(parent.id, None)
        run.fail(
            parent,
            error or "MapFailed",  # the item whose failure went past the tolerance
            transient=False,
            message=f"{join.failed} item(s) failed",
            catch_all="MapFailed",
        )
        return
    if join.started < join.total:
        items = run.eval(entry.items, run.env(parent))
        assert isinstance(items, list)
        _fill(run, parent, entry, items)
        return
    if join.completed + join.failed == join.total:
        results: list[Value] = [out for _, out in sorted(join.results, key=lambda r: r[0])]
        run.joins.pop(parent.id, None)
        run.done(parent, {"result": results})


JOINED: dict[type, Callable[[_Run, _Token, rt.Join, str | None], None]] = {
    tb.ParallelEntry: _joined_parallel,
    tb.MapEntry: _joined_map,
}

# ----------------------------------------------------- completions on the common path

#: How a state is entered on the common path of a completion (``_StateInfo.arrive``):
#: a service task without boundary timers, a choice, an end; 0 for anything else.
_TASK, _CHOICE, _END = 1, 2, 3
#: Choices one completion passes on the common path before it hands over.
_CHOICES = 16


def _arrival(entry: tb.Entry) -> int:
    if isinstance(entry, tb.TaskEntry) and entry.work == "service" and not entry.timers:
        return _TASK
    if isinstance(entry, tb.ChoiceEntry):
        return _CHOICE
    return _END if isinstance(entry, tb.EndEntry) else 0


def _complete(c: Compiled, inst: rt.Instance, e: rt.TaskCompleted) -> Step | None:
    """A task's completion on the common path, in a few dict operations; None hands it
    to the general path (a ``_Run`` and ``_on_task_completed``).

    The common path: a running instance made by this step function; a token outside
    maps, with no timer of its own; transitions (the task's ``done`` row, then the
    arms of the choices it passes) that only write into the context; and the token
    comes to wait at a service task without boundary timers, or ends its branch of a
    parallel whose join stays undecided. The step is the general path's to the byte
    (``tests/test_step_common.py`` compares them on random workflows); anything else,
    an expression's error included, goes to the general path, which evaluates the
    same expressions again: they have no effects.
    """
    if inst.status is not _RUNNING:
        return None
    fields = inst.__dict__
    by_id: dict[int, _Token] | None = fields.get(_TOKENS_BY_ID)
    index: _Index2 | None = fields.get(_INDEX)
    if by_id is None or index is None:  # a stored instance: its dicts, made now
        by_id, timers, joins = _index(inst)
        index = timers, joins
    tokens: dict[int, rt.Token] = by_id  # type: ignore[assignment]  # all frozen
    key = e.key
    try:
        token_id = int(key.rsplit(":", 2)[-2])
    except (IndexError, ValueError):
        return None
    token = tokens.get(token_id)
    if token is None or token.locals or token.waiting not in _TASK_KINDS or token.state < 0:
        return None
    info = c.states[token.state]
    if key != f"{inst.id}:{info.name}:{token.visit}:{token_id}:{token.attempt}":
        return None  # stale: the general path says so
    if index[0] and _has_timers(index[0], token_id):
        return None
    in_branch = token.parent != NO_TOKEN
    if info.done is None or (in_branch and info.walk):
        return None
    decisions = [info.completed]
    try:
        env: dict[str, Value] = {"input": inst.input, "context": inst.context, "result": e.result}
        moved = _follow_plain(c.states, info.done, env, decisions, in_branch)
        if moved is None:
            return None
        target, context = moved
        if target.arrive == _TASK:
            return _arrive_at_task(inst, tokens, index, token, target, context, decisions)
        if target.arrive == _END and in_branch:
            return _arrive_at_end(c, inst, tokens, index, token, target, context, decisions)
    except ExpressionError:
        pass
    return None


def _has_timers(timers: dict[str, rt.Timer], token: int) -> bool:
    return any(t.token == token for t in timers.values())


def _follow_plain(
    states: list[_StateInfo],
    row: tuple[_Transition, ...],
    env: dict[str, Value],
    decisions: list[str],
    in_branch: bool,
) -> tuple[_StateInfo, dict[str, Value]] | None:
    """``follow`` a row, then the arms of the choices it leads to, while each
    transition taken only writes into the context: the state the token then enters
    and the new context, the ``enter`` decisions in ``decisions``; None if a
    transition does more, leaves the scope, or none is taken."""
    context: dict[str, Value] = env["context"]  # type: ignore[assignment]
    for _ in range(_CHOICES):
        for transition in row:
            guard = transition.guard
            if guard is None or guard(env) is True:
                break
        else:
            return None  # nowhere to go: the general path's error
        if not transition.plain or transition.target == tb.NO_STATE:
            return None
        if transition.write is not None:
            context = transition.write(env, context)
        target = states[transition.target]
        if in_branch and target.walk:
            return None
        decisions.append(target.enter_decision)
        if target.arrive != _CHOICE or target.on_enter is None:
            return target, context
        row = target.on_enter
        env = {"input": env["input"], "context": context}
    return None


def _arrive_at_task(
    inst: rt.Instance,
    tokens: dict[int, rt.Token],
    index: _Index2,
    token: rt.Token,
    target: _StateInfo,
    context: dict[str, Value],
    decisions: list[str],
) -> Step:
    """The token waits at a service task (as ``enter`` and ``wait`` leave it), and its call."""
    args = target.args({"input": inst.input, "context": context})
    visit = inst.seq + 1
    moved = token.__dict__.copy()
    moved["state"], moved["attempt"], moved["waiting"], moved["visit"] = target.id, 1, "task", visit
    command = _call(inst.id, target, token.id, visit, 1, args)
    tokens = tokens.copy()
    tokens[token.id] = _token_with(moved)
    return _stepped(inst, context, tokens, index, (command,), decisions)


def _arrive_at_end(
    c: Compiled,
    inst: rt.Instance,
    tokens: dict[int, rt.Token],
    index: _Index2,
    token: rt.Token,
    target: _StateInfo,
    context: dict[str, Value],
    decisions: list[str],
) -> Step | None:
    """The token ends its branch of a parallel whose join stays undecided (``scope_end``
    and ``child_ended`` on the common path)."""
    if target.has_output:  # for its errors: a parallel keeps no branch's output
        target.args({"input": inst.input, "context": context})
    if token.side or token.compensating:
        return None
    tokens = tokens.copy()
    del tokens[token.id]
    parent = tokens.get(token.parent)
    joins = index[1]
    join = joins.get(token.parent)
    if parent is None or join is None:
        return _stepped(inst, context, tokens, index, (), decisions)
    parallel = c.states[parent.state].entry
    if not isinstance(parallel, tb.ParallelEntry):
        return None
    ok = target.ends_ok
    completed, failed = join.completed + ok, join.failed + (not ok)
    need = _need(parallel, join)
    if completed >= need or join.total - failed < need:
        return None  # the join decides: the general path
    joins = joins.copy()
    joins[parent.id] = _counted(join, completed, failed)
    return _stepped(inst, context, tokens, (index[0], joins), (), decisions, True)


def _counted(join: rt.Join, completed: int, failed: int) -> rt.Join:
    """``join`` with new counts (a copy of its fields: no constructor)."""
    fields = join.__dict__.copy()
    fields["completed"], fields["failed"] = completed, failed
    counted: rt.Join = _new(rt.Join)
    _set_dict(counted, "__dict__", fields)
    return counted


def _stepped(
    inst: rt.Instance,
    context: Value,
    tokens: dict[int, rt.Token],
    index: _Index2,
    commands: tuple[rt.Command, ...],
    decisions: list[str],
    joins_changed: bool = False,
) -> Step:
    """The step of the common path: ``freeze`` for a step that changed only the
    context, the tokens and (``joins_changed``) the joins of the instance."""
    fields = inst.__dict__.copy()
    fields["context"] = context
    fields.pop("tokens", None)
    fields[_TOKENS_BY_ID] = tokens
    fields["seq"] += 1
    if joins_changed:
        fields["joins"] = tuple(index[1].values())
    fields[_INDEX] = index
    new = _new(rt.Instance)
    _set_dict(new, "__dict__", fields)
    return Step(new, commands, tuple(decisions))


# ------------------------------------------------------------------ events


def _by_key(run: _Run, key: str, kinds: tuple[str, ...]) -> _Token | None:
    """The token waiting for the task or child with this key; None if it moved on.

    A key names an instance, a node, the step its visit began, a token and an
    attempt, so an answer for an earlier attempt or visit, a cancelled task or a
    delivery seen twice finds no token.
    """
    try:
        token_id = int(key.rsplit(":", 2)[-2])
    except (IndexError, ValueError):
        return None
    token = run.tokens.get(token_id)
    if token is None or token.waiting not in kinds:
        return None
    # the key it would have now (``run.key``, without the call)
    state = token.state
    name = "(end of scope)" if state == tb.NO_STATE else run.c.names[state]
    if key != f"{run.inst.id}:{name}:{token.visit}:{token_id}:{token.attempt}":
        return None
    return token


_TASK_KINDS = ("task", "human")


def _on_task_completed(run: _Run, e: rt.TaskCompleted) -> None:
    token = _by_key(run, e.key, _TASK_KINDS)
    if token is None:
        run.decide(f"ignored a stale completion of {e.key}")
        return
    run.decisions.append(run.states[token.state].completed)
    run.done(token, {"result": e.result})


def _on_task_failed(run: _Run, e: rt.TaskFailed) -> None:
    token = _by_key(run, e.key, _TASK_KINDS)
    if token is None:
        run.decide(f"ignored a stale failure of {e.key}")
        return
    problem = undeclared_error(run.c.table, token.state, e.error)
    if problem is not None:  # a broken contract: the routes see an invalid result
        run.decide(f"{run.name(token.state)}: {problem}")
        e = rt.TaskFailed(e.key, "InvalidResult", False, problem)
    run.fail(token, e.error, e.transient, e.message)


def _on_timer(run: _Run, e: rt.TimerFired) -> None:
    timer = run.timers.pop(e.timer, None)
    token = run.tokens.get(timer.token) if timer else None
    if timer is None or token is None:
        run.decide(f"ignored timer {e.timer}: no longer pending")
        return
    run.decide(f"timer {timer.purpose} of {run.name(token.state)} fired")
    if timer.purpose in ("sleep", "until"):
        run.done(token)
    elif timer.purpose == "retry":
        token = run.update(token, attempt=token.attempt + 1, waiting="")
        entry = run.c.table.states[token.state].entry
        SUBMIT[type(entry)](run, token, entry)
    else:
        k = int(timer.purpose.split(":")[1])
        entry = run.c.table.states[token.state].entry
        timers: tuple[tb.Timer, ...] = getattr(entry, "timers", ())
        interrupting = timers[k].interrupting
        row = run.states[token.state].rows.get(f"timeout:{k}")
        if row is None:
            return
        target = row[0].target
        if interrupting:
            for child in [t for t in run.tokens.values() if t.parent == token.id]:
                run.stop_token(child)
            run.joins.pop(token.id, None)
            run.interrupt(token)  # timed out: its call's outcome is unknown
            run.cancel_timers(token)
            run.enter(token, target)
        else:
            side = run.new_token(target, parent=token.parent, side=True)
            run.enter(side, target)


def _on_signal(run: _Run, e: rt.SignalReceived) -> None:
    if e.key:
        seen = delivery_key(e.kind, e.name, e.key)  # a key is unique per kind and name
        if seen in run.seen:
            run.decide(f"ignored duplicate {e.kind} {e.name} (key {e.key})")
            return
        run.seen = [*run.seen, seen]
    waiting = sorted((t for t in run.tokens.values() if _awaits(t.waiting, e)), key=lambda t: t.id)
    if not waiting:
        run.buffered = [*run.buffered, rt.Signal(e.kind, e.name, e.payload, e.key, e.correlation)]
        run.decide(f"buffered {e.kind} {e.name}")
        return
    token = waiting[0]
    run.decide(f"{run.name(token.state)} received {e.kind} {e.name}")
    run.done(token, {e.kind: e.payload})


def _awaits(waiting: str, e: rt.SignalReceived) -> bool:
    """Whether a token waiting for ``waiting`` takes this signal or message. A message
    sent to the instance itself (no correlation) goes to any wait for its name."""
    want = f"{e.kind}:{e.name}"
    if e.correlation is not None:
        return waiting == f"{want}:{e.correlation}"
    return waiting == want or (e.kind == "message" and waiting.startswith(want + ":"))


def _on_child_completed(run: _Run, e: rt.ChildCompleted) -> None:
    token = _by_key(run, e.key, ("child",))
    if token is None:
        run.decide(f"ignored a stale child completion of {e.key}")
        return
    run.done(token, {"result": e.output})


def _on_child_failed(run: _Run, e: rt.ChildFailed) -> None:
    token = _by_key(run, e.key, ("child",))
    if token is None:
        run.decide(f"ignored a stale child failure of {e.key}")
        return
    run.fail(token, e.error, transient=True)


def _on_cancel(run: _Run, e: rt.CancelRequested) -> None:
    run.decide(f"cancel requested ({'with' if e.compensate else 'without'} compensation)")
    run.error = e.reason
    if e.compensate:
        run.after_saga = "cancelled"
        if run.status is _COMPENSATING:  # the saga goes on, and ends the instance cancelled
            return
        run.saga_error = None  # (of a failed compensation given up on: the saga ends cancelled)
        run.begin_saga()
        return
    run.stop_everything(undo=False)
    run.status = Status.CANCELLED
    run.commands.append(rt.Finish(Status.CANCELLED, None, e.reason))


def _on_retry_from(run: _Run, e: rt.RetryFrom) -> None:
    if run.status is not Status.DEAD_LETTERED:
        run.decide(f"ignored retry: the instance is {run.status.value}")
        return
    failed = [run.name(t.state) for t in run.tokens.values() if t.compensating]
    if e.state is not None and failed and e.state not in failed:
        run.decide(
            f"ignored replay from {e.state}: the compensation {failed[0]} failed; "
            "retry, complete or skip it"
        )
        return
    run.resume()
    if e.input is not None:
        run.input = {**run.input, **e.input}
        run.decide(f"input changed by an operator: {', '.join(sorted(e.input))}")
    if e.state is None or failed:  # (a replay of the failed compensation is its retry)
        stuck = [t for t in run.tokens.values() if completable(t.waiting, signals=False)]
        for token in stuck:
            # A fresh token: the new attempts get idempotency keys of their own,
            # so a receiver that deduplicates by key does not drop the retry.
            run.cancel_timers(token)
            del run.tokens[token.id]
            fresh = run.new_token(
                token.state,
                parent=token.parent,
                index=token.index,
                side=token.side,
                compensating=token.compensating,
                locals=token.locals,
            )
            run.enter(fresh, token.state)
        return
    state = run.c.table.state_id(e.state)
    run.stop_everything()
    run.enter(run.new_token(state), state)


def _on_force_complete(run: _Run, e: rt.ForceComplete) -> None:
    run.stop_everything(undo=False)
    run.status, run.output, run.error = Status.COMPLETED, dict(e.output), None
    run.decide("force-completed by an operator")
    run.commands.append(rt.Finish(Status.COMPLETED, run.output, None))


def _on_complete_step(run: _Run, e: rt.CompleteStep) -> None:
    if run.status is not Status.DEAD_LETTERED and run.status.finished:
        run.decide(f"ignored: the instance is {run.status.value}")
        return
    waiting = [
        t for t in run.tokens.values() if run.name(t.state) == e.state and completable(t.waiting)
    ]
    if not waiting:
        run.decide(f"ignored: nothing waits at {e.state}")
        return
    token = waiting[0]
    if run.status is Status.DEAD_LETTERED:
        run.resume()
    run.cancel_timers(token)
    if token.waiting in ("task", "human", "retry", ""):
        run.commands.append(rt.CancelTask(run.key(token)))
    run.decide(f"{e.state} completed by an operator")
    # A wait's output reads what it waited for (signal.x / message.x); a task's, result.x.
    kind = token.waiting.partition(":")[0]
    run.done(token, {kind if kind in ("signal", "message") else "result": dict(e.output)})


def _on_skip_compensation(run: _Run, e: rt.SkipCompensation) -> None:
    waiting = [
        t
        for t in run.tokens.values()
        if t.compensating and run.name(t.state) == e.state and completable(t.waiting)
    ]
    if not waiting:
        run.decide(f"ignored: no compensation waits at {e.state}")
        return
    if run.status is Status.DEAD_LETTERED:
        run.resume()
    run.decide(f"compensation {e.state} skipped by an operator: {e.reason}")
    run.stop_token(waiting[0], undo=False)
    run.next_compensation()


def completable(waiting: str, signals: bool = True) -> bool:
    """Whether an operator may complete (or retry) a step whose token waits for
    ``waiting``: a task, a call, a retry's backoff, a dead-lettered step (its call failed,
    or a workflow error stopped it ``entering``), or (``signals``) a signal or message
    wait."""
    return waiting in ("task", "human", "child", "retry", "", "entering") or (
        signals and waiting.startswith(("signal:", "message:"))
    )


HANDLERS: dict[type, Callable[[_Run, object], None]] = {
    rt.TaskCompleted: _on_task_completed,  # type: ignore[dict-item]
    rt.TaskFailed: _on_task_failed,  # type: ignore[dict-item]
    rt.TimerFired: _on_timer,  # type: ignore[dict-item]
    rt.SignalReceived: _on_signal,  # type: ignore[dict-item]
    rt.ChildCompleted: _on_child_completed,  # type: ignore[dict-item]
    rt.ChildFailed: _on_child_failed,  # type: ignore[dict-item]
    rt.CancelRequested: _on_cancel,  # type: ignore[dict-item]
    rt.RetryFrom: _on_retry_from,  # type: ignore[dict-item]
    rt.ForceComplete: _on_force_complete,  # type: ignore[dict-item]
    rt.CompleteStep: _on_complete_step,  # type: ignore[dict-item]
    rt.SkipCompensation: _on_skip_compensation,  # type: ignore[dict-item]
}
