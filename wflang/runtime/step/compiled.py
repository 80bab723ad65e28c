"""A table prepared for stepping, once per table: its expressions compiled to
closures, its rows indexed by state and event, and what a step asks of each state.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, cast

from wflang.runtime import table as tb
from wflang.runtime.ir import Value, compile_ir, root_field
from wflang.runtime.keys import END_OF_SCOPE
from wflang.runtime.limits import DEFAULT as DEFAULT_LIMITS
from wflang.runtime.limits import Limits, check_context, grows

if TYPE_CHECKING:
    from wflang.runtime.step.build import AnyToken
    from wflang.runtime.step.run import Run

Env = Mapping[str, Value]
Write = Callable[[Env, dict[str, Value]], dict[str, Value]]
#: What entering a state does (``enter.ENTER``, by the kind of its entry).
Enter = Callable[["Run", "AnyToken", tb.Entry], None]

#: How a state is entered on the common path (``StateInfo.arrive``): a service task
#: without boundary timers, a choice, an end; ``OTHER`` for anything else.
OTHER, TASK, CHOICE, END = 0, 1, 2, 3


class Compiled:
    """A table with its expressions compiled to closures and its rows indexed.

    Everything a step looks up per state is prepared here, when the table is first
    used: the entry strategy, the rows by event with their guards, writes and
    mappings compiled to closures, and the decision texts that never change.
    ``common_path=False`` answers every event on the general path (for tests that
    compare the two).
    """

    def __init__(
        self, table: tb.Table, limits: Limits = DEFAULT_LIMITS, *, common_path: bool = True
    ) -> None:
        from wflang.runtime.step.enter import entering  # (entering needs the run)

        self.table = table
        self.limits = limits
        self.common_path = common_path
        self.expressions = [compile_ir(e, limits) for e in table.expressions]
        self.names = [s.name for s in table.states]
        by_state: list[dict[str, tuple[Transition, ...]]] = [{} for _ in table.states]
        for r in table.rows:
            by_state[r.state][table.events[r.event]] = tuple(
                Transition(self, t) for t in r.transitions
            )
        self.states = [
            StateInfo(self, i, state, by_state[i], entering(state.entry))
            for i, state in enumerate(table.states)
        ]
        for info in self.states:  # parallels whose every branch begins with a plain task
            entry = info.entry
            info.fans_to_tasks = (
                common_path
                and isinstance(entry, tb.ParallelEntry)
                and bool(entry.branches)
                and all(
                    self.states[b].arrive == TASK and not self.states[b].walk
                    for b in entry.branches
                )
            )

    def name(self, state: int) -> str:
        return END_OF_SCOPE if state == tb.NO_STATE else self.names[state]

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

    def write(self, m: tb.Mapping) -> Write:
        """A ``write`` action as one closure: (environment, context) to the new context,
        which is measured against the limit when a write may have grown it by much."""
        pairs = [(name, self.expressions[i]) for name, i in m.entries]
        limits = self.limits
        if len(pairs) == 1:
            ((name, fn),) = pairs

            def write_one(env: Env, ctx: dict[str, Value]) -> dict[str, Value]:
                value = fn(env)
                new = {**ctx, name: value}
                if type(value) is not int and grows(value):  # (an int never does)
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


def compiled(table: tb.Table, limits: Limits = DEFAULT_LIMITS) -> Compiled:
    """The compiled form of a table under some limits, kept on the table (tables are
    immutable; one set of limits per table at a time, as a process uses one)."""
    memo = table.memo
    if memo.key is not limits:
        memo.value, memo.key = Compiled(table, limits), limits
    return cast(Compiled, memo.value)


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


class Transition:
    """A transition with its guard and actions compiled.

    Most transitions only write into the context (or do nothing): for them
    ``plain`` is true and ``write`` does all their writes in one call.
    """

    __slots__ = ("actions", "guard", "plain", "target", "write")

    def __init__(self, c: Compiled, t: tb.Transition) -> None:
        self.guard = None if t.guard is None else c.expressions[t.guard]
        self.target = t.target
        # (write mapping, NO_STATE), (write mapping, LOCAL: into the item's variables)
        # or (None, compensation state), in order
        self.actions: tuple[tuple[Write | None, int], ...] = tuple(
            (c.write(a.mapping), tb.NO_STATE if a.kind == "write" else LOCAL)
            if a.kind in _WRITES and a.mapping is not None
            else (None, a.state)
            for a in t.actions
            if (a.kind in _WRITES and a.mapping is not None) or a.kind == "compensate"
        )  # fmt: skip
        writes = [write for write, to in self.actions if write is not None and to == tb.NO_STATE]
        # only context writes: no compensation to register, no item variable to write
        self.plain = len(writes) == len(self.actions)
        self.write = None if not writes else writes[0] if len(writes) == 1 else _chain(writes)


#: An action's second half when its write goes into the token's map item variables.
LOCAL = -2
_WRITES = frozenset({"write", "local"})


def choose(row: tuple[Transition, ...], env: Env) -> Transition | None:
    """The first transition of a row whose guard holds."""
    for transition in row:
        guard = transition.guard
        if guard is None or guard(env) is True:
            return transition
    return None


def _chain(writes: list[Write]) -> Write:
    """Several writes of one transition as one: each sees the same environment."""

    def write(env: Env, ctx: dict[str, Value]) -> dict[str, Value]:
        for w in writes:
            ctx = w(env, ctx)
        return ctx

    return write


class StateInfo:
    """What a step needs of one state, prepared once per table."""

    __slots__ = (
        "args", "arrive", "completed", "done", "ends_ok", "enter", "enter_decision", "entry",
        "fans_to_tasks", "has_output", "id", "name", "on_enter", "rows", "service", "walk",
    )  # fmt: skip

    def __init__(
        self,
        c: Compiled,
        index: int,
        state: tb.State,
        rows: dict[str, tuple[Transition, ...]],
        enter: Enter,
    ) -> None:
        entry = state.entry
        self.id = index
        self.name = state.name
        self.entry = entry
        self.enter = enter
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


def plain_service_task(entry: tb.Entry) -> bool:
    """The commonest node: a service task without boundary timers or events."""
    return (
        isinstance(entry, tb.TaskEntry)
        and entry.work == "service"
        and not entry.timers
        and not entry.catches
    )


def _arrival(entry: tb.Entry) -> int:
    if plain_service_task(entry):
        return TASK
    if isinstance(entry, tb.ChoiceEntry):
        return CHOICE
    return END if isinstance(entry, tb.EndEntry) else OTHER
