"""Pieces shared by the kernel and orchestration generators: C++ types, names, scalar expressions."""

from __future__ import annotations

import functools
import keyword
import math
import re

from pypto.ir.dtypes import DataType
from pypto.ir.errors import PyptoCompileError
from pypto.ir.nodes import BINOP_SYMBOLS, BinOp, Call, Const, Expr, Var

# The element types generated C++ can declare, derived from the dtype table (pypto.ir.dtypes):
# their C++ type, and simpler's name for them (``simpler::DataType::FLOAT32``).
CPP_TYPE = {dt: dt.cpp_type for dt in DataType if dt.cpp_type is not None}
WIRE_DTYPE = {dt: dt.wire_name for dt in CPP_TYPE}

_CPP_RESERVED = set(keyword.kwlist) | {
    "args",
    "api",
    "ctx",
    "orch",
    "int",
    "float",
    "double",
    "char",
    "auto",
    "const",
    "new",
    "delete",
    "default",
    "register",
    "template",
    "this",
    "union",
    "unsigned",
    "signed",
    "static",
    "struct",
    "switch",
    "case",
    "do",
    "goto",
    "long",
    "short",
    "void",
    "volatile",
    "operator",
    "private",
    "public",
    "protected",
    "friend",
    "virtual",
    "typename",
    "namespace",
    "using",
    "explicit",
    "export",
    "extern",
    "inline",
    "mutable",
    "sizeof",
    "typedef",
    "enum",
    "catch",
    "throw",
    "try",
    "bool",
    "true",
    "false",
    "pt",
    "simpler",
    "std",
    "exp",
    "log",
    "abs",
    "sqrt",
    "max",
    "min",
    "half",  # the element types kernels name (an FP16 parameter called ``half`` is common)
    "bfloat16_t",
    "pto",
    "sk",
}


COMM_NS = "sk"
"""How a kernel spells the namespace of simpler's kernel-side comm helpers (simpler/kernel_comm.hpp,
kernel_collectives.hpp): rank queries, peer views and the collectives' schedules."""

# The element types of PTO-ISA tiles (pto/common/type.hpp spells the 16-bit floats).
_KERNEL_TYPE = {DataType.FP16: "half", DataType.BF16: "bfloat16_t"}


def kernel_cpp_type(dtype: DataType) -> str:
    """The C++ element type of ``dtype`` in a PTO-ISA kernel."""
    return _KERNEL_TYPE.get(dtype) or cpp_type(dtype)


def cpp_type(dtype: DataType) -> str:
    try:
        return CPP_TYPE[dtype]
    except KeyError:
        raise PyptoCompileError(
            f"codegen: dtype {dtype.value} has no C++ element type in the tile library"
        ) from None


@functools.lru_cache(maxsize=4096)  # a kernel's names are looked up many times over
def ident(name: str) -> str:
    """A C++ identifier for an IR name (SSA names are already unique)."""
    s = re.sub(r"[^0-9A-Za-z_]", "_", name)
    if s in _CPP_RESERVED or s[:1].isdigit():
        s = f"v_{s}"
    return s


def literal(c: Const) -> str:
    v = c.value
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        if not math.isfinite(v):
            raise PyptoCompileError(f"codegen: non-finite constant {v}")
        return f"{v!r}f" if c.dtype is DataType.FP32 else repr(v)
    if isinstance(v, int):
        return f"INT64_C({v})" if c.dtype is DataType.INT64 else str(v)
    raise PyptoCompileError(f"codegen: constant {v!r}")


# The operators C++ spells as Python does; division and modulo have their own forms below.
_OPS = {op: sym for op, sym in BINOP_SYMBOLS.items() if op not in ("truediv", "floordiv", "mod", "lshift")}


def scalar_expr(e: Expr, dim_of: dict[tuple[str, int], str] | None = None) -> str:
    """A C++ expression for a scalar IR expression. Python's floor division and modulo are
    spelled with helpers so negative operands behave as in the kernel language."""
    if isinstance(e, Const):
        return literal(e)
    if isinstance(e, Var):
        return ident(e.name)
    if isinstance(e, BinOp):
        a, b = scalar_expr(e.lhs, dim_of), scalar_expr(e.rhs, dim_of)
        if e.op in _OPS:
            return f"({a} {_OPS[e.op]} {b})"
        if e.op == "truediv":
            return f"(static_cast<double>({a}) / static_cast<double>({b}))"
        if (
            e.op == "lshift"
        ):  # in unsigned arithmetic: a negative or overflowing value wraps as in Python's low bits
            return f"static_cast<std::int64_t>(static_cast<std::uint64_t>({a}) << ({b}))"
        if e.op == "floordiv":
            return f"pypto_floordiv({a}, {b})"
        if e.op == "mod":
            return f"pypto_mod({a}, {b})"
        if e.op in ("min", "max"):
            return f"(({a}) {'<' if e.op == 'min' else '>'} ({b}) ? ({a}) : ({b}))"
        raise PyptoCompileError(f"codegen: scalar operator {e.op}")
    if isinstance(e, Call) and e.op == "scalar.cast":
        inner = e.args[0]
        assert not isinstance(inner, tuple)
        return f"static_cast<{scalar_cpp_type(e.attr('dtype'))}>({scalar_expr(inner, dim_of)})"
    if isinstance(e, Call) and e.op == "tensor.dim":
        t = e.args[0]
        assert isinstance(t, Var)
        axis = int(e.attr("axis"))
        if dim_of is not None and (t.name, axis) in dim_of:
            return dim_of[(t.name, axis)]
        return f"static_cast<std::int64_t>({ident(t.name)}.shapes[{axis}])"
    if isinstance(e, Call) and e.op in ("comm.rank", "comm.nranks"):
        win = e.args[0]
        assert isinstance(win, Var)
        return f"{COMM_NS}::comm_{e.op.split('.')[1]}({ident(win.name)})"
    raise PyptoCompileError(f"codegen: {e} is not a scalar expression")


SCALAR_HELPERS = """\
[[maybe_unused]] static inline std::int64_t pypto_floordiv(std::int64_t a, std::int64_t b) {
    std::int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
[[maybe_unused]] static inline std::int64_t pypto_mod(std::int64_t a, std::int64_t b) {
    std::int64_t r = a % b;
    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
"""


def converted_scalar(expr: str, src: DataType | None, dst: DataType, *, kernel: bool = False) -> str:
    """The scalar ``expr`` (of dtype ``src``, None when unknown) as a value of element dtype
    ``dst``, held in ``scalar_cpp_type(dst)``. A floating-point value into an integer dtype is
    converted toward zero and saturated (NaN -> 0), as upstream converts a float scalar operand
    to an integer tile's dtype; a plain ``static_cast`` would be undefined out of range. Anything
    else is a ``static_cast``."""
    hold = scalar_cpp_type(dst)
    if src is not None and src.is_float and not dst.is_float and dst is not DataType.BOOL and kernel:
        return f"sk::trunc_saturate<{hold}>(static_cast<double>({expr}))"
    if src is not None and src.is_float and not dst.is_float and dst is not DataType.BOOL:
        return f"simpler::convert<{hold}>(static_cast<float>({expr}), simpler::RoundMode::Trunc)"
    return f"static_cast<{hold}>({expr})"


def scalar_cpp_type(dtype: DataType) -> str:
    """The C++ type a scalar value is held in: 16-bit floats compute in float."""
    if dtype in (DataType.FP16, DataType.BF16):
        return "float"
    return cpp_type(dtype)
