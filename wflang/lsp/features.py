"""Every request and notification the server answers, each a few lines that hand the
work to the module that knows it."""

from __future__ import annotations

from lsprotocol import types as lsp

from wflang.compiler.fixes import Edit
from wflang.lsp import complete, edits, outline, report
from wflang.lsp.navigate import hover_text
from wflang.lsp.positions import to_range
from wflang.lsp.server import WflangServer, path_of


def register(server: WflangServer) -> None:
    register_queries(server)
    register_edits(server)

    @server.feature(lsp.INITIALIZE)
    def initialize(ls: WflangServer, params: lsp.InitializeParams) -> None:
        ls.configure(params.initialization_options)

    @server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: WflangServer, params: lsp.DidOpenTextDocumentParams) -> None:
        path = path_of(params.text_document.uri)
        ls.analysis.open(path, params.text_document.text)
        ls.schedule(path)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: WflangServer, params: lsp.DidChangeTextDocumentParams) -> None:
        # pygls has applied the change to its document already
        doc = ls.workspace.get_text_document(params.text_document.uri)
        path = path_of(doc.uri)
        ls.analysis.open(path, doc.source)
        ls.schedule(path)

    @server.feature(lsp.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: WflangServer, params: lsp.DidSaveTextDocumentParams) -> None:
        # a saved file is read from disk by the files that import it and are not open
        ls.schedule(path_of(params.text_document.uri))

    @server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: WflangServer, params: lsp.DidCloseTextDocumentParams) -> None:
        path = path_of(params.text_document.uri)
        ls.analysis.close(path)
        ls.text_document_publish_diagnostics(
            lsp.PublishDiagnosticsParams(params.text_document.uri, [])
        )
        # the files importing it now read it from disk
        for other in ls.analysis.affected(path):
            ls.schedule(other)


