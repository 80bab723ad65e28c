"""Every request and notification the server answers, each a few lines that hand the
work to the module that knows it."""

from __future__ import annotations

from lsprotocol import types as lsp

from wflang.lsp.server import WflangServer, path_of


def register(server: WflangServer) -> None:
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
