"""A deployed version's diagram, with an instance's history drawn on it: the SVG of
``wf render --history`` (``render.command.source_svg``), sanitised to go inline.

A version is drawn from the source kept with it when it was deployed (migration 5);
one deployed before keeps only the file's name: it is drawn from that file if the file
still compiles to exactly the deployed table, and otherwise not, saying why.
"""

from __future__ import annotations

from attrs import frozen

from wflang.console.svg import UnsafeSvg, sanitise
from wflang.runtime import codec
from wflang.store import Store


@frozen
class Drawing:
    svg: str | None  # safe to put inline
    problem: str | None  # why there is none


def source_of(store: Store, digest: str) -> tuple[bytes, str] | str:
    """The source text of a deployed version and its file's name, or why there is none."""
    path, text = store.source(digest)
    if text is not None:
        return text.encode("utf-8"), path or "deployed.wf"
    if path is None:
        return "its source was not kept when it was deployed: nothing to draw it from"
    from wflang.compiler.compile import compile_workflow
    from wflang.dsl.parser import parse_bytes
    from wflang.runtime.table import table_hash

    try:
        with open(path, "rb") as file:
            data = file.read()
    except OSError as err:
        return f"its source {path} cannot be read: {err.strerror or err}"
    table = compile_workflow(parse_bytes(data, path)).table
    if table is None or table_hash(table) != digest:
        return f"{path} has changed since this version was deployed: deploy it again to draw it"
    return data, path


def drawing(
    store: Store, digest: str, history: dict[str, object] | None = None, at: int | None = None
) -> Drawing:
    """The diagram of a deployed version, with a history drawn on it (``at``: up to that
    step, with the context's values after it, as ``wf render --at N``)."""
    from wflang.render.command import RenderError, source_svg

    found = source_of(store, digest)
    if isinstance(found, str):
        return Drawing(None, found)
    data, path = found
    try:
        text = None if history is None else codec.dumps(history)
        return Drawing(sanitise(source_svg(data, path, text, at)), None)
    except (RenderError, UnsafeSvg) as err:
        return Drawing(None, str(err))
