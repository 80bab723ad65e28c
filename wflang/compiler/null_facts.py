"""What a guard proves about null: the paths (``context.quote``, ``local.x.amount``) known
not to be null on the route a guard chooses, and the text by which the typing and the
flow analyses name such a path.

A path is named by the expression's formatted text, so ``context.quote`` read in a
guard and in an ``output`` is the same fact.
"""

from __future__ import annotations

from wflang.dsl import expr as ex


def path_of(e: ex.Expr) -> str:
    """The name of the value ``e`` reads, as facts about it are kept."""
    from wflang.dsl.formatter import format_expr  # on first use: not on the check's import path

    return format_expr(e)


def non_null_paths(guard: ex.Expr) -> frozenset[str]:
    """Paths a guard proves are not null when it is true: ``x != null``, ``a and b``."""
    return _null_facts(guard, when=True)


def null_checked_paths(guard: ex.Expr) -> frozenset[str]:
    """Paths a guard proves are not null when it is false: ``x == null``, ``a or b``."""
    return _null_facts(guard, when=False)


def _null_facts(guard: ex.Expr, *, when: bool) -> frozenset[str]:
    if isinstance(guard, ex.Unary) and guard.op == "not":
        return _null_facts(guard.operand, when=not when)
    if isinstance(guard, ex.Binary):
        if guard.op == ("and" if when else "or"):
            return _null_facts(guard.left, when=when) | _null_facts(guard.right, when=when)
        if guard.op == ("!=" if when else "=="):
            if isinstance(guard.right, ex.NullLit):
                return frozenset({path_of(guard.left)})
            if isinstance(guard.left, ex.NullLit):
                return frozenset({path_of(guard.right)})
    return frozenset()
