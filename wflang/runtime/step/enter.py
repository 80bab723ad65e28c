"""Entering a state: what a token does when it arrives at a node, by the kind of the
node (``ENTER``), and what a retry hands out again (``SUBMIT``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from wflang.runtime import instance as rt
from wflang.runtime import keys
from wflang.runtime import table as tb
from wflang.runtime.instance import NO_TOKEN
from wflang.runtime.ir import HANDLED_ERROR, NOW, ExpressionError, Value
from wflang.runtime.ops import show
from wflang.runtime.step.build import AnyToken, call, token_fields, token_with
from wflang.runtime.step.compiled import Env, plain_service_task
from wflang.runtime.step.scopes import fill, gathered, scope_end
from wflang.runtime.step.values import WorkflowError
from wflang.runtime.waiting import Wait, awaiting

if TYPE_CHECKING:
    from wflang.runtime.step.compiled import Enter
    from wflang.runtime.step.run import Run

_ENTERING = Wait.ENTERING.value


def _enter_task(run: Run, token: AnyToken, entry: tb.TaskEntry) -> None:
    if entry.work == "script":
        run.done(token, {"result": {}})
        return
    if entry.send is not None:
        _send(run, token, entry.send)
        return
    token = _submit_task(run, token, entry)
    if entry.timers:
        _boundary_timers(run, token, entry.timers)
    if entry.catches:
        _boundary_events(run, token, entry.catches)


def _send(run: Run, token: AnyToken, send: tb.Send) -> None:
    """A send task sends in its own step (the command is carried out in the step's
    transaction, keyed by the task) and goes on at once."""
    env = run.env(token)
    payload = run.states[token.state].args(env)
    to = run.eval(send.target, env)
    if send.kind == Wait.MESSAGE.value:
        text = _correlation_text(run, token, to)
    elif type(to) is str:
        text = to
    else:
        raise WorkflowError(
            f"'{run.name(token.state)}' signals the instance {show(to)}: an id is a string"
        )
    run.commands.append(rt.Send(run.key(token), send.kind, send.name, text, payload))
    run.done(token, {"result": {}})


def _enter_service_task(run: Run, token: AnyToken, entry: tb.TaskEntry) -> None:
    """``_enter_task`` of the commonest node, a service task without boundary timers."""
    _schedule(run, token)


def _schedule(run: Run, token: AnyToken) -> AnyToken:
    """Hand the work of a service task to its handler."""
    info = run.states[token.state]
    args = info.args(run.env(token))
    draft = run.draft(token)
    run.commands.append(call(draft.__dict__, run.inst.id, info.name, info.service, args))
    return draft


def _submit_task(run: Run, token: AnyToken, entry: tb.TaskEntry) -> AnyToken:
    """Hand the work to a handler or a person (again, on a retry)."""
    if entry.work == "service":
        token = _schedule(run, token)
        if entry.heartbeat is not None:
            start_heartbeat(run, token, entry.heartbeat)
        return token
    env = run.env(token)
    args = run.states[token.state].args(env)
    who = entry.assignee if entry.assignee_from is None else run.eval(entry.assignee_from, env)
    if who is not None and type(who) is not str:
        raise ExpressionError(
            f"the assignee of '{run.name(token.state)}' is {show(who)}, not a string"
        )
    token = run.wait(token, Wait.HUMAN)
    run.commands.append(
        rt.CreateHumanTask(
            run.key(token),
            token.id,
            run.name(token.state),
            entry.work,
            who,
            entry.form,
            args,
        )
    )
    return token


def start_heartbeat(run: Run, token: AnyToken, heartbeat: int) -> None:
    """The heartbeat timeout of an async call, from now (its schedule, a heartbeat)."""
    every = run.eval(heartbeat, run.env(token))
    if not isinstance(every, int) or isinstance(every, bool) or every <= 0:
        raise WorkflowError(f"the heartbeat of '{run.name(token.state)}' is not a duration above 0")
    run.start_timer(token, keys.HEARTBEAT, run.now + every)


def _boundary_timers(
    run: Run, token: AnyToken, timers: tuple[tb.Timer, ...], env: dict[str, Value] | None = None
) -> None:
    if not timers:
        return
    env = env if env is not None else run.env(token)
    for k, timer in enumerate(timers):
        after = run.eval(timer.after, env)
        if not isinstance(after, int) or isinstance(after, bool):
            raise WorkflowError(f"timeout of '{run.name(token.state)}' is not a duration")
        if timer.cycle and after <= 0:  # it would fire again at the same instant, forever
            raise WorkflowError(
                f"the repeating timer of '{run.name(token.state)}' repeats every {after} ms"
            )
        run.start_timer(token, keys.boundary(k), run.now + after)


def _boundary_events(
    run: Run, token: AnyToken, catches: tuple[tb.Catch, ...], env: dict[str, Value] | None = None
) -> None:
    """Listen for the node's boundary signals and messages while it is active (a
    message's correlation evaluated now, as a wait's). Only what arrives from now on
    is caught: a signal buffered before the node began is left for a wait."""
    if not catches:
        return
    env = env if env is not None else run.env(token)
    listening = []
    for catch in catches:
        if catch.correlation is None:
            listening.append(awaiting(Wait(catch.kind), catch.name))
        else:
            text = _correlation_text(run, token, run.eval(catch.correlation, env))
            listening.append(awaiting(Wait(catch.kind), catch.name, text))
    run.draft(token).catching = tuple(listening)


def _enter_choice(run: Run, token: AnyToken, entry: tb.ChoiceEntry) -> None:
    row = run.states[token.state].on_enter
    if row is None or not run.follow(token, row, run.env(token)):
        raise WorkflowError(f"no arm of choice '{run.name(token.state)}' matched")


def _enter_wait(run: Run, token: AnyToken, entry: tb.WaitEntry) -> None:
    env = run.env(token)
    if entry.trigger == "until":
        assert entry.expression is not None
        at = run.eval(entry.expression, env)
        if not isinstance(at, int) or isinstance(at, bool):
            raise WorkflowError(f"'until' of '{run.name(token.state)}' is not a timestamp")
        token = run.wait(token, Wait.TIMER)
        run.start_timer(token, keys.UNTIL, max(at, run.now))
    else:
        kind, name = Wait(entry.trigger), entry.name or ""
        correlation = None
        if kind is Wait.MESSAGE:
            correlation = _correlation(run, token, entry, env)
        for i, sig in enumerate(run.buffered):
            if _takes_buffered(sig, kind, name, correlation):
                run.buffered = [*run.buffered[:i], *run.buffered[i + 1 :]]
                run.decide(f"{run.name(token.state)} takes buffered {sig.kind} {sig.name}")
                run.done(token, {sig.kind: sig.payload})
                return
        token = run.wait(token, kind, name, correlation)
    _boundary_timers(run, token, entry.timers, env)


def _enter_first(run: Run, token: AnyToken, entry: tb.FirstEntry) -> None:
    """Each arm's wait is found first (a correlation, a due time: an error leaves no arm
    waiting); a signal or message buffered before, the earliest an arm takes, wins at
    once; else a token per arm waits for its event, under the node's token."""
    env = run.env(token)
    waits: list[tuple[Wait, str, str | None, int | None]] = []
    purposes: dict[int, str] = {}  # each timer arm's, by its index (``keys.AFTER``, ``UNTIL``)
    for arm in entry.arms:
        if arm.trigger in (_AFTER, _UNTIL):  # a delay from now, or an instant
            assert arm.expression is not None
            value = run.eval(arm.expression, env)
            if not isinstance(value, int) or isinstance(value, bool):
                what = "a duration" if arm.trigger == _AFTER else "a timestamp"
                raise WorkflowError(f"'{arm.trigger}' of '{run.name(token.state)}' is not {what}")
            at = run.now + max(value, 0) if arm.trigger == _AFTER else max(value, run.now)
            purposes[len(waits)] = keys.AFTER if arm.trigger == _AFTER else keys.UNTIL
            waits.append((Wait.TIMER, "", None, at))
            continue
        kind, text = Wait(arm.trigger), None
        if kind is Wait.MESSAGE:
            assert arm.expression is not None
            text = _correlation_text(run, token, run.eval(arm.expression, env))
        waits.append((kind, arm.name or "", text, None))
    for i, sig in enumerate(run.buffered):
        for k, (kind, name, correlation, _) in enumerate(waits):
            if _takes_buffered(sig, kind, name, correlation):
                run.buffered = [*run.buffered[:i], *run.buffered[i + 1 :]]
                run.decide(f"{run.name(token.state)} takes buffered {sig.kind} {sig.name}")
                run.won(token, k, {sig.kind: sig.payload})
                return
    owner = run.wait(token, Wait.FIRST)
    for k, (kind, name, correlation, due) in enumerate(waits):
        arm_token = run.wait(run.new_token(owner.state, owner.id, k), kind, name, correlation)
        arm_token.visit = owner.visit
        if due is not None:
            run.start_timer(arm_token, purposes[k], due)


