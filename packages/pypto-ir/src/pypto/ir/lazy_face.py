"""A package face whose names load on first use: the module ``__getattr__`` that ``pypto.ir``,
``pypto.language.interface`` and ``pypto.runtime`` share. Importing this module imports
nothing but :mod:`importlib`."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_getattr"]


def lazy_getattr(
    module: str, table: Mapping[str, tuple[str, str]], namespace: dict[str, Any]
) -> Callable[[str], Any]:
    """The ``__getattr__`` of module ``module`` (pass its ``globals()`` as ``namespace``) for the
    names of ``table``: name -> (module that defines it, its attribute there; ``""`` for that
    module itself). A name is imported on its first access and kept in ``namespace``, so the
    next access does not come here; any other name raises AttributeError."""

    def __getattr__(name: str) -> Any:
        where = table.get(name)
        if where is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        imported = importlib.import_module(where[0])
        value = getattr(imported, where[1]) if where[1] else imported
        namespace[name] = value
        return value

    return __getattr__
