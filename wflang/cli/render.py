"""``wf render``: the command-line form of ``wflang.render.command``."""

from __future__ import annotations

from pathlib import Path

from attrs import field, frozen

from wflang.cli.files import write
from wflang.cli.framework import Command, Out, Result, UsageError, arg, flag_field

#: The diagram format a file name asks for when ``--format`` is not given.
_SUFFIXES = {".svg": "svg", ".png": "png", ".mmd": "mermaid", ".mermaid": "mermaid"}


@frozen(kw_only=True)
class Render:
    file: str | None = field(
        default=None, metadata=arg(nargs="?", help="the .wf file (omit with --diff)")
    )
    format: str | None = field(
        default=None,
        metadata=arg(
            "--format",
            choices=("dot", "svg", "png", "mermaid"),
            help="default: from the name of --output (.svg, .png, .mmd or .mermaid), else dot",
        ),
    )
    output: str | None = field(
        default=None,
        metadata=arg("-o", "--output", help="write the diagram here (default: stdout)"),
    )
    check: bool = flag_field("--check", help="colour the findings of wf check")
    diff: tuple[str, str] | None = field(
        default=None,
        metadata=arg("--diff", nargs=2, metavar=("OLD", "NEW"), help="draw NEW, changes marked"),
    )
    history: str | None = field(
        default=None,
        metadata=arg("--history", metavar="FILE.json", help="mark the path of a recorded history"),
    )
    at: int | None = field(
        default=None,
        metadata=arg(
            "--at",
            metavar="N",
            type=int,
            help="with --history: the path up to step N and the context's values after it",
        ),
    )


def format_of(output: str | None) -> str:
    """``out.png`` is drawn as PNG, ``out.svg`` as SVG, ``out.mmd`` as Mermaid; else DOT."""
    if output in (None, "-"):
        return "dot"
    return _SUFFIXES.get(Path(output).suffix.lower(), "dot")


def render(req: Render) -> Result:
    from wflang.render.command import RenderError, Request
    from wflang.render.command import render as draw

    fmt = req.format or format_of(req.output)
    try:
        data = draw(Request(req.file, fmt, req.check, req.diff, req.history, req.at))
    except RenderError as err:
        raise UsageError(str(err)) from err
    out = Out()
    if req.output in (None, "-"):
        out.write(data)
    else:
        write(req.output, data)
    return out.done()


RENDER = Command(
    ("render",),
    Render,
    render,
    help="draw a workflow, its findings, a version diff or a recorded history",
    description="Draw a workflow as DOT (default), SVG or PNG (through Graphviz's "
    "'dot') or a Mermaid flowchart for Markdown. --check colours the checker's "
    "findings, --diff OLD NEW draws NEW with what changed since OLD, --history "
    "draws the path a recorded instance took (--at N: up to step N, with the "
    "context's values then). The same input gives the same DOT "
    "and Mermaid bytes.",
)

#: This module's commands, groups before their actions (``app.HOMES`` orders them).
COMMANDS = (RENDER,)
