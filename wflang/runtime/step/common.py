"""The commonest event on a short path: a task's completion that moves its token on,
through writes and choices, to the next service task, or to the end of a branch of a
parallel whose join stays undecided.

It is made of the general path's pieces (``keyed``, ``choose``, a transition's
``write``, ``entered`` and ``call``, ``counted`` and ``verdict``, ``stepped``)
without a ``Run``: no drafts, no agenda, no bookkeeping of what did not happen. It
may only skip work: anything it does not cover it hands to the general path (None),
which evaluates the same expressions again (they have no effects).
``tests/test_step_common.py`` compares the two on random workflows.
"""

from __future__ import annotations

from wflang.runtime import instance as rt
from wflang.runtime import table as tb
from wflang.runtime.instance import NO_TOKEN, Status
from wflang.runtime.ir import ExpressionError, Value
from wflang.runtime.keys import key_token
from wflang.runtime.step.build import call, counted, entered, position, stepped, token_with
from wflang.runtime.step.compiled import CHOICE, END, TASK, Compiled, choose
from wflang.runtime.step.events import answers
from wflang.runtime.step.scopes import UNDECIDED, verdict
from wflang.runtime.step.values import Step
from wflang.runtime.waiting import TASKS, at_rest

_RUNNING = Status.RUNNING
#: Choices one completion passes on the common path before it hands over.
_CHOICES = 16


def complete(c: Compiled, inst: rt.Instance, e: rt.TaskCompleted) -> Step | None:  # noqa: PLR0915  # one function: a call less per step
    """A task's completion on the common path; None hands it to the general path.

    The common path: a running instance; a token outside maps, with no timer of its
    own; transitions (the task's ``done`` row, then the arms of the choices it passes)
    that only write into the context; and the token comes to wait at a service task
    without boundary timers, or ends its branch of a parallel whose join stays
    undecided. It reads and makes the instance's tuples (no index by id: see
    ``build.position``).
    """
    if inst.status is not _RUNNING:
        return None
    tokens, key = inst.tokens, e.key
    token_id = key_token(key)
    if token_id is None:
        return None  # not a task's key: the general path says so
    # where ``position`` looks, without the call while no token made after it has gone
    # (as far from the end as its id from the next one: a chain's, a fan-out's)
    at = len(tokens) - (inst.next_token - token_id)
    if not 0 <= at < len(tokens) or tokens[at].id != token_id:
        at = position(tokens, token_id, len(tokens), inst.next_token)
        if at < 0:
            return None  # no such token: stale (the general path says so)
    token = tokens[at]
    if (
        token.locals
        or token.catching
        or token.state < 0
        or not answers(token, key, inst.id, c.names, TASKS)
    ):
        return None  # in a map, listening for boundary events, or stale
    if inst.timers and any(t.token == token_id for t in inst.timers):
        return None
    info = c.states[token.state]
    in_branch = token.parent != NO_TOKEN
    if info.done is None or (in_branch and info.walk):
        return None
    decisions = [info.completed]
    context = inst.context
    try:
        env: dict[str, Value] = {"input": inst.input, "context": context, "result": e.result}
        # ``Run.follow`` of the task's ``done`` row, then of the arms of the choices it
        # leads to, while each transition taken only writes into the context (in this
        # function, not a helper of its own: a call per completion); else the general
        # path (which says so if no transition is taken: nowhere to go)
        row, states = info.done, c.states
        for _ in range(_CHOICES):
            transition = choose(row, env)
            if transition is None or not transition.plain or transition.target == tb.NO_STATE:
                return None
            if transition.write is not None:
                context = transition.write(env, context)
            target = states[transition.target]
            if in_branch and target.walk:
                return None
            decisions.append(target.enter_decision)
            if target.arrive != CHOICE or target.on_enter is None:
                break
            row = target.on_enter
            env = {"input": inst.input, "context": context}
        else:
            return None
        if target.arrive == TASK:  # ``enter``, then the service task's ``_schedule``
            fields = token.__dict__.copy()
            entered(fields, target.id, inst.seq + 1)
            args = target.args({"input": inst.input, "context": context})
            command = call(fields, inst.id, target.name, target.service, args)
            # (one token: no slices; else concatenated, not unpacked: no list made)
            new = token_with(fields)
            tokens = (new,) if len(tokens) == 1 else tokens[:at] + (new,) + tokens[at + 1 :]  # noqa: RUF005
            return stepped(inst, context, tokens, (command,), tuple(decisions))
        if target.arrive == END and in_branch:  # ``_enter_end``, ``scope_end``, ``child_ended``
            if target.has_output:  # for its errors: a parallel keeps no branch's output
                target.args({"input": inst.input, "context": context})
            if token.side or token.compensating:
                return None
            # its parallel's token (made before it: before it; where ``position`` looks
            # first, looked at here without the call: at its id while none before it
            # has gone, as a fan-out's) and join (a few joins: one per parallel or map
            # running); without them, the general path
            parent = token.parent
            if parent >= at or tokens[parent].id != parent:
                parent = position(tokens, parent, at, inst.next_token)
            joins = inst.joins
            k = len(joins) - 1
            while k >= 0 and joins[k].token != token.parent:
                k -= 1
            if parent < 0 or k < 0:
                return None
            entry = c.states[tokens[parent].state].entry
            if not isinstance(entry, tb.ParallelEntry):
                return None
            join = counted(joins[k], target.ends_ok, token.index, {}, False)
            if verdict(entry, join) != UNDECIDED:
                return None  # the join decides: the general path
            tokens = tokens[:at] + tokens[at + 1 :]
            joins = (join,) if len(joins) == 1 else joins[:k] + (join,) + joins[k + 1 :]  # noqa: RUF005
            changes: dict[str, object] = {"joins": joins}
            if at_rest(tokens):  # the branches left wait for the world (``Run.freeze``)
                changes["status"] = Status.WAITING
            return stepped(inst, context, tokens, (), tuple(decisions), changes)
    except ExpressionError:
        pass
    return None
