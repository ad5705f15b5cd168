"""The op table's composed math: ``tanh``, ``sigmoid``, ``silu``, ``gelu``, ``erf``, ``softplus``
and ``pow``.

PTO-ISA has no instruction for these, so their tile forms carry no ``Cpp``: the
``decompose_math`` pass (pypto/ir/passes/decompose_math.py) rewrites each into PTO-ISA
element-wise instructions (``TEXP``, ``TLOG``, ``TABS``, ``TMUL``/``TMULS``, ``TDIV``, ``TRECIP``,
``TCMPS``/``TSEL``, ``TFMODS``, ``TCVT``) before code generation, computing in FP32 and rounding
once to an FP16/BF16 operand's dtype. The formulas, chosen to stay accurate at the extremes, are
listed with each op (and the limits of their accuracy); the tensor forms lower to the tile forms.
"""

from __future__ import annotations

from typing import Any

from pypto.ir.dtypes import DataType
from pypto.ir.ops.entries import P, _both, _enter
from pypto.ir.ops.operand_checks import _describe, _same_dtype, _same_shape, _tensor_like, _tile
from pypto.ir.ops.rules import VEC
from pypto.ir.ops.spec import LangOp, OpError, OpSpec, Param, Rule
from pypto.ir.types import ScalarType, TensorType, TileType, Type

__all__ = ["COMPOSED_OPS", "GELU_FORMS", "MATH_DTYPES"]

COMPOSED_OPS = ("tanh", "sigmoid", "silu", "gelu", "erf", "softplus", "pow")
"""The ops whose tile form the ``decompose_math`` pass writes as PTO-ISA instructions."""

MATH_DTYPES = frozenset({DataType.FP32, DataType.FP16, DataType.BF16})
"""The element types the composed ops take (computed in FP32, rounded once to FP16/BF16)."""

GELU_FORMS = ("none", "tanh")
"""``pl.gelu``'s ``approximate=`` values, as ``torch.nn.functional.gelu``'s."""


def _float_unary(kind: str, op: str) -> Rule:
    def rule(args: list[Type], attrs: dict[str, Any]) -> Type:
        t: TileType | TensorType = (
            _tile(args[0], op, "the operand", VEC)
            if kind == "tile"
            else _tensor_like(args[0], op, "the operand")
        )
        if t.dtype not in MATH_DTYPES:
            raise OpError(f"pl.{op}: needs {_describe(MATH_DTYPES)}, got {t.dtype.value}; use pl.cast first")
        if op == "gelu" and attrs.get("approximate", "none") not in GELU_FORMS:
            raise OpError(
                f"pl.gelu: approximate must be one of {', '.join(map(repr, GELU_FORMS))}, "
                f"got {attrs.get('approximate')!r}"
            )
        if op == "softplus":
            for key in ("beta", "threshold"):
                v = attrs.get(key, 1.0)
                if isinstance(v, bool) or not isinstance(v, (int, float)):
                    raise OpError(f"pl.softplus: {key} must be a number known at compile time, got {v!r}")
            if attrs.get("beta", 1.0) == 0:
                raise OpError("pl.softplus: beta must not be 0, got 0")
        return t if kind == "tile" else TensorType(t.shape, t.dtype)

    return rule


def _pow_rule(kind: str) -> Rule:
    def rule(args: list[Type], attrs: dict[str, Any]) -> Type:
        a, b = args
        t: TileType | TensorType = (
            _tile(a, "pow", "the base", VEC) if kind == "tile" else _tensor_like(a, "pow", "the base")
        )
        if t.dtype not in MATH_DTYPES:
            raise OpError(
                f"pl.pow: the base needs to be {_describe(MATH_DTYPES)[3:]}, got {t.dtype.value}; use pl.cast first"
            )
        if not isinstance(b, ScalarType):
            u: TileType | TensorType = (
                _tile(b, "pow", "the exponent", VEC)
                if kind == "tile"
                else _tensor_like(b, "pow", "the exponent")
            )
            _same_shape(t.shape, u.shape, "pow")
            _same_dtype(t.dtype, u.dtype, "pow")
        return t if kind == "tile" else TensorType(t.shape, t.dtype)

    return rule


def _composed(
    name: str, params: tuple[Param, ...], doc: str, attrs: tuple[str, ...] = (), arity: int = 1
) -> None:
    make = _pow_rule if name == "pow" else (lambda kind: _float_unary(kind, name))
    tile = OpSpec(
        f"tile.{name}", make("tile"), arity, arity, None, attrs=attrs, dtypes=MATH_DTYPES, spaces=VEC
    )
    tensor = OpSpec(f"tensor.{name}", make("tensor"), arity, arity, attrs=attrs, dtypes=MATH_DTYPES)
    _enter(LangOp(name, params, doc, _both(name), group="element-wise"), tile, tensor)


