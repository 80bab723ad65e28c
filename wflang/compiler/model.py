"""The model of one workflow that every rule reads: symbols, node table and graph.

Built once per file by ``build_model``: declarations of the file and of the
files it imports are gathered into symbol tables, nodes into a table keyed by
name with the scope each lives in (the workflow, a parallel branch, a map body),
and the flow into one ``graphs.Digraph``. Rules never rebuild any of it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import cached_property
from typing import TypeVar, assert_never

from attrs import define, field, frozen

from wflang.compiler import graphs
from wflang.compiler.dataflow import own_derivations
from wflang.compiler.program import Module, Program
from wflang.dsl import expr as ex
from wflang.dsl import spec as sp
from wflang.dsl.walk import TOP, child_nodes, sub_flows, walk_nodes

T = TypeVar("T")


@frozen
class NodeInfo:
    """Where a node lives: its scope (``""``, ``parallel/branch`` or ``map``) and owner."""

    node: sp.Node
    scope: str
    owner: str | None  # the parallel or map node whose body holds it


@frozen
class Edge:
    """A flow edge as written: its kind (next, when, else, timeout, error, join) and target."""

    kind: str
    target: sp.Ident
    label: str = ""


@frozen
class SideRoute:
    """A non-interrupting route (a timer's or a boundary event's): the node it leaves,
    its clause, and the nodes its side path can reach."""

    node: str
    clause: sp.Timeout | sp.OnEvent
    reach: frozenset[str]


@frozen
class CallableWorkflow:
    """A workflow another file can ``call``: its spec and the module it lives in."""

    spec: sp.WorkflowSpec
    path: str


#: Edge kinds taken when a node did not complete, so its ``output`` was not written.
ABORTED = frozenset({"error", "timeout", "timeout-side", "event", "event-side"})
#: The kinds of a non-interrupting route: a side path starts there, the node goes on.
SIDE = frozenset({"timeout-side", "event-side"})


def outgoing(node: sp.Node, *, labels: bool = False) -> Iterator[Edge]:
    """Every flow edge written on a node, in source order of the clauses' kinds.

    ``labels`` prints guards and timeouts into the edges' labels (for the diagrams);
    the analyses that walk edges many times leave them out.
    """
    if isinstance(node, sp.ChoiceNode):
        for arm in node.arms:
            label = _guard_label(arm) if labels else ""
            yield Edge("else" if arm.guard is None else "when", arm.target, label)
    if isinstance(node, sp.FirstNode):
        for event_arm in node.arms:
            yield Edge("arm", event_arm.target, arm_label(event_arm) if labels else "")
    for t in getattr(node, "timeouts", ()):
        kind = "timeout" if t.interrupting else "timeout-side"
        label = (f"after {t.when}" if t.cycle is None else t.when) if labels else ""
        yield Edge(kind, t.target, label)
    for h in getattr(node, "handlers", ()):
        label = "any" if h.catch_all else ", ".join(e.text for e in h.errors)
        yield Edge("error", h.target, label)
    for e in getattr(node, "events", ()):
        yield Edge("event" if e.interrupting else "event-side", e.target, event_label(e))
    nxt = getattr(node, "next", None)
    if nxt is not None:
        yield Edge("join" if isinstance(node, sp.ParallelNode) else "next", nxt)


def event_label(e: sp.OnEvent) -> str:
    """A boundary event as a route's label says it: ``signal cancel``, ``message paid``."""
    return f"{e.kind} {e.name.text}"


def arm_label(arm: sp.EventArm) -> str:
    """What an arm of a ``first`` waits for: ``signal S``, ``message M``, ``after EXPR``,
    ``until EXPR``."""
    t = arm.trigger
    if isinstance(t, sp.SignalTrigger):
        return f"signal {t.signal.text}"
    if isinstance(t, sp.MessageTrigger):
        return f"message {t.message.text}"
    if isinstance(t, sp.UntilTrigger):
        return f"until {_text(t.at)}"
    return f"after {_text(t.after)}"


