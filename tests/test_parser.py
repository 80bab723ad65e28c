"""Every construct of the language parses into the expected typed spec."""

from __future__ import annotations

from decimal import Decimal

import pytest
from lark import Lark

from wflang.dsl import expr as ex
from wflang.dsl import parse
from wflang.dsl import spec as sp
from wflang.dsl import types as ty
from wflang.dsl.span import Span
from wflang.grammar import grammar_text

H = "workflow w version 1\n"


def one(source: str) -> sp.Item:
    result = parse(H + source, "t.wf")
    assert result.diagnostics == (), result.diagnostics
    assert result.spec is not None
    (item,) = result.spec.items
    return item


def guard(text: str) -> ex.Expr:
    node = one(f"choice c {{\n    when {text} -> d\n}}\n")
    assert isinstance(node, sp.ChoiceNode)
    g = node.arms[0].guard
    assert g is not None
    return g


def test_grammar_is_lalr_and_strict() -> None:
    # strict mode fails on any shift/reduce conflict or terminal collision.
    Lark(grammar_text(), parser="lalr", strict=True, propagate_positions=True)


def test_header_and_spans() -> None:
    result = parse("workflow order version 3\nstart a\n", "o.wf")
    assert result.spec is not None
    header = result.spec.header
    assert header == sp.Header(sp.Ident("order"), 3)
    assert header is not None
    assert header.span == Span("o.wf", 1, 1, 1, 25)
    assert header.name.span == Span("o.wf", 1, 10, 1, 15)
    (start,) = result.spec.items
    assert start == sp.StartDecl(sp.Ident("a"))
    assert start.span == Span("o.wf", 2, 1, 2, 8)


def test_library_file_has_no_header() -> None:
    result = parse("type T { a: int }\n", "lib.wf")
    assert result.spec is not None
    assert result.spec.header is None


def test_import() -> None:
    assert one('import "lib/types.wf" as types\n') == sp.ImportDecl(
        "lib/types.wf", sp.Ident("types")
    )
    assert one('import "x.wf"\n') == sp.ImportDecl("x.wf")


def test_record_type_with_generic_and_optional_fields() -> None:
    decl = one(
        "type Order { id: string, items: list[Item], tags: map[string, int]?, n: int = 1 }\n"
    )
    assert decl == sp.TypeDecl(
        sp.Ident("Order"),
        (
            sp.Field(sp.Ident("id"), ty.NamedType("string")),
            sp.Field(sp.Ident("items"), ty.GenericType("list", (ty.NamedType("Item"),))),
            sp.Field(
                sp.Ident("tags"),
                ty.OptionalType(
                    ty.GenericType("map", (ty.NamedType("string"), ty.NamedType("int")))
                ),
            ),
            sp.Field(sp.Ident("n"), ty.NamedType("int"), ex.IntLit(1)),
        ),
    )


def test_enum() -> None:
    assert one("enum Priority { low, normal, high, }\n") == sp.EnumDecl(
        sp.Ident("Priority"), (sp.Ident("low"), sp.Ident("normal"), sp.Ident("high"))
    )


@pytest.mark.parametrize(
    ("keyword", "cls"),
    [("input", sp.InputDecl), ("context", sp.ContextDecl), ("output", sp.OutputDecl)],
)
def test_field_block_declarations(keyword: str, cls: type) -> None:
    decl = one(f"{keyword} {{ a: bool = false\n b: decimal? }}\n")
    assert decl == cls(
        (
            sp.Field(sp.Ident("a"), ty.NamedType("bool"), ex.BoolLit(False)),
            sp.Field(sp.Ident("b"), ty.OptionalType(ty.NamedType("decimal"))),
        )
    )


def test_signal_message_error() -> None:
    assert one("signal approval { ok: bool }\n") == sp.SignalDecl(
        sp.Ident("approval"), (sp.Field(sp.Ident("ok"), ty.NamedType("bool")),)
    )
    assert one("signal poke\n") == sp.SignalDecl(sp.Ident("poke"))
    assert one("message paid { id: string }\n") == sp.MessageDecl(
        sp.Ident("paid"), (sp.Field(sp.Ident("id"), ty.NamedType("string")),)
    )
    assert one("error A, B\n") == sp.ErrorDecl((sp.Ident("A"), sp.Ident("B")))


