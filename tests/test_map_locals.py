"""A map item's own variables (``local { … }``) and ``collect`` (issue 14 item 2): the
syntax, the formatter, the checker's typing, the lowering and the step function.

tests/store/test_map_locals.py runs them on the engine, the test kit, SQLite and
PostgreSQL; tests/data/check has a fixture per rule (WF324, WF325, WF350-WF353) and
tests/data/diff one per diff rule (WF659-WF661).
"""

from __future__ import annotations

import json
from decimal import Decimal

from wflang.compiler.check import check
from wflang.compiler.compile import compile_workflow
from wflang.dsl import spec as sp
from wflang.dsl.formatter import format_spec
from wflang.dsl.parser import parse
from wflang.runtime import codec
from wflang.runtime import instance as rt
from wflang.runtime import table as tb
from wflang.runtime.ir import Value
from wflang.testing import WorkflowEnv

QUOTES = """\
workflow quotes version 1

type Quote { sku: string, amount: decimal }

input { skus: list[string] }

context { quotes: list[Quote] = [], asks: list[int] = [] }

output { quotes: list[Quote], asks: list[int] }

service pricing.quote(sku: string, round: int) -> Quote

start ask

map ask over input.skus as sku {
    local { quote: Quote?, asks: int = 0 }
    task get_quote: service pricing.quote {
        args { sku: sku, round: local.asks }
        output { local.quote: result, local.asks: local.asks + 1 }
        next check
    }
    choice check {
        when local.quote.amount > 100 and local.asks < 3 -> get_quote
        else -> quoted
    }
    end quoted: completed {
        output { asks: local.asks }
    }
    collect local.quote into context.quotes
    collect result.asks into context.asks
    next done
}

end done: completed {
    output { quotes: context.quotes, asks: context.asks }
}
"""


def _map(spec: sp.WorkflowSpec | None) -> sp.MapNode:
    assert spec is not None
    (node,) = [n for n in spec.nodes if isinstance(n, sp.MapNode)]
    return node


def codes(text: str) -> list[str]:
    return [d.code for d in check([parse(text, "t.wf")]).diagnostics]


def test_the_map_declares_its_variables_and_what_it_collects() -> None:
    parsed = parse(QUOTES, "quotes.wf")
    assert parsed.diagnostics == ()
    node = _map(parsed.spec)
    assert [f.name.text for f in node.locals] == ["quote", "asks"]
    assert [c.target.text for c in node.collects] == ["quotes", "asks"]
    task = node.nodes[0]
    assert isinstance(task, sp.TaskNode)
    assert [(e.name.text, e.local) for e in task.output] == [("quote", True), ("asks", True)]


def test_a_dotted_name_other_than_local_is_a_syntax_error() -> None:
    parsed = parse(QUOTES.replace("local.asks: local.asks + 1", "item.asks: 1"), "q.wf")
    (d,) = parsed.diagnostics
    assert d.code == "WF001"
    assert d.message == "'item.asks' cannot be written: a mapping names a field, or 'local.NAME'"


def test_local_and_collect_stay_ordinary_names_elsewhere() -> None:
    """Contextual keywords: a context field may be called ``local`` or ``collect``."""
    text = """\
workflow w version 1
context { local: int = 0, collect: int = 0 }
start t
task t: script { output { local: context.collect + 1, collect: context.local } next done }
end done: completed
"""
    assert codes(text) == []


def test_formatting_keeps_variables_and_collects_and_is_idempotent() -> None:
    messy = QUOTES.replace(
        "    local { quote: Quote?, asks: int = 0 }",
        "  local {quote: Quote?,\n asks: int=0}   // each item's own",
    ).replace(
        "    collect result.asks into context.asks", "collect   result.asks into context.asks"
    )
    parsed = parse(messy, "q.wf")
    assert parsed.spec is not None and parsed.diagnostics == ()
    text = format_spec(parsed.spec, messy)
    assert "    local { quote: Quote?, asks: int = 0 }  // each item's own\n" in text
    assert "    collect result.asks into context.asks\n" in text
    again = parse(text, "q.wf")
    assert again.spec == parsed.spec
    assert format_spec(again.spec, text) == text
    assert format_spec(_spec(QUOTES), QUOTES) == QUOTES


def _spec(text: str) -> sp.WorkflowSpec:
    parsed = parse(text, "q.wf")
    assert parsed.spec is not None
    return parsed.spec


def test_the_example_checks_clean() -> None:
    assert codes(QUOTES) == []


def test_a_variable_written_a_value_is_known_not_to_be_null_after() -> None:
    """``local.quote`` (``Quote?``) was written the service's result on the way to the
    choice and to the end: reading ``.amount`` and collecting it into a ``list[Quote]``
    need no null check (WF302)."""
    assert "WF302" not in codes(QUOTES)
    unwritten = QUOTES.replace("output { local.quote: result, ", "output { ")
    assert codes(unwritten).count("WF302") == 2  # the guard, and what is collected


