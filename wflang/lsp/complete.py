"""Completion and signature help, from the text before the cursor and the last check
that parsed (a line being typed seldom parses: the model of the last good text still
knows the nodes, the declarations and the node the cursor is in)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from lsprotocol import types as lsp

from wflang.compiler.handled_errors import error_type
from wflang.compiler.inference import type_env
from wflang.compiler.model import Model
from wflang.compiler.types import PRIMITIVES, Record, TypeEnv, strip
from wflang.dsl import spec as sp
from wflang.dsl.parser import vocabulary
from wflang.dsl.walk import walk_nodes
from wflang.lsp.builtins import SIGNATURES

C = lsp.CompletionItemKind
#: Words that start a line at the top of a file, and inside a node (kept to those the
#: grammar has: ``vocabulary().keywords``).
TOP_WORDS = ("workflow", "import", "type", "enum", "input", "context", "output", "signal",
             "message", "error", "service", "start", "task", "choice", "wait", "first",
             "sleep", "parallel", "map", "call", "end")  # fmt: skip
NODE_WORDS = ("args", "output", "retry", "timeout", "on", "compensate", "next", "when",
              "else", "branch", "join", "form", "raises", "local", "collect",
              "renamed", "after", "until")  # fmt: skip
_MEMBER = re.compile(r"([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)\.(\w*)$")
_NODE_REF = re.compile(r"(?:\bnext|->|\bcompensate|\bstart)\s+(\w*)$")
_SERVICE = re.compile(r"\bservice\s+([\w.]*)$")
_ERROR = re.compile(r"(?:\bon|\braises|\berror)\s+(?:\w+\s*,\s*)*(\w*)$")
_TRIGGER = re.compile(r"\b(signal|message)\s+(\w*)$")
_TYPE = re.compile(r"\w+\s*:\s*([\w.\[\], ]*)$")
_LINE_START = re.compile(r"^\s*(\w*)$")


def _item(label: str, kind: lsp.CompletionItemKind, detail: str | None = None,
          doc: str | None = None) -> lsp.CompletionItem:  # fmt: skip
    return lsp.CompletionItem(label, kind=kind, detail=detail, documentation=doc)


def enclosing(model: Model, line: int) -> sp.Node | None:
    """The innermost node whose text holds the line."""
    best = None
    for placed in walk_nodes(model.spec.nodes):
        s = placed.node.span
        if s.line <= line <= s.end_line:
            best = placed.node
    return best


def completions(model: Model | None, before: str, line: int) -> list[lsp.CompletionItem]:
    """What may be written at the cursor, given the text of its line before it."""
    if model is None:
        return _keywords(TOP_WORDS, before) or []
    node = enclosing(model, line)
    if m := _MEMBER.search(before):
        found = _members(model, node, m.group(1), line)
        return [_item(n, C.Field, d) for n, d in found.items()]
    if _NODE_REF.search(before):
        return [_item(n, C.Function, _kind(i.node)) for n, i in model.nodes.items()]
    if _SERVICE.search(before):
        return [_item(n, C.Interface, _signature(s)) for n, s in model.services.items()]
    if m := _TRIGGER.search(before):
        decls: Mapping[str, object] = model.signals if m.group(1) == "signal" else model.messages
        return [_item(n, C.Event, m.group(1)) for n in decls]
    if node is not None and _ERROR.search(before):
        return [_item(n, C.Class, "error") for n in model.errors] + [_item("any", C.Keyword)]
    if node is None and _TYPE.search(before):
        return [_item(t, C.Struct, "type") for t in (*PRIMITIVES, "list", "map", *model.types)]
    words = _keywords(NODE_WORDS if node else TOP_WORDS, before)
    if words is not None:
        return words
    return _expression_items(model, node, line)


def _keywords(words: Iterable[str], before: str) -> list[lsp.CompletionItem] | None:
    if not _LINE_START.match(before):
        return None
    known = vocabulary().keywords
    return [_item(w, C.Keyword) for w in words if w in known]


def _kind(node: sp.Node) -> str:
    return type(node).__name__.removesuffix("Node").lower()


def _expression_items(
    model: Model, node: sp.Node | None, line: int = 0
) -> list[lsp.CompletionItem]:
    roots = ["input", "context"]
    if node is not None:
        roots += [r for r in ("result", "signal", "message") if _root(model, node, r, line)]
        roots += ["error"] if _error_fields(model, node) else []
    found = [_item(r, C.Variable) for r in roots]
    found += [_item(n, C.Function, sig, doc) for n, (sig, doc) in SIGNATURES.items()]
    found += [
        _item(n, C.Enum, "enum") for n, d in model.types.items() if isinstance(d, sp.EnumDecl)
    ]
    return found


def _root(
    model: Model, node: sp.Node | None, root: str, line: int = 0
) -> dict[str, sp.Field] | None:
    """The fields of a root name as the node sees it at the line (None: it is not there)."""
    fields: Iterable[sp.Field] | None = None
    if root in ("input", "context", "output"):
        return dict(getattr(model, root))
    if root == "result" and isinstance(node, sp.TaskNode) and isinstance(node.work, sp.ServiceWork):
        service = model.services.get(node.work.service.text)
        fields = model.result_fields(service) if service else None
    elif root in ("signal", "message") and node is not None:
        trigger = _awaited(node, line)
        if isinstance(trigger, sp.SignalTrigger) and root == "signal":
            decl = model.signals.get(trigger.signal.text)
            fields = decl.payload if decl else None
        elif isinstance(trigger, sp.MessageTrigger) and root == "message":
            found = model.messages.get(trigger.message.text)
            fields = found.payload if found else None
    return {f.name.text: f for f in fields} if fields is not None else None


def _error_fields(model: Model, node: sp.Node) -> dict[str, str] | None:
    """``error.``: what the node an ``on`` route leads to reads (name, message, payload)."""
    env = type_env(model)
    t = error_type(model, env, node)
    record = strip(t) if t is not None else None
    got = env.field_types(record) if isinstance(record, Record) else None
    return {n: str(t) for n, t in got.items()} if got is not None else None


def _awaited(node: sp.Node, line: int) -> sp.WaitTrigger | sp.ArmTrigger | None:
    """What arrived at the line, read as ``signal`` or ``message``: a wait's trigger, or
    that of the boundary event or the arm of a ``first`` whose ``output`` holds the line
    (each reads its own payload)."""
    if isinstance(node, sp.WaitNode):
        return node.trigger
    routes: tuple[sp.OnEvent | sp.EventArm, ...] = (
        *getattr(node, "events", ()),
        *(node.arms if isinstance(node, sp.FirstNode) else ()),
    )
    return next((r.trigger for r in routes if r.span.line <= line <= r.span.end_line), None)


def _members(model: Model, node: sp.Node | None, path: str, line: int = 0) -> dict[str, str]:
    """The fields (or enum members) after ``path.``: name -> type as written."""
    first, *rest = path.split(".")
    decl = model.types.get(path)
    if isinstance(decl, sp.EnumDecl):
        return {m.text: path for m in decl.members}
    if path == "error" and node is not None:
        return _error_fields(model, node) or {}
    fields = _root(model, node, first, line)
    env = type_env(model)
    for name in rest:
        if fields is None or name not in fields:
            return {}
        fields = _fields_of(env, fields[name])
    if fields is None:
        return {}
    return {n: str(f.type) for n, f in fields.items()}


def _fields_of(env: TypeEnv, f: sp.Field) -> dict[str, sp.Field] | None:
    t = strip(env.resolve(f.type))
    got = env.fields(t) if isinstance(t, Record) else None
    return dict(got) if got is not None else None


def _signature(service: sp.ServiceDecl) -> str:
    params = ", ".join(f"{p.name.text}: {p.type}" for p in service.params)
    return f"{service.name.text}({params})"


def signature_help(model: Model | None, text_before: str, line: int) -> lsp.SignatureHelp | None:
    """A builtin's signature inside its parentheses, or a service's inside a task's
    ``args { … }``, with the argument being written active."""
    call = _open_call(text_before)
    if call is not None and call[0] in SIGNATURES:
        name, commas = call
        label, doc = SIGNATURES[name]
        inside = label[label.index("(") + 1 : label.rindex(")")]
        params = [lsp.ParameterInformation(p.strip(" []")) for p in inside.split(",") if p.strip()]
        info = lsp.SignatureInformation(label, documentation=doc, parameters=params)
        return lsp.SignatureHelp([info], 0, min(commas, max(len(params) - 1, 0)))
    if model is None or not _in_args(text_before):
        return None
    node = enclosing(model, line)
    if not (isinstance(node, sp.TaskNode) and isinstance(node.work, sp.ServiceWork)):
        return None
    service = model.services.get(node.work.service.text)
    if service is None:
        return None
    labels = [f"{p.name.text}: {p.type}" for p in service.params]
    current = re.search(r"(?:^|[{,\n])\s*(\w+)\s*:?[^,{\n]*$", text_before)
    names = [p.name.text for p in service.params]
    active = names.index(current.group(1)) if current and current.group(1) in names else 0
    info = lsp.SignatureInformation(
        _signature(service), parameters=[lsp.ParameterInformation(p) for p in labels]
    )
    return lsp.SignatureHelp([info], 0, active)


def _open_call(text: str) -> tuple[str, int] | None:
    """The function whose parentheses are open at the end of ``text``, and how many of
    its arguments are written already (the commas at its own depth)."""
    depth = commas = 0
    for i in range(len(text) - 1, -1, -1):
        ch = text[i]
        if ch in ")]":
            depth += 1
        elif ch in "([":
            if depth == 0:
                if ch == "[":
                    return None
                m = re.search(r"(\w+)\s*$", text[:i])
                return (m.group(1), commas) if m else None
            depth -= 1
        elif ch == "," and depth == 0:
            commas += 1
        elif ch in "{}\n" and depth == 0 and ch != "\n":
            return None
    return None


def _in_args(text: str) -> bool:
    """Whether the end of ``text`` lies inside an ``args { … }`` block."""
    depth = 0
    for i in range(len(text) - 1, -1, -1):
        if text[i] == "}":
            depth += 1
        elif text[i] == "{":
            if depth == 0:
                return text[:i].rstrip().endswith("args")
            depth -= 1
    return False
