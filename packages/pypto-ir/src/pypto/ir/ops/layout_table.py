"""The op table's shape and type entries: reshape, transpose, concat, cast and scalar
constants."""

from __future__ import annotations

from pypto.ir.ops import rules
from pypto.ir.ops.entries import P, _both, _enter, _tile_and_tensor
from pypto.ir.ops.rules import VEC
from pypto.ir.ops.spec import Cpp, LangOp, OpSpec
from pypto.ir.types import MemorySpace

__all__: list[str] = []


_tile_and_tensor(
    "reshape",
    (P("input"), P("shape")),
    """Same elements, new 2-D shape.""",
    group="layout",
    rules_of=(rules.tile_reshape, rules.tensor_reshape),
    arity=(1, 1),
    cpp=Cpp("TRESHAPE", valid="static"),
    attrs=("shape",),
)
_tile_and_tensor(
    "transpose",
    (P("input"), P("axis1", 0), P("axis2", 1)),
    """Swap the two axes of a 2-D tile or tensor; of a tensor-level value of rank 3 or more, the
    last two axes (each ``[M, N]`` plane transposed, the leading dims kept).""",
    group="layout",
    rules_of=(rules.tile_transpose, rules.tensor_transpose),
    arity=(1, 1),
    cpp=Cpp("TTRANS", tmp=True, valid="trans"),
)
_enter(
    LangOp(
        "transpose_view",
        (P("tile"),),
        """A 2-D Mat or Vec tile read as its transpose (``[r, c]`` -> ``[c, r]``), e.g. a key block
        on L1 used as the right operand of ``q @ k.T``. A Mat tile's transpose is its own bytes
        read in the other fractal layout (NZ as ZN, TRESHAPE: no data moves); a Vec tile's is a
        transposed copy (TTRANS).""",
        {"tile": "tile.transpose_view"},
        group="layout",
    ),
    OpSpec(
        "tile.transpose_view",
        rules.tile_transpose_view,
        1,
        1,
        Cpp("TTRANS", tmp=True, valid="trans"),
        spaces=(MemorySpace.Mat, MemorySpace.Vec),
    ),
)
_tile_and_tensor(
    "concat",
    (P("src0"), P("src1")),
    """Join two tiles with equal row counts column-wise.""",
    group="layout",
    rules_of=(rules.tile_concat, rules.tensor_concat),
    arity=(2, 2),
    cpp=Cpp("TCONCAT", (0, 1), valid="static"),
)
_enter(
    LangOp(
        "cast",
        (P("input"), P("target_type"), P("mode", None)),
        """Convert the elements to another dtype (FP32/FP16/BF16, INT8/INT16/INT32,
    UINT8/UINT16/UINT32). ``mode`` rounds every narrowing float conversion (float -> integer,
    FP32 -> FP16/BF16, FP16 <-> BF16), by name or code: ``"none"`` (0) and ``"rint"`` (1) nearest,
    ties to even; ``"round"`` (2, the default) nearest, ties away from zero; ``"floor"`` (3);
    ``"ceil"`` (4); ``"trunc"`` (5) toward zero; ``"odd"`` (6) round to odd. Out-of-range
    integers saturate. A scalar cast takes the default mode only (float -> integer truncates).""",
        {**_both("cast"), "scalar": "scalar.cast"},
        group="layout",
    ),
    OpSpec(
        "tile.cast",
        rules.tile_cast,
        1,
        1,
        Cpp("TCVT", tail="round"),
        attrs=("dtype", "mode"),
        dtypes=frozenset(rules.CASTABLE),
        spaces=VEC,
    ),
    OpSpec("tensor.cast", rules.tensor_cast, 1, 1, attrs=("dtype", "mode")),
    OpSpec("scalar.cast", rules.scalar_cast, 1, 1, attrs=("dtype", "mode"), on_core=False),
)
_enter(
    LangOp(
        "const",
        (P("value"), P("dtype")),
        """A scalar constant of ``dtype``: ``pl.const(1.5, pl.BF16)`` (the value rounded or saturated
    to the dtype, as ``pl.cast`` of a constant does). ``value`` must be a number known when
    compiling.""",
        default="scalar.cast",
        group="layout",
    ),
)
