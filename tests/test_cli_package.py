"""The ``wf`` command as a package (issue 13): commands are functions of typed
requests, the parser is built from the requests, and startup imports only what
the command needs."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path
from typing import Any

import attrs
import pytest

from wflang.cli import build_parser, files, instances, ops, stores, values
from wflang.cli import durable as durable_cli
from wflang.cli import worker as worker_cli
from wflang.cli.app import HOMES, commands
from wflang.cli.framework import Command, Group, request_of
from wflang.cli.source import Check, check

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = str(ROOT / "examples" / "order_saga.wf")


def test_the_constants_written_for_the_parser_equal_their_sources() -> None:
    from wflang.compiler.registry import Preset
    from wflang.compiler.report import FORMATS
    from wflang.durable.worker import SETTINGS
    from wflang.runtime.history import DEFAULT_EVERY, MAX_EVERY, MIN_EVERY
    from wflang.runtime.instance import Status
    from wflang.runtime.validate import MAX_VALUE_BYTES
    from wflang.runtime.versions import MAX_VERSION
    from wflang.store import DEFAULT_URL
    from wflang.store.retention import ENDED, PURGEABLE
    from wflang.store.status import OutboxKind

    assert tuple(FORMATS) == files.REPORT_FORMATS
    assert tuple(p.value for p in Preset) == files.PRESETS
    assert values.MAX_VERSION == MAX_VERSION
    assert values.MAX_VALUE_BYTES == MAX_VALUE_BYTES
    assert worker_cli.SETTINGS == SETTINGS
    assert worker_cli.HISTORY_EVERY == (DEFAULT_EVERY, MIN_EVERY, MAX_EVERY)
    assert ("pending", *(s.value for s in Status)) == instances.LIST_STATUSES
    assert (ops.ENDED, ops.PURGEABLE) == (ENDED, PURGEABLE)
    assert ops.DEFAULT_EVERY == DEFAULT_EVERY
    assert stores.DEFAULT_URL == DEFAULT_URL
    assert tuple(k.value for k in OutboxKind) == durable_cli.OUTBOX_KINDS


@pytest.mark.parametrize(
    "entry", [c for c in commands() if isinstance(c, Command)], ids=lambda c: " ".join(c.path)
)
def test_every_field_of_a_request_is_an_argument(entry: Command) -> None:
    parser = _command_parser(build_parser(), entry.path)
    dests = {a.dest for a in parser._actions} - {"help"}
    assert dests == {f.name for f in attrs.fields(entry.request)}


def _command_parser(parser: argparse.ArgumentParser, path: tuple[str, ...]) -> Any:
    for name in path:
        (subs,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        parser = subs.choices[name]
    return parser


def test_homes_name_the_module_that_declares_each_command() -> None:
    import importlib

    assert {entry.path[0] for entry in commands()} == set(HOMES)
    for home in set(HOMES.values()):
        module = importlib.import_module(f"wflang.cli.{home}")
        assert {HOMES[entry.path[0]] for entry in module.COMMANDS} == {home}


@pytest.mark.parametrize("entry", commands(), ids=lambda c: " ".join(c.path))
def test_a_command_parsed_alone_is_parsed_as_among_all(entry: Command | Group) -> None:
    from wflang.cli.app import build_parser as build

    alone = _command_parser(build(entry.path[0]), entry.path)
    among_all = _command_parser(build(), entry.path)
    assert alone.format_help() == among_all.format_help()
    assert _options(alone) == _options(among_all)


def _options(parser: argparse.ArgumentParser) -> list[dict[str, Any]]:
    """What each option of a parser does (not the argparse objects that hold it)."""
    return [
        {k: v for k, v in vars(a).items() if k != "container"}
        for a in parser._actions
        if not isinstance(a, argparse._SubParsersAction)
    ]


def test_a_command_is_a_function_of_its_request() -> None:
    result = check(Check(paths=(EXAMPLE,)))
    assert result.code == 0
    assert result.printed == (("out", "All clean: 1 file checked.\n"),)
    parsed = build_parser().parse_args(["check", EXAMPLE, "--color", "never"])
    assert request_of(Check, parsed) == Check(paths=(EXAMPLE,), color=False)


def test_requests_are_frozen() -> None:
    for entry in commands():
        if isinstance(entry, Command):
            request: Any = object.__new__(entry.request)
            with pytest.raises(attrs.exceptions.FrozenInstanceError):
                request.store = "sqlite:///elsewhere.db"


def _modules_after(code: str) -> set[str]:
    shown = subprocess.run(
        [sys.executable, "-c", f"{code}\nimport sys\nprint('\\n'.join(sys.modules))"],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    return set(shown.stdout.split())


HEAVY = ("networkx", "psycopg", "lark", "cattrs", "graphviz", "prometheus_client")


def _heavy(modules: set[str], *prefixes: str) -> set[str]:
    return {m for m in modules if m.split(".")[0] in HEAVY or m.startswith(prefixes)}


def test_building_the_parser_imports_no_stage() -> None:
    loaded = _modules_after("from wflang.cli import build_parser\nbuild_parser()")
    stages = ("wflang.dsl", "wflang.compiler", "wflang.runtime", "wflang.store", "wflang.render")
    assert _heavy(loaded, *stages, "wflang.durable") == set()


def test_wf_version_imports_nothing_but_the_package() -> None:
    loaded = _modules_after(
        "from wflang.cli import main\ntry:\n    main(['--version'])\nexcept SystemExit:\n    pass"
    )
    assert {m for m in loaded if m.startswith("wflang")} == {"wflang", "wflang.cli"}
    assert "argparse" not in loaded and "attrs" not in loaded


def test_wf_check_imports_no_store_engine_renderer_or_durable_side() -> None:
    loaded = _modules_after(f"from wflang.cli import main\nmain(['check', {EXAMPLE!r}])")
    # only the module declaring 'check': the others' requests cost more than the check
    cli = {"wflang.cli", "wflang.cli.app", "wflang.cli.framework", "wflang.cli.files"}
    source = {"wflang.cli.source", "wflang.cli.check_cache"}
    assert {m for m in loaded if m.startswith("wflang.cli")} == cli | source
    # Of the runtime, the checker knows only the errors it raises itself and the range
    # of a version.
    later = ("wflang.store", "wflang.durable", "wflang.render", "wflang.runtime.")
    assert {m for m in loaded if m.startswith(later)} == {
        "wflang.runtime.failures",
        "wflang.runtime.versions",
    }
    # networkx alone took 15x a bare 'python -c pass': the checker has its own graphs
    unused = ("psycopg", "graphviz", "networkx", "cattrs")
    assert {m for m in loaded if m.split(".")[0] in unused} == set()
    # package data is read as files: importlib.resources brings its readers and zipfile
    assert {"importlib.resources", "zipfile"} & loaded == set()
