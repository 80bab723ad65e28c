"""What a handler's outcome means: the one place every runtime reads it.

A service call ends in one of a few ways, and each becomes the event the step
function is given: a result (checked against the service's declared result:
one that is no object, or does not fit, fails the attempt for good as
``InvalidResult``, a bug in the handler), a ``TaskError`` (a named, declared
error, transient or not), or any other exception (the attempt fails,
transiently: the retry policy decides). The in-memory engine, the durable
worker (which calls the handler outside any transaction) and the stores (which
check the result when they commit it, in the table of the instance's version)
all call these functions, so an outcome means the same everywhere.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from attrs import frozen

from wflang.runtime import instance as rt
from wflang.runtime.failures import INTERRUPTED, INVALID_RESULT, NO_HANDLER
from wflang.runtime.ir import Value
from wflang.runtime.table import Table
from wflang.runtime.validate import check_error_payload, check_handler_result

Result = Mapping[str, Value] | None
Handler = Callable[..., Result | Awaitable[Result]]
#: A handler's outcome as the step function takes it.
Outcome = rt.TaskCompleted | rt.TaskFailed


class TaskError(Exception):
    """Raised by a handler to fail its task with a named (declared) error.

    ``transient`` errors are retried by the step's retry policy; permanent ones
    are not. ``payload``: the fields of an error declared with a payload (checked
    against them: one that does not fit fails the task as ``InvalidResult``).
    """

    def __init__(
        self,
        error: str,
        message: str = "",
        *,
        transient: bool = False,
        payload: Mapping[str, Value] | None = None,
    ) -> None:
        super().__init__(message or error)
        self.error, self.message, self.transient = error, message, transient
        self.payload = None if payload is None else dict(payload)


@frozen(slots=False)  # built for every call: a dict-based frozen class builds faster
class TaskCall:
    """What a handler receives besides its arguments."""

    instance: str
    node: str
    attempt: int
    idempotency_key: str


class _Pending:
    """A handler result that means 'the answer comes later' (the test kit's ``delay``)."""


PENDING: Any = _Pending()


def pending() -> Any:
    return PENDING


def invoke(fn: Handler, args: Mapping[str, Value], call: TaskCall) -> Result:
    """Call a handler with the task's arguments as keywords (and ``task=`` if it asks);
    an async handler is run to its end."""
    kwargs: dict[str, Any] = dict(args)
    if _wants_task(fn):
        kwargs["task"] = call
    result = fn(**kwargs)
    if result is not None and type(result) is not dict and inspect.isawaitable(result):
        result = asyncio.run(_await(result))
    return result


def call_handler(
    fn: Handler, args: Mapping[str, Value], call: TaskCall, service: str
) -> Outcome | None:
    """Call a handler; its outcome, not yet checked against the declared result (see
    ``checked``), or None when it answered ``pending()``: the answer comes later."""
    try:
        result: object = invoke(fn, args, call)
    except TaskError as err:
        return rt.TaskFailed(
            call.idempotency_key, err.error, err.transient, err.message, err.payload
        )
    except Exception as err:  # a handler that crashes fails its attempt, transiently
        return rt.TaskFailed(call.idempotency_key, type(err).__name__, True, str(err))
    if result is PENDING:
        return None
    return returned(call.idempotency_key, service, result)


def returned(key: str, service: str, result: object) -> Outcome:
    """What a handler returned, as an outcome: an object (or nothing) completes the
    task; anything else is a bug in the handler and fails the attempt for good."""
    if type(result) is dict or result is None or isinstance(result, Mapping):
        return rt.TaskCompleted(key, dict(result or {}))
    problem = f"the handler of {service} returned {type(result).__name__}, not an object"
    return rt.TaskFailed(key, INVALID_RESULT, False, problem)


def checked(table: Table, node: str, outcome: Outcome) -> Outcome:
    """An outcome as the step will see it: a result that does not fit the service's
    declared result type fails the attempt (permanently: the handler has a bug), so a
    wrong value never reaches the context to break an expression further on; one that
    fits is in the runtime's form (exact decimals). So is a failure's payload: an error
    failing with a payload that does not fit its declared fields is an invalid result."""
    if not isinstance(outcome, rt.TaskCompleted):
        return _checked_failure(table, outcome)
    try:
        output, problems = check_handler_result(table, node, outcome.result)
    except Exception as err:  # a value beyond checking is no value of the declared type
        output, problems = {}, [f"the result cannot be checked: {bounded(err)}"]
    if problems:
        return rt.TaskFailed(outcome.key, INVALID_RESULT, False, "; ".join(problems))
    if output is outcome.result:  # already in the runtime's form
        return outcome
    return rt.TaskCompleted(outcome.key, output)


def _checked_failure(table: Table, outcome: rt.TaskFailed) -> rt.TaskFailed:
    """A failure as the step will see it: its payload checked against its error's."""
    if outcome.payload is None and not table.types.errors:
        return outcome
    try:
        payload, problems = check_error_payload(table, outcome.error, outcome.payload)
    except Exception as err:  # a value beyond checking is no value of the declared type
        payload, problems = None, [f"the payload cannot be checked: {bounded(err)}"]
    if problems:
        return rt.TaskFailed(outcome.key, INVALID_RESULT, False, "; ".join(problems))
    if payload is outcome.payload:
        return outcome
    return rt.TaskFailed(outcome.key, outcome.error, outcome.transient, outcome.message, payload)


def no_handler(task: rt.ScheduleTask) -> rt.TaskFailed:
    """The outcome of a call whose service has no handler where it runs."""
    return rt.TaskFailed(task.key, NO_HANDLER, False, f"no handler for service '{task.service}'")


def interrupted(key: str, node: str) -> rt.TaskFailed:
    """The outcome of an at-most-once call whose worker stopped after starting it."""
    return rt.TaskFailed(
        key,
        INTERRUPTED,
        False,
        f"{node} is at-most-once and its worker stopped after starting it; it was not run again",
    )


def bounded(err: BaseException) -> str:
    """An error in words for a record (a dead letter, a refused result): bounded, and
    storable whatever it says."""
    text = f"{type(err).__name__}: {err}"
    if len(text) > 500:
        text = text[:500] + "…"
    return text.encode("utf-8", "replace").decode("utf-8")


@functools.lru_cache(maxsize=1024)
def _wants_task(fn: Handler) -> bool:
    """Whether a handler takes ``task`` (by name or through ``**kwargs``): asked once."""
    params = inspect.signature(fn).parameters
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    return "task" in params or takes_any


async def _await(aw: Awaitable[Result]) -> Result:
    return await aw