_AFTER, _UNTIL = "after", "until"


def _takes_buffered(sig: rt.Signal, kind: Wait, name: str, correlation: str | None) -> bool:
    """Whether a wait for (kind, name, correlation) takes a signal or message that was
    buffered (one sent to the instance, with no correlation, goes to any wait for it)."""
    return (
        sig.kind == kind
        and sig.name == name
        and (sig.correlation is None or sig.correlation == correlation)
    )


def _correlation(run: Run, token: AnyToken, entry: tb.WaitEntry, env: Env) -> str:
    """The text a message wait is matched on: its correlation's value when it begins."""
    assert entry.expression is not None
    return _correlation_text(run, token, run.eval(entry.expression, env))


def _correlation_text(run: Run, token: AnyToken, value: Value) -> str:
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise WorkflowError(
            f"the correlation of '{run.name(token.state)}' is {type(value).__name__}, "
            "not a string or an int"
        )
    return str(value)


def _enter_sleep(run: Run, token: AnyToken, entry: tb.SleepEntry) -> None:
    duration = run.eval(entry.duration, run.env(token))
    if not isinstance(duration, int) or isinstance(duration, bool):
        raise WorkflowError(f"sleep '{run.name(token.state)}' is not a duration")
    token = run.wait(token, Wait.TIMER)
    run.start_timer(token, keys.SLEEP, run.now + duration)


