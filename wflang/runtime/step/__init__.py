"""The pure step function: ``step(table, instance, event, now) -> Step``.

No I/O, no clock (``now`` is an argument), no randomness (jitter comes from the
instance's seed): the same table, instance, event and time always give the same
new instance and commands, which is what makes histories replayable.

The package, in the order a step uses it:

- ``compiled``: the table prepared once (expressions as closures, rows by state
  and event, what a step asks of each state), kept on the table;
- ``run``: the working state of one step (``Run``) and the moves every path is
  made of; ``build``: the frozen values it makes, fast;
- ``enter``: what a token does when it enters a state, by the node's kind;
- ``events``: what each event does; ``scopes``: ends, joins, sagas and errors;
- ``common``: a task's completion that only moves its token on to the next task
  (or ends a branch), made of the same pieces without a ``Run``.
"""

from __future__ import annotations

from wflang.runtime import instance as rt
from wflang.runtime import table as tb
from wflang.runtime.failures import INTERRUPTED
from wflang.runtime.instance import Status
from wflang.runtime.ir import NOW, ExpressionError, Value
from wflang.runtime.limits import DEFAULT as DEFAULT_LIMITS
from wflang.runtime.limits import Limits
from wflang.runtime.shapes import shapes
from wflang.runtime.step.common import complete
from wflang.runtime.step.compiled import Compiled, compiled
from wflang.runtime.step.enter import ENTER
from wflang.runtime.step.events import HANDLERS
from wflang.runtime.step.run import COMPENSATING, RUNNING, WAITING, Run
from wflang.runtime.step.scopes import backoff_ms
from wflang.runtime.step.values import (
    LAST_INSTANT,
    STEP_BUDGET,
    Step,
    WorkflowError,
)
from wflang.runtime.validate import settled
from wflang.runtime.waiting import completable

__all__ = [
    "ENTER",
    "HANDLERS",
    "INTERRUPTED",
    "LAST_INSTANT",
    "STEP_BUDGET",
    "Compiled",
    "Step",
    "WorkflowError",
    "backoff_ms",
    "compiled",
    "completable",
    "dead_letter",
    "start",
    "start_compiled",
    "step",
    "step_compiled",
]


def start(
    table: tb.Table,
    instance_id: str,
    input: dict[str, Value],
    now: int,
    seed: int = 0,
    limits: Limits = DEFAULT_LIMITS,
) -> Step:
    """Create an instance and run it until it waits for the world."""
    return start_compiled(compiled(table, limits), instance_id, input, now, seed)


def start_compiled(
    c: Compiled, instance_id: str, input: dict[str, Value], now: int, seed: int = 0
) -> Step:
    """``start`` with a table already compiled."""
    table = c.table
    data = settled(table, shapes(table).input, dict(input))  # defaults at any depth
    inst = rt.Instance(
        instance_id, table.workflow, table.version, Status.RUNNING, data, {}, seed=seed
    )
    run = Run(c, inst, now)
    run.context = {}  # a new one, filled here: the step's changes are its fields
    run.decide(f"start {table.workflow} v{table.version}")
    try:
        env: dict[str, Value] = {"input": run.input, "context": run.context, NOW: now}
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
    memo = table.memo  # ``compiled``, inline: the commonest step takes a few µs
    if memo.key is limits:
        c: Compiled = memo.value  # type: ignore[assignment]
    else:
        c = compiled(table, limits)
    if type(event) is rt.TaskCompleted and c.common_path:
        common = complete(c, instance, event)
        if common is not None:
            return common
    return general(c, instance, event, now)


def step_compiled(c: Compiled, instance: rt.Instance, event: rt.Event, now: int) -> Step:
    """``step`` with a table already compiled."""
    if type(event) is rt.TaskCompleted and c.common_path:
        common = complete(c, instance, event)
        if common is not None:
            return common
    return general(c, instance, event, now)


def general(c: Compiled, instance: rt.Instance, event: rt.Event, now: int) -> Step:
    """``step`` on the general path: a ``Run`` of the event's handler."""
    run = Run(c, instance, now)
    status = instance.status
    if (
        (status is not RUNNING and status is not WAITING and status is not COMPENSATING)
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
    run = Run(compiled(table), instance, now)
    run.decide(f"dead-lettered: {reason}")
    run.dead_letter(reason)
    return run.freeze()


#: What an operator may do to a dead-lettered instance (besides cancelling it).
_OPS_ON_DEAD_LETTERS = rt.RetryFrom | rt.ForceComplete | rt.CompleteStep | rt.SkipCompensation
