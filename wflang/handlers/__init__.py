"""Typed handlers (issue 17): the registry, ``@handler``, the conversions at the
boundary and what the code ``wf gen python`` writes imports.

    from wflang.handlers import handler

    @handler("payments.charge")
    def charge(customer_id: str, amount: Decimal, currency: str, key: str) -> ChargeResult:
        ...

See docs/handlers.md.
"""

from __future__ import annotations

from attrs import field, frozen

from wflang.handlers.clients import CompletesTasks, Publishes, Signals, Starts
from wflang.handlers.convert import from_value, to_value
from wflang.handlers.load import load
from wflang.handlers.registry import Registered, Registry, handler
from wflang.handlers.verify import HandlersRefused
from wflang.runtime.ir import Value
from wflang.runtime.outcome import TaskCall, TaskError

__all__ = [
    "CompletesTasks",
    "HandlersRefused",
    "Publishes",
    "Registered",
    "Registry",
    "Signals",
    "Starts",
    "TaskCall",
    "TaskError",
    "Value",
    "field",
    "from_value",
    "frozen",
    "handler",
    "load",
    "to_value",
]
