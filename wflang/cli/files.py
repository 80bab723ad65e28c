"""What the commands that read .wf files share: finding and reading them, the
options they have in common, the configuration, and printing a report."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from attrs import field

from wflang.cli.framework import UsageError, arg, flag_field

if TYPE_CHECKING:
    from wflang.compiler.config import Config
    from wflang.compiler.report import Report
    from wflang.dsl.parser import ParseResult

#: The formats of ``wf check --format`` (``compiler.report.FORMATS``, written here so
#: that building the parser imports no checker; a test keeps the two equal).
REPORT_FORMATS = ("text", "concise", "json", "sarif", "github")
#: The rule presets (``compiler.registry.Preset``; a test keeps them equal).
PRESETS = ("recommended", "strict", "all")


def use_color(choice: str) -> bool:
    """``--color``: always, never, or auto (standard output is a terminal, no NO_COLOR)."""
    if choice == "always":
        return True
    if choice == "never" or os.environ.get("NO_COLOR"):
        return False
    return sys.stdout.isatty()


def stdin_filename_field() -> Any:
    return field(
        default=None,
        metadata=arg(
            "--stdin-filename",
            metavar="PATH",
            help="the path of the file read from '-' (standard input): its imports are "
            "resolved from PATH's folder, and findings name it",
        ),
    )


def rules_field(flag: str, help: str) -> Any:
    return field(
        default=(),
        metadata=arg(
            flag, action="append", metavar="RULES", help=f"{help}; comma-separated, repeatable"
        ),
    )


def quiet_field(help: str) -> Any:
    return flag_field("-q", "--quiet", help=help)


def color_field() -> Any:
    return field(
        default=False,
        metadata=arg(
            "--color",
            choices=("auto", "always", "never"),
            default="auto",
            convert=use_color,
            help="colour the text output: auto (only on a terminal, never with NO_COLOR)",
        ),
    )


def report_format_field() -> Any:
    return field(
        default="text",
        metadata=arg(
            "--format",
            choices=REPORT_FORMATS,
            help="text (source snippets, default), concise (one line each), json, "
            "sarif (GitHub code scanning) or github (Actions annotations)",
        ),
    )


def preset_field() -> Any:
    return field(
        default=None,
        metadata=arg(
            "--preset",
            choices=PRESETS,
            help="the check's rule preset; overrides [tool.wflang] preset (default: recommended)",
        ),
    )


def config_field() -> Any:
    return field(
        default=None,
        metadata=arg(
            "--config",
            metavar="PYPROJECT",
            help="read [tool.wflang] from this file instead of the nearest pyproject.toml",
        ),
    )


def expand(paths: Sequence[str]) -> list[str]:
    """Files named, and the .wf files under folders named, in a stable order; '-' is stdin."""
    out: list[str] = []
    for p in paths:
        if p == "-":
            out.append(p)
            continue
        path = Path(p)
        if path.is_dir():
            found = sorted(str(f) for f in path.rglob("*.wf") if f.is_file())
            if not found:
                raise UsageError(f"no .wf files under {p}")
            out.extend(found)
        elif path.is_file():
            out.append(p)
        else:
            raise UsageError(f"cannot read {p}: no such file or folder")
    return out


def load(path: str, stdin_name: str | None = None, data: bytes | None = None) -> ParseResult:
    """A file parsed; ``-`` is standard input, named ``stdin_name`` (``--stdin-filename``:
    its imports are resolved from that file's folder, its findings carry that name).
    ``data``: the file's bytes, already read (no further than the limit is parsed)."""
    from wflang.dsl.parser import parse_bytes
    from wflang.dsl.source import MAX_SOURCE_BYTES, SourceError, read_source

    if data is not None:
        return parse_bytes(data[: MAX_SOURCE_BYTES + 1], path)
    if path == "-":
        return parse_bytes(_bounded(sys.stdin.buffer), stdin_name or "<stdin>")
    try:
        data = read_source(path, regular_only=False)
    except SourceError as err:
        raise UsageError(f"cannot read {path}: {err}") from err
    return parse_bytes(data, path)


def _bounded(file: BinaryIO) -> bytes:
    """What a source file holds, read up to one byte past the limit (which the parser
    then refuses): ``/dev/zero`` or an endless pipe never fills the memory."""
    from wflang.dsl.source import MAX_SOURCE_BYTES

    return file.read(MAX_SOURCE_BYTES + 1)


def write(path: str, data: bytes) -> None:
    try:
        Path(path).write_bytes(data)
    except OSError as err:  # a folder, a missing folder, no permission, a full disk
        raise UsageError(f"cannot write {path}: {err.strerror or err}") from err


def load_config(config: str | None, preset: str | None) -> Config:
    """The checker's configuration: ``[tool.wflang]`` of ``config`` (else of the nearest
    pyproject.toml), its preset replaced by ``preset`` when given."""
    from wflang.compiler.config import Config, ConfigError, parse_config
    from wflang.compiler.config import load_config as nearest
    from wflang.compiler.registry import Preset

    try:
        if config:
            import tomllib

            data = tomllib.loads(Path(config).read_text(encoding="utf-8"))
            loaded = parse_config(data.get("tool", {}).get("wflang", {}), config)
        else:
            loaded = nearest()
    except (OSError, ValueError, ConfigError) as err:
        raise UsageError(f"configuration: {err}") from err
    if preset:
        loaded = Config(Preset(preset), loaded.severities, loaded.source)
    return loaded


def report_text(report: Report, fmt: str, color: bool) -> str:
    """A report in a format; with ``github`` also appended to ``$GITHUB_STEP_SUMMARY``."""
    from wflang.compiler.report import github_step_summary, render

    text = render(fmt, report, color=color)
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if fmt == "github" and summary:
        with open(summary, "a", encoding="utf-8") as out:
            out.write(github_step_summary(report) + "\n")
    return text


def diagnostics_text(results: Sequence[ParseResult], fmt: str, color: bool) -> str:
    """The syntax errors of parsed files, as a report."""
    from wflang.compiler.report import Report

    diagnostics = tuple(d for r in results for d in r.diagnostics)
    sources = {r.file: r.text for r in results}
    return report_text(Report(diagnostics, sources, tuple(r.file for r in results)), fmt, color)
