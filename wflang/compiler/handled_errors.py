"""What ``error`` is in the node an ``on`` route leads to.

The node reads the error its route handled (``error.name``, ``error.message``,
``error.payload``) when every way into it is an error route: no ``next``, guard or
timeout leads there, it does not begin its scope and is no compensation. Its type is
what every error that can arrive has in common: a name and a message, and the
payload only when exactly one error can arrive, declared with a payload, and raised
by a task (an error out of a branch, an item or a called workflow brings no payload).
"""

from __future__ import annotations

from attrs import frozen

from wflang.compiler.model import Model, outgoing
from wflang.compiler.types import STRING, Type, TypeEnv
from wflang.dsl import spec as sp

#: The kind of problem an unknown field of an error's payload is (``types._member``).
PAYLOAD_PROBLEM = "error-payload"


@frozen
class Arriving:
    """The errors routes bring to a node: their names, whether an ``on any`` is among
    them, and whether each route is a task's (whose failure may carry a payload)."""

    names: frozenset[str]
    any: bool
    from_tasks: bool

    def payload_error(self, m: Model) -> str | None:
        """The one error whose payload the node can read, if there is one."""
        if self.any or not self.from_tasks or len(self.names) != 1:
            return None
        (name,) = self.names
        return name if name in m.error_payloads else None

    def why_no_payload(self, m: Model) -> str:
        if self.any:
            return "an 'on any' route leads here: any error can arrive"
        if len(self.names) > 1:
            return f"the routes here can be taken by {', '.join(sorted(self.names))}"
        if not self.from_tasks:
            return "a route here is a parallel's, a map's or a call's: no payload comes through"
        (name,) = self.names
        return f"{name} is declared without a payload"


def arriving(m: Model, name: str) -> Arriving | None:
    """The errors that can arrive at a node, or None when it can be reached otherwise
    (or is reached by no error route at all)."""
    return m.memo("arriving errors", _all_arriving).get(name)


def _all_arriving(m: Model) -> dict[str, Arriving]:
    """``arriving`` of every node an error route leads to, found in one pass."""
    names: dict[str, set[str]] = {}
    catch_all: set[str] = set()
    not_from_tasks: set[str] = set()
    otherwise: set[str] = set()  # reached by a next, a guard, a timeout, a saga
    for info in m.nodes.values():
        node = info.node
        if m.entry(info.scope) == info.node.name.text:
            otherwise.add(node.name.text)
        compensate = getattr(node, "compensate", None)
        if compensate is not None:
            otherwise.add(compensate.text)
        if isinstance(node, sp.EndNode):
            continue  # an end's 'next' is never taken (WF205)
        for edge in outgoing(node):
            if edge.kind != "error":
                otherwise.add(edge.target.text)
        for h in getattr(node, "handlers", ()):
            target = h.target.text
            names.setdefault(target, set()).update(e.text for e in h.errors)
            if h.catch_all:
                catch_all.add(target)
            if not isinstance(node, sp.TaskNode):
                not_from_tasks.add(target)
    return {
        target: Arriving(frozenset(errors), target in catch_all, target not in not_from_tasks)
        for target, errors in names.items()
        if target not in otherwise and target in m.nodes
    }


def error_type(m: Model, env: TypeEnv, node: sp.Node) -> Type | None:
    """The type of ``error`` in a node's expressions (None: no error can be read there)."""
    came = arriving(m, node.name.text)
    if came is None:
        return None
    fields: dict[str, Type] = {"name": STRING, "message": STRING}
    shape = f"error at {node.name.text}"
    payload = came.payload_error(m)
    if payload is not None:
        record = f"payload of error {payload}"
        fields["payload"] = env.record(record, m.error_payloads[payload])
        env.kinds[record] = PAYLOAD_PROBLEM
    else:
        env.absent[shape, "payload"] = (PAYLOAD_PROBLEM, came.why_no_payload(m))
    return env.shape(shape, fields)
