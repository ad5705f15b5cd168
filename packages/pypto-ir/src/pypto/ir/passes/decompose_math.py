"""The composed math ops (``tile.tanh``, ``tile.sigmoid``, ``tile.silu``, ``tile.gelu``,
``tile.erf``, ``tile.softplus``, ``tile.pow``) written as PTO-ISA element-wise instructions.

PTO-ISA has no instruction for them (pypto/ir/ops/math_table.py lists the formulas and their
accuracy); after ``tensor_to_tile`` every such call in a kernel becomes a sequence of tile ops
that have one (``TEXP``, ``TLOG``, ``TABS``, ``TMUL(S)``, ``TADDS``, ``TDIV``, ``TRECIP``,
``TCMPS`` + ``TSEL``, ``TFMODS``, ``TCVT``), so the kernel compiles against any PTO-ISA
implementation. An FP16/BF16 operand is converted to FP32 first and the result rounded once
(to nearest, ties to even) to its dtype. Both sides of a sign or range split are computed and
``TSEL`` picks per element, so a NaN or infinity in the branch not taken does not leak.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from pypto.ir.dtypes import DataType
from pypto.ir.nodes import Arg, Assign, Call, Const, Expr, Function, Program, Stmt, Var, stmt_defs, walk_stmts
from pypto.ir.ops.math_table import COMPOSED_OPS
from pypto.ir.ops.spec import infer
from pypto.ir.passes._rewrite import map_bodies
from pypto.ir.types import ScalarType, TileType

__all__ = ["NAME", "run"]

NAME = "decompose_math"

_OPS = {f"tile.{n}" for n in COMPOSED_OPS}
_FP32 = DataType.FP32
_FLT_MAX = 3.4028234663852886e38  # the largest finite FP32: a comparison with it finds infinities
_EQ, _LT, _GT = 0, 2, 4  # PTO-ISA's CmpMode codes (EQ 0, NE 1, LT 2, LE 3, GT 4, GE 5)

# tanh: odd Taylor coefficients of x**1, x**3, ..., x**9
_TANH_TAYLOR = (1.0, -1.0 / 3.0, 2.0 / 15.0, -17.0 / 315.0, 62.0 / 2835.0)
_TANH_SMALL = 0.25
# erf: 2/sqrt(pi) * (x - x**3/3 + x**5/10 - x**7/42 + x**9/216 - x**11/1320)
_TWO_OVER_SQRT_PI = 1.1283791670955126
_ERF_TAYLOR = (1.0, -1.0 / 3.0, 1.0 / 10.0, -1.0 / 42.0, 1.0 / 216.0, -1.0 / 1320.0)
_ERF_SMALL = 0.5
# erfc(z) = t * exp(-z*z + P(t)), t = 1 / (1 + z/2), z >= 0: Numerical Recipes' erfcc Chebyshev
# fit (relative error below 1.2e-7 for every z >= 0); P's coefficients from t**0 up.
_ERFC_P = (
    -1.26551223,
    1.00002368,
    0.37409196,
    0.09678418,
    -0.18628806,
    0.27886807,
    -1.13520398,
    1.48851587,
    -0.82215223,
    0.17087277,
)
_SQRT_HALF = 0.7071067811865476
_ERFC_CAP = 15.0
_SQRT_2_OVER_PI = 0.7978845608028654
_GELU_CUBIC = 0.044715
_MAX_INT_POWER = 64


def run(program: Program) -> Program:
    return replace(program, funcs=tuple(_function(f) for f in program.funcs))


def _function(fn: Function) -> Function:
    if not any(
        isinstance(s, Assign) and isinstance(s.value, Call) and s.value.op in _OPS
        for s in walk_stmts(fn.body)
    ):
        return fn
    taken = {p.var.name for p in fn.params}
    for s in walk_stmts(fn.body):
        taken.update(v.name for v in stmt_defs(s))
    names = _Names(taken)

    def rewrite(body: tuple[Stmt, ...]) -> tuple[Stmt, ...]:
        out: list[Stmt] = []
        for s in body:
            if isinstance(s, Assign) and isinstance(s.value, Call) and s.value.op in _OPS:
                out.extend(_decompose(s.var, s.value, names))
            else:
                out.append(s)
        return tuple(out)

    return replace(fn, body=map_bodies(fn.body, rewrite))


class _Names:
    def __init__(self, taken: set[str]) -> None:
        self.taken = taken
        self.n = 0

    def fresh(self, base: str) -> str:
        while True:
            self.n += 1
            name = f"{base}_m{self.n}"
            if name not in self.taken:
                self.taken.add(name)
                return name


class _Emit:
    """Appends tile ops to ``out``, each result a fresh variable named after ``base``."""

    def __init__(self, names: _Names, base: str, span: Any) -> None:
        self.names, self.base, self.span = names, base, span
        self.out: list[Stmt] = []

    def op(self, name: str, *args: Arg, **attrs: Any) -> Var:
        ty = infer(f"tile.{name}", [a.type for a in args if not isinstance(a, tuple)], dict(attrs))
        v = Var(self.names.fresh(self.base), ty, self.span)
        self.out.append(
            Assign(
                v, Call(f"tile.{name}", tuple(args), tuple(sorted(attrs.items())), ty, self.span), self.span
            )
        )
        return v

    # scalar forms, the scalar an FP32 constant
    def adds(self, x: Var, c: float) -> Var:
        return self.op("adds", x, Const(float(c), _FP32))

    def muls(self, x: Var, c: float) -> Var:
        return self.op("muls", x, Const(float(c), _FP32))

    def mask(self, x: Var, c: float, mode: int) -> Var:
        return self.op("cmps", x, Const(float(c), _FP32), cmp_type=mode)

    def sel(self, mask: Var, then: Var, other: Var) -> Var:
        return self.op("sel", mask, then, other)

    def horner(self, z: Var, coeffs: tuple[float, ...]) -> Var:
        """``coeffs[0] + coeffs[1] z + ... + coeffs[-1] z**(n-1)``."""
        p = self.muls(z, coeffs[-1])
        for i, c in enumerate(reversed(coeffs[:-1])):
            p = self.adds(p, c)
            if i < len(coeffs) - 2:
                p = self.op("mul", p, z)
        return p


def _decompose(var: Var, call: Call, names: _Names) -> list[Stmt]:
    kind = call.op.split(".", 1)[1]
    x = call.args[0]
    assert isinstance(x, Var)
    assert isinstance(x.type, TileType)
    e = _Emit(names, var.name, call.span)
    dtype = x.type.dtype
    wide = dtype is not _FP32
    xf = e.op("cast", x, dtype=_FP32, mode="round") if wide else x
    if kind == "pow":
        y = call.args[1]
        assert not isinstance(y, tuple)
        if isinstance(y, Var) and isinstance(y.type, TileType) and wide:
            y = e.op("cast", y, dtype=_FP32, mode="round")
        r = _pow(e, xf, y)
    else:
        r = _UNARY[kind](e, xf, dict(call.attrs))
    if wide:
        r = e.op("cast", r, dtype=dtype, mode="rint")
    # the last op defines the call's own variable
    last = e.out[-1]
    assert isinstance(last, Assign)
    assert last.var is r
    if r.type != var.type:  # an FP32 operand whose result is its own variable: same type
        raise AssertionError(f"decompose_math: {call.op} gives {r.type}, expected {var.type}")
    e.out[-1] = replace(last, var=var)
    return e.out


def _tanh(e: _Emit, x: Var, attrs: dict[str, Any]) -> Var:
    a = e.op("abs", x)
    x2 = e.op("mul", x, x)
    small = e.op("mul", e.horner(x2, _TANH_TAYLOR), x)  # odd polynomial of the signed x (keeps -0)
    t = e.op("exp", e.muls(a, -2.0))
    neg_big = e.op("div", e.adds(t, -1.0), e.adds(t, 1.0))  # (t - 1) / (t + 1) = -tanh|x|
    big = e.sel(e.mask(x, 0.0, _LT), neg_big, e.op("neg", neg_big))
    return e.sel(e.mask(a, _TANH_SMALL, _LT), small, big)


def _sigmoid(e: _Emit, x: Var, attrs: dict[str, Any]) -> Var:
    t = e.op("exp", e.op("neg", e.op("abs", x)))
    r = e.op("recip", e.adds(t, 1.0))
    return e.sel(e.mask(x, 0.0, _LT), e.op("mul", t, r), r)


def _silu(e: _Emit, x: Var, attrs: dict[str, Any]) -> Var:
    return e.op("mul", x, _sigmoid(e, x, attrs))


def _erfc_nonneg(e: _Emit, w: Var, scale: float = 1.0) -> Var:
    """erfc(z) for z = |w| * sqrt(scale) (``scale`` 1 or 1/2): Numerical Recipes' erfcc,
    t exp(P(t) - z**2), t = 1 / (1 + z/2). ``z**2 = scale * w**2`` is taken as
    ``scale * (h**2 + (|w| - h)(|w| + h))`` with ``h`` = |w| truncated to 8 significant bits (a
    BF16 round trip), so ``h**2`` and ``|w| - h`` are exact and the tail keeps its relative
    accuracy (an FP32 ``z*z`` would lose ``z**2`` ulps). |w| is capped at 15 (erfc is 0 in FP32
    well before; the cap keeps infinities out of ``|w| - h``, NaN passes through)."""
    a = e.op("abs", w)
    a = e.sel(e.mask(a, _ERFC_CAP, _GT), e.op("expands", a, Const(_ERFC_CAP, _FP32)), a)
    z = a if scale == 1.0 else e.muls(a, scale**0.5)
    t = e.op("recip", e.adds(e.muls(z, 0.5), 1.0))
    p = e.horner(t, _ERFC_P)
    h = e.op("cast", e.op("cast", a, dtype=DataType.BF16, mode="trunc"), dtype=_FP32, mode="round")
    rest = e.muls(e.op("mul", e.op("sub", a, h), e.op("add", a, h)), scale)
    head = e.op("exp", e.muls(e.op("mul", h, h), -scale))
    return e.op("mul", e.op("mul", t, head), e.op("exp", e.op("sub", p, rest)))


def _erf(e: _Emit, x: Var, attrs: dict[str, Any]) -> Var:
    a = e.op("abs", x)
    x2 = e.op("mul", x, x)
    small = e.op("mul", e.muls(e.horner(x2, _ERF_TAYLOR), _TWO_OVER_SQRT_PI), x)
    neg_big = e.adds(_erfc_nonneg(e, x), -1.0)  # erfc|x| - 1 = -erf|x|
    big = e.sel(e.mask(x, 0.0, _LT), neg_big, e.op("neg", neg_big))
    return e.sel(e.mask(a, _ERF_SMALL, _LT), small, big)


def _gelu(e: _Emit, x: Var, attrs: dict[str, Any]) -> Var:
    if attrs.get("approximate", "none") == "tanh":
        # 0.5 (1 + tanh u) = sigmoid(2u), u = sqrt(2/pi) (x + 0.044715 x**3)
        x2 = e.op("mul", x, x)
        k = e.adds(e.muls(x2, 2.0 * _SQRT_2_OVER_PI * _GELU_CUBIC), 2.0 * _SQRT_2_OVER_PI)
        return e.op("mul", x, _sigmoid(e, e.op("mul", k, x), attrs))
    # Phi(x) = (1 + erf(x / sqrt 2)) / 2 near 0 (the series), erfc(-x / sqrt 2) / 2 beyond
    z = e.muls(x, _SQRT_HALF)
    z2 = e.op("mul", z, z)
    erf_small = e.op("mul", e.muls(e.horner(z2, _ERF_TAYLOR), _TWO_OVER_SQRT_PI), z)
    phi_small = e.muls(e.adds(erf_small, 1.0), 0.5)
    half_erfc = e.muls(_erfc_nonneg(e, x, 0.5), 0.5)  # Phi(-|x|) = erfc(|x| / sqrt 2) / 2
    phi_big = e.sel(e.mask(x, 0.0, _LT), half_erfc, e.op("neg", e.adds(half_erfc, -1.0)))
    phi = e.sel(e.mask(e.op("abs", z), _ERF_SMALL, _LT), phi_small, phi_big)
    return e.op("mul", x, phi)


def _log1p_small(e: _Emit, u: Var) -> Var:
    """log(1 + u) for 0 <= u <= 1, accurate for tiny u: log(w) * u / (w - 1), w = 1 + u; u itself
    where w - 1 is 0. The divisor is 1 there: TDIV by zero is target-defined (the official CPU
    backend asserts)."""
    w = e.adds(u, 1.0)
    d = e.adds(w, -1.0)
    exact = e.mask(d, 0.0, _EQ)
    r = e.op("div", e.op("mul", e.op("log", w), u), e.sel(exact, e.op("expands", d, Const(1.0, _FP32)), d))
    return e.sel(exact, u, r)


def _softplus(e: _Emit, x: Var, attrs: dict[str, Any]) -> Var:
    beta = float(attrs.get("beta", 1.0))
    threshold = float(attrs.get("threshold", 20.0))
    z = x if beta == 1.0 else e.muls(x, beta)
    t = e.op("exp", e.op("neg", e.op("abs", z)))
    sp = e.op("add", e.op("maximums", z, Const(0.0, _FP32)), _log1p_small(e, t))
    if beta != 1.0:
        sp = e.op("divs", sp, Const(beta, _FP32))
    return e.sel(e.mask(z, threshold, _GT), x, sp)


def _int_power(e: _Emit, x: Var, n: int) -> Var:
    """x**n for 1 <= n: repeated squaring (as x*x*... for small n, the product torch computes)."""
    result: Var | None = None
    base = x
    while True:
        if n & 1:
            result = base if result is None else e.op("mul", result, base)
        n >>= 1
        if not n:
            break
        base = e.op("mul", base, base)
    assert result is not None
    if result is x:  # x**1: a copy, so the call defines a value of its own
        result = e.muls(x, 1.0)
    return result


def _pow(e: _Emit, x: Var, y: Expr) -> Var:
    if isinstance(y, Const):
        p = float(y.value)
        if p == 0.0:
            return e.op("expands", x, Const(1.0, _FP32))
        if p == 0.5:
            return e.op("sqrt", x)
        if p == -0.5:
            return e.op("rsqrt", x)
        if p.is_integer() and abs(p) <= _MAX_INT_POWER:
            n = int(p)
            return _int_power(e, x, n) if n > 0 else _int_power(e, e.op("recip", x), -n)
        # exp(p log x): NaN for a finite negative x; -inf takes |x| (IEEE's pow(-inf, p))
        signed = e.op("exp", e.muls(e.op("log", x), p))
        unsigned = e.op("exp", e.muls(e.op("log", e.op("abs", x)), p))
        return e.sel(e.mask(x, -_FLT_MAX, _LT), unsigned, signed)
    if isinstance(y.type, ScalarType):  # a run-time scalar: as a tile of it
        y = e.op("expands", x, y)
    assert isinstance(y, Var)
    r = e.op("exp", e.op("mul", y, e.op("log", e.op("abs", x))))
    nan_or_r = e.op("exp", e.op("mul", y, e.op("log", x)))  # NaN where x < 0
    nan_or_r = e.sel(e.mask(x, -_FLT_MAX, _LT), r, nan_or_r)  # pow(-inf, non-integer) = pow(inf, y)
    odd = e.mask(e.op("abs", e.op("fmods", y, Const(2.0, _FP32))), 1.0, _EQ)
    signed = e.sel(odd, e.op("neg", r), r)
    integral = e.mask(e.op("fmods", y, Const(1.0, _FP32)), 0.0, _EQ)
    negative_base = e.sel(integral, signed, nan_or_r)
    negative_base = e.sel(e.mask(e.op("abs", y), _FLT_MAX, _GT), r, negative_base)  # y = +-inf: |x| ** y
    # a negative base: 1/x < 0 finds -0 as well (pow(-0, -1) = -inf); 1/-inf is -0, so -inf apart
    out = e.sel(e.mask(e.op("recip", x), 0.0, _LT), negative_base, r)
    out = e.sel(e.mask(x, -_FLT_MAX, _LT), negative_base, out)
    one = e.op("expands", x, Const(1.0, _FP32))
    out = e.sel(e.mask(y, 0.0, _EQ), one, out)
    return e.sel(e.mask(x, 1.0, _EQ), one, out)


_UNARY = {
    "tanh": _tanh,
    "sigmoid": _sigmoid,
    "silu": _silu,
    "gelu": _gelu,
    "erf": _erf,
    "softplus": _softplus,
}
