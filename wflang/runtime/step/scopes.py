"""How flows end and fail: a token reaching an end (of the instance, a branch, a map
item, a side path or a compensation), the joins of parallels and maps, the saga,
and the routing of errors (retries, ``on`` routes, dead letters).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from decimal import Decimal
from typing import TYPE_CHECKING

from wflang.runtime import instance as rt
from wflang.runtime import keys
from wflang.runtime import table as tb
from wflang.runtime.failures import INTERRUPTED
from wflang.runtime.instance import NO_TOKEN, Status
from wflang.runtime.ir import HANDLED_ERROR, Value
from wflang.runtime.step.build import AnyToken, counted
from wflang.runtime.waiting import Wait

if TYPE_CHECKING:
    from wflang.runtime.step.run import Run


def scope_end(
    run: Run,
    token: AnyToken,
    outcome: str,
    output: dict[str, Value],
    error: str | None = None,
    payload: dict[str, Value] | None = None,
) -> None:
    """A token reached an end (or the end of a compensation handler); ``payload``: that of
    ``error``, when it carries one out (to a parallel, a map or a caller)."""
    run.tokens.pop(token.id, None)
    if run.timers:
        run.cancel_timers(token)
    if token.compensating:
        next_compensation(run)
    elif token.side:
        run.decide("side path ended")
    elif token.parent == NO_TOKEN:
        finish_instance(run, outcome, output, error, payload)
    else:
        child_ended(run, token, outcome == "completed", output, error, payload)


def finish_instance(
    run: Run,
    outcome: str,
    output: dict[str, Value],
    error: str | None,
    payload: dict[str, Value] | None = None,
) -> None:
    # A failed, cancelled or compensated end keeps the output it declares (a
    # status for the caller, say); a completed end always has one.
    run.output = output if output or outcome == "completed" else None
    run.error = error if outcome != "completed" else None
    if outcome == "compensated":
        run.after_saga = "compensated"
        begin_saga(run)
        return
    run.stop_everything(undo=False)
    run.status = Status(outcome)
    run.decide(f"instance {outcome}")
    run.commands.append(rt.Finish(run.status, run.output, run.error, payload))


def begin_saga(run: Run) -> None:
    run.stop_everything()  # a call stopped in flight is compensated too
    run.status = Status.COMPENSATING
    run.decide(f"compensating {len(run.compensations)} step(s)")
    next_compensation(run)


def next_compensation(run: Run) -> None:
    if not run.compensations:
        run.status = Status(run.after_saga)
        run.decide(f"instance {run.status.value}")
        run.commands.append(rt.Finish(run.status, run.output, run.error))
        return
    state = run.compensations[-1]
    run.compensations = run.compensations[:-1]
    run.decide(f"compensate with {run.name(state)}")
    run.enter(run.new_token(state, compensating=True), state)


# ----------------------------------------------------------------- joins


def child_ended(
    run: Run,
    token: AnyToken,
    ok: bool,
    output: dict[str, Value],
    error: str | None,
    payload: dict[str, Value] | None = None,
) -> None:
    """A branch or map item ended (``error``: the error it raised by name, if any, with
    its ``payload``)."""
    parent = run.tokens.get(token.parent)
    join = run.joins.get(token.parent)
    if parent is None or join is None:
        return
    entry = run.states[parent.state].entry
    collected: tuple[Value, ...] = ()
    if ok and isinstance(entry, tb.MapEntry) and entry.collects:  # read where the item ends
        env = run.env(token, {"result": output})
        collected = tuple(run.eval(i, env) for i in entry.collects)
    # a parallel keeps no branch's output
    join = counted(join, ok, token.index, output, isinstance(entry, tb.MapEntry), collected)
    run.joins[parent.id] = join
    JOINED[type(entry)](run, parent, join, error, payload)


#: What a parallel's join says once a branch ended: it has all it needs, it can no
#: longer have it, or it waits for more.
SATISFIED, IMPOSSIBLE, UNDECIDED = "satisfied", "impossible", ""


def verdict(entry: tb.ParallelEntry, join: rt.Join) -> str:
    """What a parallel's join says of the branches it has heard from."""
    policy = entry.join
    need = join.total if policy == "all" else 1 if policy == "any" else entry.count or join.total
    if join.completed >= need:
        return SATISFIED
    return IMPOSSIBLE if join.total - join.failed < need else UNDECIDED


