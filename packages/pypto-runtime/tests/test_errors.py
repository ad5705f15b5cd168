"""Every exception class pypto-runtime defines derives from its root, PyptoRuntimeError, and
keeps the builtin base its callers catch."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

import pypto.runtime
from pypto.runtime import PyptoRuntimeError


def _exception_classes() -> list[type[BaseException]]:
    found = []
    for info in pkgutil.walk_packages(pypto.runtime.__path__, "pypto.runtime."):
        if info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        for _, obj in inspect.getmembers(module, inspect.isclass):
            if (
                obj.__module__ == module.__name__
                and issubclass(obj, BaseException)
                and not issubclass(obj, Warning)
            ):
                found.append(obj)
    return found


def test_every_runtime_error_has_the_root() -> None:
    classes = _exception_classes()
    assert len(classes) >= 8, classes  # the walk found the package's errors
    stray = [c.__qualname__ for c in classes if not issubclass(c, PyptoRuntimeError)]
    assert not stray, f"not derived from PyptoRuntimeError: {stray}"


@pytest.mark.parametrize(
    ("name", "builtin"),
    [
        ("pypto.runtime.host_tensors.TensorBindingError", TypeError),
        ("pypto.runtime.settings.SettingsError", ValueError),
        ("pypto.runtime.store.StoreLockTimeout", TimeoutError),
        ("pypto.runtime.mode_gate.ModeConflictError", RuntimeError),
    ],
)
def test_builtin_bases_are_kept(name: str, builtin: type[BaseException]) -> None:
    module, _, cls = name.rpartition(".")
    error = getattr(importlib.import_module(module), cls)
    assert issubclass(error, PyptoRuntimeError)
    assert issubclass(error, builtin)
