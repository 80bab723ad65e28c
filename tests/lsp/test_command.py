"""``wf lsp`` without its optional dependency says how to install it."""

from __future__ import annotations

import sys

import pytest

from wflang.cli import main


def test_wf_lsp_without_pygls_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "pygls", None)  # an import of it fails
    assert main(["lsp"]) == 2
    err = capsys.readouterr().err
    assert err == (
        "wf: error: wf lsp needs the language server's dependencies: pip install 'wflang[lsp]'\n"
    )
