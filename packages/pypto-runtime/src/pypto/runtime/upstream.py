"""Upstream compatibility: what pypto-runtime has only so that programs written for upstream
PyPTO run unchanged. Nothing else in the package depends on it; each item says what it does.

- Six :class:`~pypto.runtime.RunConfig` fields are accepted and checked, and change nothing in
  a run (:data:`CHECKED_ONLY_FIELDS`, checked by :func:`check_fields`): ``strategy`` (the
  compiler has one pipeline), ``backend_type`` (the platform decides the backend; checked
  against it), ``dump_passes`` (a program-mode compile writes no per-pass dump),
  ``compile_profiling`` (nobody times a program-mode compile), ``rtol``/``atol`` (the
  tolerances of a reference check that upstream's harness reads from the config; a run
  compares nothing).
- ``pypto.runtime.distributed_runner``: upstream's module name for the multi-chip worker and
  ``_tensor_from_continuous``.

pypto-ir's counterpart is :mod:`pypto.ir.upstream` (``pypto.ir.pass_manager``, ``pypto.backend``).
"""

from __future__ import annotations

from typing import Any

from pypto.ir import check_backend, check_dump_passes, check_strategy

__all__ = ["CHECKED_ONLY_FIELDS", "UPSTREAM_MODULES", "check_fields"]

CHECKED_ONLY_FIELDS = ("strategy", "backend_type", "dump_passes", "compile_profiling", "rtol", "atol")

UPSTREAM_MODULES = ("pypto.runtime.distributed_runner",)


def check_fields(config: Any) -> None:
    """Check ``config``'s upstream-only fields (ValueError/TypeError naming the field)."""
    check_strategy(config.strategy)
    check_backend(config.backend_type, config.platform)
    check_dump_passes(config.dump_passes)
    if not isinstance(config.compile_profiling, bool):
        raise ValueError(f"RunConfig(compile_profiling): expected a bool, got {config.compile_profiling!r}")
    for name in ("rtol", "atol"):
        tol = getattr(config, name)
        if isinstance(tol, bool) or not isinstance(tol, (int, float)) or not tol >= 0:
            raise ValueError(f"RunConfig({name}): expected a number >= 0, got {tol!r}")
