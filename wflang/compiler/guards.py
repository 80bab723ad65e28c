"""What a choice's guards test, as sets of values: which arms an earlier arm shadows.

A guard that tests one subject (a path such as ``input.amount``) is read as the
set of values for which it holds: ``x >= 100`` is the interval [100, ∞) of an
``int`` or ``decimal``, ``c == Color.red`` the member set {red}, a boolean
``x`` the set {true}. ``and``, ``or`` and ``not`` on one subject are
intersection, union and complement. Arms are tried in order, so an arm whose
set lies within what the earlier arms on its subject match is never taken.

Numbers are unions of intervals. An ``int`` subject's set is kept in integer
form: each integer n stands for [n, n + 1), so ``x > 5`` and ``x >= 6`` are the
same set and the interval operations stay exact.
"""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from math import floor
from typing import TypeAlias

from attrs import frozen

from wflang.compiler.types import (
    BOOL,
    DECIMAL,
    INT,
    Enum,
    EnumNamespace,
    Inference,
    Opt,
    Record,
    TypeEnv,
    strip,
)
from wflang.dsl import expr as ex
from wflang.dsl import spec as sp
from wflang.dsl.formatter import format_expr

#: An interval: (low, low included, high, high included); None is an infinity.
Interval: TypeAlias = tuple[Decimal | None, bool, Decimal | None, bool]
Numbers: TypeAlias = tuple[Interval, ...]  # sorted, disjoint, none empty
EVERY: Numbers = ((None, False, None, False),)


def _empty(i: Interval) -> bool:
    lo, lo_in, hi, hi_in = i
    return lo is not None and hi is not None and (lo > hi or (lo == hi and not (lo_in and hi_in)))


def _meet(a: Interval, b: Interval) -> Interval:
    lo, lo_in = max((a[0], a[1]), (b[0], b[1]), key=_low_key)
    hi, hi_in = min((a[2], a[3]), (b[2], b[3]), key=_high_key)
    return lo, lo_in, hi, hi_in


def _low_key(bound: tuple[Decimal | None, bool]) -> tuple[int, Decimal, int]:
    value, included = bound  # a higher low bound is tighter; excluding it is tighter still
    return (0, Decimal(0), 0) if value is None else (1, value, 0 if included else 1)


def _high_key(bound: tuple[Decimal | None, bool]) -> tuple[int, Decimal, int]:
    value, included = bound
    return (1, Decimal(0), 0) if value is None else (0, value, 1 if included else 0)


def intersect(a: Numbers, b: Numbers) -> Numbers:
    met = (_meet(x, y) for x in a for y in b)
    return tuple(sorted((i for i in met if not _empty(i)), key=lambda i: _low_key(i[:2])))


def complement(a: Numbers) -> Numbers:
    gaps: list[Interval] = []
    lo: Decimal | None = None
    lo_in = False
    for i_lo, i_lo_in, i_hi, i_hi_in in a:
        if i_lo is not None:
            gaps.append((lo, lo_in, i_lo, not i_lo_in))
        if i_hi is None:
            return tuple(g for g in gaps if not _empty(g))
        lo, lo_in = i_hi, not i_hi_in
    gaps.append((lo, lo_in, None, False))
    return tuple(g for g in gaps if not _empty(g))


def union(a: Numbers, b: Numbers) -> Numbers:
    return complement(intersect(complement(a), complement(b)))


def _compare(op: str, c: Decimal, integer: bool) -> Numbers:
    """The numbers ``x`` with ``x OP c``, in integer form for an ``int``."""
    if integer:  # x > 5.5 is x >= 6: integer n stands for [n, n + 1)
        above = Decimal(floor(c) + 1)  # the least integer above c
        at_least = c if c == floor(c) else above  # the least integer not below c
        if op in (">", ">="):
            return ((above if op == ">" else at_least, True, None, False),)
        if op in ("<", "<="):
            return ((None, False, at_least if op == "<" else above, False),)
        if c != floor(c):
            return () if op == "==" else EVERY
        return ((c, True, c + 1, False),) if op == "==" else complement(((c, True, c + 1, False),))
    bounds = {
        ">": (c, False, None, False),
        ">=": (c, True, None, False),
        "<": (None, False, c, False),
        "<=": (None, False, c, True),
        "==": (c, True, c, True),
    }
    if op == "!=":
        return complement(((c, True, c, True),))
    return (bounds[op],)


_FLIPPED = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}

Members: TypeAlias = frozenset[object]  # enum member names, True/False, None for null