#: The payload of the error a branch or item failed with (None: it carries none).
Payload = dict[str, Value] | None


def _joined_parallel(
    run: Run, parent: AnyToken, join: rt.Join, error: str | None, payload: Payload
) -> None:
    """A branch ended (``error``: the error it raised, if it failed with one by name)."""
    entry = run.states[parent.state].entry
    assert isinstance(entry, tb.ParallelEntry)
    said = verdict(entry, join)
    if said == SATISFIED:
        run.decide(f"{run.name(parent.state)}: join {entry.join} satisfied")
        run.stop_children(parent)  # the losers of 'any' and 'n of m'
        run.done(parent)
    elif said == IMPOSSIBLE:
        run.stop_children(parent)
        # the failure that made the join impossible names the error
        fail(
            run,
            parent,
            error or "BranchFailed",
            transient=False,
            catch_all="BranchFailed",
            payload=payload if error else None,  # the error comes out of the branch whole
        )


def _joined_map(
    run: Run, parent: AnyToken, join: rt.Join, error: str | None, payload: Payload
) -> None:
    """An item ended (``error``: the error it raised, if it failed with one by name)."""
    entry = run.states[parent.state].entry
    assert isinstance(entry, tb.MapEntry)
    allowed = entry.tolerate * join.total // 100 if entry.tolerate_percent else entry.tolerate
    if join.failed > allowed:
        run.stop_children(parent)
        fail(
            run,
            parent,
            error or "MapFailed",  # the item whose failure went past the tolerance
            transient=False,
            message=f"{join.failed} item(s) failed",
            catch_all="MapFailed",
            payload=payload if error else None,
        )
        return
    if join.started < join.total:
        items = run.eval(entry.items, run.env(parent))
        assert isinstance(items, list)
        fill(run, parent, entry, items)
        return
    if join.completed + join.failed == join.total:
        run.joins.pop(parent.id, None)
        run.done(parent, gathered(entry, join))


def gathered(entry: tb.MapEntry, join: rt.Join) -> dict[str, Value]:
    """What a finished map's ``done`` row reads: ``result``, its items' outputs, and the
    list of each ``collect``, in the order of the items (whatever order they ended in)."""
    extra: dict[str, Value] = {"result": [out for _, out in sorted(join.results, key=_first)]}
    if entry.collects:
        values = [v for _, v in sorted(join.collected, key=_first)]
        for i in range(len(entry.collects)):
            extra[tb.collected(i)] = [v[i] for v in values]
    return extra


def _first(pair: tuple[int, object]) -> int:
    return pair[0]


#: What a parallel or map does when one of its branches or items ended.
JOINED: dict[type[tb.Entry], Callable[[Run, AnyToken, rt.Join, str | None, Payload], None]] = {
    tb.ParallelEntry: _joined_parallel,
    tb.MapEntry: _joined_map,
}


def fill(run: Run, parent: AnyToken, entry: tb.MapEntry, items: list[Value]) -> None:
    """Start items until the map runs as many as its concurrency allows."""
    join = run.joins[parent.id]
    limit = join.total if entry.concurrency is None else max(1, entry.concurrency)
    while join.started < join.total and join.started - join.completed - join.failed < limit:
        i = join.started
        join = rt.Join(join.token, join.total, join.completed, join.failed, i + 1, join.results,
                       join.collected)  # fmt: skip
        run.joins[parent.id] = join
        bound: tuple[tuple[str, Value], ...] = ((entry.alias, items[i]),)
        if entry.locals:  # each item its own copy of the variables, as declared
            fresh = {n: None if d is None else run.eval(d, {}) for n, d in entry.locals}
            bound = (*bound, (tb.LOCALS, fresh))
        child = run.new_token(entry.body, parent=parent.id, index=i, locals=bound)
        run.enter(child, entry.body)


