"""What each event does to a running instance (``HANDLERS``, by the event's type)."""

from __future__ import annotations

from collections.abc import Callable

from wflang.runtime import instance as rt
from wflang.runtime import keys
from wflang.runtime import table as tb
from wflang.runtime.failures import INVALID_RESULT
from wflang.runtime.instance import Status
from wflang.runtime.ir import Value
from wflang.runtime.keys import END_OF_SCOPE, task_key
from wflang.runtime.shapes import shapes
from wflang.runtime.step.build import AnyToken
from wflang.runtime.step.enter import SUBMIT, start_heartbeat
from wflang.runtime.step.run import COMPENSATING, Run
from wflang.runtime.step.scopes import begin_saga, fail, next_compensation
from wflang.runtime.step.values import WorkflowError
from wflang.runtime.table import NO_STATE
from wflang.runtime.validate import settled, undeclared_error
from wflang.runtime.waiting import TASKS, Wait, completable, parse, takes


def by_key(run: Run, key: str, kinds: tuple[str, ...]) -> AnyToken | None:
    """The token waiting for the task or child with this key; None if it moved on."""
    token_id = keys.key_token(key)
    token = None if token_id is None else run.tokens.get(token_id)
    if token is None or not answers(token, key, run.inst.id, run.c.names, kinds):
        return None
    return token


def answers(token: AnyToken, key: str, iid: str, names: list[str], kinds: tuple[str, ...]) -> bool:
    """Whether ``token`` (the one the key names) waits (one of ``kinds``) for the task or
    child with this key. A key names an instance, a node, the step its visit began, a
    token and an attempt, so an answer for an earlier attempt or visit, a cancelled task
    or a delivery seen twice is answered by no token."""
    if token.waiting not in kinds:
        return False
    state = token.state
    name = END_OF_SCOPE if state == NO_STATE else names[state]
    return key == task_key(iid, name, token.visit, token.id, token.attempt)


def _on_task_completed(run: Run, e: rt.TaskCompleted) -> None:
    token = by_key(run, e.key, TASKS)
    if token is None:
        run.decide(f"ignored a stale completion of {e.key}")
        return
    run.decisions.append(run.states[token.state].completed)
    run.done(token, {"result": e.result})


def _on_task_failed(run: Run, e: rt.TaskFailed) -> None:
    token = by_key(run, e.key, TASKS)
    if token is None:
        run.decide(f"ignored a stale failure of {e.key}")
        return
    problem = undeclared_error(run.c.table, token.state, e.error)
    if problem is not None:  # a broken contract: the routes see an invalid result
        run.decide(f"{run.name(token.state)}: {problem}")
        e = rt.TaskFailed(e.key, INVALID_RESULT, False, problem)
    fail(run, token, e.error, e.transient, e.message, payload=e.payload)


def _on_task_heartbeat(run: Run, e: rt.TaskHeartbeat) -> None:
    """An async call's handler is alive: its heartbeat timeout starts again."""
    token = by_key(run, e.key, TASKS)
    entry = None if token is None else run.c.table.states[token.state].entry
    if token is None or not isinstance(entry, tb.TaskEntry) or entry.heartbeat is None:
        run.decide(f"ignored a heartbeat of {e.key}: no call waits for one")
        return
    timer = keys.timer_id(run.key(token), keys.HEARTBEAT)
    if run.timers.pop(timer, None) is not None:
        run.commands.append(rt.CancelTimer(timer))
    start_heartbeat(run, token, entry.heartbeat)
    run.decide(f"{run.name(token.state)}: heartbeat")


