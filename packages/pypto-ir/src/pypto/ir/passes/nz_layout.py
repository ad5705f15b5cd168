"""NZ layout lowering: the assembly (lowered) shape of NZ tensor parameters.

NZ is Ascend's fractal format as torch_npu stores it (storage format 29): blocks of 16 rows by
``C0 = 32 / itemsize`` columns (``param_info.nz_block_shape``; C0 = 16 for FP16/BF16, 32 for
INT8, 8 for FP32). A logical NZ matrix ``[R, C]`` (or ``[B, R, C]`` with a batch dim) is passed
in its unpadded blocked form ``[C/C0, R/16, 16, C0]`` (``[B, C/C0, R/16, 16, C0]``), in element
units, dtype unchanged, so the byte size is preserved; a kernel's NZ GM view
(``sk::gm_view_nz``, simpler/kernel_args.hpp) reads the same form. R must be a multiple of 16 and C a multiple of C0 when static;
a dynamic dim stays dynamic (-1). A blocked shape is never a logical shape: ``lower_param``
rejects an already blocked ParamInfo, and the result is only used for ``lowered_params``.

The pass itself checks that every NZ tensor parameter's logical dims can be blocked; loads
and stores of NZ tensors take logical offsets, so the program is otherwise unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence

from pypto.ir.errors import KernelError
from pypto.ir.nodes import Function, Program
from pypto.ir.param_info import Layout, ParamInfo, blocked_shape
from pypto.ir.types import TensorType

NAME = "nz_layout"

__all__ = ["NAME", "blocked_shape", "lower_param", "lower_signature", "run"]


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
    return ParamInfo(
        p.name, p.direction, blocked_shape(p.shape, p.dtype, f"parameter {p.name!r}"), p.dtype, Layout.NZ
    )


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
                blocked_shape(t.static_shape, t.dtype, f"parameter {p.name!r}")
            except ValueError as exc:
                raise KernelError(str(exc), p.var.span) from None
