"""Escaping for DOT and Mermaid: the one place where source text meets diagram syntax.

Every name and label that comes from a ``.wf`` file goes through these functions,
so a string such as ``"}; evil [label=x] -->`` stays text and never becomes
syntax. Node identifiers never carry source text as syntax either: names that
are plain identifiers are kept (readable DOT), anything else is hex-encoded.
"""

from __future__ import annotations

import re

_KEY = re.compile(r"[A-Za-z0-9_/\-]+")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def visible(text: str) -> str:
    """Control characters (newlines included) shown as ``\\n``-style escapes."""
    names = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
    return _CONTROL.sub(lambda m: names.get(m.group(), f"\\x{ord(m.group()):02x}"), text)


def safe_key(key: str) -> str:
    """A key usable inside identifiers of both formats: itself when it is made of
    names and the ``-`` and ``/`` the diagram adds, else its hex form."""
    if _KEY.fullmatch(key):
        return key
    return "x_" + key.encode("utf-8").hex()


# ------------------------------------------------------------------------ DOT


def dot_id(key: str) -> str:
    """A quoted DOT identifier made from ``safe_key``: nothing of the source but
    letters, digits, ``_``, ``-`` and ``/`` ever reaches the DOT text."""
    return '"' + safe_key(key) + '"'


def dot_html(text: str) -> str:
    """Text for the inside of an HTML-like DOT label (``<...>``): markup characters
    become entities, so no ``<``, ``>`` or ``&`` of the source is read as HTML."""
    out = visible(text)
    out = out.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return out.replace('"', "&quot;").replace("]", "&#93;").replace("[", "&#91;")


def dot_string(text: str) -> str:
    """A quoted DOT escString (tooltips): backslashes and quotes escaped, so that
    neither ``\\N``-style escapes nor a closing quote come from the source."""
    out = visible(text).replace("\\", "\\\\").replace('"', '\\"')
    return f'"{out}"'


# -------------------------------------------------------------------- Mermaid


_MERMAID = {
    '"': "#quot;",
    "#": "#35;",
    "&": "#amp;",
    "<": "#lt;",
    ">": "#gt;",
    "%": "#37;",
    "`": "#96;",
    "|": "#124;",
    "\\": "#92;",
}
_MERMAID_RE = re.compile("[" + re.escape("".join(_MERMAID)) + "]|-(?=[-.>])")


def mermaid_text(text: str) -> str:
    """Text for the inside of a quoted Mermaid label. Mermaid has no backslash
    escapes, only ``#code;`` entities: the quote, the entity and HTML characters,
    ``%`` (directives), backticks (Markdown strings), ``|`` (edge labels) and the
    ``-`` of an arrow are written as entities, so a label can never end early or
    draw an edge. Brackets and braces are harmless inside quotes and kept."""
    return _MERMAID_RE.sub(lambda m: _MERMAID.get(m.group(), "#45;"), visible(text))


def mermaid_id(key: str) -> str:
    """A candidate Mermaid node id (the renderer makes them unique): prefixed so
    that ``end``, ``graph`` or a name starting with ``o`` or ``x`` right after an
    arrow is never read as syntax."""
    return "n_" + "".join(
        c if c.isascii() and (c.isalnum() or c == "_") else "_" for c in safe_key(key)
    )