def _enter_parallel(run: Run, token: AnyToken, entry: tb.ParallelEntry) -> None:
    token = run.wait(token, Wait.JOIN)
    run.joins[token.id] = rt.Join(token.id, len(entry.branches))
    _boundary_timers(run, token, entry.timers)
    _boundary_events(run, token, entry.catches)
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


def _enter_tasks_now(run: Run, parent: int, branches: tuple[int, ...]) -> None:
    """Branches that each begin with a service task (no timers, outside maps) entered
    at once rather than queued and drained one by one: the same step when nothing was
    queued before them and the budget outlasts them. A wide parallel enters all its
    branches in its first step.

    Each token is made as ``new_token``, ``enter`` and ``_schedule`` make it, but
    frozen at once (it waits at its task): no draft, no agenda. An argument's error
    leaves the branches not yet scheduled entering, as the agenda would have left them.
    """
    run.budget -= len(branches)
    visit = run.inst.seq + 1
    env: dict[str, Value] = {"input": run.input, "context": run.context, NOW: run.now}  # only read
    first_id = run.next_token
    run.next_token += len(branches)
    tokens, states, commands, decisions = run.tokens, run.states, run.commands, run.decisions
    iid = run.inst.id
    # A branch's token as ``new_token`` and ``enter`` make it (its first attempt at its
    # first state, about to act), copied for each branch.
    entering = token_fields(first_id, branches[0], parent, 0, _ENTERING, visit)
    for index, first in enumerate(branches):
        info = states[first]
        decisions.append(info.enter_decision)
        fields = entering.copy()
        fields["id"], fields["state"], fields["index"] = first_id + index, first, index
        try:
            args = info.args(env)
        except ExpressionError:
            for j in range(index, len(branches)):  # left entering
                fields = entering.copy()
                fields["id"], fields["state"], fields["index"] = first_id + j, branches[j], j
                tokens[first_id + j] = token_with(fields)
            raise
        commands.append(call(fields, iid, info.name, info.service, args))
        tokens[first_id + index] = token_with(fields)


