"""Code actions (the checker's quick fixes, ``compiler/fixes.py``) and rename.

A rename is refused, with the reason, where it would change what the program does:
a name that instances store or that callers, senders or handlers use. A node keeps
its identity through a rename with the language's declared rename (``renamed from
OLD``), which the rename adds; a type is named only in the source.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException

from wflang.compiler.fixes import Edit, Fix, closing_clause, fixes, suppression
from wflang.compiler.types import PRIMITIVES
from wflang.dsl.diagnostics import Diagnostic
from wflang.lsp.analysis import Checked
from wflang.lsp.index import Kind, Occurrence
from wflang.lsp.navigate import Index

ToEdit = Callable[[Edit], tuple[str, lsp.TextEdit]]  # an edit as (uri, the protocol's edit)
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*$")

#: Why a name of each kind cannot be renamed without changing behaviour.
REFUSED: dict[Kind, str] = {
    "field": "instances store fields by name and callers and handlers read and write them: "
    "renaming it changes the data they exchange",
    "param": "a service's handler receives its arguments by name: renaming one changes "
    "what the handler is given",
    "service": "a service's name is the key of its handler: renaming it changes which "
    "handler runs (rename the handler with it, then the service by hand)",
    "signal": "senders deliver a signal by its name: renaming it changes what they must send",
    "message": "publishers deliver a message by its name: renaming it changes what they "
    "must publish",
    "error": "handlers raise errors by name: renaming one changes which route a raised error takes",
    "member": "enum members are values that instances store and callers send: renaming "
    "one changes the data",
}


class RenameRefused(JsonRpcException):
    """The protocol's RequestFailed: the client shows the message."""

    CODE = -32803


def code_actions(checked: Checked, first: int, last: int, to_edit: ToEdit,
                 to_diagnostic: Callable[[Diagnostic], lsp.Diagnostic],
                 ) -> list[lsp.CodeAction]:  # fmt: skip
    """The fixes of the findings on lines ``first``..``last`` (1-based), each finding's
    fixes first, then its suppression."""
    parsed = checked.parsed
    if parsed is None:
        return []
    found = []
    for d in checked.result.diagnostics:
        if d.span.file != checked.path or d.span.end_line < first or d.span.line > last:
            continue
        offered: list[Fix] = fixes(d, checked.model, parsed.text)
        quiet = suppression(d, parsed.spec, parsed.text)
        offered += [quiet] if quiet is not None else []
        for fix in offered:
            changes: dict[str, list[lsp.TextEdit]] = {}
            for uri, edit in map(to_edit, fix.edits):
                changes.setdefault(uri, []).append(edit)
            found.append(
                lsp.CodeAction(
                    fix.title,
                    kind=lsp.CodeActionKind.QuickFix,
                    diagnostics=[to_diagnostic(d)],
                    edit=lsp.WorkspaceEdit(changes=changes),
                    is_preferred=fix.safe or None,
                )
            )
    return found


def renamed(index: Index, path: str, line: int, column: int) -> Occurrence:
    """What a rename at the cursor renames, or RenameRefused with the reason."""
    if index.analysis.checked(path).model is None:
        raise RenameRefused("the file does not parse: fix its syntax errors, then rename")
    found = index.under(path, line, column)
    if found is None or found.target is None:
        raise RenameRefused("there is no declared name here to rename")
    if found.kind in REFUSED:
        raise RenameRefused(f"'{found.name}' is not renamed: {REFUSED[found.kind]}")
    return found


def rename_edits(index: Index, path: str, found: Occurrence, new: str) -> list[Edit]:
    """Every occurrence of the name, in its file and in the open files reading it; a
    renamed node also declares its old name (``renamed from``)."""
    assert found.target is not None
    model = index.of(found.target.file)[0]
    if not _NAME.match(new):
        raise RenameRefused(f"'{new}' is not a name: letters, digits and '_', not first a digit")
    if model is None:
        raise RenameRefused(f"{found.target.file} does not parse: fix it, then rename")
    if found.kind == "node" and new in model.nodes:
        raise RenameRefused(f"there is a node '{new}' already: the two would be one")
    if found.kind == "type" and (new in model.types or new in PRIMITIVES):
        raise RenameRefused(f"there is a type '{new}' already: the two would be one")
    every = index.references(found.target, path)
    edits = [Edit(o.span, new) for o in every]
    if found.kind == "node":
        info = model.nodes.get(found.name)
        if info is not None and info.node.renamed_from is None:
            text = index.analysis.text(found.target.file) or ""
            edits.append(closing_clause(info.node, text, f"renamed from {found.name}"))
    return edits
