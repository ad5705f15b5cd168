"""How every step checks its result: compare with a reference, print one line, exit 0 or 1.

A step with one output returns ``compare(step, got, want, ...)`` from ``main``; a step with
several makes one ``Check``, calls it once per output, and returns ``check.status()``. A mismatch prints ``stepNN MISMATCH ...``; when all matched,
``status`` prints ``stepNN ok: max abs err ...`` (the line testing/tests/test_tutorial.py reads).
"""

from __future__ import annotations

import numpy as np


class Check:
    def __init__(self, step: str) -> None:
        self.step = step
        self.worst = 0.0
        self.failed = False

    def __call__(
        self, got: np.ndarray, want: np.ndarray, *, rtol: float, atol: float, where: str = ""
    ) -> bool:
        """Whether ``got`` matches ``want`` (same shape, all close, no NaN); prints a mismatch."""
        if got.shape != want.shape:
            print(f"{self.step} MISMATCH{where}: shape {got.shape}, expected {want.shape}")
            self.failed = True
            return False
        err = float(np.abs(got - want).max()) if np.isfinite(got).all() else float("inf")
        self.worst = max(self.worst, err)
        if np.allclose(got, want, rtol=rtol, atol=atol):
            return True
        print(f"{self.step} MISMATCH{where}: max abs err {err:.3e}")
        self.failed = True
        return False

    def status(self) -> int:
        """The step's exit status; prints the ok line when every call matched."""
        if self.failed:
            return 1
        print(f"{self.step} ok: max abs err {self.worst:.3e}")
        return 0


def compare(step: str, got: np.ndarray, want: np.ndarray, *, rtol: float, atol: float) -> int:
    """A step's exit status for its one output; prints the mismatch or the ok line."""
    check = Check(step)
    check(got, want, rtol=rtol, atol=atol)
    return check.status()