def arm_key(arm: sp.EventArm) -> str:
    """What an arm of a ``first`` waits for, in words (``wf diff``'s messages and
    fingerprints): a signal's name, a message's name with its correlation as written,
    any ``after``, any ``until``. Whether two arms wait for the same event is
    ``meaning.arm_event``'s to say (the correlation by its parsed form)."""
    t = arm.trigger
    if isinstance(t, sp.SignalTrigger):
        return f"signal {t.signal.text}"
    if isinstance(t, sp.MessageTrigger):
        return f"message {t.message.text} correlate {_text(t.correlation)}"
    return "until" if isinstance(t, sp.UntilTrigger) else "after"


def _guard_label(arm: sp.ChoiceArm) -> str:
    return "else" if arm.guard is None else _text(arm.guard)


def _text(e: ex.Expr) -> str:
    from wflang.dsl.formatter import format_expr  # printing only, for labels

    return format_expr(e)


@define
class Model:
    """Everything the rules need to know about one workflow file."""

    module: Module
    program: Program
    spec: sp.WorkflowSpec
    text: str
    nodes: dict[str, NodeInfo] = field(factory=dict)
    duplicate_nodes: list[tuple[sp.Node, sp.Node]] = field(factory=list)
    #: Scopes where a node is defined twice: the second one's flow is not in the graph.
    duplicate_scopes: set[str] = field(factory=set)
    scopes: dict[str, list[str]] = field(factory=dict)
    #: Types by the names they are written with: ``Item`` (declared here or in an
    #: imported file) and ``alias.Item`` (declared in the file imported ``as alias``).
    types: dict[str, sp.TypeDecl | sp.EnumDecl] = field(factory=dict)
    #: The files imported ``as alias``, by alias: the types each declares, by name.
    aliases: dict[str, dict[str, sp.TypeDecl | sp.EnumDecl]] = field(factory=dict)
    signals: dict[str, sp.SignalDecl] = field(factory=dict)
    messages: dict[str, sp.MessageDecl] = field(factory=dict)
    errors: dict[str, sp.Ident] = field(factory=dict)
    #: The payload fields of the errors declared with one, by error name.
    error_payloads: dict[str, tuple[sp.Field, ...]] = field(factory=dict)
    services: dict[str, sp.ServiceDecl] = field(factory=dict)
    workflows: dict[str, CallableWorkflow] = field(factory=dict)
    input: dict[str, sp.Field] = field(factory=dict)
    context: dict[str, sp.Field] = field(factory=dict)
    output: dict[str, sp.Field] = field(factory=dict)
    starts: list[sp.StartDecl] = field(factory=list)
    #: False when an import cannot be read or has errors: names may be declared there.
    imports_complete: bool = True
    _memo: dict[str, object] = field(factory=dict)
    _reachable: dict[str, set[str]] = field(factory=dict)
    #: By the node's id: a duplicate node has another's name, and hashing a node hashes its body.
    _writes: dict[int, frozenset[str]] = field(factory=dict)

    def memo(self, key: str, compute: Callable[[Model], T]) -> T:
        """Compute a derived fact once per model (the typing of all expressions…)."""
        if key not in self._memo:
            self._memo[key] = compute(self)
        return self._memo[key]  # type: ignore[return-value]

    # -- scopes and flow ---------------------------------------------------------

    @property
    def start(self) -> sp.StartDecl | None:
        return self.starts[0] if self.starts else None

    def entry(self, scope: str) -> str | None:
        """The node a scope begins at: ``start`` for the workflow, else its first node."""
        if scope == TOP:
            start = self.start
            if start is None or not self.in_scope(start.target.text, TOP):
                return None
            return start.target.text
        names = self.scopes.get(scope, [])
        return names[0] if names else None

    def in_scope(self, name: str, scope: str) -> bool:
        info = self.nodes.get(name)
        return info is not None and info.scope == scope

    @cached_property
    def graph(self) -> graphs.Digraph[str]:
        """The flow of every scope in one graph; edges stay inside their scope."""
        g: graphs.Digraph[str] = graphs.Digraph(self.nodes)
        for name, info in self.nodes.items():
            if isinstance(info.node, sp.EndNode):
                continue  # an end's 'next' is never taken (WF205)
            for edge in outgoing(info.node):
                if self.in_scope(edge.target.text, info.scope):
                    g.add_edge(name, edge.target.text)
        return g

    @cached_property
    def unsure_scopes(self) -> set[str]:
        """Scopes whose flow a broken name leaves unknown: a node defined twice, or an
        edge or a ``compensate`` naming no node (the name rules report them). The
        flow rules skip these scopes: a typo could have meant any node, so what they
        would say (unreachable, no end, a trap) would be noise."""
        unsure = set(self.duplicate_scopes)
        for info in self.nodes.values():
            targets = [e.target for e in outgoing(info.node)]
            compensate = getattr(info.node, "compensate", None)
            if any(t.text not in self.nodes for t in (*targets, *filter(None, [compensate]))):
                unsure.add(info.scope)
        return unsure

    @cached_property
    def compensation_handlers(self) -> set[str]:
        """Nodes named by a ``compensate`` clause, and the nodes their flow reaches."""
        roots = {
            c.text
            for info in self.nodes.values()
            if (c := getattr(info.node, "compensate", None)) is not None and c.text in self.nodes
        }
        return graphs.reachable(self.graph, roots)

    @cached_property
    def main_flow(self) -> set[str]:
        """Top-level nodes reached from the start without a non-interrupting route's
        side path: the ends among them finish the workflow itself."""
        entry = self.entry(TOP)
        if entry is None:
            return set()
        kinds = self.edge_kinds  # an edge also written as a 'next' or an error route is taken
        return graphs.reachable(self.graph, [entry], lambda a, b: not kinds[a, b] <= SIDE)

    @cached_property
    def stranded_routes(self) -> list[SideRoute]:
        """The non-interrupting routes whose side path can reach no end of its scope: it
        neither ends nor rejoins a flow that does (WF215, which reports the traps only
        they lead into, so that WF204 does not report them again)."""
        found = []
        for name, info in self.nodes.items():
            if info.scope in self.unsure_scopes:
                continue
            ends = set(self.ends(info.scope))
            clauses = (*getattr(info.node, "timeouts", ()), *getattr(info.node, "events", ()))
            for clause in clauses:
                target = clause.target.text
                if clause.interrupting or not self.in_scope(target, info.scope):
                    continue
                reach = graphs.reachable(self.graph, [target])
                if not reach & ends:
                    found.append(SideRoute(name, clause, frozenset(reach)))
        return found

    def plainly_reachable(self, scope: str) -> set[str]:
        """Nodes of a scope reached from its entry without a non-interrupting route."""
        entry = self.entry(scope)
        if entry is None:
            return set()
        kinds = self.edge_kinds
        return graphs.reachable(self.graph, [entry], lambda a, b: not kinds[a, b] <= SIDE)

    def reachable(self, scope: str) -> set[str]:
        """Nodes of a scope reached from its entry (computed once per scope)."""
        cache = self._reachable
        if scope not in cache:
            entry = self.entry(scope)
            cache[scope] = set() if entry is None else graphs.reachable(self.graph, [entry])
        return cache[scope]

    def writes(self, name: str) -> frozenset[str]:
        """The context fields a node writes; a parallel or map writes what its body writes."""
        return self._writes_of(self.nodes[name].node)

    def _writes_of(self, node: sp.Node) -> frozenset[str]:
        # Found once per node, from those of the nodes inside it: the flow analyses ask
        # at every edge, and the body of a parallel is inside each parallel around it.
        found = self._writes.get(id(node))
        if found is None:
            own = frozenset(name for name, _ in own_derivations(node))
            found = own.union(*(self._writes_of(n) for n in child_nodes(node)))
            self._writes[id(node)] = found
        return found

    @cached_property
    def edge_kinds(self) -> dict[tuple[str, str], frozenset[str]]:
        """The kinds of every written edge between two nodes (a choice may have several)."""
        kinds: dict[tuple[str, str], set[str]] = {}
        for name, info in self.nodes.items():
            for edge in outgoing(info.node):
                kinds.setdefault((name, edge.target.text), set()).add(edge.kind)
        return {pair: frozenset(k) for pair, k in kinds.items()}

    @cached_property
    def positions(self) -> dict[str, int]:
        """Each node's position in its scope, for stable orders."""
        return {n: i for names in self.scopes.values() for i, n in enumerate(names)}

    def ends(self, scope: str) -> list[str]:
        return [n for n in self.scopes.get(scope, []) if isinstance(self.nodes[n].node, sp.EndNode)]

    def result_fields(self, service: sp.ServiceDecl) -> tuple[sp.Field, ...] | None:
        """The fields of a service's result, written inline or by a record type's name;
        None when it has no result or names no record (``unknown-reference`` says so)."""
        result = service.result
        if result is None or isinstance(result, tuple):
            return result
        decl = self.types.get(result.name)
        return decl.fields if isinstance(decl, sp.TypeDecl) else None

    def all_nodes(self) -> Iterator[sp.Node]:
        for info in self.nodes.values():
            yield info.node


