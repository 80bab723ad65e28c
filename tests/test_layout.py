"""The package's shape, as docs/architecture.md draws it (issue 13): every module
stays under 600 lines, and the stages import one way only. A module that grows past
the limit, or an import that runs back up the pipeline, fails here with its name."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "wflang"
MAX_LINES = 600

#: What each part of ``wflang`` may import besides itself (docs/architecture.md):
#: grammar → dsl → compiler → runtime ← store ← durable, with ``render`` and ``gen``
#: reading checked programs, ``handlers`` beside the runtime, ``lsp`` (the language
#: server) reading the parser, checker and formatter, ``cli`` on top, and
#: ``faults`` (the crash tests' named crash points) a leaf the store and workers pass.
MAY_IMPORT: dict[str, frozenset[str]] = {
    "grammar": frozenset(),
    "user_cache": frozenset(),
    "faults": frozenset(),
    "dsl": frozenset({"grammar", "user_cache"}),
    "compiler": frozenset({"dsl", "runtime"}),
    "render": frozenset({"dsl", "compiler"}),
    "gen": frozenset({"dsl", "compiler"}),
    "runtime": frozenset(),
    "handlers": frozenset({"runtime"}),
    "store": frozenset({"runtime", "faults"}),
    "durable": frozenset({"runtime", "store", "handlers", "faults"}),
    "testing": frozenset({"dsl", "compiler", "runtime", "handlers"}),
    # the language server answers from the parser, the checker and the formatter
    "lsp": frozenset({"dsl", "compiler"}),
    # the web console reads the store and acts through the durable client, drawing with
    # the renderer; it reads its values as the CLI does (``cli.values``)
    "console": frozenset(
        {"dsl", "compiler", "render", "runtime", "handlers", "store", "durable", "cli"}
    ),
    "cli": frozenset(
        {"dsl", "compiler", "render", "gen", "runtime", "handlers", "store", "durable"}
        | {"user_cache", "lsp", "console"}
    ),
}
#: The compiler writes the runtime's contract (the table, its expression IR, the
#: errors the runtime itself raises and the range of a version), and nothing else.
RUNTIME_CONTRACT = frozenset(
    {
        "wflang.runtime.table",
        "wflang.runtime.ir",
        "wflang.runtime.failures",
        "wflang.runtime.versions",
    }
)


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def _part(path: Path) -> str:
    parts = path.relative_to(PACKAGE).parts
    return parts[0] if len(parts) > 1 else parts[0].removesuffix(".py")


def _imports(path: Path) -> Iterator[tuple[str, int]]:
    """The ``wflang`` modules ``path`` imports (at any depth in the file), with lines."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from ((a.name, node.lineno) for a in node.names if a.name.startswith("wflang"))
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "wflang":
                yield from ((f"wflang.{a.name}", node.lineno) for a in node.names)
            elif node.module.startswith("wflang."):
                yield node.module, node.lineno
                yield from ((f"{node.module}.{a.name}", node.lineno) for a in node.names)


def test_every_part_of_the_package_is_placed() -> None:
    """A new package or top-level module is given its place in ``MAY_IMPORT``."""
    parts = {_part(p) for p in _modules()} - {"__init__", "grammar"}
    assert parts == set(MAY_IMPORT) - {"grammar"}


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_module_is_over_600_lines(path: Path) -> None:
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_LINES, f"{path.relative_to(PACKAGE)} has {lines} lines"


def test_the_stages_import_one_way() -> None:
    wrong = []
    for path in _modules():
        part = _part(path)
        if part == "__init__":
            continue
        allowed = MAY_IMPORT[part] | {part}
        for name, line in _imports(path):
            target = name.split(".")[1] if "." in name else name
            if not (PACKAGE / target).exists() and not (PACKAGE / f"{target}.py").exists():
                continue  # ``from wflang.x import name``: the name, not a module
            where = f"{path.relative_to(PACKAGE)}:{line} imports {name}"
            if target not in allowed:
                wrong.append(where)
            elif part == "compiler" and target == "runtime":
                module = ".".join(name.split(".")[:3])
                if module not in RUNTIME_CONTRACT and module != "wflang.runtime":
                    wrong.append(f"{where} (the compiler reads only the runtime's contract)")
    assert wrong == []


def test_the_check_finds_a_wrong_import(tmp_path: Path) -> None:
    """The import walk sees imports inside functions too (the CLI's lazy ones)."""
    module = tmp_path / "m.py"
    module.write_text(
        "def f():\n    from wflang.store.sql import Store\n    import wflang.durable\n"
    )
    assert [n for n, _ in _imports(module)] == [
        "wflang.store.sql",
        "wflang.store.sql.Store",
        "wflang.durable",
    ]
