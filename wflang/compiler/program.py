"""A program: the files named on the command line and every file they import.

Each file is parsed once; imports are resolved relative to the importing file.
An import that cannot be read is reported where it is written (WF113).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from attrs import frozen

from wflang.dsl import spec as sp
from wflang.dsl.diagnostics import CODES, Code, Diagnostic, Severity
from wflang.dsl.parser import ParseResult, parse_bytes

UNRESOLVED_IMPORT = CODES.register(
    Code(
        "WF113",
        "unresolved-import",
        "reference",
        Severity.ERROR,
        "Checks that every imported file exists and parses.",
        'Bad:\n\n    import "shraed_types.wf"\n\nGood:\n\n    import "shared_types.wf"\n\n'
        "Paths are relative to the importing file.",
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


Reader = Callable[[str], ParseResult]


def read_file(path: str) -> ParseResult:
    try:
        data = Path(path).read_bytes()
    except OSError as err:
        raise FileNotFoundError(path) from err
    return parse_bytes(data, path)


def load_program(roots: Iterable[ParseResult], reader: Reader = read_file) -> Program:
    """Load the given parsed roots and, transitively, the files they import."""
    modules: dict[str, Module] = {}
    found: list[Diagnostic] = []
    pending = list(roots)
    root_paths = tuple(r.file for r in pending)
    while pending:
        parsed = pending.pop()
        if parsed.file in modules:
            continue
        resolved: list[tuple[sp.ImportDecl, str | None]] = []
        for decl in _imports(parsed.spec):
            target = _resolve(parsed.file, decl.path)
            if target not in modules and all(p.file != target for p in pending):
                try:
                    pending.append(reader(target))
                except FileNotFoundError:
                    found.append(
                        Diagnostic.of(
                            UNRESOLVED_IMPORT,
                            f"cannot import '{decl.path}': no such file ({target})",
                            decl.span,
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


def _imports(spec: sp.WorkflowSpec | None) -> list[sp.ImportDecl]:
    if spec is None:
        return []
    return [i for i in spec.items if isinstance(i, sp.ImportDecl)]


def _resolve(importer: str, path: str) -> str:
    if importer.startswith("<"):  # stdin: relative to the working folder
        return os.path.normpath(path)
    return os.path.normpath(Path(importer).parent / path)