def _on_timer(run: Run, e: rt.TimerFired) -> None:
    timer = run.timers.pop(e.timer, None)
    token = run.tokens.get(timer.token) if timer else None
    if timer is None or token is None:
        run.decide(f"ignored timer {e.timer}: no longer pending")
        return
    run.decide(f"timer {timer.purpose} of {run.name(token.state)} fired")
    if timer.purpose in (keys.SLEEP, keys.UNTIL, keys.AFTER):  # (an arm's: ``Run.done``)
        run.done(token)
        return
    entry = run.c.table.states[token.state].entry
    if timer.purpose == keys.RETRY:
        token = run.wait(token, Wait.IDLE)
        token.attempt += 1
        SUBMIT[type(entry)](run, token, entry)
        return
    timers: tuple[tb.Timer, ...] = getattr(entry, "timers", ())
    if timer.purpose == keys.HEARTBEAT:  # as its (first) interrupting timeout would
        run.decide(f"{run.name(token.state)}: missed its heartbeat")
        k = next((i for i, t in enumerate(timers) if t.interrupting), None)
    else:
        k = keys.boundary_index(timer.purpose)
    row = None if k is None else run.states[token.state].rows.get(f"timeout:{k}")
    if k is None or row is None:
        return
    target = row[0].target
    if timers[k].interrupting:
        run.stop_children(token)
        run.interrupt(token)  # timed out: its call's outcome is unknown
        run.cancel_timers(token)
        run.enter(token, target)
    else:
        timer_k = timers[k]
        if timer_k.cycle:
            _again(run, token, timer_k, k, keys.boundary_firing(timer.purpose), timer.due)
        side = run.new_token(target, parent=token.parent, side=True)
        run.enter(side, target)


def _again(run: Run, token: AnyToken, timer: tb.Timer, k: int, fired: int, due: int) -> None:
    """A repeating timer's next firing, ``after`` (evaluated now) after the one that fired,
    unless that was its last."""
    if timer.times is not None and fired >= timer.times:
        return
    every = run.eval(timer.after, run.env(token))
    if not isinstance(every, int) or isinstance(every, bool) or every <= 0:
        raise WorkflowError(f"the repeating timer of '{run.name(token.state)}' is not a duration")
    run.start_timer(token, keys.boundary(k, fired + 1), due + every)


def _on_signal(run: Run, e: rt.SignalReceived) -> None:
    # A payload's defaults are filled here, not where it is sent: a message published
    # by correlation reaches instances of versions that may declare it differently.
    if e.key:
        seen = keys.delivery_key(e.kind, e.name, e.key)  # a key is unique per kind and name
        if seen in run.seen:
            run.decide(f"ignored duplicate {e.kind} {e.name} (key {e.key})")
            return
        run.seen = [*run.seen, seen]
    table = run.c.table
    payload = settled(table, shapes(table).payload(e.kind).get(e.name), e.payload)
    # The first token (by id) that waits for it or whose node catches it takes it.
    taker = min(
        (t for t in run.tokens.values() if _listens(t, e)),
        key=lambda t: t.id,
        default=None,
    )
    if taker is None:
        run.buffered = [*run.buffered, rt.Signal(e.kind, e.name, payload, e.key, e.correlation)]
        run.decide(f"buffered {e.kind} {e.name}")
        return
    if takes(taker.waiting, e.kind, e.name, e.correlation):
        run.decide(f"{run.name(taker.state)} received {e.kind} {e.name}")
        run.done(taker, {e.kind: payload})
        return
    k = next(i for i, w in enumerate(taker.catching) if takes(w, e.kind, e.name, e.correlation))
    _caught(run, taker, k, {e.kind: payload})


def _listens(token: AnyToken, e: rt.SignalReceived) -> bool:
    """Whether a token takes the signal or message: it waits for it, or its node has a
    boundary event for it."""
    if takes(token.waiting, e.kind, e.name, e.correlation):
        return True
    return any(takes(w, e.kind, e.name, e.correlation) for w in token.catching)


