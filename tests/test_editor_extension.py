"""The VS Code extension's client and its package.

The client (editors/vscode/extension.js) runs under node against a stand-in for VS
Code's API (editors/vscode/test/extension.test.js), and ``make vsix`` packages the
extension with @vscode/vsce into a .vsix that holds what VS Code installs.
"""

from __future__ import annotations

import json
import re
import subprocess
import zipfile
from pathlib import Path
from typing import Any

from tests.editor import EXTENSION, ROOT, node_tools


def client_run(settings: dict[str, Any], *, fail: bool = False) -> dict[str, Any]:
    """What the client did through one activation, one change of its settings and a
    deactivation: the language clients it made, the errors it showed, what it stopped."""
    node, _ = node_tools()
    script = EXTENSION / "test" / "extension.test.js"
    argv = [node, str(script), json.dumps(settings), *(["fail"] if fail else [])]
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    report: dict[str, Any] = json.loads(done.stdout)
    return report


def test_the_client_starts_wf_lsp_over_stdio_for_wf_documents() -> None:
    report = client_run({})
    first = report["clients"][0]
    assert (first["command"], first["args"], first["transport"]) == ("wf", ["lsp"], 0)
    assert set(first["languages"]) == {"wflang"}
    assert first["watched"] == "**/{*.wf,pyproject.toml}"
    assert report["commands"] == ["wflang.restartServer"]
    assert report["errors"] == []


def test_the_server_command_is_the_configured_path_and_a_change_restarts_it() -> None:
    report = client_run({"server.path": "/project/.venv/bin/wf", "server.args": ["lsp", "-v"]})
    commands = [(c["command"], c["args"]) for c in report["clients"]]
    assert commands == [("/project/.venv/bin/wf", ["lsp", "-v"])] * 2  # started, restarted
    assert report["stopped"] == 2  # by the restart, then by the deactivation


def test_a_server_that_does_not_start_says_how_to_point_at_one() -> None:
    report = client_run({}, fail=True)
    assert report["errors"][0] == (
        "wflang: could not start the language server with 'wf lsp' (spawn wf ENOENT). "
        "Install wflang (pip install wflang) or set 'wflang.server.path' to your "
        "environment's wf."
    )


def test_a_disabled_server_is_not_started() -> None:
    assert client_run({"server.enabled": False})["clients"] == []


def test_make_vsix_packages_an_installable_extension(tmp_path: Path) -> None:
    node_tools()
    vsix = tmp_path / "wflang.vsix"
    done = subprocess.run(
        ["make", "-s", "-C", str(ROOT), "vsix", f"VSIX={vsix}"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    with zipfile.ZipFile(vsix) as archive:
        names = set(archive.namelist())
        manifest = json.loads(archive.read("extension/package.json"))
        vsixmanifest = archive.read("extension.vsixmanifest").decode()
    source = json.loads((EXTENSION / "package.json").read_text(encoding="utf-8"))
    assert manifest["contributes"] == source["contributes"]
    assert f'Version="{source["version"]}"' in vsixmanifest
    for path in (
        "[Content_Types].xml",
        "extension/extension.js",
        "extension/language-configuration.json",
        "extension/syntaxes/wflang.tmLanguage.json",
        "extension/snippets/wflang.code-snippets",
        "extension/node_modules/vscode-languageclient/node.js",
    ):
        assert path in names, path
    # the tests, their snapshots and the development packages stay out
    assert not any(n.startswith(("extension/test/", "extension/node_modules/vscode-textmate/",
                                 "extension/node_modules/@vscode/")) for n in names)  # fmt: skip


def test_the_documented_shiki_example_highlights_a_workflow(tmp_path: Path) -> None:
    """docs/editors.md's shiki example, run as it is written (from the repository's root)."""
    node, _ = node_tools()
    doc = (ROOT / "docs" / "editors.md").read_text(encoding="utf-8")
    section = doc[doc.index("### shiki") :]
    code = re.search(r"```js\n(.*?)```", section, re.DOTALL)
    assert code is not None
    script = tmp_path / "example.mjs"  # resolves shiki from the extension's packages
    script.write_text(code.group(1) + "process.stdout.write(html);\n", encoding="utf-8")
    (tmp_path / "node_modules").symlink_to(EXTENSION / "node_modules")
    done = subprocess.run(
        [node, str(script)], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith('<pre class="shiki dark-plus"')
    # keywords, node names and comments each in their colour of the theme
    assert '<span style="color:#569CD6">workflow</span>' in done.stdout
    assert '<span style="color:#6A9955">// Order fulfilment as a saga.</span>' in done.stdout