_composed(
    "tanh",
    (P("input"),),
    """Element-wise hyperbolic tangent (``torch.tanh``). For ``|x| < 0.25`` the odd Taylor
    polynomial through ``x**9`` (truncation below 1e-8 relative); above it
    ``sign(x) * (1 - t) / (1 + t)`` with ``t = exp(-2|x|)``, which never overflows (``+-1`` at
    ``+-inf``, ``-0`` kept). Within 2 ulp of FP32 ``tanh``.""",
)
_composed(
    "sigmoid",
    (P("input"),),
    """Element-wise logistic function ``1 / (1 + exp(-x))`` (``torch.sigmoid``), split by sign:
    ``1 / (1 + t)`` for ``x >= 0`` and ``t / (1 + t)`` for ``x < 0`` with ``t = exp(-|x|)``, so
    no ``exp`` overflows (0 at ``-inf``, 1 at ``+inf``).""",
)
_composed(
    "silu",
    (P("input"),),
    """Element-wise SiLU (swish) ``x * sigmoid(x)`` (``torch.nn.functional.silu``), with
    ``pl.sigmoid``'s stable form; NaN at ``-inf`` (``-inf * 0``), as torch.""",
)
_composed(
    "gelu",
    (P("input"), P("approximate", "none")),
    """Element-wise GELU (``torch.nn.functional.gelu``). ``approximate="none"``: ``x * Phi(x)``
    with ``Phi(x) = erfc(-x / sqrt(2)) / 2``, ``erfc`` by the Chebyshev fit of Numerical Recipes
    (``erfcc``, relative error below 1.2e-7 everywhere), so the tail ``x << 0`` keeps its relative
    accuracy (torch's ``1 + erf`` cancels there). ``approximate="tanh"``:
    ``0.5 * x * (1 + tanh(u))``, ``u = sqrt(2/pi) * (x + 0.044715 x**3)``, computed as
    ``x * sigmoid(2u)`` (the same value without the cancellation of ``1 + tanh``). Both give NaN at
    ``-inf`` as torch; ``+inf`` at ``+inf`` (torch's erf form gives NaN there).""",
    attrs=("approximate",),
)
_composed(
    "erf",
    (P("input"),),
    """Element-wise error function (``torch.erf``). For ``|x| < 0.5`` its Maclaurin series through
    ``x**11`` (truncation below 3e-8 relative, ``-0`` kept); above it
    ``sign(x) * (1 - erfc(|x|))`` with Numerical Recipes' ``erfcc`` fit (relative error of
    ``erfc`` below 1.2e-7, so ``erf`` within 1.2e-7 absolute). ``+-1`` at ``+-inf``.""",
)
_composed(
    "softplus",
    (P("input"), P("beta", 1.0), P("threshold", 20.0)),
    """Element-wise softplus ``log(1 + exp(beta * x)) / beta`` (``torch.nn.functional.softplus``,
    same keywords: ``x`` itself where ``beta * x > threshold``). Computed as
    ``max(z, 0) + log1p(exp(-|z|))`` with ``z = beta * x`` (no overflow), ``log1p(u)`` as
    ``log(1 + u) * u / ((1 + u) - 1)`` (``u`` itself when ``1 + u`` rounds to 1), which keeps the
    relative accuracy of tiny results (``softplus(-30)``). ``beta`` and ``threshold`` are numbers
    known at compile time.""",
    attrs=("beta", "threshold"),
)
_composed(
    "pow",
    (P("input"), P("exponent")),
    """Element-wise ``input ** exponent`` (``torch.pow``); the exponent is a scalar or a tile/tensor
    of the input's shape and dtype. A constant exponent: ``0`` gives 1, ``+-0.5`` ``sqrt``/``rsqrt``
    (as torch), an integer up to 64 in magnitude repeated squaring (of ``1/x`` when negative; exact
    signs of negative bases), any other ``exp(p * log(x))`` (NaN for a finite negative base, as
    torch). Otherwise ``exp(y * log|x|)``, negated for a negative base with an odd integer
    exponent, NaN for a negative base with a non-integer one, and 1 where ``y == 0`` or ``x == 1``.
    ``exp(p * log x)`` loses about ``|p * ln x| * 2**-24`` relative accuracy (a result near 1e30 is
    within about 70 FP32 ulp). IEEE's ``pow(-1, +-inf) = 1`` is not taken (NaN).""",
    arity=2,
)
