"""A diagram put inline in a page, made safe: only drawing elements and attributes.

Graphviz escapes the labels it writes, but the page must not trust that: the SVG is
parsed (no DTD, no entities: ``expat`` through ElementTree resolves no external
ones, and a document type is refused outright) and written again keeping only the
elements and attributes of a drawing. Scripts, event handlers, ``foreignObject``,
styles and links to anywhere but the drawing itself are dropped; text is written
back escaped.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

SVG = "http://www.w3.org/2000/svg"
XLINK = "http://www.w3.org/1999/xlink"

#: The drawing elements Graphviz writes; ``a`` is kept as a group, its link dropped.
ELEMENTS = frozenset(
    {"svg", "g", "title", "desc", "path", "polygon", "polyline", "ellipse", "circle",
     "rect", "line", "text", "tspan", "defs", "a"}
)  # fmt: skip
#: The attributes of a drawing: geometry, paint and text placement.
ATTRIBUTES = frozenset(
    {"id", "class", "width", "height", "viewBox", "preserveAspectRatio", "transform",
     "points", "d", "x", "y", "x1", "y1", "x2", "y2", "cx", "cy", "r", "rx", "ry",
     "fill", "fill-opacity", "stroke", "stroke-width", "stroke-dasharray",
     "stroke-opacity", "text-anchor", "font-family", "font-size", "font-weight",
     "font-style", "opacity", "dx", "dy"}
)  # fmt: skip
#: A paint or size value: a colour name, #hex, a number with a unit, a few words.
_VALUE = re.compile(r"[#A-Za-z0-9 .,%()\-]*")


class UnsafeSvg(Exception):
    """The text is not an SVG drawing that can be shown."""


def sanitise(data: bytes) -> str:
    """The SVG ``data`` as text safe to put inline in a page."""
    if b"<!DOCTYPE" in data.upper() or b"<!ENTITY" in data.upper():
        data = re.sub(rb"<!DOCTYPE[^>\[]*(\[[^\]]*\])?\s*>", b"", data, flags=re.I)
    if b"<!ENTITY" in data.upper() or b"<!DOCTYPE" in data.upper():
        raise UnsafeSvg("the drawing declares entities")
    try:
        root = ET.fromstring(data)
    except ET.ParseError as err:
        raise UnsafeSvg(f"the drawing is not XML: {err}") from None
    if root.tag != f"{{{SVG}}}svg":
        raise UnsafeSvg("the drawing is not SVG")
    _clean(root)
    ET.register_namespace("", SVG)
    ET.register_namespace("xlink", XLINK)
    return ET.tostring(root, encoding="unicode")


def _clean(element: ET.Element) -> None:
    for child in list(element):
        # a comment or processing instruction has a function as its tag: dropped too
        tag: object = child.tag
        name = tag.removeprefix(f"{{{SVG}}}") if isinstance(tag, str) else ""
        if name not in ELEMENTS:
            element.remove(child)  # a script, a foreignObject, a comment, a style
            continue
        _clean(child)
    name = element.tag.removeprefix(f"{{{SVG}}}")
    if name == "a":
        element.tag = f"{{{SVG}}}g"
    for attr in list(element.attrib):
        value = element.attrib[attr]
        keep = attr in ATTRIBUTES and (
            attr in ("id", "class", "points", "d", "transform", "font-family")
            or _VALUE.fullmatch(value) is not None
        )
        if not keep or "url(" in value.lower() or "javascript" in value.lower():
            del element.attrib[attr]
