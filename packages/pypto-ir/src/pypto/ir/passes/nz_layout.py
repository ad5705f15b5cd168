"""NZ layout lowering: the assembly (lowered) shape of NZ tensor parameters.

A logical NZ matrix ``[R, C]`` (or ``[B, R, C]`` with a batch dim) is passed in its unpadded
blocked form ``[C/16, R/16, 16, 16]`` (``[B, C/16, R/16, 16, 16]``), in element units, dtype
unchanged, so the byte size is preserved (see the tile interface: 16 x 16 blocks for every
dtype). R and C must be multiples of 16 when static; a dynamic dim stays dynamic (-1). A
blocked shape is never a logical shape: ``lower_param`` rejects an already blocked
ParamInfo, and the result is only used for ``lowered_params``.

The pass itself checks that every NZ tensor parameter's logical dims can be blocked; loads
and stores of NZ tensors (``load_nz``/``store_nz`` in the tile library) take logical offsets,
so the program is otherwise unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence

from pypto.ir.errors import KernelError
from pypto.ir.nodes import Function, Program
from pypto.ir.param_info import DYNAMIC, Layout, ParamInfo
from pypto.ir.types import TensorType

NAME = "nz_layout"
BLOCK = 16


def blocked_shape(shape: Sequence[int], name: str = "tensor") -> tuple[int, ...]:
    """The blocked NZ shape (element units) of a logical ``[R, C]`` or ``[B, R, C]`` shape."""
    dims = tuple(shape)
    if len(dims) not in (2, 3):
        raise ValueError(f"{name}: NZ needs a logical [R, C] or [B, R, C] shape, got {list(dims)}")
    *batch, r, c = dims
    for what, d in (("rows", r), ("cols", c)):
        if d != DYNAMIC and d % BLOCK:
            raise ValueError(
                f"{name}: NZ {what} must be a multiple of {BLOCK} (unpadded blocked form), got {d} in {list(dims)}"
            )
    cb = DYNAMIC if c == DYNAMIC else c // BLOCK
    rb = DYNAMIC if r == DYNAMIC else r // BLOCK
    return (*batch, cb, rb, BLOCK, BLOCK)


def lower_param(p: ParamInfo) -> ParamInfo:
    """The lowered ParamInfo of a logical parameter (identity unless NZ).

    Raises ValueError for a parameter that is already blocked: a blocked shape is never
    treated as a logical one.
    """
    if p.layout is not Layout.NZ or p.shape is None:
        return p
    if p.is_blocked:
        raise ValueError(
            f"parameter {p.name!r}: shape {p.shape} is already the blocked NZ form, not a logical shape"
        )
    return ParamInfo(p.name, p.direction, blocked_shape(p.shape, f"parameter {p.name!r}"), p.dtype, Layout.NZ)


def lower_signature(params: Sequence[ParamInfo]) -> tuple[ParamInfo, ...]:
    return tuple(lower_param(p) for p in params)


def run(program: Program) -> Program:
    for f in program.funcs:
        _check(f)
    return program


def _check(fn: Function) -> None:
    for p in fn.params:
        t = p.var.type
        if isinstance(t, TensorType) and t.layout is Layout.NZ:
            try:
                blocked_shape(t.static_shape, f"parameter {p.name!r}")
            except ValueError as exc:
                raise KernelError(str(exc), p.var.span) from None
