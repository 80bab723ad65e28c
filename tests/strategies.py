"""Hypothesis strategies that generate random valid specs of the whole language."""

from __future__ import annotations

from decimal import Decimal

from hypothesis import strategies as st

from wflang.dsl import expr as ex
from wflang.dsl import spec as sp
from wflang.dsl import types as ty
from wflang.dsl.build.literals import parse_duration
from wflang.dsl.parser import vocabulary

KEYWORDS = frozenset(vocabulary().keywords) | {"true", "false", "null"}
names = st.from_regex(r"[a-z_][a-z0-9_]{0,7}", fullmatch=True).filter(lambda n: n not in KEYWORDS)
idents = names.map(sp.Ident)
dotted = st.lists(names, min_size=1, max_size=3).map(lambda p: sp.Ident(".".join(p)))
small_ints = st.integers(min_value=0, max_value=10**6)
DURATIONS = ("90s", "1h30m", "500ms", "P1DT2H", "PT15M", "2w", "10m", "48h", "P3D")
durations = st.sampled_from(DURATIONS).map(lambda t: ex.DurationLit(t, parse_duration(t) or 0))
decimals = st.decimals(min_value=0, max_value=10**6, places=2, allow_nan=False)

leaves: st.SearchStrategy[ex.Expr] = st.one_of(
    small_ints.map(ex.IntLit),
    decimals.map(ex.DecimalLit),
    st.text(max_size=12).map(ex.StringLit),
    st.booleans().map(ex.BoolLit),
    st.just(ex.NullLit()),
    durations,
    st.sampled_from(("2026-01-31T09:00:00Z", "2026-03-01T10:30:00+01:00")).map(ex.TimestampLit),
    names.map(ex.Ref),
)


def _with_lambda(fn: str, items: ex.Expr, param: str, body: ex.Expr) -> ex.Call:
    return ex.Call(fn, (items, ex.Lambda(param, body)))


def _extend(inner: st.SearchStrategy[ex.Expr]) -> st.SearchStrategy[ex.Expr]:
    # ``xs[*].a`` then ``.b`` is the projection ``xs[*].a.b``: no member of a projection.
    not_projected = inner.filter(lambda e: not isinstance(e, ex.Project))
    return st.one_of(
        st.builds(ex.Member, not_projected, names),
        st.builds(ex.Project, inner, st.lists(names, min_size=1, max_size=2).map(tuple)),
        st.builds(_with_lambda, st.sampled_from(sorted(ex.LAMBDA_BUILTINS)), inner, names, inner),
        st.builds(ex.Index, inner, inner),
        st.builds(
            ex.Call, st.sampled_from(sorted(ex.BUILTINS)), st.lists(inner, max_size=3).map(tuple)
        ),
        st.builds(ex.Unary, st.sampled_from(("not", "-", "+")), inner),
        st.builds(ex.Binary, st.sampled_from(sorted(ex.BINARY_PRECEDENCE)), inner, inner),
        st.lists(inner, max_size=3).map(lambda xs: ex.ListLit(tuple(xs))),
    )


exprs = st.recursive(leaves, _extend, max_leaves=12)

base_types: st.SearchStrategy[ty.NamedType | ty.GenericType] = st.recursive(
    st.one_of(
        st.sampled_from(ty.PRIMITIVE_TYPES), names, st.tuples(names, names).map(".".join)
    ).map(ty.NamedType),
    lambda inner: st.one_of(
        inner.map(lambda t: ty.GenericType("list", (t,))),
        inner.map(lambda t: ty.GenericType("map", (ty.NamedType("string"), t))),
    ),
    max_leaves=3,
)
types = st.one_of(base_types, base_types.map(ty.OptionalType))
fields = st.builds(sp.Field, idents, types, st.none() | exprs)
field_tuples = st.lists(fields, max_size=3).map(tuple)
entries = st.lists(st.builds(sp.Entry, idents, exprs, local=st.booleans()), max_size=3).map(tuple)
collects = st.lists(st.builds(sp.Collect, exprs, idents), max_size=2).map(tuple)
id_tuples = st.lists(idents, min_size=1, max_size=3).map(tuple)


@st.composite
def retries(draw: st.DrawFn) -> sp.Retry:
    initial = draw(st.none() | durations)
    return sp.Retry(
        attempts=draw(st.none() | st.integers(0, 100)),
        initial_delay=initial,
        max_delay=None if initial is None else draw(st.none() | durations),
        factor=draw(st.none() | decimals),
        jitter=draw(st.none() | st.decimals(0, 1, places=2)),
        non_retryable=draw(st.none() | st.lists(idents, max_size=2).map(tuple)),
    )


timeouts = st.lists(st.builds(sp.Timeout, exprs, idents, st.booleans()), max_size=2).map(tuple)
handlers = st.lists(
    st.builds(sp.OnError, st.lists(idents, max_size=2).map(tuple), idents), max_size=2
).map(tuple)
#: Boundary signals and messages; a route's ``output`` writes the context (no ``local.``).
events = st.lists(
    st.builds(
        sp.OnEvent,
        st.one_of(idents.map(sp.SignalTrigger), st.builds(sp.MessageTrigger, idents, exprs)),
        idents,
        st.booleans(),
        st.lists(st.builds(sp.Entry, idents, exprs), max_size=2).map(tuple),
    ),
    max_size=2,
).map(tuple)
maybe_ident = st.none() | idents
strings = st.text(max_size=10).map(ex.StringLit)