def register_queries(server: WflangServer) -> None:
    """Hover, definitions, references, highlights, outline, folding, formatting, tokens,
    completion and signature help."""

    @server.feature(lsp.TEXT_DOCUMENT_HOVER)
    def hover(ls: WflangServer, params: lsp.HoverParams) -> lsp.Hover | None:
        _, line, column = ls.where(params.text_document.uri, params.position)
        checked = ls.checked(params.text_document.uri)
        text = hover_text(ls.index, checked, line, column) if checked else None
        if text is None:
            return None
        return lsp.Hover(lsp.MarkupContent(lsp.MarkupKind.Markdown, text))

    @server.feature(lsp.TEXT_DOCUMENT_DEFINITION)
    def definition(ls: WflangServer, params: lsp.DefinitionParams) -> lsp.Location | None:
        path, line, column = ls.where(params.text_document.uri, params.position)
        found = ls.index.under(path, line, column)
        return ls.location(found.target) if found and found.target else None

    @server.feature(lsp.TEXT_DOCUMENT_REFERENCES)
    def references(ls: WflangServer, params: lsp.ReferenceParams) -> list[lsp.Location]:
        path, line, column = ls.where(params.text_document.uri, params.position)
        found = ls.index.under(path, line, column)
        if found is None or found.target is None:
            return []
        every = ls.index.references(found.target, path)
        keep = params.context.include_declaration
        return [ls.location(o.span) for o in every if keep or not o.declaration]

    @server.feature(lsp.TEXT_DOCUMENT_DOCUMENT_HIGHLIGHT)
    def highlight(
        ls: WflangServer, params: lsp.DocumentHighlightParams
    ) -> list[lsp.DocumentHighlight]:
        path, line, column = ls.where(params.text_document.uri, params.position)
        found = ls.index.under(path, line, column)
        if found is None or found.target is None:
            return []
        doc = ls.document(path)
        kinds = lsp.DocumentHighlightKind
        return [
            lsp.DocumentHighlight(
                to_range(o.span, doc), kinds.Write if o.declaration else kinds.Read
            )
            for o in ls.index.of(path)[1]
            if o.target == found.target
        ]

    @server.feature(lsp.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
    def symbols(ls: WflangServer, params: lsp.DocumentSymbolParams) -> list[lsp.DocumentSymbol]:
        path = path_of(params.text_document.uri)
        parsed = ls.analysis.parsed(path)
        if parsed.spec is None:
            return []
        doc = ls.document(path)
        return outline.document_symbols(parsed.spec, lambda s: to_range(s, doc))

    @server.feature(lsp.TEXT_DOCUMENT_FOLDING_RANGE)
    def folding(ls: WflangServer, params: lsp.FoldingRangeParams) -> list[lsp.FoldingRange]:
        parsed = ls.analysis.parsed(path_of(params.text_document.uri))
        return outline.folding_ranges(parsed.spec) if parsed.spec else []

    @server.feature(lsp.TEXT_DOCUMENT_FORMATTING)
    def formatting(ls: WflangServer, params: lsp.DocumentFormattingParams) -> list[lsp.TextEdit]:
        return _line_edits(ls, params.text_document.uri, None, None)

    @server.feature(lsp.TEXT_DOCUMENT_RANGE_FORMATTING)
    def range_formatting(
        ls: WflangServer, params: lsp.DocumentRangeFormattingParams
    ) -> list[lsp.TextEdit]:
        r = params.range
        return _line_edits(ls, params.text_document.uri, r.start.line, r.end.line)

    @server.feature(lsp.TEXT_DOCUMENT_SEMANTIC_TOKENS_FULL, outline.LEGEND)
    def tokens(ls: WflangServer, params: lsp.SemanticTokensParams) -> lsp.SemanticTokens:
        path = path_of(params.text_document.uri)
        doc = ls.document(path)
        names = ls.index.of(path)[1]
        return lsp.SemanticTokens(outline.semantic_tokens(names, lambda s: to_range(s, doc)))

    @server.feature(
        lsp.TEXT_DOCUMENT_COMPLETION, lsp.CompletionOptions(trigger_characters=[".", " ", ">"])
    )
    def completion(ls: WflangServer, params: lsp.CompletionParams) -> lsp.CompletionList:
        path, line, column = ls.where(params.text_document.uri, params.position)
        before = ls.document(path).lines[line - 1][: column - 1] if line else ""
        model = ls.index.of(path)[0]
        return lsp.CompletionList(False, complete.completions(model, before, line))

    @server.feature(
        lsp.TEXT_DOCUMENT_SIGNATURE_HELP,
        lsp.SignatureHelpOptions(trigger_characters=["(", ","], retrigger_characters=[":"]),
    )
    def signature(ls: WflangServer, params: lsp.SignatureHelpParams) -> lsp.SignatureHelp | None:
        path, line, column = ls.where(params.text_document.uri, params.position)
        doc = ls.document(path)
        text_before = "".join(doc.lines[: line - 1]) + doc.lines[line - 1][: column - 1]
        return complete.signature_help(ls.index.of(path)[0], text_before, line)


def _line_edits(ls: WflangServer, uri: str, first: int | None, last: int | None
                ) -> list[lsp.TextEdit]:  # fmt: skip
    parsed = ls.analysis.parsed(path_of(uri))
    return [
        lsp.TextEdit(lsp.Range(lsp.Position(i1, 0), lsp.Position(i2, 0)), text)
        for i1, i2, text in outline.formatting(parsed, first, last)
    ]


def register_edits(server: WflangServer) -> None:
    """Code actions and rename."""

    def to_edit(ls: WflangServer) -> edits.ToEdit:
        def convert(e: Edit) -> tuple[str, lsp.TextEdit]:
            return report.uri_of(e.span.file), lsp.TextEdit(
                to_range(e.span, ls.document(e.span.file)), e.text
            )

        return convert

    @server.feature(
        lsp.TEXT_DOCUMENT_CODE_ACTION,
        lsp.CodeActionOptions(code_action_kinds=[lsp.CodeActionKind.QuickFix]),
    )
    def code_action(ls: WflangServer, params: lsp.CodeActionParams) -> list[lsp.CodeAction]:
        checked = ls.checked(params.text_document.uri)
        if checked is None:
            return []
        r = params.range
        return edits.code_actions(
            checked,
            r.start.line + 1,
            r.end.line + 1,
            to_edit(ls),
            lambda d: report.to_lsp(d, ls.document, ls.rules_url),
        )

    @server.feature(lsp.TEXT_DOCUMENT_PREPARE_RENAME)
    def prepare_rename(ls: WflangServer, params: lsp.PrepareRenameParams) -> lsp.Range:
        path, line, column = ls.where(params.text_document.uri, params.position)
        found = edits.renamed(ls.index, path, line, column)
        return to_range(found.span, ls.document(path))

    @server.feature(lsp.TEXT_DOCUMENT_RENAME)
    def rename(ls: WflangServer, params: lsp.RenameParams) -> lsp.WorkspaceEdit:
        path, line, column = ls.where(params.text_document.uri, params.position)
        found = edits.renamed(ls.index, path, line, column)
        changes: dict[str, list[lsp.TextEdit]] = {}
        for uri, edit in map(
            to_edit(ls), edits.rename_edits(ls.index, path, found, params.new_name)
        ):
            changes.setdefault(uri, []).append(edit)
        return lsp.WorkspaceEdit(changes=changes)