# ----------------------------------------------------------------- errors


def fail(
    run: Run,
    token: AnyToken,
    error: str,
    transient: bool,
    message: str = "",
    catch_all: str = "",
    payload: dict[str, Value] | None = None,
) -> None:
    """Route an error as Step Functions does: retry a transient error while attempts
    remain, then ``on ERROR`` / ``on any``, else dead letters (or a failed saga).
    The node a route leads to reads the error as ``error`` (``handled``).

    A parallel or map that fails because of an error raised in a branch or item
    routes the error by its own name first, then by ``catch_all`` (``BranchFailed``
    or ``MapFailed``, which catches any failure of its body), then by ``on any``."""
    env = run.env(token)
    state = run.c.table.states[token.state]
    retry = getattr(state.entry, "retry", None)
    if (
        retry is not None
        and transient
        and error not in retry.non_retryable
        and token.attempt < retry.attempts
    ):
        delay = backoff_ms(retry, token.attempt, run.inst.seed, token.id)
        token = run.wait(token, Wait.RETRY)
        run.start_timer(token, keys.RETRY, run.now + delay)
        run.decide(f"{state.name}: {error}; retry {token.attempt + 1} in {delay} ms")
        return
    named = bool(catch_all) and catch_all != error  # "Rejected (BranchFailed)"
    shown = f"{error} ({catch_all})" if named else error
    if error == INTERRUPTED:
        run.outcome_unknown(token)
    if (
        run.take(token, f"error:{error}", env)
        or (named and run.take(token, f"error:{catch_all}", env))
        or run.take(token, "error", env)
    ):
        run.decide(f"{state.name}: {shown} handled")
        handled(run, token.id, {"name": error, "message": message, "payload": payload or {}})
        return
    if token.compensating:
        # Never swallowed, and the saga does not end here: the instance waits for
        # an operator to retry, complete or skip this compensation; the rest follow.
        run.decide(
            f"{state.name}: {shown} after {token.attempt} attempt(s): compensation dead-lettered"
        )
        run.wait(token, Wait.IDLE)  # not in flight any more: its outcome is known
        run.dead_letter(f"compensation '{state.name}' failed: {shown} {message}".strip())
        return
    if token.parent != NO_TOKEN and not token.side:
        # Unhandled inside a branch or map item: that flow fails, and its
        # parallel or map decides (join policy, tolerate, its own `on`).
        run.decide(f"{state.name}: {shown} unhandled: its flow failed")
        scope_end(run, token, "failed", {}, error, payload)
        return
    run.decide(f"{state.name}: {shown} after {token.attempt} attempt(s): dead-lettered")
    run.wait(token, Wait.IDLE)  # not in flight any more: its outcome is known
    run.dead_letter(f"{state.name}: {shown} {message}".strip())


def handled(run: Run, token_id: int, error: dict[str, Value]) -> None:
    """Bind the error an ``on`` route took to its token, for the node it leads to: kept
    there until the token enters another node (``forget_handled``)."""
    token = run.tokens.get(token_id)
    if token is not None:  # (the draft ``follow`` entered)
        run.draft(token).locals = (*token.locals, (HANDLED_ERROR, error))


def forget_handled(locals: tuple[tuple[str, Value], ...]) -> tuple[tuple[str, Value], ...]:
    """A token's locals without the error a node it left had handled."""
    if not any(name == HANDLED_ERROR for name, _ in locals):
        return locals
    return tuple(pair for pair in locals if pair[0] != HANDLED_ERROR)


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
