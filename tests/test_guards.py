"""The sets of values guards take (``wflang.compiler.guards``) agree with evaluating
the guards: a value is in a guard's set exactly when the guard holds for it, and
one set lies within another only if every value of the first satisfies the second."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from decimal import Decimal

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wflang.compiler.check import module_model
from wflang.compiler.guards import Numbers, Shadowed, Values, arm_values, shadowed_arms, values
from wflang.compiler.inference import type_env
from wflang.compiler.program import load_program
from wflang.compiler.types import Inference, Record
from wflang.dsl import spec as sp
from wflang.dsl.parser import parse

PROPS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

Guard = tuple[str, Callable[[Decimal], bool]]  # its source, and its meaning

OPS: dict[str, Callable[[Decimal, Decimal], bool]] = {
    "<": lambda x, c: x < c,
    "<=": lambda x, c: x <= c,
    ">": lambda x, c: x > c,
    ">=": lambda x, c: x >= c,
    "==": lambda x, c: x == c,
    "!=": lambda x, c: x != c,
}


def atoms(subject: str, constants: st.SearchStrategy[Decimal]) -> st.SearchStrategy[Guard]:
    def atom(op: str, c: Decimal, flipped: bool) -> Guard:
        test = OPS[op]
        if flipped:  # `5 < x` is `x > 5`
            mirror = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}.get(op, op)
            return f"{c} {mirror} {subject}", lambda x: test(x, c)
        return f"{subject} {op} {c}", lambda x: test(x, c)

    return st.builds(atom, st.sampled_from(sorted(OPS)), constants, st.booleans())


def guards(subject: str, constants: st.SearchStrategy[Decimal]) -> st.SearchStrategy[Guard]:
    def extend(inner: st.SearchStrategy[Guard]) -> st.SearchStrategy[Guard]:
        def both(a: Guard, b: Guard, op: str) -> Guard:
            if op == "and":
                return f"({a[0]}) and ({b[0]})", lambda x: a[1](x) and b[1](x)
            return f"({a[0]}) or ({b[0]})", lambda x: a[1](x) or b[1](x)

        def negated(a: Guard) -> Guard:
            return f"not ({a[0]})", lambda x: not a[1](x)

        return st.builds(both, inner, inner, st.sampled_from(["and", "or"])) | st.builds(
            negated, inner
        )

    return st.recursive(atoms(subject, constants), extend, max_leaves=4)


INTS = st.integers(-4, 4).map(Decimal)
DECIMALS = st.integers(-8, 8).map(lambda k: Decimal(k) / 2)
#: The values tried: every integer around the constants; for decimals, quarters
#: (between any two constants, which are halves, there is a quarter).
INT_POINTS = [Decimal(k) for k in range(-7, 8)]
DECIMAL_POINTS = [Decimal(k) / 4 for k in range(-24, 25)]


def values_of(*sources: str) -> list[Values]:
    arms = "\n".join(f"    when {s} -> done" for s in sources)
    text = (
        "workflow w version 1\ninput { n: int, d: decimal }\nstart c\n"
        f"choice c {{\n{arms}\n    else -> done\n}}\nend done: completed\n"
    )
    model = module_model(load_program([parse(text, "w.wf")]), "w.wf")
    inf = Inference(type_env(model), {"input": Record("input"), "context": Record("context")})
    choice = model.nodes["c"].node
    assert isinstance(choice, sp.ChoiceNode)
    found = []
    for arm in choice.arms[:-1]:
        assert arm.guard is not None
        v = values(arm.guard, inf)
        assert v is not None and v.numbers is not None, arm.guard
        found.append(v)
    return found


def contains(numbers: Numbers, x: Decimal) -> bool:
    return any(
        (lo is None or lo < x or (lo_in and lo == x))
        and (hi is None or x < hi or (hi_in and hi == x))
        for lo, lo_in, hi, hi_in in numbers
    )


@PROPS
@given(guards("input.n", INTS), guards("input.n", INTS))
def test_int_guards_take_exactly_the_values_they_hold_for(a: Guard, b: Guard) -> None:
    va, vb = values_of(a[0], b[0])
    assert va.numbers is not None
    for x in INT_POINTS:
        assert contains(va.numbers, x) == a[1](x), (a[0], x)
    assert va.within(vb) == all(b[1](x) for x in INT_POINTS if a[1](x))


@PROPS
@given(guards("input.d", DECIMALS), guards("input.d", DECIMALS))
def test_decimal_guards_take_exactly_the_values_they_hold_for(a: Guard, b: Guard) -> None:
    va, vb = values_of(a[0], b[0])
    assert va.numbers is not None
    for x in DECIMAL_POINTS:
        assert contains(va.numbers, x) == a[1](x), (a[0], x)
    if va.within(vb):
        assert all(b[1](x) for x in DECIMAL_POINTS if a[1](x)), (a[0], b[0])


# ------------------------------------------- shadowed arms: against the first algorithm


def shadowed_by_pairs(node: sp.ChoiceNode, inf: Inference) -> Iterator[Shadowed]:
    """WF210's first algorithm, kept as the reference: each arm against every earlier arm
    on its subject, and against their union built afresh (quadratic in the arms, which
    the checker's incremental union is not)."""
    earlier: list[tuple[sp.ChoiceArm, Values]] = []
    for arm in node.arms:
        if arm.guard is None:
            return
        mine = values(arm.guard, inf)
        if mine is None:
            continue
        same = [(a, v) for a, v in earlier if v.same_kind(mine)]
        whole = next((a for a, v in same if mine.within(v)), None)
        if mine.empty():
            yield Shadowed(arm, ())
        elif whole is not None:
            yield Shadowed(arm, (whole,))
        elif same:
            covered = same[0][1]
            for _, v in same[1:]:
                covered = covered.combine("or", v)
            if mine.within(covered):
                yield Shadowed(arm, tuple(a for a, v in same if not mine.combine("and", v).empty()))
        earlier.append((arm, mine))


MEMBER_GUARDS = st.sampled_from([
    "input.c == Color.red", "input.c == Color.green", "input.c != Color.blue",
    "Color.green == input.c", "input.oc == Color.red", "input.oc != Color.green",
    "input.b", "not input.b", "input.b == true", "input.b != true", "false == input.b",
])  # fmt: skip


def any_guard() -> st.SearchStrategy[str]:
    numbers = guards("input.n", INTS) | guards("input.d", DECIMALS)
    leaves = numbers.map(lambda g: g[0]) | MEMBER_GUARDS
    return st.recursive(
        leaves,
        lambda inner: (
            st.builds("({}) {} ({})".format, inner, st.sampled_from(["and", "or"]), inner)
            | inner.map("not ({})".format)
        ),
        max_leaves=3,
    )


@PROPS
@given(st.lists(any_guard(), min_size=1, max_size=12))
def test_shadowed_arms_are_those_of_the_pairwise_algorithm(sources: list[str]) -> None:
    arms = "\n".join(f"    when {s} -> done" for s in sources)
    text = (
        "workflow w version 1\nenum Color { red, green, blue }\n"
        "input { n: int, d: decimal, c: Color, oc: Color?, b: bool }\nstart c\n"
        f"choice c {{\n{arms}\n    else -> done\n}}\nend done: completed\n"
    )
    model = module_model(load_program([parse(text, "w.wf")]), "w.wf")
    inf = Inference(type_env(model), {"input": Record("input"), "context": Record("context")})
    choice = model.nodes["c"].node
    assert isinstance(choice, sp.ChoiceNode)
    assert list(shadowed_arms(arm_values(choice, inf))) == list(shadowed_by_pairs(choice, inf))
