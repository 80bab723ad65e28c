"""The builtins' signatures and what each returns, as docs/language.md §8.3 lists them
(``tests/lsp/test_completion.py`` checks that the two agree and that every builtin of
``dsl.expr.BUILTINS`` is here): completion and signature help show them."""

from __future__ import annotations

SIGNATURES: dict[str, tuple[str, str]] = {
    "len": (
        "len(x)",
        "the number of items of a list or map, or of characters of a string",
    ),
    "lower": (
        "lower(s)",
        "`s` in lower case",
    ),
    "upper": (
        "upper(s)",
        "`s` in upper case",
    ),
    "trim": (
        "trim(s)",
        "`s` without leading and trailing whitespace",
    ),
    "contains": (
        "contains(x, y)",
        "whether string `x` contains `y`, or list `x` holds `y` (of the type of its items)",
    ),
    "starts_with": (
        "starts_with(s, prefix)",
        "whether `s` starts with `prefix`",
    ),
    "ends_with": (
        "ends_with(s, suffix)",
        "whether `s` ends with `suffix`",
    ),
    "coalesce": (
        "coalesce(a, b, ...)",
        "the first argument that is not `null`",
    ),
    "min": (
        "min(a, ...)",
        "the smallest argument, or the smallest item of a single list argument",
    ),
    "max": (
        "max(a, ...)",
        "the largest argument, or the largest item of a single list argument",
    ),
    "abs": (
        "abs(x)",
        "the absolute value of a number",
    ),
    "round": (
        "round(x[, places])",
        "`x` rounded to `places` decimal places (default 0), half to even (`round(2.5)` is `2`)",
    ),
    "sum": (
        "sum(xs)",
        "the sum of a list of numbers or durations (`0` for an empty list)",
    ),
    "any": (
        "any(xs, x => p)",
        "whether the predicate `p` holds for an item of `xs` (`false` for an empty list)",
    ),
    "all": (
        "all(xs, x => p)",
        "whether the predicate `p` holds for every item of `xs` (`true` for an empty list)",
    ),
    "filter": (
        "filter(xs, x => p)",
        "the items of `xs` for which `p` holds, in order",
    ),
    "map": (
        "map(xs, x => e)",
        "the list of `e` for each item of `xs`, in order",
    ),
    "keys": (
        "keys(m)",
        "the keys of a map, as a list",
    ),
    "string": (
        "string(x)",
        "`x` as text: a string as it is, anything else as compact JSON (`true`, `null`, "
        '`4.50`, `["a",1]`); a decimal with its digits written out (`0.0000001`, not '
        "`1E-7`) unless its exponent is beyond ±30–40 (`1E+100`)",  # noqa: RUF001 (the docs' dash)
    ),
    "now": (
        "now()",
        "the `timestamp` of the event the step is processing ([§8.5](#85-time))",
    ),
}
