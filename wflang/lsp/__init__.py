"""``wf lsp``: the language server (docs/editors.md). It speaks LSP over stdio through
pygls, and answers from the parser, the checker and the formatter of ``wf check`` and
``wf fmt``: there is no second parser. ``analysis`` keeps the buffers and their checks,
``server`` wires the protocol's requests to the modules that answer them."""
