"""Rules of events sent and received (WF36x): a send names a declared signal or message."""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial

from wflang.compiler.model import Model
from wflang.compiler.registry import Finding, Pass, rule
from wflang.compiler.symbols import did_you_mean
from wflang.dsl import spec as sp
from wflang.dsl.diagnostics import Severity

event_rule = partial(rule, category="reference", pass_=Pass.NAMES)


@event_rule(
    "WF360",
    "undeclared-send",
    severity=Severity.ERROR,
    summary="Checks that a send task names a signal or message the file declares.",
)
def undeclared_send(m: Model) -> Iterator[Finding]:
    """A send task's payload is the declared payload of what it sends, and whoever
    waits for it reads that declaration: a signal or message sent must be declared
    (in the file, or a file it imports), with the payload its receivers expect.

    Bad:

        task tell: send message order_redy correlate input.order_id { next done }

    Good:

        message order_ready { order_id: string }

        task tell: send message order_ready correlate input.order_id {
            args { order_id: input.order_id }
            next done
        }
    """
    for node in m.all_nodes():
        work = getattr(node, "work", None)
        if not isinstance(work, sp.SendWork):
            continue
        declared = m.signals if work.kind is sp.SendKind.SIGNAL else m.messages
        if work.name.text not in declared:
            kind = work.kind.value
            yield Finding(
                f"'{node.name.text}' sends the {kind} '{work.name.text}', which is not declared",
                work.name.span,
                hint=did_you_mean(work.name.text, declared)
                or f"declare it: {kind} {work.name.text} {{ ... }}",
            )