@frozen
class Values:
    """The values of one subject for which a guard holds: numbers, or members of a
    finite universe (an enum's members, true and false; null when optional)."""

    subject: str
    numbers: Numbers | None = None
    members: Members | None = None
    universe: Members = frozenset()

    def kind(self) -> tuple[str, bool, Members]:
        """What the set is of: sets of one kind can be compared and combined."""
        return self.subject, self.numbers is None, self.universe

    def same_kind(self, other: Values) -> bool:
        return self.kind() == other.kind()

    def empty(self) -> bool:
        return not self.numbers if self.numbers is not None else not self.members

    def within(self, other: Values) -> bool:
        """Whether every value of this set is in ``other`` (of the same kind)."""
        if self.numbers is not None and other.numbers is not None:
            return not intersect(self.numbers, complement(other.numbers))
        return (self.members or frozenset()) <= (other.members or frozenset())

    def combine(self, op: str, other: Values) -> Values:
        if self.numbers is not None and other.numbers is not None:
            both = intersect if op == "and" else union
            return Values(self.subject, numbers=both(self.numbers, other.numbers))
        mine, theirs = self.members or frozenset(), other.members or frozenset()
        members = mine & theirs if op == "and" else mine | theirs
        return Values(self.subject, members=members, universe=self.universe)

    def negated(self) -> Values:
        if self.numbers is not None:
            return Values(self.subject, numbers=complement(self.numbers))
        members = self.universe - (self.members or frozenset())
        return Values(self.subject, members=members, universe=self.universe)


def values(guard: ex.Expr, inf: Inference) -> Values | None:
    """The values for which a guard holds, when it tests one subject."""
    if isinstance(guard, ex.Unary) and guard.op == "not":
        inner = values(guard.operand, inf)
        return inner.negated() if inner is not None else None
    if isinstance(guard, ex.Binary) and guard.op in ("and", "or"):
        left, right = values(guard.left, inf), values(guard.right, inf)
        if left is None or right is None or not left.same_kind(right):
            return None
        return left.combine(guard.op, right)
    if isinstance(guard, ex.Binary) and guard.op in _FLIPPED:
        for subject, value, op in (
            (guard.left, guard.right, guard.op),
            (guard.right, guard.left, _FLIPPED[guard.op]),
        ):
            found = _comparison(subject, op, value, inf)
            if found is not None:
                return found
    if inf.infer(guard) == BOOL and not isinstance(guard, ex.BoolLit):
        return Values(format_expr(guard), members=frozenset({True}), universe=_BOOLS)
    return None


_BOOLS: Members = frozenset({True, False})


def _comparison(subject: ex.Expr, op: str, value: ex.Expr, inf: Inference) -> Values | None:
    constant = _number(value)
    kind = inf.infer(subject)
    key = format_expr(subject)
    if constant is not None and kind in (INT, DECIMAL) and _number(subject) is None:
        return Values(key, numbers=_compare(op, constant, integer=kind == INT))
    if op not in ("==", "!="):
        return None
    if isinstance(value, ex.BoolLit) and kind == BOOL:
        members: Members = frozenset({value.value})
        universe = _BOOLS
    elif isinstance(value, ex.Member) and isinstance(inf.infer(value.target), EnumNamespace):
        enum = strip(kind)
        if not isinstance(enum, Enum):
            return None
        universe = frozenset(inf.env.enum_members(enum.name))
        if isinstance(kind, Opt):
            universe |= {None}
        members = frozenset({value.name})
    else:
        return None
    found = Values(key, members=members, universe=universe)
    return found if op == "==" else found.negated()


def _number(e: ex.Expr) -> Decimal | None:
    if isinstance(e, ex.Unary) and e.op == "-":
        inner = _number(e.operand)
        return -inner if inner is not None else None
    if isinstance(e, ex.IntLit | ex.DecimalLit) and not isinstance(e.value, bool):
        return Decimal(e.value)
    return None


@frozen
class Shadowed:
    """An arm no value reaches: the earlier arms on its subject match all it does."""

    arm: sp.ChoiceArm
    by: tuple[sp.ChoiceArm, ...]  # the earlier arms that take its values; () if none can


#: The arms of a choice before its catch-all, each with the values its guard takes (None
#: when it tests no single subject): found once, read by the shadowing and covering rules.
ArmValues = list[tuple[sp.ChoiceArm, Values | None]]


def arm_values(node: sp.ChoiceNode, inf: Inference) -> ArmValues:
    found: ArmValues = []
    for arm in node.arms:
        if arm.guard is None:
            break
        found.append((arm, values(arm.guard, inf)))
    return found


def shadowed_arms(arms: ArmValues) -> Iterator[Shadowed]:
    """The arms of a choice (before any catch-all) that an earlier arm shadows."""
    # The earlier arms of each kind, and the union of their values, kept as the arms
    # go: an arm the union does not take is not shadowed, so it costs one test however
    # many arms came before (a wide choice has dozens). Only a shadowed arm looks back
    # for the arm that takes all its values, or else the arms that take some.
    earlier: dict[tuple[str, bool, Members], tuple[list[tuple[sp.ChoiceArm, Values]], Values]] = {}
    for arm, mine in arms:
        if mine is None:
            continue
        same, covered = earlier.get(mine.kind(), ([], None))
        if mine.empty():
            yield Shadowed(arm, ())
        elif covered is not None and mine.within(covered):
            whole = next((a for a, v in same if mine.within(v)), None)
            if whole is not None:
                yield Shadowed(arm, (whole,))
            else:
                yield Shadowed(arm, tuple(a for a, v in same if not mine.combine("and", v).empty()))
        same.append((arm, mine))
        earlier[mine.kind()] = (same, mine if covered is None else covered.combine("or", mine))


