"""``Diagram`` -> a Mermaid ``flowchart`` that GitHub renders inside Markdown.

Every label is quoted and escaped by ``escape.mermaid_text``; ids are made by
``escape.mermaid_id`` and de-duplicated in order, so the text is deterministic.
Styles go through ``classDef`` (one class per node kind and per mark) and
``linkStyle`` (edge kinds and marks, by edge index), which Mermaid requires to
come after the edges.
"""

from __future__ import annotations

import textwrap

from wflang.render.diagram import Diagram, DNode
from wflang.render.escape import mermaid_id, mermaid_text
from wflang.render.kinds import KINDS
from wflang.render.marks import MARKS, strongest

#: Edge kind -> (arrow, linkStyle) in Mermaid.
EDGE_STYLES: dict[str, tuple[str, str]] = {
    "next": ("-->", ""),
    "when": ("-->", ""),
    "else": ("-->", ""),
    "arm": ("-->", ""),
    "join": ("-->", ""),
    "fork": ("-->", ""),
    "done": ("-->", "stroke:#90a4ae"),
    "timeout": ("-.->", "stroke:#a0740b"),
    "timeout-side": ("-.->", "stroke:#a0740b"),
    "error": ("-.->", "stroke:#c62828"),
    "event": ("-.->", "stroke:#1565c0"),
    "event-side": ("-.->", "stroke:#1565c0"),
    "compensate": ("-.->", "stroke:#e65100,stroke-dasharray:2 3"),
}


def _text(text: str, width: int = 30) -> str:
    parts = textwrap.wrap(text, width, break_long_words=False, break_on_hyphens=False)
    return "<br>".join(mermaid_text(p) for p in parts or [""])


def _class(name: str) -> str:
    return "k_" + name.replace(".", "_").replace("-", "_")


class _Ids:
    """Unique Mermaid ids, assigned in order of first use."""

    def __init__(self) -> None:
        self.ids: dict[str, str] = {}
        self.used: set[str] = set()

    def __call__(self, key: str, prefix: str = "") -> str:
        full = prefix + key
        if full not in self.ids:
            base = mermaid_id(full)
            candidate, n = base, 1
            while candidate in self.used:
                n += 1
                candidate = f"{base}_{n}"
            self.used.add(candidate)
            self.ids[full] = candidate
        return self.ids[full]


def _label(n: DNode) -> str:
    style = KINDS[n.kind]
    if not style.show_name:
        return mermaid_text(style.marker or n.name)
    parts = [f"<b>{mermaid_text(n.name)}</b>", *(_text(d) for d in n.detail)]
    if n.badges:
        parts.append(mermaid_text(" ".join(n.badges)))
    return "<br>".join(parts)


def to_mermaid(d: Diagram) -> str:
    """The Mermaid text of a diagram; the same diagram always gives the same bytes."""
    ids = _Ids()
    cluster_keys = {c.key for c in d.clusters}
    by_cluster, children = d.contents()
    out = ["---", f'title: "{mermaid_text(d.title)}"', "---", "flowchart TD"]
    classes: dict[str, list[str]] = {}

    def container(key: str | None, indent: str) -> None:
        for n in by_cluster.get(key, ()):
            open_, close = KINDS[n.kind].mermaid
            nid = ids(n.key)
            out.append(f'{indent}{nid}{open_}"{_label(n)}"{close}')
            classes.setdefault(_class(n.kind), []).append(nid)
            mark = _mark(n.marks)
            if mark:
                classes.setdefault("m_" + mark, []).append(nid)
        for c in children.get(key, ()):
            label = f"<b>{mermaid_text(c.label)}</b>"
            if c.detail:
                label += "<br>" + _text(c.detail, 60)
            cid = ids(c.key, "cluster/")
            out.append(f'{indent}subgraph {cid}["{label}"]')
            container(c.key, indent + "    ")
            out.append(f"{indent}end")
            classes.setdefault("c_" + c.kind, []).append(cid)
            mark = _mark(c.marks)
            if mark:
                classes.setdefault("m_" + mark, []).append(cid)

    container(None, "    ")
    links: dict[str, list[str]] = {}
    for i, e in enumerate(d.edges):
        arrow, link_style = EDGE_STYLES.get(e.kind, ("-->", ""))
        tail = ids(e.boundary, "cluster/") if e.boundary in cluster_keys else ids(e.tail)
        label = f'|"{_text(e.label)}"|' if e.label else ""
        out.append(f"    {tail} {arrow}{label} {ids(e.head)}")
        mark = strongest(e.marks)
        if mark is not None:
            link_style = f"stroke:{mark.color},stroke-width:{mark.penwidth:g}px"
        if link_style:
            links.setdefault(link_style, []).append(str(i))
    if d.legend or d.legend_title:
        out.append(f'    subgraph legend["{mermaid_text(d.legend_title or "legend")}"]')
        for j, entry in enumerate(d.legend):
            lid = ids(f"-legend-{j}")
            out.append(f'        {lid}["{_text(entry.text, 70)}"]')
            if entry.mark in MARKS:
                classes.setdefault("m_" + entry.mark, []).append(lid)
        out.append("    end")
    out.extend(_class_defs(classes))
    out.extend(f"    class {','.join(members)} {name}" for name, members in classes.items())
    out.extend(f"    linkStyle {','.join(idx)} {style}" for style, idx in links.items())
    return "\n".join(out) + "\n"


def _class_defs(classes: dict[str, list[str]]) -> list[str]:
    """``classDef`` lines for the kinds, clusters and marks in use, marks last (they win)."""
    lines: list[str] = []
    for name, style in KINDS.items():
        if _class(name) in classes:
            border = "stroke-dasharray:4 3," if name == "missing" else ""
            lines.append(
                f"    classDef {_class(name)} fill:{style.fill},stroke:{style.border},"
                f"{border}stroke-width:{style.penwidth:g}px"
            )
    for kind, fill in (("parallel", "#f7f9fa"), ("map", "#f7f9fa"), ("branch", "#ffffff")):
        if "c_" + kind in classes:
            lines.append(f"    classDef c_{kind} fill:{fill},stroke:#90a4ae")
    for name, mark in MARKS.items():
        if "m_" + name in classes:
            dash = ",stroke-dasharray:4 3" if mark.dashed else ""
            lines.append(
                f"    classDef m_{name} fill:{mark.fill},stroke:{mark.color},"
                f"stroke-width:{mark.penwidth:g}px{dash}"
            )
    return lines


def _mark(marks: frozenset[str]) -> str:
    """The class of the strongest mark, or ''."""
    style = strongest(marks)
    if style is None:
        return ""
    return next(name for name, s in MARKS.items() if s is style)
