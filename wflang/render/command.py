"""``wf render`` as a function: files in, the diagram's bytes out.

The CLI only parses arguments and writes the result; everything that can go
wrong here is a ``RenderError`` with a message for people (exit 2): a file
that does not parse, a library without a workflow, a history that does not
fit, a missing ``dot``.
"""

from __future__ import annotations

from attrs import frozen

from wflang.compiler.check import check
from wflang.compiler.diff import diff_specs
from wflang.compiler.diff.pairing import Pairing
from wflang.compiler.model import Model, build_model
from wflang.compiler.program import load_program
from wflang.dsl.parser import ParseResult, parse_bytes
from wflang.dsl.source import SourceError, read_source
from wflang.render.build import build
from wflang.render.diagram import Diagram, Overlay, apply
from wflang.render.dot import to_dot
from wflang.render.history import HistoryError, history_overlay, parse_history, validate
from wflang.render.image import ImageError, to_image
from wflang.render.mermaid import to_mermaid
from wflang.render.overlay_check import check_overlay
from wflang.render.overlay_diff import diff_overlay

FORMATS = ("dot", "svg", "png", "mermaid")
#: The longest history document read for ``--history`` (a history is one entry per step).
MAX_HISTORY_BYTES = 64 * 1024 * 1024


class RenderError(Exception):
    """Nothing can be drawn; the message says why (exit 2)."""


@frozen
class Request:
    """What to draw: a file, or the new file of a diff, with at most one overlay."""

    file: str | None
    fmt: str = "dot"
    check: bool = False
    diff: tuple[str, str] | None = None
    history: str | None = None
    at: int | None = None  # with ``history``: as it was after that step


def _parse(path: str) -> ParseResult:
    try:
        data = read_source(path, regular_only=False)
    except SourceError as err:
        raise RenderError(f"cannot read {path}: {err}") from err
    return _parsed(data, path)


def _parsed(data: bytes, path: str) -> ParseResult:
    parsed = parse_bytes(data, path)
    if parsed.spec is None:
        first = parsed.diagnostics[0] if parsed.diagnostics else None
        detail = f": {first.span}: {first.message}" if first else ""
        raise RenderError(f"{path} has syntax errors{detail} (see 'wf check {path}')")
    if parsed.spec.header is None:
        raise RenderError(f"{path} has no 'workflow NAME version N' header: nothing to render")
    return parsed


def model_of(parsed: ParseResult) -> Model:
    """The checker's model of a parsed workflow file (its imports read from disk)."""
    program = load_program([parsed])
    return build_model(program.modules[parsed.file], program)


def diagram(req: Request) -> Diagram:
    """The diagram a request asks for, overlay applied."""
    overlays = sum((req.check, req.diff is not None, req.history is not None))
    if overlays > 1:
        raise RenderError("use one of --check, --diff and --history at a time")
    if req.diff is not None:
        if req.file is not None:
            raise RenderError("with --diff OLD NEW, name no other file")
        old, new = (_parse(p) for p in req.diff)
        model = model_of(new)
        assert old.spec is not None and new.spec is not None
        base = build(model)
        return apply(
            base, diff_overlay(base, Pairing(old.spec, new.spec), diff_specs(old.spec, new.spec))
        )
    if req.at is not None and req.history is None:
        raise RenderError("--at N needs --history FILE.json (the values after step N)")
    if req.file is None:
        raise RenderError("name the .wf file to render (or use --diff OLD NEW)")
    parsed = _parse(req.file)
    model = model_of(parsed)
    base = build(model)
    if req.check:
        return apply(base, check_overlay(model, check([parsed]).diagnostics))
    if req.history is not None:
        return apply(base, _history(req.history, model, base, req.at))
    return base


def _history(path: str, model: Model, base: Diagram, at: int | None) -> Overlay:
    try:
        with open(path, "rb") as file:
            data = file.read(MAX_HISTORY_BYTES + 1)
        text = data.decode("utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise RenderError(f"cannot read {path}: {err}") from err
    if len(data) > MAX_HISTORY_BYTES:
        raise RenderError(f"{path} is longer than {MAX_HISTORY_BYTES:,} bytes")
    return _history_of(text, path, model, base, at)


def _history_of(text: str, path: str, model: Model, base: Diagram, at: int | None) -> Overlay:
    header = model.spec.header
    assert header is not None
    try:
        history = parse_history(text, at)
        validate(history, header.name.text, header.version, set(model.nodes))
    except HistoryError as err:
        raise RenderError(f"{path}: {err}") from err
    owners = {name: info.owner for name, info in model.nodes.items() if info.owner}
    return history_overlay(base, history, owners)


def source_svg(
    source: bytes, path: str, history: str | None = None, at: int | None = None
) -> bytes:
    """The SVG of a workflow's source in hand (read as the file ``path``, whose imports
    are read from beside it), with a ``wflang.history/1`` document drawn on it if one is
    given: what ``wf render FILE [--history DOC] --format svg`` draws."""
    model = model_of(_parsed(source, path))
    base = build(model)
    drawn = (
        base
        if history is None
        else apply(base, _history_of(history, "the history", model, base, at))
    )
    try:
        return to_image(to_dot(drawn), "svg")
    except ImageError as err:
        raise RenderError(str(err)) from err


def render(req: Request) -> bytes:
    """The bytes of the diagram in the requested format."""
    if req.fmt not in FORMATS:
        raise RenderError(f"unknown format {req.fmt!r}: use one of {', '.join(FORMATS)}")
    d = diagram(req)
    if req.fmt == "mermaid":
        return to_mermaid(d).encode("utf-8")
    text = to_dot(d)
    if req.fmt == "dot":
        return text.encode("utf-8")
    try:
        return to_image(text, req.fmt)
    except ImageError as err:
        raise RenderError(str(err)) from err
