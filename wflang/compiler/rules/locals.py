"""Rules of a map's item variables and of what it collects (WF324, WF325, WF350-WF353).

A map declares each item's own variables (``local { quote: Quote?, tries: int = 0 }``),
which its body reads as ``local.NAME`` and writes with ``output { local.NAME: … }``,
and gathers one value per completed item into a context list with ``collect EXPR into
context.FIELD`` (issue 14 item 2). The typing is the compiler's (``inference.py``);
the rules here report each kind of problem it found, and check the declarations.
"""

from __future__ import annotations

from collections.abc import Iterator

from wflang.compiler.inference import type_env, typing_of
from wflang.compiler.model import Model
from wflang.compiler.registry import Finding, Pass, rule
from wflang.compiler.types import COLLECT_TYPE, LOCAL_OUTSIDE, LOCAL_TYPE, UNKNOWN_LOCAL, Opt
from wflang.dsl import spec as sp
from wflang.dsl.diagnostics import Severity


def _findings(m: Model, kind: str) -> Iterator[Finding]:
    for p in typing_of(m).problems:
        if p.kind == kind:
            yield Finding(p.message, p.span, p.hint)


@rule(
    "WF324",
    "collect-type",
    severity=Severity.ERROR,
    category="type",
    pass_=Pass.TYPES,
    summary="Checks that a map collects values the context list it fills can hold.",
)
def collect_type(m: Model) -> Iterator[Finding]:
    """``collect EXPR into context.FIELD`` writes the list of what ``EXPR`` gives for
    each item that completed: ``FIELD`` is a ``list[T]`` and ``EXPR`` (read at the
    item's completed end: its item, its ``local`` variables and, as ``result``, what
    the end gives) fits ``T``.

    Bad:

        type Quote { sku: string, amount: decimal }
        input { skus: list[string] }
        context { amounts: list[string] = [] }
        service pricing.quote(sku: string) -> Quote
        start ask
        map ask over input.skus as sku {
            local { amount: decimal = 0 }
            task get: service pricing.quote { args { sku: sku } output { local.amount: result.amount } next got }
            end got: completed
            collect local.amount into context.amounts
            next done
        }
        end done: completed

    Good:

        context { amounts: list[decimal] = [] }
    """
    yield from _findings(m, COLLECT_TYPE)


@rule(
    "WF325",
    "collect-conflict",
    severity=Severity.ERROR,
    category="type",
    pass_=Pass.TYPES,
    summary="Checks that a context field is filled by one collect, and not also by 'output'.",
)
def collect_conflict(m: Model) -> Iterator[Finding]:
    """A map writes its ``collect`` lists and its ``output`` together, once it has
    finished: a field two of them write would keep only one of the values.

    Bad:

        map ask over input.skus as sku {
            local { amount: decimal = 0 }
            end got: completed { output { amount: local.amount } }
            collect local.amount into context.amounts
            output { amounts: result[*].amount }
            next done
        }

    Good:

        map ask over input.skus as sku {
            local { amount: decimal = 0 }
            end got: completed { output { amount: local.amount } }
            collect local.amount into context.amounts
            next done
        }
    """
    for node in m.all_nodes():
        if not isinstance(node, sp.MapNode):
            continue
        first: dict[str, str] = {e.name.text: "its 'output'" for e in node.output if not e.local}
        for c in node.collects:
            name = c.target.text
            if name in first:
                yield Finding(
                    f"map '{node.name.text}' writes 'context.{name}' twice: "
                    f"this collect and {first[name]}",
                    c.target.span,
                    hint="collect each field once, and leave it out of the map's 'output'",
                )
            else:
                first[name] = "another collect"


@rule(
    "WF350",
    "local-outside-map",
    severity=Severity.ERROR,
    category="type",
    pass_=Pass.TYPES,
    summary="Checks that 'local' is read and written only in the body of a map that declares it.",
)
def local_outside_map(m: Model) -> Iterator[Finding]:
    """``local.NAME`` is a variable of the current map item: it exists only in the body
    of a map that declares ``local { … }`` (and in the branches and maps inside that
    body). It is written by a node's ``output``, never by ``args`` or an ``end`` (an
    end gives its flow's output).

    Bad:

        input { skus: list[string] }
        context { n: int = 0 }
        start count
        task count: script { output { n: local.tries } next done }
        end done: completed

    Good:

        input { skus: list[string] }
        context { n: int = 0 }
        start each
        map each over input.skus as sku {
            local { tries: int = 0 }
            task count: script { output { local.tries: local.tries + 1 } next counted }
            end counted: completed
            collect local.tries into context.tries
            next done
        }
        end done: completed
    """
    yield from _findings(m, LOCAL_OUTSIDE)


@rule(
    "WF351",
    "unknown-local",
    severity=Severity.ERROR,
    category="type",
    pass_=Pass.TYPES,
    summary="Checks that every 'local.NAME' read or written is declared by the map.",
)
def unknown_local(m: Model) -> Iterator[Finding]:
    """A map declares its item's variables in ``local { … }``; reading or writing
    one it does not declare is a misspelling or a forgotten declaration.

    Bad:

        map each over input.skus as sku {
            local { tries: int = 0 }
            task count: script { output { local.trys: local.tries + 1 } next counted }
            end counted: completed
            next done
        }

    Good:

        map each over input.skus as sku {
            local { tries: int = 0 }
            task count: script { output { local.tries: local.tries + 1 } next counted }
            end counted: completed
            next done
        }
    """
    yield from _findings(m, UNKNOWN_LOCAL)


@rule(
    "WF352",
    "local-type",
    severity=Severity.ERROR,
    category="type",
    pass_=Pass.TYPES,
    summary="Checks that a map item's variable is written values of its declared type.",
)
def local_type(m: Model) -> Iterator[Finding]:
    """``output { local.NAME: EXPR }`` writes the variable a value that fits the type
    ``local { NAME: TYPE }`` declares (an ``int`` fits a ``decimal``, a ``T`` a ``T?``).

    Bad:

        map each over input.skus as sku {
            local { tries: int = 0 }
            task count: script { output { local.tries: "one" } next counted }
            end counted: completed
            next done
        }

    Good:

        map each over input.skus as sku {
            local { tries: int = 0 }
            task count: script { output { local.tries: local.tries + 1 } next counted }
            end counted: completed
            next done
        }
    """
    yield from _findings(m, LOCAL_TYPE)


@rule(
    "WF353",
    "local-without-value",
    severity=Severity.ERROR,
    category="type",
    pass_=Pass.TYPES,
    summary="Checks that each map item's variable starts with a value: a default, or null.",
)
def local_without_value(m: Model) -> Iterator[Finding]:
    """Every item starts with its own copy of the map's variables, each its default,
    or null when its type is optional: a variable with neither would have no value
    before the body writes one.

    Bad:

        map each over input.skus as sku {
            local { tries: int }
            end counted: completed
            next done
        }

    Good:

        map each over input.skus as sku {
            local { tries: int = 0, note: string? }
            end counted: completed
            next done
        }
    """
    env = type_env(m)
    for node in m.all_nodes():
        if not isinstance(node, sp.MapNode):
            continue
        for f in node.locals:
            if f.default is None and not isinstance(env.resolve(f.type), Opt):
                yield Finding(
                    f"variable '{f.name.text}' of map '{node.name.text}' has no value to "
                    "start with",
                    f.span,
                    hint=f"give it a default ({f.name.text}: {f.type} = …), or make it "
                    f"optional ({f.name.text}: {f.type}?)",
                )
