"""The root of pypto-runtime's exceptions.

Every exception class pypto-runtime defines derives from :class:`PyptoRuntimeError`, so
``except PyptoRuntimeError`` catches what this package raises for its own reasons (as
``simpler.SimplerError`` and ``pypto.ir.errors.PyptoCompileError`` do for theirs). A class
that also has a builtin meaning keeps that builtin base as well (``TensorBindingError`` is a
``TypeError``, ``SettingsError`` a ``ValueError``, ``StoreLockTimeout`` a ``TimeoutError``,
``ModeConflictError`` a ``RuntimeError``), so existing ``except`` clauses still catch them.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["BuildUnavailable", "DeviceBuildUnavailable", "PyptoRuntimeError"]


class PyptoRuntimeError(Exception):
    """Base class of pypto-runtime's failures (artifact store, program mode, mode gate, CLI)."""


class BuildUnavailable(PyptoRuntimeError):
    """The binaries cannot be built here (no toolchain for the platform): keep GENERATED."""


class DeviceBuildUnavailable(BuildUnavailable):
    """A compile for an NPU platform (a2a3, a5) wrote its sources but cannot build them here.

    ``missing`` says what is missing (ASCEND_HOME_PATH unset, no CANN compiler under it, no
    PTO_ISA_ROOT); ``sources`` is the directory holding the sources (see
    :mod:`pypto.runtime.device_build`).
    """

    def __init__(self, message: str, *, missing: str, sources: Path) -> None:
        super().__init__(message)
        self.missing = missing
        self.sources = sources
