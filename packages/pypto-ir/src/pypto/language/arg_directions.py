"""``pl.adir``: the per-argument directions upstream's printer writes on a kernel call,
``self.kernel(x, dst, attrs={"arg_directions": [pl.adir.input, pl.adir.output_existing]})``.

Here a kernel call's directions are derived from the kernel's parameters (the call_directions
pass), so the parser checks the keyword (a known marker per argument) and does not store it; it
exists so that ``pl.parse`` reads upstream's printed programs back.
"""

from __future__ import annotations

__all__ = ["ADIR_NAMES", "adir"]

ADIR_NAMES = ("input", "output", "inout", "output_existing", "no_dep", "scalar")
"""Upstream's direction markers (its ``ArgDirection`` names)."""


class _ArgDirection(str):
    """One ``pl.adir.<name>`` marker."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"pl.adir.{self!s}"


class _Adir:
    """The namespace ``pl.adir``: one marker per direction."""

    input = _ArgDirection("input")
    output = _ArgDirection("output")
    inout = _ArgDirection("inout")
    output_existing = _ArgDirection("output_existing")
    no_dep = _ArgDirection("no_dep")
    scalar = _ArgDirection("scalar")


adir = _Adir()
