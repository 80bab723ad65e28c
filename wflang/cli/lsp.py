"""``wf lsp``: the language server over standard input and output (docs/editors.md).

pygls is an optional dependency (``pip install 'wflang[lsp]'``): the command says so
when it is missing rather than failing with an import error."""

from __future__ import annotations

from attrs import frozen

from wflang.cli.framework import Command, Out, Result, UsageError, flag_field


@frozen(kw_only=True)
class Lsp:
    stdio: bool = flag_field(
        "--stdio",
        help=(
            "speak on standard input and output (the default and only transport; "
            "editors' clients pass it)"
        ),
    )


def lsp(req: Lsp) -> Result:
    try:
        import pygls  # noqa: F401
    except ImportError as err:
        raise UsageError(
            "wf lsp needs the language server's dependencies: pip install 'wflang[lsp]'"
        ) from err
    from wflang.lsp.server import serve

    serve()
    return Out().done()


LSP = Command(
    ("lsp",),
    Lsp,
    lsp,
    help="the language server for editors, over standard input and output (docs/editors.md)",
    description="Start the language server: diagnostics as you type, hover, go to "
    "definition, references, rename, completion, outline, folding, formatting, semantic "
    "tokens and quick fixes for .wf files. Editors start it; it reads LSP messages on "
    "standard input and writes them on standard output until the client says exit.",
)

#: This module's commands (``app.HOMES`` orders them).
COMMANDS = (LSP,)
