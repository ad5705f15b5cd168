"""The rounding modes of ``pl.cast``: their names, int codes and the one check of a mode.

A mode rounds every narrowing conversion of a cast: float -> integer and FP32 -> FP16/BF16,
FP16 <-> BF16. Casts record the canonical name in their ``mode`` attribute; a cast without one
rounds by ``DEFAULT``. The codes are PTO-ISA's ``RoundMode`` values
(``CAST_NONE`` ... ``CAST_ODD``).
"""

from __future__ import annotations

from typing import Any

from pypto.ir.ops.spec import OpError

# name -> code; the order is the codes'.
CAST_MODES: dict[str, int] = {
    "none": 0,  # the default conversion: nearest, ties to even
    "rint": 1,  # nearest, ties to even
    "round": 2,  # nearest, ties away from zero
    "floor": 3,  # toward -inf
    "ceil": 4,  # toward +inf
    "trunc": 5,  # toward zero
    "odd": 6,  # round to odd: an inexact result takes the neighbour whose last bit is 1
}
DEFAULT = "round"
_CPP = {
    "none": "None",
    "rint": "Rint",
    "round": "Round",
    "floor": "Floor",
    "ceil": "Ceil",
    "trunc": "Trunc",
    "odd": "Odd",
}


def cast_mode(mode: Any, where: str = "pl.cast") -> str:
    """The canonical name of ``mode`` (a name or its int code); ``OpError`` naming ``mode``
    otherwise."""
    if isinstance(mode, int) and not isinstance(mode, bool):
        for name, code in CAST_MODES.items():
            if code == mode:
                return name
    elif isinstance(mode, str) and mode in CAST_MODES:
        return mode
    accepted = ", ".join(f"{n!r} ({c})" for n, c in CAST_MODES.items())
    raise OpError(f"{where}: mode must be one of {accepted}, got {mode!r}")


def cpp_round_mode(mode: str | None) -> str:
    """The PTO-ISA ``RoundMode`` enumerator of a cast's ``mode`` attribute (None: ``DEFAULT``).
    ``"none"`` (nearest, ties to even) is emitted as ``CAST_RINT``: TCVT's reference page
    defines RINT, ROUND, FLOOR, CEIL and TRUNC (and the headers ODD), not what CAST_NONE does
    to a narrowing conversion (the official CPU backend truncates a float -> integer one)."""
    name = cast_mode(DEFAULT if mode is None else mode)
    return "RoundMode::CAST_" + ("rint" if name == "none" else name).upper()