def build_model(module: Module, program: Program) -> Model:
    """Gather the symbols a file sees and the nodes it defines."""
    spec = module.spec
    assert spec is not None, "models are built for parsed files only"
    model = Model(module, program, spec, module.parsed.text)
    for imported in program.imported(module):
        if imported.spec is not None:
            _declare(model, imported.spec, own=False)
    for decl, target in module.imports:
        if target is None or target not in program.modules:
            model.imports_complete = False
            continue
        callee = program.modules[target].spec
        if callee is None:
            model.imports_complete = False
            continue
        if decl.alias is not None:
            _qualify(model, decl.alias.text, callee)
        if callee.header is not None:
            name = callee.header.name.text
            key = f"{decl.alias.text}.{name}" if decl.alias is not None else name
            model.workflows[key] = CallableWorkflow(callee, target)
    if spec.header is not None:
        model.workflows.setdefault(spec.header.name.text, CallableWorkflow(spec, module.path))
    _declare(model, spec, own=True)
    _add_nodes(model, spec.nodes)
    return model


def _qualify(model: Model, alias: str, spec: sp.WorkflowSpec) -> None:
    """Name the types of a file imported ``as alias`` also ``alias.Type``."""
    declared = model.aliases.setdefault(alias, {})
    for decl in spec.declarations:
        if isinstance(decl, sp.TypeDecl | sp.EnumDecl):
            declared[decl.name.text] = decl
            model.types[f"{alias}.{decl.name.text}"] = decl


