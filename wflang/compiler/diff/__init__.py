"""``wf diff``: breaking-change reports between two versions of a workflow.

``pairing`` matches the old and the new version's elements once; ``rules`` are
small pure functions over the pairs, registered in ``registry`` (apart from
the checker's rules); ``run`` runs them and judges the version numbers;
``markdown`` renders a table for pull-request comments; ``folders`` pairs the
workflows of two folders by name; ``migration`` tells whether instances waiting
at each old node could continue on the new version (``--instances``).
"""

from wflang.compiler.diff.registry import DIFF_CODES, DIFF_RULES, Category, DiffRule, Level
from wflang.compiler.diff.run import Change, DiffResult, diff_specs

__all__ = [
    "DIFF_CODES",
    "DIFF_RULES",
    "Category",
    "Change",
    "DiffResult",
    "DiffRule",
    "Level",
    "diff_specs",
]