def tasks() -> st.SearchStrategy[sp.TaskNode]:
    works: st.SearchStrategy[sp.TaskWork] = st.one_of(
        dotted.map(sp.ServiceWork),
        st.just(sp.ScriptWork()),
        st.builds(sp.UserWork, st.none() | strings),
        st.builds(sp.ManualWork, st.none() | strings),
    )

    @st.composite
    def build(draw: st.DrawFn) -> sp.TaskNode:
        work = draw(works)
        human = isinstance(work, sp.UserWork | sp.ManualWork)
        return sp.TaskNode(
            draw(idents), work, draw(entries), draw(entries),
            draw(st.none() | field_tuples) if human else None,
            draw(st.none() | retries()), draw(timeouts), draw(handlers),
            draw(maybe_ident), draw(maybe_ident), draw(maybe_ident), events=draw(events),
        )  # fmt: skip

    return build()


def flat_nodes() -> st.SearchStrategy[sp.Node]:
    triggers: st.SearchStrategy[sp.WaitTrigger] = st.one_of(
        idents.map(sp.SignalTrigger),
        st.builds(sp.MessageTrigger, idents, exprs),
        exprs.map(sp.UntilTrigger),
    )
    arms = st.lists(st.builds(sp.ChoiceArm, st.none() | exprs, idents), max_size=3).map(tuple)
    return st.one_of(
        tasks(),
        st.builds(sp.ChoiceNode, idents, arms, maybe_ident),
        st.builds(sp.WaitNode, idents, triggers, entries, timeouts, maybe_ident),
        st.builds(sp.SleepNode, idents, exprs, maybe_ident, maybe_ident),
        st.builds(sp.CallNode, idents, dotted, st.none() | small_ints, entries, entries,
                  st.none() | retries(), timeouts, handlers, maybe_ident, maybe_ident,
                  events=events),
        st.builds(sp.EndNode, idents, st.sampled_from(list(sp.Outcome)), entries, maybe_ident,
                  maybe_ident),
    )  # fmt: skip


def nodes(depth: int = 2) -> st.SearchStrategy[sp.Node]:
    if depth == 0:
        return flat_nodes()
    body = st.lists(nodes(depth - 1), max_size=3).map(tuple)
    joins = st.one_of(
        st.just(sp.Join(sp.JoinKind.ALL)),
        st.just(sp.Join(sp.JoinKind.ANY)),
        st.builds(sp.Join, st.just(sp.JoinKind.N_OF_M), small_ints, st.none() | small_ints),
    )
    parallel = st.builds(
        sp.ParallelNode, idents, st.lists(st.builds(sp.Branch, idents, body), max_size=3).map(tuple),
        st.none() | joins, timeouts, handlers, maybe_ident, events=events,
    )  # fmt: skip
    mapped = st.builds(
        sp.MapNode, idents, exprs, idents, body, st.none() | small_ints, st.booleans(),
        st.none() | st.builds(sp.Tolerance, small_ints, st.booleans()),
        entries, timeouts, handlers, maybe_ident, locals=field_tuples, collects=collects,
        events=events,
    )  # fmt: skip
    return st.one_of(flat_nodes(), parallel, mapped)


declarations: st.SearchStrategy[sp.Declaration] = st.one_of(
    st.builds(sp.ImportDecl, st.text(max_size=10), maybe_ident),
    st.builds(sp.TypeDecl, idents, field_tuples),
    st.builds(sp.EnumDecl, idents, id_tuples),
    st.builds(sp.InputDecl, field_tuples),
    st.builds(sp.ContextDecl, field_tuples),
    st.builds(sp.OutputDecl, field_tuples),
    st.builds(sp.SignalDecl, idents, st.none() | field_tuples),
    st.builds(sp.MessageDecl, idents, st.none() | field_tuples),
    st.builds(sp.ErrorDecl, id_tuples),
    st.builds(sp.ServiceDecl, idents.map(lambda i: i) | dotted, field_tuples,
              st.none() | field_tuples | base_types.filter(
                  lambda t: isinstance(t, ty.NamedType)).map(lambda t: t),
              st.lists(idents, max_size=2).map(tuple), st.booleans()),
    st.builds(sp.StartDecl, idents),
)  # fmt: skip

specs = st.builds(
    sp.WorkflowSpec,
    st.just("gen.wf"),
    st.none() | st.builds(sp.Header, idents, small_ints),
    st.lists(st.one_of(declarations, nodes()), max_size=6).map(tuple),
)

#: Pieces of the language for token soups.
SOUP = sorted(KEYWORDS) + [
    "{", "}", "(", ")", "[", "]", ",", ":", "->", "..", ".", "=", "==", "<", "+", "-", "*",
    "/", "%", "?", "x", "y1", "42", "3.5", '"s"', "90s", "P1D", "2026-01-31T09:00:00Z",
    "// c\n", "/* c */", "\n", "$", "'", "non-interrupting",
]  # fmt: skip
soups = st.lists(st.sampled_from(SOUP), max_size=60).map(" ".join)

_ = Decimal  # re-exported for tests that build decimals
