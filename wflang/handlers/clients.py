"""What the helpers ``wf gen python`` writes call: the few methods that start an
instance, send a signal, publish a message and complete a human task, which the
test kit (``WorkflowEnv``) and the durable client (``durable.client.Client``) both
have. Each helper returns what the method returns (an instance id, a record)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol, TypeVar

from wflang.runtime.ir import Value

R_co = TypeVar("R_co", covariant=True)


class Starts(Protocol[R_co]):
    def start(
        self,
        workflow: str,
        input: Mapping[str, Value],
        *,
        version: int | None = ...,
        instance_id: str | None = ...,
    ) -> R_co: ...


class Signals(Protocol[R_co]):
    def signal(
        self, instance_id: str, name: str, payload: Mapping[str, Value], *, key: str = ...
    ) -> R_co: ...


class Publishes(Protocol[R_co]):
    def publish(
        self, message: str, correlation: Value, payload: Mapping[str, Value], *, key: str = ...
    ) -> R_co: ...


class CompletesTasks(Protocol[R_co]):
    def complete_task(self, key: str, output: Mapping[str, Value]) -> R_co: ...