def test_service_signature() -> None:
    decl = one(
        "service pay.charge(amount: decimal, card: string) -> { id: string } raises Declined\n"
    )
    assert decl == sp.ServiceDecl(
        sp.Ident("pay.charge"),
        (
            sp.Field(sp.Ident("amount"), ty.NamedType("decimal")),
            sp.Field(sp.Ident("card"), ty.NamedType("string")),
        ),
        (sp.Field(sp.Ident("id"), ty.NamedType("string")),),
        (sp.Ident("Declined"),),
    )
    assert one("service ping()\n") == sp.ServiceDecl(sp.Ident("ping"), ())


def test_service_task_with_every_clause() -> None:
    node = one(
        "task reserve: service inv.reserve {\n"
        "    args { items: input.items }\n"
        "    output { reservation: result.id }\n"
        "    retry { attempts: 5, backoff: 1s..5m, factor: 2, jitter: 0.25, non_retryable: [Bad] }\n"
        "    timeout 30s -> escalate\n"
        "    timeout 10s non-interrupting -> nudge\n"
        "    on OutOfStock, Gone -> backorder\n"
        "    on any -> failed\n"
        "    compensate release\n"
        "    next review\n"
        "}\n"
    )
    assert node == sp.TaskNode(
        sp.Ident("reserve"),
        sp.ServiceWork(sp.Ident("inv.reserve")),
        args=(sp.Entry(sp.Ident("items"), ex.Member(ex.Ref("input"), "items")),),
        output=(sp.Entry(sp.Ident("reservation"), ex.Member(ex.Ref("result"), "id")),),
        retry=sp.Retry(
            attempts=5,
            initial_delay=ex.DurationLit("1s", 1000),
            max_delay=ex.DurationLit("5m", 300_000),
            factor=Decimal(2),
            jitter=Decimal("0.25"),
            non_retryable=(sp.Ident("Bad"),),
        ),
        timeouts=(
            sp.Timeout(ex.DurationLit("30s", 30_000), sp.Ident("escalate")),
            sp.Timeout(ex.DurationLit("10s", 10_000), sp.Ident("nudge"), interrupting=False),
        ),
        handlers=(
            sp.OnError((sp.Ident("OutOfStock"), sp.Ident("Gone")), sp.Ident("backorder")),
            sp.OnError((), sp.Ident("failed")),
        ),
        compensate=sp.Ident("release"),
        next=sp.Ident("review"),
    )
    assert isinstance(node, sp.TaskNode)
    assert node.handlers[1].catch_all
    assert node.span == Span("t.wf", 2, 1, 12, 2)


@pytest.mark.parametrize(
    ("work", "expected"),
    [
        ("script", sp.ScriptWork()),
        ('user "underwriters"', sp.UserWork(ex.StringLit("underwriters"))),
        ("user", sp.UserWork()),
        ('manual "warehouse"', sp.ManualWork(ex.StringLit("warehouse"))),
    ],
)
def test_task_kinds(work: str, expected: sp.TaskWork) -> None:
    node = one(f"task t: {work} {{\n    next d\n}}\n")
    assert isinstance(node, sp.TaskNode)
    assert node.work == expected


def test_user_task_form() -> None:
    node = one('task t: user "ops" {\n    form { approved: bool }\n    next d\n}\n')
    assert isinstance(node, sp.TaskNode)
    assert node.form == (sp.Field(sp.Ident("approved"), ty.NamedType("bool")),)


def test_choice_arms_in_order() -> None:
    node = one("choice c {\n    when input.a -> x\n    else -> y\n}\n")
    assert node == sp.ChoiceNode(
        sp.Ident("c"),
        (
            sp.ChoiceArm(ex.Member(ex.Ref("input"), "a"), sp.Ident("x")),
            sp.ChoiceArm(None, sp.Ident("y")),
        ),
    )


