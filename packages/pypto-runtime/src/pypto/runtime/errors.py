"""The root of pypto-runtime's exceptions.

Every exception class pypto-runtime defines derives from :class:`PyptoRuntimeError`, so
``except PyptoRuntimeError`` catches what this package raises for its own reasons (as
``simpler.SimplerError`` and ``pypto.ir.errors.PyptoCompileError`` do for theirs). A class
that also has a builtin meaning keeps that builtin base as well (``TensorBindingError`` is a
``TypeError``, ``SettingsError`` a ``ValueError``, ``StoreLockTimeout`` a ``TimeoutError``,
``ModeConflictError`` a ``RuntimeError``), so existing ``except`` clauses still catch them.
"""

from __future__ import annotations

__all__ = ["PyptoRuntimeError"]


class PyptoRuntimeError(Exception):
    """Base class of pypto-runtime's failures (artifact store, program mode, mode gate, CLI)."""
