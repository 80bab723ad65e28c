"""``wf render``: diagrams of workflows, of their findings and of version diffs.

``build`` lays out a checked ``Model`` as a format-neutral ``Diagram``; the
overlays (``overlay_check``, ``overlay_diff``, ``history``) mark its elements;
``dot`` and ``mermaid`` write it out as text and ``image`` asks Graphviz for
SVG or PNG. ``kinds`` and ``marks`` are the visual language, as registries.
``command`` ties them together for the CLI.
"""

from wflang.render.build import build
from wflang.render.diagram import Diagram, Overlay, apply
from wflang.render.dot import to_dot
from wflang.render.mermaid import to_mermaid

__all__ = ["Diagram", "Overlay", "apply", "build", "to_dot", "to_mermaid"]