def _declare(model: Model, spec: sp.WorkflowSpec, *, own: bool) -> None:
    """Put a file's declarations into the symbol tables (imported ones first, so own win)."""
    for decl in spec.declarations:
        match decl:
            case sp.TypeDecl() | sp.EnumDecl():
                model.types[decl.name.text] = decl
            case sp.SignalDecl():
                model.signals[decl.name.text] = decl
            case sp.MessageDecl():
                model.messages[decl.name.text] = decl
            case sp.ErrorDecl():
                for name in decl.names:
                    model.errors[name.text] = name
                model.error_payloads.update(decl.payloads)
            case sp.ServiceDecl():
                model.services[decl.name.text] = decl
            case sp.ImportDecl():
                pass  # resolved by the program loader
            case _ if not own:
                pass  # a workflow's input, context, output and start stay its own
            case sp.InputDecl():
                model.input.update({f.name.text: f for f in decl.fields})
            case sp.ContextDecl():
                model.context.update({f.name.text: f for f in decl.fields})
            case sp.OutputDecl():
                model.output.update({f.name.text: f for f in decl.fields})
            case sp.StartDecl():
                model.starts.append(decl)
            case _:
                assert_never(decl)


def _add_nodes(model: Model, nodes: tuple[sp.Node, ...]) -> None:
    model.scopes[TOP] = []
    for placed in walk_nodes(nodes):
        node, scope, name = placed.node, placed.scope, placed.name
        if name in model.nodes:
            model.duplicate_nodes.append((model.nodes[name].node, node))
            model.duplicate_scopes |= {scope, model.nodes[name].scope}
        else:
            model.nodes[name] = NodeInfo(node, scope, placed.owner)
            model.scopes[scope].append(name)
        for inner, _ in sub_flows(node):
            model.scopes.setdefault(inner, [])