# ------------------------------------------------------- exhaustiveness (WF211)


def _enum_case(guard: ex.Expr, inf: Inference) -> tuple[ex.Expr, Enum | None, str | None] | None:
    """``subject == Enum.member``: (subject, the enum, the member) when a guard tests
    one case; ``subject == null``: (subject, None, None)."""
    if isinstance(guard, ex.Binary) and guard.op == "==":
        for subject, value in ((guard.left, guard.right), (guard.right, guard.left)):
            if isinstance(value, ex.NullLit):
                return subject, None, None
            if isinstance(value, ex.Member) and isinstance(inf.infer(value.target), EnumNamespace):
                enum = inf.infer(value)
                return subject, enum if isinstance(enum, Enum) else None, value.name
    return None


def _polarity(guard: ex.Expr) -> tuple[ex.Expr, bool]:
    """A boolean guard as (what it tests, whether it holds when that is true):
    ``not x`` and ``x == false`` test ``x`` negatively, ``a != b`` tests ``a == b``."""
    if isinstance(guard, ex.Unary) and guard.op == "not":
        subject, positive = _polarity(guard.operand)
        return subject, not positive
    if isinstance(guard, ex.Binary) and guard.op in ("==", "!="):
        for subject, value in ((guard.left, guard.right), (guard.right, guard.left)):
            if isinstance(value, ex.BoolLit) and not isinstance(subject, ex.BoolLit):
                inner, positive = _polarity(subject)
                return inner, positive == (value.value == (guard.op == "=="))
        if guard.op == "!=":
            return ex.Binary("==", guard.left, guard.right), False
    return guard, True


def uncovered_cases(env: TypeEnv, node: sp.ChoiceNode) -> list[tuple[str, str | None]] | None:
    """None when the guards cover every case; else the (enum, member) cases of the
    enum they test that no guard covers (a None member: null), or [] when they
    test no enum."""
    inf = Inference(env, {"input": Record("input"), "context": Record("context")}, [])
    guards = [arm.guard for arm in node.arms if arm.guard is not None]
    if any(isinstance(g, ex.BoolLit) and g.value for g in guards):
        return None
    tested: dict[str, set[bool]] = {}
    for g in guards:
        subject, positive = _polarity(g)
        tested.setdefault(format_expr(subject), set()).add(positive)
    if any(len(both) == 2 for both in tested.values()):
        return None  # a boolean and its negation
    cases: dict[str, set[str | None]] = {}
    enums: dict[str, Enum] = {}
    subjects: dict[str, ex.Expr] = {}
    for g in guards:
        case = _enum_case(g, inf)
        if case is None:
            continue
        subject, enum, member = case
        key = format_expr(subject)
        subjects[key] = subject
        cases.setdefault(key, set()).add(member)
        if enum is not None:
            enums[key] = enum
    missing: list[tuple[str, str | None]] = []
    for key, enum in enums.items():
        needed: list[str | None] = list(env.enum_members(enum.name))
        if isinstance(inf.infer(subjects[key]), Opt):
            needed.append(None)  # a null matches no member
        left = [(enum.name, member) for member in needed if member not in cases[key]]
        if not left:
            return None
        if not missing or len(left) < len(missing):
            missing = left  # the enum the guards come closest to covering
    return missing


def covering_arms(arms: ArmValues) -> tuple[str, tuple[sp.ChoiceArm, ...]]:
    """A subject and the arms before the choice's catch-all that test it when between
    them they take every value it can have (``x < 10`` and ``x >= 10``; every member of
    an enum; ``true`` and ``false``): nothing is left for the catch-all. ``("", ())``
    when no subject is covered so."""
    taken: dict[tuple[str, bool, Members], tuple[Values, tuple[sp.ChoiceArm, ...]]] = {}
    for arm, mine in arms:
        if isinstance(arm.guard, ex.BoolLit):
            break  # 'when true', a catch-all (or 'when false', which takes nothing)
        if mine is None or mine.empty():
            continue
        key = mine.kind()
        before = taken.get(key)
        testing: tuple[sp.ChoiceArm, ...]
        if before is None:
            so_far, testing = mine, (arm,)
        else:
            so_far, testing = before[0].combine("or", mine), (*before[1], arm)
        taken[key] = (so_far, testing)
        if so_far.negated().empty():
            return mine.subject, testing
    return "", ()
