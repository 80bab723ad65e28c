"""The editor configurations of docs/editors.md start a working server: each
snippet's command is run as the editor would run it and a file's diagnostics come
back; where Emacs with eglot is installed, Emacs itself runs the snippet headless."""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from lsprotocol import types as lsp
from pygls.lsp.client import LanguageClient

from tests.lsp.sample import SHIP, project

DOC = Path(__file__).resolve().parents[2] / "docs" / "editors.md"
BIN = str(Path(sys.executable).parent)  # where `wf` is installed


def snippet(language: str, after: str) -> str:
    """The first ``language`` block after the heading ``after`` in docs/editors.md."""
    text = DOC.read_text(encoding="utf-8")
    found = re.search(rf"{re.escape(after)}.*?```{language}\n(.*?)```", text, re.S)
    assert found is not None, f"no {language} snippet under {after!r}"
    return found.group(1)


def helix() -> list[str]:
    config = tomllib.loads(snippet("toml", "### Helix"))
    [language] = config["language"]
    assert language["file-types"] == ["wf"]
    server = config["language-server"][language["language-servers"][0]]
    return [server["command"], *server["args"]]


NEOVIM_FORMS = ("With [nvim-lspconfig]", "Neovim 0.11", "Any Neovim from 0.7")


def neovim() -> list[list[str]]:
    commands = []
    for after in NEOVIM_FORMS:
        lua = snippet("lua", after)
        # A .wf file is a wflang buffer: by the filetype table, or by an autocommand
        # where Neovim predates vim.filetype.add's use in detection (0.7).
        assert (
            'vim.filetype.add({ extension = { wf = "wflang" } })' in lua
            or 'pattern = "*.wf", command = "setfiletype wflang"' in lua
        )
        cmd = re.search(r"cmd = \{ (.*?) \}", lua)
        assert cmd is not None
        commands.append(re.findall(r'"([^"]*)"', cmd.group(1)))
    return commands


def emacs() -> list[str]:
    elisp = snippet("elisp", "### Emacs")
    assert "'(\"\\\\.wf\\\\'\" . wflang-mode)" in elisp
    program = re.search(r"\(wflang-mode \. \((.*?)\)\)", elisp)
    assert program is not None
    return re.findall(r'"([^"]*)"', program.group(1))


def test_every_editor_starts_the_same_command() -> None:
    assert helix() == ["wf", "lsp"]
    assert neovim() == [["wf", "lsp"]] * len(NEOVIM_FORMS)
    assert emacs() == ["wf", "lsp"]


@pytest.mark.asyncio(loop_scope="function")
async def test_the_configured_command_serves_diagnostics(tmp_path: Path) -> None:
    """What an editor does with the command: start it, open a file, get its findings."""
    ship, _ = project(tmp_path)
    command, *args = helix()
    client = LanguageClient("editor", "1")
    got: list[lsp.PublishDiagnosticsParams] = []
    done = asyncio.Event()

    @client.feature(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)  # type: ignore[untyped-decorator]
    def published(params: lsp.PublishDiagnosticsParams) -> None:
        got.append(params)
        done.set()

    await client.start_io(shutil.which(command, path=BIN) or command, *args)
    await client.initialize_async(lsp.InitializeParams(capabilities=lsp.ClientCapabilities()))
    client.initialized(lsp.InitializedParams())
    text = SHIP.replace("next done", "next don")
    client.text_document_did_open(
        lsp.DidOpenTextDocumentParams(lsp.TextDocumentItem(ship.as_uri(), "wflang", 1, text))
    )
    await done.wait()
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()  # type: ignore[no-untyped-call]
    [params] = got
    assert [d.code for d in params.diagnostics] == ["WF102"]


EMACS_RUN = """
(package-initialize)
(require 'eglot)
(require 'flymake)
(load (expand-file-name "init.el" default-directory) nil t)
(find-file (expand-file-name "ship.wf" default-directory))
(apply #'eglot (eglot--guess-contact))
(let ((deadline (+ (float-time) 120)))
  (while (and (null (flymake-diagnostics)) (< (float-time) deadline))
    (accept-process-output nil 0.05)))
(princ (mapconcat #'flymake-diagnostic-text (flymake-diagnostics) "\\n"))
"""


def _eglot() -> bool:
    if shutil.which("emacs") is None:
        return False
    probe = ["emacs", "--batch", "--eval", "(progn (package-initialize) (require 'eglot))"]
    return subprocess.run(probe, capture_output=True, check=False).returncode == 0


@pytest.mark.skipif(not _eglot(), reason="Emacs with eglot is not installed")
def test_emacs_with_the_snippet_shows_the_finding(tmp_path: Path) -> None:
    ship, _ = project(tmp_path)
    ship.write_text(SHIP.replace("next done", "next don"))
    (tmp_path / "init.el").write_text(snippet("elisp", "### Emacs"))
    (tmp_path / "run.el").write_text(EMACS_RUN)
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}", "HOME": str(tmp_path)}
    done = subprocess.run(
        ["emacs", "--batch", "-l", "run.el"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert "unknown node 'don'" in done.stdout, done.stderr[-2000:]


NEOVIM_RUN = """
vim.cmd("edit ship.wf")
vim.wait(120000, function() return #vim.diagnostic.get(0) > 0 end, 50)
local found = {}
for _, d in ipairs(vim.diagnostic.get(0)) do table.insert(found, d.message) end
vim.fn.writefile(found, "found.txt")
vim.cmd("qa!")
"""


@pytest.mark.skipif(shutil.which("nvim") is None, reason="Neovim is not installed")
def test_neovim_with_the_snippet_shows_the_finding(tmp_path: Path) -> None:
    """Neovim itself, headless, with the form that needs no plugin: it starts
    ``wf lsp`` for a ``.wf`` file and gets the file's finding."""
    ship, _ = project(tmp_path)
    ship.write_text(SHIP.replace("next done", "next don"))
    (tmp_path / "init.lua").write_text(snippet("lua", NEOVIM_FORMS[-1]))
    (tmp_path / "run.lua").write_text(NEOVIM_RUN)
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}", "HOME": str(tmp_path)}
    done = subprocess.run(
        ["nvim", "--headless", "-u", "init.lua", "-c", "luafile run.lua"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    found = tmp_path / "found.txt"
    assert found.exists(), done.stderr[-2000:]
    assert "unknown node 'don'" in found.read_text(), done.stderr[-2000:]
