"""A program: the files named on the command line and every file they import.

Each file is parsed once; imports are resolved relative to the importing file and
must stay inside the project of the file named (see ``import_scope``), and only
regular files within the size limit are read. An import that cannot or may not be
read is reported where it is written (WF113).
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from attrs import frozen

from wflang.dsl import spec as sp
from wflang.dsl.diagnostics import CODES, Code, Diagnostic, Severity
from wflang.dsl.parser import ParseResult, parse_bytes
from wflang.dsl.source import SourceError, read_source

UNRESOLVED_IMPORT = CODES.register(
    Code(
        "WF113",
        "unresolved-import",
        "reference",
        Severity.ERROR,
        "Checks that every imported file exists and parses.",
        'Bad:\n\n    import "shraed_types.wf"\n\nGood:\n\n    import "shared_types.wf"\n\n'
        "Paths are relative to the importing file. An import must name a regular file "
        "inside the project: the folder of the nearest `pyproject.toml` or `.git` above "
        "the file checked, or a folder listed in `import-paths` under `[tool.wflang]`.",
    )
)


@frozen
class Module:
    """One parsed file with its imports resolved to the paths of other modules."""

    path: str
    parsed: ParseResult
    imports: tuple[tuple[sp.ImportDecl, str | None], ...]  # (declaration, resolved path)

    @property
    def spec(self) -> sp.WorkflowSpec | None:
        return self.parsed.spec


@frozen
class Program:
    """All modules, keyed by path; ``roots`` are the files that were asked for."""

    modules: Mapping[str, Module]
    roots: tuple[str, ...]
    diagnostics: tuple[Diagnostic, ...]  # import problems

    def imported(self, module: Module) -> list[Module]:
        """The modules ``module`` imports directly (unresolved ones left out)."""
        return [self.modules[p] for _, p in module.imports if p is not None and p in self.modules]


#: Reads and parses an imported file; raises SourceError when it cannot or may not.
Reader = Callable[[str], ParseResult]


def read_file(path: str) -> ParseResult:
    return parse_bytes(read_source(path, regular_only=True), path)


@frozen
class ImportScope:
    """Where the imports of a program may lead: its project's folder and configured ones."""

    root: Path
    folders: tuple[Path, ...]  # resolved; the root first

    def allows(self, path: str) -> bool:
        """Whether ``path``, symbolic links followed, lies in one of the folders."""
        real = Path(os.path.realpath(path))
        return any(real == f or f in real.parents for f in self.folders)


def import_scope(file: str) -> ImportScope:
    """The scope of the imports of ``file`` (a file named by the user, not an import).

    The project root is the nearest folder above the file holding a ``pyproject.toml``
    or a ``.git``, else the file's own folder; ``import-paths`` under ``[tool.wflang]``
    in that ``pyproject.toml`` lists more folders, relative to it.
    """
    here = (Path.cwd() if file.startswith("<") else Path(file).parent).resolve()
    for folder in (here, *here.parents):
        if (folder / "pyproject.toml").is_file() or (folder / ".git").exists():
            extra = (Path(os.path.realpath(folder / p)) for p in import_paths(folder))
            return ImportScope(folder, (folder, *extra))
    return ImportScope(here, (here,))


def import_paths(folder: Path) -> list[str]:
    """``import-paths`` of the folder's pyproject.toml (``wf check`` validates the table)."""
    try:
        with open(folder / "pyproject.toml", "rb") as f:
            paths = tomllib.load(f).get("tool", {}).get("wflang", {}).get("import-paths", [])
    except (OSError, tomllib.TOMLDecodeError, AttributeError):
        return []
    ok = isinstance(paths, list) and all(isinstance(p, str) for p in paths)
    return paths if ok else []


def load_program(roots: Iterable[ParseResult], reader: Reader = read_file) -> Program:
    """Load the given parsed roots and, transitively, the files they import."""
    modules: dict[str, Module] = {}
    found: list[Diagnostic] = []
    pending = [(r, import_scope(r.file)) for r in roots]
    root_paths = tuple(r.file for r, _ in pending)
    while pending:
        parsed, scope = pending.pop()
        if parsed.file in modules:
            continue
        resolved: list[tuple[sp.ImportDecl, str | None]] = []
        for decl in _imports(parsed.spec):
            target = _resolve(parsed.file, decl.path)
            if target not in modules and all(p.file != target for p, _ in pending):
                problem = _outside(target, scope)
                if problem is None:
                    try:
                        pending.append((reader(target), scope))
                    except SourceError as err:
                        problem = (f"{err} ({target})", None)
                if problem is not None:
                    message, hint = problem
                    found.append(
                        Diagnostic.of(
                            UNRESOLVED_IMPORT,
                            f"cannot import '{decl.path}': {message}",
                            decl.span,
                            hint=hint,
                        )
                    )
                    resolved.append((decl, None))
                    continue
            resolved.append((decl, target))
        modules[parsed.file] = Module(parsed.file, parsed, tuple(resolved))
    for module in modules.values():
        for decl, resolved_path in module.imports:
            if resolved_path is None or resolved_path in root_paths:
                continue
            if not modules[resolved_path].parsed.ok:
                found.append(
                    Diagnostic.of(
                        UNRESOLVED_IMPORT,
                        f"'{decl.path}' has errors; its declarations are not available",
                        decl.span,
                        hint=f"run 'wf check {resolved_path}'",
                    )
                )
    return Program(modules, root_paths, tuple(found))


def _outside(target: str, scope: ImportScope) -> tuple[str, str | None] | None:
    """Why an import may not be read (message and hint), or None when it may."""
    if "\0" in target:  # no file system takes it, and os.path would raise on it
        return ("a path cannot hold a NUL character (\\0)", None)
    if scope.allows(target):
        return None
    real = os.path.realpath(target)
    where = target if real == os.path.abspath(target) else f"{target} leads to {real}, which"
    return (
        f"{where} is outside the project ({scope.root})",
        "imports stay inside the project: the folder of the nearest pyproject.toml or "
        ".git; list other folders under 'import-paths' in [tool.wflang]",
    )


def import_targets(parsed: ParseResult) -> list[str]:
    """The paths the imports of a parsed file lead to (read or not)."""
    return [_resolve(parsed.file, decl.path) for decl in _imports(parsed.spec)]


def _imports(spec: sp.WorkflowSpec | None) -> list[sp.ImportDecl]:
    if spec is None:
        return []
    return [i for i in spec.items if isinstance(i, sp.ImportDecl)]


def _resolve(importer: str, path: str) -> str:
    if importer.startswith("<"):  # stdin: relative to the working folder
        return os.path.normpath(path)
    return os.path.normpath(Path(importer).parent / path)