@pytest.mark.parametrize(
    ("trigger", "expected"),
    [
        ("signal approval", sp.SignalTrigger(sp.Ident("approval"))),
        (
            "message paid correlate input.id",
            sp.MessageTrigger(sp.Ident("paid"), ex.Member(ex.Ref("input"), "id")),
        ),
        (
            "until 2026-01-31T09:00:00Z",
            sp.UntilTrigger(ex.TimestampLit("2026-01-31T09:00:00Z")),
        ),
    ],
)
def test_wait_triggers(trigger: str, expected: sp.WaitTrigger) -> None:
    node = one(f"wait w: {trigger} {{\n    timeout 48h -> late\n    next d\n}}\n")
    assert isinstance(node, sp.WaitNode)
    assert node.trigger == expected
    assert node.next == sp.Ident("d")


def test_sleep_short_and_block_forms_are_the_same_spec() -> None:
    short = one("sleep s 10m next d\n")
    block = one("sleep s 10m {\n    next d\n}\n")
    assert (
        short == block == sp.SleepNode(sp.Ident("s"), ex.DurationLit("10m", 600_000), sp.Ident("d"))
    )


@pytest.mark.parametrize(
    ("policy", "join"),
    [
        ("all", sp.Join(sp.JoinKind.ALL)),
        ("any", sp.Join(sp.JoinKind.ANY)),
        ("2 of 3", sp.Join(sp.JoinKind.N_OF_M, 2, 3)),
        ("2", sp.Join(sp.JoinKind.N_OF_M, 2)),
    ],
)
def test_parallel_join_policies(policy: str, join: sp.Join) -> None:
    node = one(
        "parallel p {\n"
        "    branch a {\n        end a1: completed\n    }\n"
        "    branch b {\n        end b1: completed\n    }\n"
        f"    join {policy} -> done\n"
        "}\n"
    )
    assert isinstance(node, sp.ParallelNode)
    assert node.join == join
    assert node.next == sp.Ident("done")
    assert [b.name.text for b in node.branches] == ["a", "b"]
    assert node.branches[0].nodes == (sp.EndNode(sp.Ident("a1"), sp.Outcome.COMPLETED),)


def test_map_options_and_body() -> None:
    node = one(
        "map m over input.xs as x {\n"
        "    concurrency 10\n"
        "    tolerate 5%\n"
        "    task t: service s.run {\n        args { v: x.v }\n        next e\n    }\n"
        "    end e: completed\n"
        "    next done\n"
        "}\n"
    )
    assert isinstance(node, sp.MapNode)
    assert node.items == ex.Member(ex.Ref("input"), "xs")
    assert node.alias == sp.Ident("x")
    assert node.concurrency == 10 and not node.sequential
    assert node.tolerate == sp.Tolerance(5, percent=True)
    assert [n.name.text for n in node.nodes] == ["t", "e"]
    seq = one(
        "map m over input.xs as x {\n    sequential\n    tolerate 2\n    end e: completed\n}\n"
    )
    assert isinstance(seq, sp.MapNode)
    assert seq.sequential and seq.tolerate == sp.Tolerance(2)


def test_call_is_version_pinned() -> None:
    node = one("call k: workflow kyc.check version 2 {\n    args { id: input.id }\n    next d\n}\n")
    assert node == sp.CallNode(
        sp.Ident("k"),
        sp.Ident("kyc.check"),
        2,
        args=(sp.Entry(sp.Ident("id"), ex.Member(ex.Ref("input"), "id")),),
        next=sp.Ident("d"),
    )


@pytest.mark.parametrize("outcome", list(sp.Outcome))
def test_end_outcomes(outcome: sp.Outcome) -> None:
    assert one(f"end e: {outcome.value}\n") == sp.EndNode(sp.Ident("e"), outcome)


def test_failed_end_with_error_and_output() -> None:
    node = one('end e: failed {\n    output { reason: "declined" }\n    error Declined\n}\n')
    assert node == sp.EndNode(
        sp.Ident("e"),
        sp.Outcome.FAILED,
        output=(sp.Entry(sp.Ident("reason"), ex.StringLit("declined")),),
        error=sp.Ident("Declined"),
    )