def test_an_inner_map_writes_the_outer_items_variables_unless_it_declares_its_own() -> None:
    nested = QUOTES.replace(
        "    end quoted: completed {",
        "    end quoted: completed {",
    )
    inner = """\
    map each over [1, 2] as k {
        task bump: script { output { local.asks: local.asks + k } next bumped }
        end bumped: completed
        next quoted
    }
"""
    text = nested.replace("        else -> quoted\n", "        else -> each\n").replace(
        "    end quoted: completed {", inner + "    end quoted: completed {"
    )
    assert codes(text) == []
    own = text.replace(
        "    map each over [1, 2] as k {\n",
        "    map each over [1, 2] as k {\n        local { n: int = 0 }\n",
    )
    assert codes(own) == ["WF351", "WF351"]  # 'asks' is not the inner map's


def test_a_loop_that_advances_a_variable_makes_progress() -> None:
    """WF212: an exit test reading ``local.asks``, which the loop adds one to, bounds it."""
    assert "WF212" not in codes(QUOTES)
    stuck = QUOTES.replace("local.asks: local.asks + 1", "local.asks: 1")
    assert "WF212" in codes(stuck)


def test_the_table_holds_the_variables_and_the_collects() -> None:
    compiled = compile_workflow(parse(QUOTES, "quotes.wf"))
    table = compiled.table
    assert table is not None
    entry = table.states[table.state_id("ask")].entry
    assert isinstance(entry, tb.MapEntry)
    assert [name for name, _ in entry.locals] == ["quote", "asks"]
    assert entry.locals[0][1] is None  # optional: null
    assert len(entry.collects) == 2
    done = [r for r in table.rows if r.state == table.state_id("ask")]
    actions = [a for r in done for t in r.transitions for a in t.actions]
    assert [a.kind for a in actions] == ["write"]
    assert actions[0].mapping is not None
    assert [n for n, _ in actions[0].mapping.entries] == ["quotes", "asks"]
    task = [r for r in table.rows if r.state == table.state_id("get_quote")]
    kinds = [a.kind for r in task for t in r.transitions for a in t.actions]
    assert kinds == ["local"]
    assert tb.loads(tb.dumps(table)) == table


def test_a_table_from_before_loads_with_no_variables() -> None:
    """A stored table of a map compiled before item variables: no ``locals`` or
    ``collects`` keys, read as none."""
    compiled = compile_workflow(parse(QUOTES, "quotes.wf"))
    assert compiled.table is not None
    data = json.loads(tb.dumps(compiled.table))
    for state in data["states"]:
        if state["entry"]["kind"] == "map":
            assert state["entry"]["locals"] and state["entry"]["collects"]
            del state["entry"]["locals"], state["entry"]["collects"]
    old = tb.loads(json.dumps(data))
    entry = old.states[old.state_id("ask")].entry
    assert isinstance(entry, tb.MapEntry) and entry.locals == () and entry.collects == ()
    # and a map without them is written as before: no new keys, the same hash
    assert '"locals"' not in tb.dumps(old) and '"collects"' not in tb.dumps(old)


def _quote(sku: str, round: int) -> dict[str, Value]:
    return {"sku": sku, "amount": Decimal(150 - 40 * round)}


def test_each_item_counts_its_own_asks_and_the_lists_come_in_item_order() -> None:
    compiled = compile_workflow(parse(QUOTES, "quotes.wf"))
    assert compiled.table is not None
    env = WorkflowEnv([compiled.table], {"pricing.quote": _quote})
    iid = env.start("quotes", {"skus": ["a", "b"]})
    assert env.status(iid) == "completed"
    assert env.instance(iid).output == {
        "quotes": [
            {"sku": "a", "amount": Decimal(70)},
            {"sku": "b", "amount": Decimal(70)},
        ],
        "asks": [3, 3],
    }
    replayed = env.replay(iid)
    assert replayed.ok and replayed.instance == env.instance(iid)


def test_an_instance_stored_before_item_variables_still_loads() -> None:
    """The stored form of a map's join and item token from before: no ``collected``,
    no ``local`` among the token's locals."""
    old = {
        "id": "i-1", "workflow": "w", "version": 1, "status": "running",
        "input": {}, "context": {},
        "tokens": [
            {"id": 0, "state": 3, "waiting": "join"},
            {"id": 1, "state": 4, "parent": 0, "locals": [["sku", "a"]], "waiting": "task"},
        ],
        "joins": [{"token": 0, "total": 2, "started": 1, "results": [[1, {"n": 1}]]}],
    }  # fmt: skip
    inst = codec.structure_instance(old)
    assert inst.joins[0].collected == ()
    assert inst.joins[0].results == ((1, {"n": 1}),)
    assert inst.tokens[1].locals == (("sku", "a"),)
    assert codec.unstructure_instance(inst)["joins"][0].get("collected") is None
    assert isinstance(inst, rt.Instance)
