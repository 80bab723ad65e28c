"""The working state of one step (``Run``): mutable copies of the instance's parts,
the commands and decisions so far, and the moves every path of a step is made of
(entering a state, following a row, waiting, stopping tokens), frozen into the new
instance at the end (``freeze``).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any, Generic, TypeVar

from wflang.runtime import instance as rt
from wflang.runtime import keys
from wflang.runtime import table as tb
from wflang.runtime.instance import NO_TOKEN, Status
from wflang.runtime.ir import NOW, Value
from wflang.runtime.step.build import AnyToken, Draft, draft_of, entered, frozen, index_of
from wflang.runtime.step.build import token_of as _token_of
from wflang.runtime.step.compiled import LOCAL, Compiled, Transition, Write, choose
from wflang.runtime.step.scopes import forget_handled, scope_end
from wflang.runtime.step.values import LAST_INSTANT, STEP_BUDGET, Step, WorkflowError
from wflang.runtime.waiting import Wait, at_rest, awaiting

RUNNING, COMPENSATING, WAITING = Status.RUNNING, Status.COMPENSATING, Status.WAITING
_ENTERING = Wait.ENTERING.value
_FIRST = Wait.FIRST.value

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

    def __get__(self, run: Run, owner: type | None = None) -> _T:
        rare = run.rare
        if rare is not None and self.field in rare:
            return rare[self.field]  # type: ignore[no-any-return]
        return getattr(run.inst, self.field)  # type: ignore[no-any-return]

    def __set__(self, run: Run, value: _T) -> None:
        if run.rare is None:
            run.rare = {}
        run.rare[self.field] = value


#: The rare fields that an instance keeps as tuples (a step may keep lists).
_TUPLES = frozenset(("compensations", "buffered", "seen_keys"))


class Run:
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
        # waiting or not is decided anew at the end of every step (``freeze``)
        self.status = RUNNING if inst.status is WAITING else inst.status
        self.input = inst.input
        self.context = inst.context  # replaced, never changed in place (see ``follow``)
        self.tokens, self.timers, self.joins = index_of(inst)
        self.next_token = inst.next_token
        self.rare: dict[str, Any] | None = None
        self.commands: list[rt.Command] = []
        self.decisions: list[str] = []
        self.agenda: deque[tuple[int, int]] = deque()
        self.drafts: list[Draft] = []
        self.budget = STEP_BUDGET

    # -- bookkeeping -----------------------------------------------------------------

    def freeze(self) -> Step:
        """The new instance: the old one's fields with those this step changed."""
        tokens = self.tokens
        for d in self.drafts:  # the tokens changed in this step, frozen once each
            if tokens.get(d.id) is d:
                tokens[d.id] = _token_of(d)
        status = self.status
        if status is RUNNING and at_rest(tokens.values()):
            status = WAITING
        changes: dict[str, object] = {
            "status": status,
            "input": self.input,  # changed only by an operator's retry with new input
            "next_token": self.next_token,
        }
        if self.rare is not None:
            for name, value in self.rare.items():
                changes[name] = tuple(value) if name in _TUPLES else value
        index = (tokens, self.timers, self.joins)
        commands, decisions = tuple(self.commands), tuple(self.decisions)
        return frozen(self.inst, self.context, index, commands, decisions, changes)

    def decide(self, text: str) -> None:
        self.decisions.append(text)

    def name(self, state: int) -> str:
        return self.c.name(state)

    def new_token(self, state: int, parent: int = NO_TOKEN, index: int = 0, side: bool = False,
                  compensating: bool = False,
                  locals: tuple[tuple[str, Value], ...] = ()) -> Draft:  # fmt: skip
        token = Draft(self.next_token, state, parent, index, side, compensating, locals)
        self.next_token += 1
        self.tokens[token.id] = token
        self.drafts.append(token)
        return token

    def draft(self, token: AnyToken) -> Draft:
        """The token as this step's draft of it: made (from ``token``) on its first change."""
        if type(token) is Draft and self.tokens.get(token.id) is token:
            return token
        new = draft_of(token)
        self.tokens[token.id] = new
        self.drafts.append(new)
        return new

    def wait(
        self, token: AnyToken, kind: Wait, name: str = "", correlation: str | None = None
    ) -> Draft:
        """The token, now waiting (see ``waiting.awaiting``)."""
        new = self.draft(token)
        new.waiting = awaiting(kind, name, correlation)
        return new

    def key(self, token: AnyToken) -> str:
        """The idempotency key of the task or call the token starts at its state."""
        return keys.task_key(
            self.inst.id, self.c.name(token.state), token.visit, token.id, token.attempt
        )

    def env(self, token: AnyToken, extra: dict[str, Value] | None = None) -> dict[str, Value]:
        """The roots an expression at the token's state reads, with ``extra`` (a result,
        a signal) and the items of the maps around it."""
        if token.locals or (token.parent != NO_TOKEN and self.states[token.state].walk):
            return self.scoped_env(token, extra)
        if extra is None:
            return {"input": self.input, "context": self.context, NOW: self.now}
        return {"input": self.input, "context": self.context, NOW: self.now, **extra}

    def scoped_env(self, token: AnyToken, extra: dict[str, Value] | None) -> dict[str, Value]:
        """``env`` of a token with map items bound in it or in a map around it."""
        env: dict[str, Value] = {"input": self.input, "context": self.context, NOW: self.now}
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

    def start_timer(self, token: AnyToken, purpose: str, due: int) -> None:
        if not 0 <= due <= LAST_INSTANT:  # a store keeps due times as 64-bit integers
            raise WorkflowError(
                f"the {purpose} timer of '{self.name(token.state)}' would be due at {due} ms, "
                "outside 1970..9999"
            )
        timer = rt.Timer(keys.timer_id(self.key(token), purpose), token.id, purpose, due)
        self.timers[timer.id] = timer
        self.commands.append(rt.StartTimer(timer.id, due))

    def cancel_timers(self, token: AnyToken, keep_boundary: bool = False) -> None:
        if not self.timers:
            return
        for timer in [t for t in self.timers.values() if t.token == token.id]:
            if keep_boundary and keys.boundary_index(timer.purpose) is not None:
                continue
            del self.timers[timer.id]
            self.commands.append(rt.CancelTimer(timer.id))

    def workflow_error(self, err: Exception) -> None:
        self.decide(f"workflow error: {err}")
        self.dead_letter(f"workflow error: {err}")

    def dead_letter(self, reason: str) -> None:
        if self.status is COMPENSATING:  # kept for the end of the saga (``resume``)
            self.saga_error = self.error
        self.status = Status.DEAD_LETTERED
        self.error = reason
        self.snapshot = dict(self.context)
        self.commands.append(rt.Finish(Status.DEAD_LETTERED, None, reason))

    # -- moving tokens -----------------------------------------------------------------

    def enter(self, token: AnyToken, state: int) -> None:
        """Move a token to a state; the state acts on it when the agenda gets there.

        Entering is queued, not called, so that a long chain of inline steps (a
        loop of scripts and choices, a map of a thousand items) runs in a loop,
        not in ever deeper recursion.
        """
        new = self.draft(token)
        if new.locals:  # an error handled where the token was is not read further on
            new.locals = forget_handled(new.locals)
        if new.catching:  # its node's boundary events listen no more
            new.catching = ()
        entered(new.__dict__, state, self.inst.seq + 1)
        self.agenda.append((new.id, state))

    def drain(self) -> None:
        """Let every queued token act, until all of them wait for the world."""
        agenda, tokens, states = self.agenda, self.tokens, self.states
        while agenda:
            status = self.status
            if status is not RUNNING and status is not COMPENSATING:
                return
            token_id, state = agenda.popleft()
            token = tokens.get(token_id)
            if token is None or token.state != state or token.waiting != _ENTERING:
                continue  # stopped (a lost race, a cancelled branch) before it acted
            self.spend()
            if state == tb.NO_STATE:
                scope_end(self, token, "completed", {})
                continue
            info = states[state]
            self.decisions.append(info.enter_decision)
            info.enter(self, token, info.entry)

    def spend(self) -> None:
        """Count one more transition of this step: a loop that never waits is stopped."""
        self.budget -= 1
        if self.budget <= 0:
            raise WorkflowError("a loop ran more than 100,000 steps without waiting")

    def take(self, token: AnyToken, event: str, env: dict[str, Value]) -> bool:
        """Follow the first transition of (state, event) whose guard holds."""
        row = self.states[token.state].rows.get(event)
        return row is not None and self.follow(token, row, env)

    def follow(self, token: AnyToken, row: tuple[Transition, ...], env: dict[str, Value]) -> bool:
        """Follow the first transition of a row whose guard holds."""
        transition = choose(row, env)
        if transition is None:
            return False
        if transition.target == tb.NO_STATE and not token.compensating:
            # Only a compensation handler stops without an end: anything else
            # would finish its flow with an outcome no end declares.
            raise WorkflowError(
                f"'{self.name(token.state)}' has nowhere to go: it has no 'next' "
                "(its 'on' and 'timeout' routes are taken only on an error or a timeout)"
            )
        if not transition.plain:
            self.act(transition, env, token)
            token = self.tokens.get(token.id, token)  # (its draft, if its variables changed)
        elif transition.write is not None:
            self.context = transition.write(env, self.context)
        if self.timers:
            self.cancel_timers(token)
        self.enter(token, transition.target)
        return True

    def act(self, transition: Transition, env: dict[str, Value], token: AnyToken) -> None:
        """A transition's writes and compensations, in their order; the writes all
        computed before any is kept, so that one that fails leaves nothing half-done."""
        context, mine, registered = self.context, None, []
        for write, target in transition.actions:
            if write is None:
                registered.append(target)
            elif target == LOCAL:
                mine = self.new_locals(token, write, env, mine)
            else:
                context = write(env, context)
        self.context = context
        if mine is not None:
            holder, record = mine
            draft = self.draft(holder)
            draft.locals = tuple((n, record if n == tb.LOCALS else v) for n, v in draft.locals)
        for compensation in registered:
            self.compensations = [*self.compensations, compensation]
            self.decide(f"registered compensation {self.name(compensation)}")

    def new_locals(
        self,
        token: AnyToken,
        write: Write,
        env: dict[str, Value],
        pending: tuple[AnyToken, dict[str, Value]] | None,
    ) -> tuple[AnyToken, dict[str, Value]]:
        """The variables of the map item a token runs in, once ``write`` is applied: those
        of the nearest item token (itself, or one around its branch or inner map) that
        holds them, with that token (``pending``: what an earlier write made of them)."""
        if pending is not None:
            return pending[0], write(env, pending[1])
        holder: AnyToken | None = token
        while holder is not None and not any(n == tb.LOCALS for n, _ in holder.locals):
            holder = self.tokens.get(holder.parent) if holder.parent != NO_TOKEN else None
        if holder is None:
            raise WorkflowError(f"'{self.name(token.state)}' runs in no map item with variables")
        old = next(v for n, v in holder.locals if n == tb.LOCALS)
        return holder, write(env, old if isinstance(old, dict) else {})

    def outcome_unknown(self, token: AnyToken) -> None:
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

    def done(self, token: AnyToken, extra: dict[str, Value] | None = None) -> None:
        """The work at a token's state finished: go on along its ``done`` row (an arm of
        a ``first``, which has none, along its arm's row: ``won``)."""
        row = self.states[token.state].done
        if row is None:
            owner = self.tokens.get(token.parent)
            if owner is not None and owner.waiting == _FIRST and owner.state == token.state:
                self.won(owner, token.index, extra)
                return
        if row is None or not self.follow(token, row, self.env(token, extra)):
            raise WorkflowError(f"'{self.name(token.state)}' has nowhere to go")

    def won(self, owner: AnyToken, arm: int, extra: dict[str, Value] | None = None) -> None:
        """Arm ``arm`` of the ``first`` that ``owner`` waits at came first: every arm's
        token is stopped (with its timer; a store drops their subscriptions with them), in
        this step, and ``owner`` goes on along the arm's row, which reads ``extra``."""
        self.stop_children(owner)
        self.decide(f"{self.name(owner.state)}: arm {arm + 1} came first")
        row = self.states[owner.state].rows.get(tb.arm_event(arm))
        if row is None or not self.follow(owner, row, self.env(owner, extra)):
            raise WorkflowError(f"'{self.name(owner.state)}' has nowhere to go")

    def interrupt(self, token: AnyToken, undo: bool = True) -> None:
        """Cancel the task or child a token waits for. ``undo``: a saga may still run,
        and the call's outcome is now unknown, so its compensation is registered."""
        if token.waiting in (Wait.TASK, Wait.HUMAN):
            self.commands.append(rt.CancelTask(self.key(token)))
        elif token.waiting == Wait.CHILD:
            self.commands.append(rt.CancelChild(self.key(token)))
        else:
            return
        if undo:
            self.outcome_unknown(token)

    def stop_token(self, token: AnyToken, undo: bool = True) -> None:
        """Remove a token and everything running for it (tasks, children, timers, its
        body); ``undo`` as for ``interrupt``."""
        for child in [t for t in self.tokens.values() if t.parent == token.id]:
            self.stop_token(child, undo)
        self.cancel_timers(token)
        self.interrupt(token, undo)
        self.joins.pop(token.id, None)
        self.tokens.pop(token.id, None)

    def stop_children(self, token: AnyToken) -> None:
        """Stop a parallel's or map's body: its branches or items."""
        for child in [t for t in self.tokens.values() if t.parent == token.id]:
            self.stop_token(child)
        self.joins.pop(token.id, None)

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
