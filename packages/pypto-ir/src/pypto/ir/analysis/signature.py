"""The ParamInfo signature of a program function, as ``compiled_meta.json`` records it.

The one function -> ParamInfo extraction: the compile's metadata (SSA-renamed parameters, read
by their base names) and a ``@pl.jit`` specialisation (the parsed entry, names as written)
both use it.
"""

from __future__ import annotations

from pypto.ir.errors import PyptoCompileError
from pypto.ir.nodes import Function, Program
from pypto.ir.param_info import ParamDirection, ParamInfo
from pypto.ir.passes.ssa import base_name
from pypto.ir.types import ScalarType, TensorType

__all__ = ["function_signature", "signature_of"]


def function_signature(fn: Function, *, ssa_names: bool = True) -> tuple[ParamInfo, ...]:
    """ParamInfo signature of one IR function (``-1`` for dynamic dims, no shape for scalars).

    Args:
        ssa_names: The parameters carry SSA version suffixes (after the SSA pass): record each
            by its base name. False: record the names as they are.
    """
    out = []
    for p in fn.params:
        t = p.var.type
        name = base_name(p.name) if ssa_names else p.name
        if isinstance(t, TensorType):
            out.append(ParamInfo(name, p.direction, t.static_shape, t.dtype, t.layout))
        elif isinstance(t, ScalarType):
            out.append(ParamInfo(name, ParamDirection.IN, None, t.dtype))
        else:
            raise PyptoCompileError(
                f"parameter {p.name!r} of {fn.name!r} has type {t}, which no signature can carry"
            )
    return tuple(out)


def signature_of(program: Program, name: str | None = None) -> tuple[ParamInfo, ...]:
    """ParamInfo signature of a program function (the entry by default)."""
    return function_signature(program.functions[name or program.entry])
