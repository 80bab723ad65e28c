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
from wflang.compiler.diff.registry import DiffRule, diff_rules_in_order
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


def _rule_json(c: Code) -> dict[str, str]:
    return {
        "code": c.id,
        "name": c.name,
        "category": c.category,
        "severity": c.severity.value,
        "preset": _preset(c),
        "summary": c.summary,
        "doc": c.doc,
    }


def rules_json() -> str:
    return json.dumps([_rule_json(c) for c in CODES.all()], indent=2) + "\n"


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
        out += ["", _rule_markdown(c).rstrip("\n")]
    return "\n".join(out).rstrip() + "\n\n" + diff_rules_markdown()


def _rule_markdown(c: Code) -> str:
    """A code's entry in docs/rules.md: what it checks, then a bad and a good example."""
    head = f"**`{c.name}`** · {c.category} · {c.severity.value} · preset: {_preset(c)}"
    return f"## {c.id}\n\n{head}\n\n{c.summary}\n\n{_examples(c.doc)}".rstrip() + "\n"


def _diff_rule_markdown(r: DiffRule) -> str:
    head = f"**`{r.code.name}`** · {r.category.value} · {r.level.value}"
    return f"## {r.id}\n\n{head}\n\n{r.code.summary}\n\n{_examples(r.code.doc)}".rstrip() + "\n"


def _diff_rule_json(r: DiffRule) -> dict[str, str]:
    return {
        "code": r.id,
        "name": r.code.name,
        "level": r.level.value,
        "category": r.category.value,
        "severity": r.code.severity.value,
        "summary": r.code.summary,
        "doc": r.code.doc,
    }


def explain(key: str, fmt: str) -> str | None:
    """``wf rules CODE``: one rule of wf check or wf diff (by code or name), its entry of
    docs/rules.md (``json``: its object of ``--format json``); None when there is none."""
    code = CODES.lookup(key)
    if code is not None:
        return (
            json.dumps(_rule_json(code), indent=2) + "\n" if fmt == "json" else _rule_markdown(code)
        )
    for r in diff_rules_in_order():
        if key.upper() == r.id or key.lower() == r.code.name:
            return (
                json.dumps(_diff_rule_json(r), indent=2) + "\n"
                if fmt == "json"
                else _diff_rule_markdown(r)
            )
    return None


def rule_names() -> list[str]:
    """Every code and name ``explain`` knows."""
    names = [n for c in CODES.all() for n in (c.id, c.name)]
    return names + [n for r in diff_rules_in_order() for n in (r.id, r.code.name)]


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
    return json.dumps([_diff_rule_json(r) for r in diff_rules_in_order()], indent=2) + "\n"


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
        out += ["", _diff_rule_markdown(r).rstrip("\n")]
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
