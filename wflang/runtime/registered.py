"""The handlers registered by service name (``@handler``), for an engine made without
handlers of its own and for ``wf run``."""

from __future__ import annotations

from collections.abc import Callable

from wflang.runtime.outcome import Handler

REGISTRY: dict[str, Handler] = {}
_AT_MOST_ONCE: set[str] = set()


def handler(service: str, *, at_most_once: bool = False) -> Callable[[Handler], Handler]:
    """Register a function as the handler of a service: ``@handler("inventory.reserve")``.

    ``at_most_once=True`` is for effects that must never repeat (and cannot be
    made idempotent by key): a durable worker records that the call started
    before making it, and if the worker dies during the call, the step fails
    with ``Interrupted`` instead of being run again.
    """

    def register(fn: Handler) -> Handler:
        REGISTRY[service] = fn
        if at_most_once:
            _AT_MOST_ONCE.add(service)
        else:
            _AT_MOST_ONCE.discard(service)
        return fn

    return register


def unregister(service: str) -> None:
    """Forget the handler registered for a service, if any (a run without it dead-letters
    its calls with ``NoHandler``)."""
    REGISTRY.pop(service, None)
    _AT_MOST_ONCE.discard(service)


def registered_handlers() -> dict[str, Handler]:
    return dict(REGISTRY)


def at_most_once_services() -> frozenset[str]:
    """The services registered with ``at_most_once=True``."""
    return frozenset(_AT_MOST_ONCE)
