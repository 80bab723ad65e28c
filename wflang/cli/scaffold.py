"""``wf init NAME``: a new project folder with a workflow that checks clean, its typed
handlers, a test that runs it on the test kit and the pre-commit configuration.

The files are the templates beside this module (``templates/``) with the name put in;
the handlers' types are written by the generator itself (``wf gen python``), so the
scaffold starts as its own pre-commit hook would leave it.
"""

from __future__ import annotations

import keyword
import re
from pathlib import Path
from string import Template

from attrs import field, frozen

from wflang.cli.framework import Command, Out, Result, UsageError, arg

TEMPLATES = Path(__file__).parent / "templates"
#: What the scaffold holds (the generated package aside), and the template of each.
FILES = {
    "{name}.wf": "workflow.wf.tmpl",
    "handlers.py": "handlers.py.tmpl",
    "test_{name}.py": "test_workflow.py.tmpl",
    ".pre-commit-config.yaml": "pre-commit-config.yaml.tmpl",
    "pyproject.toml": "pyproject.toml.tmpl",
}
GENERATED = "flow_types"
_NAME = re.compile(r"[a-z][a-z0-9_]*")


@frozen(kw_only=True)
class Init:
    name: str = field(
        metadata=arg(
            help="the workflow's name, also the folder's: lower case letters, digits and _"
        )
    )
    path: str = field(
        default=".",
        metadata=arg("--path", metavar="DIR", help="the folder to create it in (default: here)"),
    )


def init(req: Init) -> Result:
    from wflang.dsl.parser import parse
    from wflang.gen import python_package

    if not _NAME.fullmatch(req.name) or keyword.iskeyword(req.name):
        raise UsageError(
            f"cannot name a workflow {req.name!r}: a name is lower case letters, digits and "
            "'_', starting with a letter, and not a Python keyword (it names a module too)"
        )
    folder = Path(req.path) / req.name
    if folder.exists():
        raise UsageError(f"{folder} already exists: wf init makes a new folder")
    texts = {
        target.format(name=req.name): Template(
            (TEMPLATES / template).read_text("utf-8")
        ).substitute(name=req.name)
        for target, template in FILES.items()
    }
    workflow = f"{req.name}.wf"
    parsed = parse(texts[workflow], str(folder / workflow))
    if parsed.spec is None or parsed.diagnostics:  # a word the language reserves there
        raise UsageError(f"cannot name a workflow {req.name!r}: the language reserves it")
    generated = python_package([parsed], str(folder / GENERATED))
    if generated.files is None:  # the name clashes with something the workflow declares
        raise UsageError(f"cannot name a workflow {req.name!r}: its check fails with that name")
    try:
        (folder / GENERATED).mkdir(parents=True)
        for name, text in texts.items():
            (folder / name).write_text(text, encoding="utf-8")
        for f in generated.files:
            (folder / GENERATED / f.name).write_text(f.text, encoding="utf-8")
    except OSError as err:
        raise UsageError(f"cannot write {folder}: {err}") from err
    out = Out()
    for name in [*texts, *(f"{GENERATED}/{f.name}" for f in generated.files)]:
        out.print(f"created {folder / name}")
    out.print(
        f"next: cd {folder} && wf check . && pytest "
        "(and 'pre-commit install' to check every commit)"
    )
    return out.done()


INIT = Command(
    ("init",),
    Init,
    init,
    help="create a project: a workflow, its typed handlers, a test and pre-commit hooks",
    description="Create the folder NAME with NAME.wf (a workflow that checks clean: a "
    "service task with retries and an error route), flow_types/ (its types, by 'wf gen "
    "python'), handlers.py (the services, typed by them), test_NAME.py (the workflow run "
    "by the test kit), .pre-commit-config.yaml (wf fmt --check, wf check, wf gen python "
    "--check) and pyproject.toml ([tool.wflang]).",
)

#: This module's commands.
COMMANDS = (INIT,)
