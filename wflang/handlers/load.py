"""The handlers of a module, named by its import name or by its file.

A module's handlers are what it holds: the functions marked by ``@handler`` (this
package's, or ``wflang.runtime.engine.handler``, the older spelling) and every
``Registry`` it defines. Only those: a handler registered by another module
imported in the same process is not one of them, so a worker serves exactly the
modules it is given.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from collections.abc import Iterable
from pathlib import Path
from types import ModuleType

from wflang.handlers.registry import MARK, Registry
from wflang.runtime import engine


class HandlersError(Exception):
    """A handlers module cannot be found or fails while it loads."""


def import_source(source: str | Path | ModuleType) -> ModuleType:
    """Import a handlers module: by name (``order_handlers``, found on ``sys.path``) or by
    file (``examples/order_handlers.py``, whose folder is put on ``sys.path`` so that it
    imports its neighbours)."""
    if isinstance(source, ModuleType):
        return source
    name = str(source)
    try:
        if isinstance(source, Path) or name.endswith(".py") or os.sep in name:
            path = Path(name)
            spec = importlib.util.spec_from_file_location(path.stem, path)
            if not path.is_file() or spec is None or spec.loader is None:
                raise HandlersError(f"cannot import handlers {name!r}: no such Python file")
            sys.path.insert(0, str(path.resolve().parent))
            module = importlib.util.module_from_spec(spec)
            sys.modules[path.stem] = module
            spec.loader.exec_module(module)
            return module
        return importlib.import_module(name)
    except HandlersError:
        raise
    except Exception as err:  # whatever the module raised while loading
        what = f"{type(err).__name__}: {err}"
        raise HandlersError(f"cannot import handlers {name!r}: {what}") from err


def handlers_of(module: ModuleType) -> Registry:
    """The handlers a module holds (see the module's docstring), in its order."""
    found = Registry()
    older = {id(fn): service for service, fn in engine.registered_handlers().items()}
    once = engine.at_most_once_services()
    for value in list(vars(module).values()):
        if isinstance(value, Registry):
            found.update(value)
        elif callable(value) and (mark := getattr(value, MARK, None)) is not None:
            found.add(mark[0], value, at_most_once=mark[1])
        elif callable(value) and id(value) in older:
            service = older[id(value)]
            found.add(service, value, at_most_once=service in once)
    return found


def load(sources: Iterable[str | Path | ModuleType]) -> Registry:
    """The handlers of the modules named, the later ones winning for a service."""
    registry = Registry()
    for source in sources:
        registry.update(handlers_of(import_source(source)))
    return registry
