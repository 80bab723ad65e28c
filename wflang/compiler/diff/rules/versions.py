"""Diff rules about version numbers (WF69x) and the meta-rules the runner computes
(WF690, and WF612/WF613 when two folders are compared).
"""

from __future__ import annotations

from collections.abc import Iterator

from wflang.compiler.diff.pairing import Pairing
from wflang.compiler.diff.registry import diff_rule, meta_rule
from wflang.compiler.diff.rules.common import (
    BREAKING,
    CALLERS,
    INSTANCES,
    SAFE,
    changed,
    key,
)
from wflang.compiler.registry import Finding


@diff_rule(
    "WF691",
    "version-decreased",
    level=BREAKING,
    category=INSTANCES,
    summary="The new version number is lower than the old one.",
)
def version_decreased(p: Pairing) -> Iterator[Finding]:
    """Old:

        workflow order version 3

    New:

        workflow order version 2
    """
    old, new = p.old.header, p.new.header
    if old is not None and new is not None and new.version < old.version:
        yield changed(
            p,
            f"the version went down from {old.version} to {new.version}",
            new.span,
            was=old.span,
            key=key("workflow", old.version, new.version),
        )


VERSION_NOT_BUMPED = meta_rule(
    "WF690",
    "version-not-bumped",
    level=BREAKING,
    category=INSTANCES,
    summary="A breaking change was made without raising the version.",
    doc="""Breaking changes with a higher version are accepted: they are still listed as
    breaking, but do not fail `wf diff`.

    Old:

        workflow order version 3
        input { order_id: string }

    New:

        workflow order version 3
        input { order_id: string, channel: string }
    """,
)


# ------------------------------------------------------------ folders (wf diff OLD_DIR NEW_DIR)

WORKFLOW_REMOVED = meta_rule(
    "WF612",
    "workflow-removed",
    level=BREAKING,
    category=CALLERS,
    summary="A workflow of the old folder is missing from the new one: callers start it by name.",
    doc="""Only when two folders are compared: workflows are paired by the name in their
    header, whatever file they are in. A version bump cannot accept the removal.

    Old:

        // old/refund.wf
        workflow refund version 2

    New:

        // new/: no file declares 'workflow refund'
    """,
)

WORKFLOW_ADDED = meta_rule(
    "WF613",
    "workflow-added",
    level=SAFE,
    category=CALLERS,
    summary="A workflow of the new folder is not in the old one.",
    doc="""Only when two folders are compared: workflows are paired by the name in their
    header, whatever file they are in.

    Old:

        // old/: no file declares 'workflow refund'

    New:

        // new/refund.wf
        workflow refund version 1
    """,
)
