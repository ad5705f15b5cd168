"""Upstream compatibility: what pypto-ir has only so that programs written for upstream PyPTO
run unchanged. Nothing in the compiler depends on it beyond checking the options.

- ``pypto.ir.pass_manager``: upstream's module of ``OptimizationStrategy`` (one member,
  ``Default``: the compiler has one pipeline; accepted, checked, changes nothing) and
  ``PassDumpLevel`` (``pypto.ir.compile(..., dump_passes=...)`` writes the IR after each stage).
- ``pypto.backend``: upstream's import path of ``BackendType`` (the platform table,
  ``pypto.ir.platforms``, decides the backend; a given one is checked against the platform).
- The face names :data:`FACE_NAMES`, on ``pypto.ir`` for pypto-runtime's ``RunConfig`` fields
  of the same purpose (``pypto.runtime.upstream``).
"""

from __future__ import annotations

__all__ = ["FACE_NAMES", "UPSTREAM_MODULES"]

UPSTREAM_MODULES = ("pypto.ir.pass_manager", "pypto.backend")

FACE_NAMES = (
    "BackendType",
    "OptimizationStrategy",
    "PassDumpLevel",
    "check_backend",
    "check_dump_passes",
    "check_strategy",
)
