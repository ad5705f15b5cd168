"""The ParamInfo signature of a program function, as ``compiled_meta.json`` records it."""

from __future__ import annotations

from pypto.ir.errors import PyptoCompileError
from pypto.ir.nodes import Program
from pypto.ir.param_info import ParamDirection, ParamInfo
from pypto.ir.passes.ssa import base_name
from pypto.ir.types import ScalarType, TensorType

__all__ = ["signature_of"]


def signature_of(program: Program, name: str | None = None) -> tuple[ParamInfo, ...]:
    """ParamInfo signature of a program function (the entry by default)."""
    fn = program.functions[name or program.entry]
    out = []
    for p in fn.params:
        t = p.var.type
        if isinstance(t, TensorType):
            out.append(ParamInfo(base_name(p.name), p.direction, t.static_shape, t.dtype, t.layout))
        elif isinstance(t, ScalarType):
            out.append(ParamInfo(base_name(p.name), ParamDirection.IN, None, t.dtype))
        else:
            raise PyptoCompileError(
                f"parameter {p.name!r} of {fn.name!r} has type {t}, which no signature can carry"
            )
    return tuple(out)
