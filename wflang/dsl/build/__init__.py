"""Builds the typed spec while Lark parses: one method per grammar rule.

The builder is installed as Lark's tree-less transformer, so specs are made
during the LALR parse and no parse tree is ever built (that is what makes
parse-to-spec as fast as a bare parse). Spans come from the tokens and child
specs each rule receives; problems found here (bad literals, misplaced
clauses, unknown functions) are collected into the current ``BuildContext``.

The rules come in three families, one module each (``declarations``, ``nodes``
with their clauses, ``expressions`` with literals), over the shared ``base``;
``literals`` reads integers, decimals, durations and strings.
"""

from __future__ import annotations

from wflang.dsl.build.base import BuildContext
from wflang.dsl.build.declarations import DeclarationRules
from wflang.dsl.build.expressions import ExpressionRules
from wflang.dsl.build.nodes import NodeRules

__all__ = ["BuildContext", "SpecBuilder"]


class SpecBuilder(DeclarationRules, NodeRules, ExpressionRules):
    """Turns grammar rules into spec values; installed once, used by every parse.

    Per-parse state lives in a thread-local ``BuildContext`` so that one Lark
    parser (whose LALR tables are expensive to build) serves all threads.
    """