def test_operator_precedence() -> None:
    g = guard("not input.a or 1 + 2 * 3 >= 7 and input.b in [1, 2]")
    assert g == ex.Binary(
        "or",
        ex.Unary("not", ex.Member(ex.Ref("input"), "a")),
        ex.Binary(
            "and",
            ex.Binary(
                ">=",
                ex.Binary("+", ex.IntLit(1), ex.Binary("*", ex.IntLit(2), ex.IntLit(3))),
                ex.IntLit(7),
            ),
            ex.Binary(
                "in", ex.Member(ex.Ref("input"), "b"), ex.ListLit((ex.IntLit(1), ex.IntLit(2)))
            ),
        ),
    )


def test_literals() -> None:
    assert guard("1.50 == 2") == ex.Binary("==", ex.DecimalLit(Decimal("1.50")), ex.IntLit(2))
    assert guard('"a\\"b\\n\\u{1F600}" != null') == ex.Binary(
        "!=", ex.StringLit('a"b\n\U0001f600'), ex.NullLit()
    )
    assert guard("P1DT2H > 90s") == ex.Binary(
        ">", ex.DurationLit("P1DT2H", 93_600_000), ex.DurationLit("90s", 90_000)
    )
    assert guard("1h30m == PT1H30M") == ex.Binary(
        "==", ex.DurationLit("1h30m", 5_400_000), ex.DurationLit("PT1H30M", 5_400_000)
    )


def test_postfix_and_builtins() -> None:
    assert guard("len(lower(input.items[0].sku)) > -1") == ex.Binary(
        ">",
        ex.Call(
            "len",
            (
                ex.Call(
                    "lower",
                    (
                        ex.Member(
                            ex.Index(ex.Member(ex.Ref("input"), "items"), ex.IntLit(0)), "sku"
                        ),
                    ),
                ),
            ),
        ),
        ex.Unary("-", ex.IntLit(1)),
    )
    assert guard("input.x not in coalesce(context.xs, [])") == ex.Binary(
        "not in",
        ex.Member(ex.Ref("input"), "x"),
        ex.Call("coalesce", (ex.Member(ex.Ref("context"), "xs"), ex.ListLit(()))),
    )


def test_keywords_are_contextual() -> None:
    decl = one("type T { next: int, map: string, end: bool }\n")
    assert isinstance(decl, sp.TypeDecl)
    assert [f.name.text for f in decl.fields] == ["next", "map", "end"]


def test_comments_and_suppressions_are_collected() -> None:
    result = parse(
        H + "// wf: ignore-file[WF904]\nstart a /* inline */ // wf: ignore[WF201, dead-end]\n",
        "t.wf",
    )
    assert result.spec is not None
    assert [c.text for c in result.spec.comments] == [
        "// wf: ignore-file[WF904]",
        "/* inline */",
        "// wf: ignore[WF201, dead-end]",
    ]
    assert result.spec.suppressions == (
        sp.Suppression(("WF904",), True, 2),
        sp.Suppression(("WF201", "dead-end"), False, 3),
    )


LINES = [
    "// leading comment",
    "workflow w version 1",
    "/* a block comment",
    "   over two lines */ start e",
    'end e: completed { output { s: "x" } }',
]


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"], ids=["lf", "crlf", "cr"])
def test_every_line_break_ends_a_line_and_spans_count_it(newline: str) -> None:
    result = parse(newline.join(LINES) + newline, "t.wf")
    assert result.ok and result.normalized == (newline != "\n")
    assert result.text == "\n".join(LINES) + "\n"
    assert result.spec is not None
    assert [c.span.line for c in result.spec.comments] == [1, 3]
    assert (result.spec.comments[1].span.end_line, result.spec.comments[1].span.end_column) == (
        4,
        21,
    )
    start, end = result.spec.items
    assert (start.span.line, start.span.column) == (4, 22)
    assert (end.span.line, end.span.column, end.span.end_column) == (5, 1, 39)
    # An error is reported where it is, not swallowed by the leading comment.
    bad = parse(newline.join([*LINES[:4], "tsak e: script {}"]), "t.wf")
    assert [(d.code, d.span.line, d.span.column) for d in bad.diagnostics] == [("WF001", 5, 1)]
