"""What ``error`` is in the node an ``on`` route leads to.

The node reads the error its route handled (``error.name``, ``error.message``,
``error.payload``) when every way into it is an error route: no ``next``, guard or
timeout leads there, it does not begin its scope and is no compensation. Its type is
what every error that can arrive has in common: a name and a message, and the
payload only when exactly one error can arrive, declared with a payload, and every
route there brings it: a task's (its handler or person gives it), or a parallel's, a
map's or a call's when every way the error comes out of the branches, the items or
the called workflow carries it (an ``end … failed { error E }`` re-raising the ``E``
it handles does; one reached otherwise has no payload to give).
"""

from __future__ import annotations

from attrs import frozen

from wflang.compiler.model import Model, build_model, outgoing
from wflang.compiler.types import STRING, Type, TypeEnv
from wflang.dsl import spec as sp
from wflang.dsl.walk import all_nodes, child_nodes

#: The kind of problem an unknown field of an error's payload is (``types._member``).
PAYLOAD_PROBLEM = "error-payload"


@frozen
class Arriving:
    """The errors routes bring to a node: their names, whether an ``on any`` is among
    them, and the nodes whose routes lead there."""

    names: frozenset[str]
    any: bool
    sources: frozenset[str]

    def payload_error(self, m: Model) -> str | None:
        """The one error whose payload the node can read, if there is one."""
        if self.why_no_payload(m) is not None:
            return None
        (name,) = self.names
        return name

    def why_no_payload(self, m: Model, calling: frozenset[str] = frozenset()) -> str | None:
        """Why the node cannot read a payload (None: it can); ``calling``: the files whose
        calls are being followed (a workflow that calls itself)."""
        if self.any:
            return "an 'on any' route leads here: any error can arrive"
        if len(self.names) > 1:
            return f"the routes here can be taken by {', '.join(sorted(self.names))}"
        (name,) = self.names
        if name not in m.error_payloads:
            return f"{name} is declared without a payload"
        for source in sorted(self.sources):
            why = _brought(m, m.nodes[source].node, name, calling)
            if why is not None:
                return why
        return None


def _brought(m: Model, node: sp.Node, error: str, calling: frozenset[str]) -> str | None:
    """Why ``error`` may come out of ``node`` (whose route leads on) without its payload;
    None when it always carries it."""
    if isinstance(node, sp.TaskNode):
        return None  # its handler (or person) gives the payload, checked against the fields
    for inner in (i for c in child_nodes(node) for i in all_nodes((c,))):
        if isinstance(inner, sp.EndNode):
            why = _end_gives(m, inner, error, calling)
        elif isinstance(inner, sp.CallNode):
            why = _call_gives(m, inner, error, calling)
        else:
            continue  # a task's error carries its payload; a nested node's, as here
        if why is not None:
            return why
    if isinstance(node, sp.CallNode):
        return _call_gives(m, node, error, calling)
    return None


def _end_gives(
    m: Model, end: sp.EndNode, error: str, calling: frozenset[str], top: bool = False
) -> str | None:
    """Why an end may fail with ``error`` and no payload: it fails with it without
    handling it (an end re-raising the ``error`` it handles passes its payload on), or it
    ends a workflow ``compensated`` (its saga runs first: the caller hears only the name)."""
    if end.outcome is sp.Outcome.COMPLETED or end.error is None or end.error.text != error:
        return None
    if top and end.outcome is sp.Outcome.COMPENSATED:
        return f"end '{end.name.text}' is compensated: {error} comes out without its payload"
    came = arriving(m, end.name.text)
    if came is None or came.names != frozenset({error}) or came.why_no_payload(m, calling):
        return f"end '{end.name.text}' fails with {error} without its payload"
    return None


def _call_gives(m: Model, call: sp.CallNode, error: str, calling: frozenset[str]) -> str | None:
    """Why the workflow a call starts may fail with ``error`` and no payload the caller can
    read: an end of its own that does not carry it, or a payload declared otherwise. Errors
    are matched by name: the child's ``error`` must declare the fields the caller's does."""
    callee = m.workflows.get(call.workflow.text)
    if callee is None or callee.path not in m.program.modules:
        return f"the workflow '{call.workflow.text}' cannot be read"
    if callee.path in calling:
        return f"the workflow '{call.workflow.text}' calls itself"
    child = m if callee.path == m.module.path else _model_of(m, callee.path)
    ends = [
        n
        for n in child.spec.nodes
        if isinstance(n, sp.EndNode) and n.error is not None and n.error.text == error
    ]
    if not ends:
        return None  # it never fails with it (the route is never taken)
    if child.error_payloads.get(error) != m.error_payloads.get(error):
        return f"the workflow '{call.workflow.text}' declares {error} with other payload fields"
    for end in ends:
        why = _end_gives(child, end, error, calling | {m.module.path}, top=True)
        if why is not None:
            return f"in the workflow '{call.workflow.text}', {why}"
    return None


def _model_of(m: Model, path: str) -> Model:
    """The model of the file a call's workflow lives in (built once per caller's model)."""
    return m.memo(f"model of {path}", lambda m: build_model(m.program.modules[path], m.program))


def arriving(m: Model, name: str) -> Arriving | None:
    """The errors that can arrive at a node, or None when it can be reached otherwise
    (or is reached by no error route at all)."""
    return m.memo("arriving errors", _all_arriving).get(name)


def _all_arriving(m: Model) -> dict[str, Arriving]:
    """``arriving`` of every node an error route leads to, found in one pass."""
    names: dict[str, set[str]] = {}
    catch_all: set[str] = set()
    sources: dict[str, set[str]] = {}
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
            sources.setdefault(target, set()).add(node.name.text)
    return {
        target: Arriving(frozenset(errors), target in catch_all, frozenset(sources[target]))
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
    why = came.why_no_payload(m)
    if why is None:
        (payload,) = came.names
        record = f"payload of error {payload}"
        fields["payload"] = env.record(record, m.error_payloads[payload])
        env.kinds[record] = PAYLOAD_PROBLEM
    else:
        env.absent[shape, "payload"] = (PAYLOAD_PROBLEM, why)
    return env.shape(shape, fields)
