"""When a change of a .wf file makes its generated Python stale for handlers: a service
declared with other parameters or another result, added or removed (``wf diff`` says
so: regenerate with ``wf gen python``, and mypy then shows the handlers to change)."""

from __future__ import annotations

from wflang.dsl import spec as sp


def signature(decl: sp.ServiceDecl) -> str:
    """A service's parameters and result as the generated code types them."""
    params = ", ".join(
        f"{p.name.text}: {p.type}" + (" = …" if p.default is not None else "") for p in decl.params
    )
    if decl.result is None:
        result = ""
    elif isinstance(decl.result, tuple):
        result = " -> { " + ", ".join(f"{f.name.text}: {f.type}" for f in decl.result) + " }"
    else:
        result = f" -> {decl.result}"
    return f"{decl.name.text}({params}){result}"


def _services(spec: sp.WorkflowSpec) -> dict[str, str]:
    return {d.name.text: signature(d) for d in spec.declarations if isinstance(d, sp.ServiceDecl)}


def regenerate_notes(old: sp.WorkflowSpec, new: sp.WorkflowSpec) -> list[str]:
    """What changed in the services a file declares that its generated types follow."""
    before, after = _services(old), _services(new)
    notes = []
    for name, text in after.items():
        if name not in before:
            notes.append(f"service {name} is new: {text}")
        elif before[name] != text:
            notes.append(f"service {name} changed its signature: {before[name]} → {text}")
    notes += [f"service {name} was removed" for name in before if name not in after]
    return [f"{n}; regenerate the typed handlers (wf gen python)" for n in notes]
