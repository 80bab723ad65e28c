"""Imports read regular files within the size limit, inside the project unless configured."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from wflang.compiler.check import check
from wflang.compiler.config import ConfigError, parse_config
from wflang.compiler.program import import_scope
from wflang.dsl import parse_file
from wflang.dsl.source import MAX_SOURCE_BYTES

LIB = "type money { amount: decimal }\n"


def _messages(root: Path, *imports: str) -> list[str]:
    lines = "".join(f'import "{i}"\n' for i in imports)
    (root / "main.wf").write_text(f"workflow w version 1\n{lines}start e\nend e: completed\n")
    result = check([parse_file(root / "main.wf")])
    return [d.message for d in result.diagnostics if d.code == "WF113"]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    return tmp_path / "proj"


def test_devices_are_outside_the_project_and_never_read(project: Path) -> None:
    # /dev/zero once read until memory ran out, /dev/stdin waited forever.
    assert _messages(project, "/dev/zero", "/dev/stdin") == [
        f"cannot import '/dev/zero': /dev/zero is outside the project ({project})",
        f"cannot import '/dev/stdin': /dev/stdin leads to {os.path.realpath('/dev/stdin')}, "
        f"which is outside the project ({project})",
    ]


def test_only_regular_files_are_read(project: Path) -> None:
    os.mkfifo(project / "pipe.wf")  # opening it for reading would wait for a writer
    (project / "folder.wf").mkdir()
    os.symlink("/dev/zero", project / "zero.wf")
    messages = _messages(project, "pipe.wf", "folder.wf", "zero.wf")
    assert messages == [
        f"cannot import 'pipe.wf': it is not a regular file ({project}/pipe.wf)",
        f"cannot import 'folder.wf': it is a folder ({project}/folder.wf)",
        f"cannot import 'zero.wf': {project}/zero.wf leads to /dev/zero, "
        f"which is outside the project ({project})",
    ]


def test_a_path_with_a_nul_character_is_refused(project: Path) -> None:
    # Found by the long fuzz run: os.path.realpath raised ValueError out of wf check.
    assert _messages(project, "a\\0b.wf") == [
        "cannot import 'a\x00b.wf': a path cannot hold a NUL character (\\0)"
    ]


def test_an_import_over_the_size_limit_is_refused(project: Path) -> None:
    with open(project / "big.wf", "wb") as f:
        f.truncate(4 * MAX_SOURCE_BYTES)  # sparse: read no further than the limit
    assert _messages(project, "big.wf") == [
        "'big.wf' has errors; its declarations are not available"
    ]
    (d,) = parse_file(project / "big.wf").diagnostics
    assert d.message == "the file is too large: the limit is 16,777,216 bytes"


def test_imports_resolve_inside_the_project_unless_configured(project: Path) -> None:
    shared = project.parent / "shared"
    shared.mkdir()
    (shared / "types.wf").write_text(LIB)
    (project / "lib").mkdir()
    (project / "lib" / "types.wf").write_text(LIB)
    assert _messages(project, "lib/types.wf") == []
    assert _messages(project, "../shared/types.wf") == [
        f"cannot import '../shared/types.wf': {shared}/types.wf is outside the project ({project})"
    ]
    (project / "pyproject.toml").write_text('[tool.wflang]\nimport-paths = ["../shared"]\n')
    assert _messages(project, "../shared/types.wf", "lib/types.wf") == []
    assert import_scope(str(project / "lib" / "x.wf")).folders == (project, shared)


def test_without_a_project_marker_the_root_is_the_files_folder(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "types.wf").write_text(LIB)
    (tmp_path / "a" / "types.wf").write_text(LIB)
    assert import_scope(str(tmp_path / "a" / "main.wf")).root == tmp_path / "a"
    assert _messages(tmp_path / "a", "types.wf") == []
    assert len(_messages(tmp_path / "a", "../types.wf")) == 1
    (tmp_path / "a" / ".git").mkdir()
    assert import_scope(str(tmp_path / "a" / "sub" / "main.wf")).root == tmp_path / "a"


@pytest.mark.parametrize("value", ['"../shared"', "[1]"])
def test_import_paths_must_be_a_list_of_folders(value: str) -> None:
    import tomllib

    table = tomllib.loads(f"import-paths = {value}\n")
    with pytest.raises(ConfigError, match="import-paths must be a list of folders"):
        parse_config(table)
