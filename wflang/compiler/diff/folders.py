"""``wf diff OLD_DIR NEW_DIR``: every workflow of two folders, paired by name.

Each ``*.wf`` file under a folder (at any depth) that has a ``workflow`` header
is a workflow; library files without one are left out. Workflows are paired by
the name in their header, whatever their files are called: a workflow only in
the old folder is ``workflow-removed`` (WF612), one only in the new folder is
``workflow-added`` (WF613), and each pair is diffed as two files would be.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from attrs import frozen

from wflang.compiler.diff.registry import DIFF_RULES, DiffRule
from wflang.compiler.diff.rules import WORKFLOW_ADDED, WORKFLOW_REMOVED
from wflang.compiler.diff.run import Change, DiffResult, diff_specs
from wflang.dsl.diagnostics import Diagnostic, sorted_diagnostics
from wflang.dsl.parser import ParseResult
from wflang.dsl.spec import WorkflowSpec


@frozen
class FolderDiff:
    """The changes of every workflow, and every file read (for sources and errors)."""

    result: DiffResult
    old_files: tuple[ParseResult, ...]
    new_files: tuple[ParseResult, ...]
    pairs: tuple[tuple[str, str, str], ...]  # name, old file, new file

    @property
    def broken(self) -> tuple[ParseResult, ...]:
        """Files that did not parse."""
        return tuple(r for r in (*self.old_files, *self.new_files) if r.spec is None)


def wf_files(folder: Path) -> list[Path]:
    """Every ``.wf`` file under a folder, in a stable order."""
    return sorted(p for p in folder.rglob("*.wf") if p.is_file())


def workflows(parsed: tuple[ParseResult, ...]) -> dict[str, WorkflowSpec]:
    """Workflows by the name in their header (the first file wins for a duplicate)."""
    out: dict[str, WorkflowSpec] = {}
    for r in parsed:
        if r.spec is not None and r.spec.header is not None:
            out.setdefault(r.spec.header.name.text, r.spec)
    return out


def _alone(rule: DiffRule, spec: WorkflowSpec, message: str, key: str) -> Change:
    assert spec.header is not None
    d = Diagnostic(rule.id, rule.code.name, rule.level.severity, message, spec.header.name.span)
    return Change(rule, d, key=key)


def diff_folders(old_dir: Path, new_dir: Path, load: Callable[[str], ParseResult]) -> FolderDiff:
    """Every change between the workflows of two folders; ``load`` parses one file."""
    old_files = tuple(load(str(p)) for p in wf_files(old_dir))
    new_files = tuple(load(str(p)) for p in wf_files(new_dir))
    old, new = workflows(old_files), workflows(new_files)
    changes: list[Change] = []
    pairs: list[tuple[str, str, str]] = []
    removed, added = DIFF_RULES[WORKFLOW_REMOVED.id], DIFF_RULES[WORKFLOW_ADDED.id]
    for name, spec in old.items():
        if name not in new:
            changes.append(
                _alone(
                    removed,
                    spec,
                    f"workflow '{name}' was removed: callers of it are refused",
                    f"workflow:{name}",
                )
            )
    for name, spec in new.items():
        if name not in old:
            changes.append(_alone(added, spec, f"workflow '{name}' was added", f"workflow:{name}"))
        else:
            pairs.append((name, old[name].file, spec.file))
            changes.extend(diff_specs(old[name], spec).changes)
    order = {d: i for i, d in enumerate(sorted_diagnostics(c.diagnostic for c in changes))}
    result = DiffResult(tuple(sorted(changes, key=lambda c: order[c.diagnostic])))
    return FolderDiff(result, old_files, new_files, tuple(pairs))
