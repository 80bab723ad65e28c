"""The rule catalogue for people: ``wf rules`` and ``docs/rules.md``, from the registry.

Every diagnostic code is listed, whether it comes from the parser (WF0xx), the
loader (WF113), a rule, or the suppression pass (WF9xx). ``docs/rules.md`` is
``rules_markdown()``; a test fails when the committed file is stale.
"""

from __future__ import annotations

import json

from wflang.compiler import rules as _rules  # noqa: F401  (registers every rule)
from wflang.compiler import suppress  # noqa: F401  (registers the meta-rules)
from wflang.compiler.diff import rules as _diff_rules  # noqa: F401  (registers every diff rule)
from wflang.compiler.diff.registry import diff_rules_in_order
from wflang.compiler.registry import RULES, blocking_rules
from wflang.dsl.diagnostics import CODES, Code


def _preset(code: Code) -> str:
    rule = RULES.get(code.id)
    return "always" if rule is None else rule.preset.value


def rules_text() -> str:
    lines = [f"{'code':<6} {'name':<28} {'severity':<8} {'preset':<11} summary"]
    for code in CODES.all():
        lines.append(
            f"{code.id:<6} {code.name:<28} {code.severity.value:<8} {_preset(code):<11} "
            f"{code.summary}"
        )
    return "\n".join(lines) + "\n"


def rules_json() -> str:
    doc = [
        {
            "code": c.id,
            "name": c.name,
            "category": c.category,
            "severity": c.severity.value,
            "preset": _preset(c),
            "summary": c.summary,
            "doc": c.doc,
        }
        for c in CODES.all()
    ]
    return json.dumps(doc, indent=2) + "\n"


def rules_markdown() -> str:
    out = [
        "# Rules of `wf check`",
        "",
        "Generated from the rule registry by `wf rules --format markdown`; do not edit.",
        "",
        "Every finding has a stable code (never reused) and a name; either may be used in",
        "suppressions (`// wf: ignore[WF201]`, `// wf: ignore[unreachable-node]`) and in",
        "`[tool.wflang.rules]`. The *preset* column says which preset turns a rule on:",
        "`recommended` (the default) ⊂ `strict` (warnings become errors) ⊂ `all`;",
        "`always` codes cannot be turned off. `wf compile` (and so `run` and `deploy`)",
        f"reports {_listing(sorted(blocking_rules()))} as errors whatever the configuration:",
        "a workflow with one of them has nothing to compile.",
        "",
        "| code | name | severity | preset | checks |",
        "| --- | --- | --- | --- | --- |",
    ]
    for c in CODES.all():
        out.append(
            f"| [{c.id}](#{c.id.lower()}) | `{c.name}` | {c.severity.value} | {_preset(c)} "
            f"| {c.summary} |"
        )
    for c in CODES.all():
        out += [
            "",
            f"## {c.id}",
            "",
            f"**`{c.name}`** · {c.category} · {c.severity.value} · preset: {_preset(c)}",
            "",
            c.summary,
            "",
            _examples(c.doc),
        ]
    return "\n".join(out).rstrip() + "\n\n" + diff_rules_markdown()


# ----------------------------------------------------------------- wf diff


def diff_rules_text() -> str:
    """``wf rules --diff``: every diff rule with its level and category."""
    lines = [f"{'code':<6} {'name':<28} {'level':<9} {'category':<10} summary"]
    for r in diff_rules_in_order():
        lines.append(
            f"{r.id:<6} {r.code.name:<28} {r.level.value:<9} {r.category.value:<10} "
            f"{r.code.summary}"
        )
    return "\n".join(lines) + "\n"


def diff_rules_json() -> str:
    doc = [
        {
            "code": r.id,
            "name": r.code.name,
            "level": r.level.value,
            "category": r.category.value,
            "severity": r.code.severity.value,
            "summary": r.code.summary,
            "doc": r.code.doc,
        }
        for r in diff_rules_in_order()
    ]
    return json.dumps(doc, indent=2) + "\n"


def diff_rules_markdown() -> str:
    out = [
        "# Rules of `wf diff`",
        "",
        "`wf diff OLD NEW` (or `wf diff --against REV FILE`) pairs the elements of two",
        "versions of a workflow and reports each change by a rule below. The *level* says",
        "how much it matters: `breaking` (reported as an error), `warning` or `safe` (info).",
        "The *category* says whom it may break: `callers` (the input, signals and messages:",
        "narrowing breaks them), `consumers` (outcomes and outputs: widening breaks them) or",
        "`instances` (the structure running instances are in). A breaking change made while",
        "the version went up is *accepted*: it is still listed, but does not fail.",
        "`--fail-on breaking|warning` (default `breaking`) sets the exit code.",
        "",
        "| code | name | level | category | reports |",
        "| --- | --- | --- | --- | --- |",
    ]
    rules = list(diff_rules_in_order())
    for r in rules:
        out.append(
            f"| [{r.id}](#{r.id.lower()}) | `{r.code.name}` | {r.level.value} "
            f"| {r.category.value} | {r.code.summary} |"
        )
    for r in rules:
        out += [
            "",
            f"## {r.id}",
            "",
            f"**`{r.code.name}`** · {r.category.value} · {r.level.value}",
            "",
            r.code.summary,
            "",
            _examples(r.code.doc),
        ]
    return "\n".join(out).rstrip() + "\n"


def _examples(doc: str) -> str:
    """Indented code in a rule's docstring becomes a fenced ``wf`` block."""
    out: list[str] = []
    block: list[str] = []

    def flush() -> None:
        if block:
            while block and not block[-1].strip():
                block.pop()
            out.extend(["```wf", *block, "```"])
            block.clear()

    for line in doc.splitlines():
        if line.startswith("    ") or (block and not line.strip()):
            block.append(line[4:])
        else:
            flush()
            out.append(line)
    flush()
    return "\n".join(out)


def _listing(codes: list[str]) -> str:
    return codes[0] if len(codes) == 1 else f"{', '.join(codes[:-1])} and {codes[-1]}"
