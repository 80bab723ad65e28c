"""Names written through an import alias in expressions: ``alias.Enum.member``, a member
of an enum of the file imported ``as alias`` (``alias.Type`` in types is
``TypeEnv.resolve``'s). Typed beside ``types``, which imports this after its classes.
"""

from __future__ import annotations

from wflang.compiler.symbols import did_you_mean
from wflang.compiler.types import UNKNOWN, EnumNamespace, Inference, Type
from wflang.dsl import spec as sp
from wflang.dsl.span import Span


def qualified_enum(inf: Inference, alias: str, name: str, span: Span) -> Type | None:
    """``alias.name``, an enum of the file imported ``as alias`` (its members are then
    ``alias.name.member``); None when ``alias`` is no import alias, so the caller reads
    it as any other name."""
    prefix = f"{alias}."
    declared = {n[len(prefix) :]: d for n, d in inf.env.types.items() if n.startswith(prefix)}
    if not declared:
        return _misspelt_alias(inf, alias, name, span)
    if isinstance(declared.get(name), sp.EnumDecl):
        return EnumNamespace(f"{alias}.{name}")
    enums = sorted(n for n, d in declared.items() if isinstance(d, sp.EnumDecl))
    inf.problem(
        "unknown-field",
        f"the file imported as '{alias}' declares no enum '{name}'",
        span,
        hint=did_you_mean(name, enums) or f"its enums: {', '.join(enums) or 'none'}",
    )
    return UNKNOWN


def _misspelt_alias(inf: Inference, alias: str, name: str, span: Span) -> Type | None:
    """``level.Tier`` where the file is imported ``as levels``: named as the misspelt
    alias it is, with the real one as the hint (as ``alias.Type`` in types), rather
    than as an unknown name among the roots. None when ``alias`` is close to no alias,
    or closer to a name that may be read here, so the caller reports an unknown name."""
    aliases = sorted({n.split(".", 1)[0] for n in inf.env.types if "." in n})
    hint = did_you_mean(alias, aliases)
    if hint is None or did_you_mean(alias, inf.roots) is not None:
        return None
    inf.problem(
        "unknown-field",
        f"unknown import alias '{alias}' in '{alias}.{name}' (aliases: {', '.join(aliases)})",
        span,
        hint=hint,
    )
    return UNKNOWN
