"""Upstream compatibility (``pypto.ir.upstream``): the options that choose how a program is
lowered, the optimisation strategy and the per-pass IR dump, with the checks every entry point
applies to them.

The compiler has one pipeline (``pypto.ir.pipeline``), so ``OptimizationStrategy.Default`` is
its only strategy: it is accepted, checked and changes nothing. ``dump_passes`` asks
:func:`pypto.ir.compile` to write the IR after each lowering stage next to the artifact.
"""

from __future__ import annotations

from enum import Enum

from pypto.ir.types import enum_member

__all__ = ["OptimizationStrategy", "PassDumpLevel", "check_dump_passes", "check_strategy"]


class OptimizationStrategy(Enum):
    """How passes are chosen. ``Default``: the pipeline's stages (``pipeline.STAGES``)."""

    Default = "Default"


class PassDumpLevel(Enum):
    """How much IR a per-pass dump writes: ``NONE``, or each stage's printed program
    (``CONCISE``; ``EXPLICIT`` prints the same text, the printer has one level of detail)."""

    NONE = 0
    CONCISE = 1
    EXPLICIT = 2


def check_strategy(strategy: object) -> OptimizationStrategy:
    """``strategy`` (an OptimizationStrategy or its name) as the enum; ValueError otherwise."""
    return enum_member(OptimizationStrategy, strategy, "strategy")


def check_dump_passes(dump_passes: object) -> PassDumpLevel:
    """``dump_passes`` (a bool, or a PassDumpLevel) as a level: True is CONCISE, False NONE."""
    if isinstance(dump_passes, PassDumpLevel):
        return dump_passes
    if isinstance(dump_passes, bool):
        return PassDumpLevel.CONCISE if dump_passes else PassDumpLevel.NONE
    raise ValueError(f"dump_passes: expected a bool or a PassDumpLevel, got {dump_passes!r}")