def _caught(run: Run, token: AnyToken, k: int, got: dict[str, Value]) -> None:
    """The ``k``-th boundary event of the token's node caught what arrived (``got``:
    ``{"signal": payload}``): as a boundary timer fires, an interrupting one cancels the
    node (its task, child, branches or items) and goes on at its route; a
    non-interrupting one starts a side path there and lets the node go on. The route's
    ``output`` reads the payload."""
    state = run.states[token.state]
    catch: tb.Catch = getattr(state.entry, "catches", ())[k]
    row = state.rows.get(f"catch:{k}")
    if row is None:
        return
    env = run.env(token, got)
    how = "" if catch.interrupting else " (non-interrupting)"
    run.decide(f"{state.name} caught {catch.kind} {catch.name}{how}")
    if catch.interrupting:
        run.stop_children(token)
        run.interrupt(token)  # cancelled in flight: its call's outcome is unknown
        run.cancel_timers(token)
        run.follow(token, row, env)
        return
    side = run.new_token(token.state, parent=token.parent, side=True, locals=token.locals)
    run.follow(side, row, env)


_CHILD = (Wait.CHILD.value,)


def _on_child_completed(run: Run, e: rt.ChildCompleted) -> None:
    token = by_key(run, e.key, _CHILD)
    if token is None:
        run.decide(f"ignored a stale child completion of {e.key}")
        return
    run.done(token, {"result": e.output})


def _on_child_failed(run: Run, e: rt.ChildFailed) -> None:
    token = by_key(run, e.key, _CHILD)
    if token is None:
        run.decide(f"ignored a stale child failure of {e.key}")
        return
    fail(run, token, e.error, transient=True, payload=e.payload)


def _on_cancel(run: Run, e: rt.CancelRequested) -> None:
    run.decide(f"cancel requested ({'with' if e.compensate else 'without'} compensation)")
    run.error = e.reason
    if e.compensate:
        run.after_saga = "cancelled"
        if run.status is COMPENSATING:  # the saga goes on, and ends the instance cancelled
            return
        run.saga_error = None  # (of a failed compensation given up on: the saga ends cancelled)
        begin_saga(run)
        return
    run.stop_everything(undo=False)
    run.status = Status.CANCELLED
    run.commands.append(rt.Finish(Status.CANCELLED, None, e.reason))


def _on_retry_from(run: Run, e: rt.RetryFrom) -> None:
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


def _on_force_complete(run: Run, e: rt.ForceComplete) -> None:
    run.stop_everything(undo=False)
    run.status, run.output, run.error = Status.COMPLETED, dict(e.output), None
    run.decide("force-completed by an operator")
    run.commands.append(rt.Finish(Status.COMPLETED, run.output, None))


def _on_complete_step(run: Run, e: rt.CompleteStep) -> None:
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
    if token.waiting in _CANCELLED_WHEN_COMPLETED:
        run.commands.append(rt.CancelTask(run.key(token)))
    run.decide(f"{e.state} completed by an operator")
    # A wait's output reads what it waited for (signal.x / message.x); a task's, result.x.
    # The defaults are filled here, as for a signal that arrives (``_on_signal``).
    wait, table = parse(token.waiting), run.c.table
    if wait.kind in (Wait.SIGNAL, Wait.MESSAGE):
        declared = shapes(table).payload(wait.kind).get(wait.name)
        run.done(token, {wait.kind.value: settled(table, declared, dict(e.output))})
    else:
        declared = shapes(table).results.get(e.state)
        run.done(token, {"result": settled(table, declared, dict(e.output))})


#: The waits whose task an operator's completion cancels (a task may still be open).
_CANCELLED_WHEN_COMPLETED = (Wait.TASK, Wait.HUMAN, Wait.RETRY, Wait.IDLE)


def _on_skip_compensation(run: Run, e: rt.SkipCompensation) -> None:
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
    next_compensation(run)


#: What each event does, by its type.
HANDLERS: dict[type, Callable[[Run, rt.Event], None]] = {
    rt.TaskCompleted: _on_task_completed,  # type: ignore[dict-item]
    rt.TaskFailed: _on_task_failed,  # type: ignore[dict-item]
    rt.TaskHeartbeat: _on_task_heartbeat,  # type: ignore[dict-item]
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
