"""A transition table for people: ``wf table``."""

from __future__ import annotations

from wflang.runtime import ir
from wflang.runtime import table as tb


def show_ir(node: ir.IR) -> str:
    """An IR tree in a compact prefix notation: ``gt(input.amount, 1000)``."""
    if isinstance(node, ir.Const):
        if node.value is None:
            return "null"
        return repr(node.value) if isinstance(node.value, str) else str(node.value).lower()
    if isinstance(node, ir.Dec):
        return node.text
    if isinstance(node, ir.Load):
        return node.root
    if isinstance(node, ir.Get):
        return f"{show_ir(node.obj)}.{node.field}"
    if isinstance(node, ir.At):
        return f"{show_ir(node.obj)}[{show_ir(node.index)}]"
    if isinstance(node, ir.MakeList):
        return "[" + ", ".join(show_ir(i) for i in node.items) + "]"
    if isinstance(node, ir.Project):
        return f"{show_ir(node.obj)}[*]" + "".join(f".{f}" for f in node.path)
    if isinstance(node, ir.Each):
        return f"{node.op}({show_ir(node.items)}, {node.param} => {show_ir(node.body)})"
    return f"{node.op}(" + ", ".join(show_ir(a) for a in node.args) + ")"


def describe(table: tb.Table) -> str:
    def name(i: int) -> str:
        return "(scope end)" if i == tb.NO_STATE else table.states[i].name

    out = [
        f"workflow {table.workflow} version {table.version}  (schema {table.schema}, "
        f"source sha256 {table.source_hash[:12]})",
        f"start: {name(table.start)}",
        "",
        f"states ({len(table.states)}):",
    ]
    for i, s in enumerate(table.states):
        owner = "" if s.owner == tb.NO_STATE else f"  in {name(s.owner)}"
        reads = "  (reads)" if isinstance(s.entry, tb.TaskEntry) and s.entry.read_only else ""
        out.append(f"  {i:>3}  {s.kind:<8} {s.name}{owner}{reads}")
    out += ["", f"events ({len(table.events)}): " + ", ".join(table.events), "", "rows:"]
    for row in table.rows:
        event = table.events[row.event]
        for t in row.transitions:
            guard = "" if t.guard is None else f"  when {show_ir(table.expressions[t.guard])}"
            acts = "".join(
                f"  +compensate {name(a.state)}" if a.kind == "compensate" else f"  +{a.kind}"
                for a in t.actions
            )
            out.append(f"  {name(row.state):<24} {event:<14} -> {name(t.target)}{guard}{acts}")
    out += ["", f"expressions ({len(table.expressions)}):"]
    out += [f"  {i:>3}  {show_ir(e)}" for i, e in enumerate(table.expressions)]
    return "\n".join(out) + "\n"