def _enter_map(run: Run, token: AnyToken, entry: tb.MapEntry) -> None:
    env = run.env(token)
    items = run.eval(entry.items, env)
    if not isinstance(items, list):
        raise WorkflowError(f"map '{run.name(token.state)}' needs a list of items")
    token = run.wait(token, Wait.JOIN)
    run.joins[token.id] = rt.Join(token.id, len(items))
    _boundary_timers(run, token, entry.timers, env)
    _boundary_events(run, token, entry.catches, env)
    if not items:
        run.done(token, gathered(entry, run.joins[token.id]))
        return
    fill(run, token, entry, items)


def _enter_call(run: Run, token: AnyToken, entry: tb.CallEntry) -> None:
    token = _submit_call(run, token, entry)
    _boundary_timers(run, token, entry.timers)
    _boundary_events(run, token, entry.catches)


def _submit_call(run: Run, token: AnyToken, entry: tb.CallEntry) -> AnyToken:
    token = run.wait(token, Wait.CHILD)
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


def _enter_end(run: Run, token: AnyToken, entry: tb.EndEntry) -> None:
    output = run.states[token.state].args(run.env(token)) if entry.output.entries else {}
    error = end_error(run.c.names[token.state], entry, token)
    scope_end(run, token, entry.outcome, output, error, reraised(token, error))


def reraised(token: AnyToken, error: str | None) -> dict[str, Value] | None:
    """The payload an end fails with: that of the error it handles when it fails with that
    very error (``on E -> give_up`` where ``give_up`` ends ``failed { error E }``), so that
    a parallel, a map or a caller routing ``E`` reads it too; else none."""
    for name, value in token.locals:
        if name == HANDLED_ERROR and isinstance(value, dict) and value.get("name") == error:
            payload = value.get("payload")
            return payload if isinstance(payload, dict) and payload else None
    return None


#: The outcomes whose end, declaring no error, gives the instance its own name as the
#: error. A compensated end is no failure: its saga ran, and its error is the one it
#: declares or none (docs/language.md, end).
_UNNAMED = frozenset({"failed", "cancelled"})


def end_error(name: str, entry: tb.EndEntry, token: AnyToken) -> str | None:
    """The error a flow ends with at an end: the one it declares, else for an instance
    that fails or is cancelled the name of the end it stopped at."""
    if entry.error is None and entry.outcome in _UNNAMED and token.parent == NO_TOKEN:
        return name
    return entry.error


#: What entering a state does, by the kind of its entry.
ENTER: dict[type[tb.Entry], Callable[[Run, AnyToken, tb.Entry], None]] = {
    tb.TaskEntry: _enter_task,  # type: ignore[dict-item]
    tb.ChoiceEntry: _enter_choice,  # type: ignore[dict-item]
    tb.WaitEntry: _enter_wait,  # type: ignore[dict-item]
    tb.FirstEntry: _enter_first,  # type: ignore[dict-item]
    tb.SleepEntry: _enter_sleep,  # type: ignore[dict-item]
    tb.ParallelEntry: _enter_parallel,  # type: ignore[dict-item]
    tb.MapEntry: _enter_map,  # type: ignore[dict-item]
    tb.CallEntry: _enter_call,  # type: ignore[dict-item]
    tb.EndEntry: _enter_end,  # type: ignore[dict-item]
}


def entering(entry: tb.Entry) -> Enter:
    """What entering a state with this entry does: its kind's strategy, or a shorter
    one for the commonest node, a service task without boundary timers."""
    if plain_service_task(entry):
        return _enter_service_task  # type: ignore[return-value]
    return ENTER[type(entry)]


#: What a retry does: hand the same work out again, boundary timers left running.
SUBMIT: dict[type[tb.Entry], Callable[[Run, AnyToken, tb.Entry], object]] = {
    tb.TaskEntry: _submit_task,  # type: ignore[dict-item]
    tb.CallEntry: _submit_call,  # type: ignore[dict-item]
}
