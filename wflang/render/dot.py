"""``Diagram`` -> DOT text for Graphviz.

Written by hand rather than through ``graphviz.Digraph`` so that every byte is
ours: labels are HTML-like (``<...>``) and escaped by ``escape.dot_html``,
identifiers come from ``escape.dot_id``, attributes are written in a fixed order
and the same diagram always gives the same text. One pass over the nodes,
clusters and edges: linear in the size of the workflow.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterable

from wflang.render.diagram import Cluster, DEdge, Diagram, DNode
from wflang.render.escape import dot_html, dot_id, dot_string, safe_key
from wflang.render.kinds import KINDS
from wflang.render.marks import MARKS, strongest

FONT = "Helvetica"
MUTED = "#546e7a"

#: Edge kind -> DOT attributes (colour, style, arrowhead).
EDGE_STYLES: dict[str, tuple[tuple[str, str], ...]] = {
    "next": (),
    "when": (),
    "else": (),
    "arm": (),
    "join": (),
    "fork": (),
    "done": (("color", '"#90a4ae"'), ("arrowsize", "0.5")),
    "timeout": (("style", "dashed"), ("color", '"#a0740b"'), ("fontcolor", '"#7a5a08"')),
    "timeout-side": (
        ("style", "dashed"),
        ("color", '"#a0740b"'),
        ("fontcolor", '"#7a5a08"'),
        ("arrowhead", "empty"),
    ),
    "error": (("style", "dashed"), ("color", '"#c62828"'), ("fontcolor", '"#b71c1c"')),
    "event": (("style", "dashed"), ("color", '"#1565c0"'), ("fontcolor", '"#0d47a1"')),
    "event-side": (
        ("style", "dashed"),
        ("color", '"#1565c0"'),
        ("fontcolor", '"#0d47a1"'),
        ("arrowhead", "empty"),
    ),
    "compensate": (
        ("style", "dotted"),
        ("color", '"#e65100"'),
        ("fontcolor", '"#bf360c"'),
        ("arrowhead", "open"),
        ("penwidth", "1.4"),
    ),
}

WRAP = 30  # columns of an edge label or detail line before it wraps


def lines(text: str, width: int = WRAP) -> str:
    """Escaped text, wrapped at spaces into ``<br/>``-separated lines."""
    parts = textwrap.wrap(text, width, break_long_words=False, break_on_hyphens=False)
    return '<br align="center"/>'.join(dot_html(p) for p in parts or [""])


def cluster_id(key: str) -> str:
    return dot_id("cluster_" + safe_key(key))


def _attrs(pairs: Iterable[tuple[str, str]]) -> str:
    return "[" + ", ".join(f"{k}={v}" for k, v in pairs) + "]"


def _node(n: DNode) -> str:
    style = KINDS[n.kind]
    mark = strongest(n.marks)
    color = mark.color if mark else style.border
    fill = mark.fill if mark else style.fill
    if not style.show_name:
        label = f'<font point-size="12">{dot_html(style.marker)}</font>' if style.marker else ""
    elif style.outside:  # an event: a small circle, its name under it as BPMN writes it
        under = [f'<font point-size="10">{dot_html(n.name)}</font>']
        under += [
            f'<font point-size="9" color="{MUTED}">{lines(d)}</font>'
            for d in n.detail
            if d.strip() != style.marker
        ]
        if n.badges:
            under.append(
                f'<font point-size="9" color="{mark.color if mark else MUTED}">'
                f"<b>{dot_html(' '.join(n.badges))}</b></font>"
            )
        label = _event_label(style.marker, under, style.width or 0.3)
    else:
        size = 9 if style.small else 11
        label = f'<font point-size="{size}"><b>{dot_html(n.name)}</b></font>'
        for d in n.detail:
            label += f'<br/><font point-size="9" color="{MUTED}">{lines(d)}</font>'
    if n.badges and not style.outside:
        badge_color = mark.color if mark else MUTED
        label += f'<br/><font point-size="9" color="{badge_color}"><b>'
        label += dot_html(" ".join(n.badges)) + "</b></font>"
    styles = ["filled"]
    if style.rounded:
        styles.append("rounded")
    if (mark is not None and mark.dashed) or n.kind == "missing":
        styles.append("dashed")
    pairs = [
        ("label", f"<{label}>" if label else '""'),
        ("shape", style.shape),
        ("style", f'"{",".join(styles)}"'),
        ("fillcolor", f'"{fill}"'),
        ("color", f'"{color}"'),
        ("penwidth", f"{max(style.penwidth, mark.penwidth) if mark else style.penwidth:g}"),
    ]
    if style.peripheries != 1:
        pairs.append(("peripheries", str(style.peripheries)))
    if style.width is not None:
        w = f"{style.width:g}"
        fixed = "shape" if style.outside else "true"  # the label may be larger than the shape
        pairs += [("width", w), ("height", w), ("fixedsize", fixed)]

    tip = [style.description + ("" if not style.show_name else f" {n.name}"), *n.detail, *n.notes]
    pairs.append(("tooltip", dot_string("\n".join(tip))))
    return f"{dot_id(n.key)} {_attrs(pairs)};"


def _edge(e: DEdge, clusters: set[str]) -> str:
    pairs: list[tuple[str, str]] = list(EDGE_STYLES.get(e.kind, ()))
    if e.label:
        pairs.append(("label", f"<{lines(e.label)}>"))
    if e.boundary is not None and e.boundary in clusters:
        pairs.append(("ltail", cluster_id(e.boundary)))
    mark = strongest(e.marks)
    if mark is not None:
        pairs = [p for p in pairs if p[0] not in ("color", "fontcolor", "penwidth")]
        pairs += [
            ("color", f'"{mark.color}"'),
            ("fontcolor", f'"{mark.color}"'),
            ("penwidth", f"{mark.penwidth:g}"),
        ]
        if mark.dashed:
            pairs = [p for p in pairs if p[0] != "style"] + [("style", "dashed")]
    head = f"{dot_id(e.tail)} -> {dot_id(e.head)}"
    return f"{head} {_attrs(pairs)};" if pairs else f"{head};"


def _event_label(marker: str, under: list[str], width: float) -> str:
    """A label whose middle row is the circle: the lines under it are balanced by
    blank rows above, so the circle stays at the node's centre and the layout
    makes room for the name (``fixedsize=shape``) instead of letting it overlap."""
    side = int(width * 72)
    blank = '<tr><td height="13"> </td></tr>' * len(under)
    middle = f'<tr><td height="{side}" fixedsize="true" width="{side}">{dot_html(marker)}</td></tr>'
    rows = "".join(f'<tr><td height="13">{u}</td></tr>' for u in under)
    table = '<table border="0" cellspacing="0" cellpadding="0">'
    return f"{table}{blank}{middle}{rows}</table>"


def _cluster_open(c: Cluster, indent: str) -> list[str]:
    mark = strongest(c.marks)
    label = f"<b>{dot_html(c.label)}</b>"
    if c.detail:
        label += f'<br/><font point-size="9" color="{MUTED}">{lines(c.detail, 60)}</font>'
    branch = c.kind == "branch"
    color = mark.color if mark else ("#b0bec5" if branch else "#78909c")
    fill = mark.fill if mark else ("#ffffff" if branch else "#f7f9fa")
    style = "rounded,dashed" if branch or (mark and mark.dashed) else "rounded"
    pairs = [
        ("label", f"<{label}>"),
        ("style", f'"{style},filled"'),
        ("color", f'"{color}"'),
        ("fillcolor", f'"{fill}"'),
        ("penwidth", f"{mark.penwidth:g}" if mark else "1.2"),
        ("labeljust", "l"),
        ("fontsize", "10"),
    ]
    return [f"{indent}subgraph {cluster_id(c.key)} {{", f"{indent}    graph {_attrs(pairs)};"]


def _legend(d: Diagram) -> str:
    """The legend, drawn under the title: as a node of its own it would sit beside
    the start and push the first rank down by its height."""
    head = f"<b>{dot_html(d.legend_title)}</b>"
    rows = [f'<tr><td align="left"><font point-size="11">{head}</font></td></tr>']
    for entry in d.legend:
        color = MARKS[entry.mark].color if entry.mark in MARKS else MUTED
        text = f'<font color="{color}">■</font> {lines(entry.text, 80)}'
        rows.append(
            f'<tr><td align="left" balign="left"><font point-size="10">{text}</font></td></tr>'
        )
    table = '<table border="1" color="#b0bec5" cellborder="0" cellspacing="2" cellpadding="2">'
    return f"{table}{''.join(rows)}</table>"


def to_dot(d: Diagram) -> str:
    """The DOT text of a diagram; the same diagram always gives the same bytes."""
    cluster_keys = {c.key for c in d.clusters}
    by_cluster, children = d.contents()
    title = f"<b>{dot_html(d.title)}</b>"
    if d.legend or d.legend_title:
        title = f'<table border="0" cellspacing="4"><tr><td>{title}</td></tr>'
        title += f"<tr><td>{_legend(d)}</td></tr></table>"
    out = [
        "digraph workflow {",
        f'    graph [label=<{title}>, labelloc=t, fontname="{FONT}", '
        "fontsize=13, rankdir=TB, compound=true, newrank=true, forcelabels=true, nodesep=0.3, "
        "ranksep=0.35, "
        f"tooltip={dot_string(d.title)}];",
        f'    node [fontname="{FONT}", fontsize=11, margin="0.12,0.04", height=0.3];',
        f'    edge [fontname="{FONT}", fontsize=9, color="{MUTED}", fontcolor="#37474f", '
        "arrowsize=0.7];",
    ]

    def container(key: str | None, indent: str) -> None:
        out.extend(indent + _node(n) for n in by_cluster.get(key, ()))
        for c in children.get(key, ()):
            out.extend(_cluster_open(c, indent))
            container(c.key, indent + "    ")
            out.append(indent + "}")

    container(None, "    ")
    out.extend("    " + _edge(e, cluster_keys) for e in d.edges)
    out.append("}")
    return "\n".join(out) + "\n"
