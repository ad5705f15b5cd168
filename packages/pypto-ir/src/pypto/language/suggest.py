"""What to write instead: suggestions for names that the kernel language does not have.

Two mistakes come up again and again: a ``pl`` name that does not exist (``pl.tanh``,
``pl.ad``), and a numpy/math/torch function called inside a kernel (``np.exp(t)``). Both get a
message that names the ``pl`` op (or the composition of ops) to use. Close spellings come from
:func:`difflib.get_close_matches` over the real names; well-known math names that ``pl``
spells differently or composes from other ops come from :data:`COMPOSED`.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

__all__ = ["COMPOSED", "FOREIGN_LIBRARIES", "foreign_library", "instead_of"]

COMPOSED: dict[str, str] = {
    "softmax": "compose it: pl.row_max, pl.row_expand_sub, pl.exp, pl.row_sum, pl.row_expand_div",
    "log_softmax": (
        "compose it: m = pl.row_max(x); d = pl.row_expand_sub(x, m); "
        "pl.row_expand_sub(d, pl.log(pl.row_sum(pl.exp(d))))"
    ),
    "swish": "use pl.silu",
    "gelu_tanh": 'use pl.gelu(x, approximate="tanh")',
    "square": "use pl.mul(x, x)",
    "power": "use pl.pow",
    "float_power": "use pl.pow",
    "multiply": "use pl.mul",
    "subtract": "use pl.sub",
    "divide": "use pl.div",
    "true_divide": "use pl.div",
    "negative": "use pl.neg",
    "reciprocal": "use pl.recip",
    "absolute": "use pl.abs",
    "amax": "use pl.row_max / pl.col_max",
    "amin": "use pl.row_min / pl.col_min",
    "sum": "use pl.row_sum / pl.col_sum",
    "mean": "use pl.row_sum (or pl.col_sum), then pl.mul by 1/n",
    "dot": "use pl.matmul",
    "einsum": "use pl.matmul",
    "clip": "use pl.maximums and pl.minimums (scalar bounds) or pl.maximum and pl.minimum",
    "clamp": "use pl.maximums and pl.minimums (scalar bounds) or pl.maximum and pl.minimum",
    "adds": "use pl.tile.adds (or pl.tensor.adds), or pl.add(x, scalar)",
    "subs": "use pl.tile.subs (or pl.tensor.subs), or pl.sub(x, scalar)",
    "muls": "use pl.tile.muls (or pl.tensor.muls), or pl.mul(x, scalar)",
    "divs": "use pl.tile.divs (or pl.tensor.divs), or pl.div(x, scalar)",
    "zeros": "use pl.full(shape, 0.0, dtype) (a tile) or pl.create_tensor",
    "zeros_like": "use pl.full with the tile's shape and dtype",
    "ones": "use pl.full(shape, 1.0, dtype)",
    "astype": "use pl.cast",
    "concatenate": "use pl.concat",
}
"""Names that ``pl`` spells differently or composes from other ops -> what to write. A composition
written here must be as accurate as the op it stands for over the dtype's whole range (no
``exp(2x)`` that overflows, no ``1 - erf`` that cancels); pypto-runtime's
tests/test_composed_math.py runs the softmax ones on extreme rows."""

FOREIGN_LIBRARIES: tuple[str, ...] = ("numpy", "math", "torch", "scipy", "jax")
"""Libraries whose functions run on the host only, never inside a kernel."""


def instead_of(name: str, candidates: Iterable[str], prefix: str = "pl.", close_names: bool = True) -> str:
    """What to use instead of the missing ``name``: a clause to append to an error, or ''.

    ``close_names=False`` leaves out close spellings (Python's own AttributeError already
    suggests those for a module attribute).
    """
    if name in COMPOSED:
        return COMPOSED[name]
    if not close_names:
        return ""
    public = [c for c in candidates if not c.startswith("_")]
    close = difflib.get_close_matches(name, public, n=3, cutoff=0.6)
    if close:
        return "did you mean " + " or ".join(prefix + c for c in close) + "?"
    return ""


def foreign_library(obj: object) -> str | None:
    """The library (numpy, math, torch, ...) that a called object belongs to, or None."""
    module = getattr(obj, "__module__", None) or getattr(type(obj), "__module__", None) or ""
    if type(obj).__name__ == "ufunc":  # numpy's ufuncs (np.tanh) report no module of their own
        module = "numpy"
    root = module.split(".", 1)[0]
    if root in ("builtins", "_operator") and getattr(obj, "__self__", None) is not None:
        root = type(obj.__self__).__module__.split(".", 1)[0]  # type: ignore[attr-defined]
    return root if root in FOREIGN_LIBRARIES else None
