"""The composed math ops (pl.tanh, sigmoid, silu, gelu, erf, softplus, pow) on the simulated chip,
against torch's float64 results rounded to the operand's dtype, over edge values (zeros, denormals,
the dtype's extremes, infinities, NaN, the branch points of each formula) in FP32, FP16 and BF16.

The references (and BF16 inputs) need torch, which pypto-runtime alone does not install: its own
nox session skips this file and ``nox -s tests`` (the whole stack) runs it."""

from __future__ import annotations

import math

import numpy as np
import pto_backend
import pytest

torch = pytest.importorskip("torch", reason="the float64 references and BF16 inputs need torch")
import torch.nn.functional as F  # noqa: E402

import pypto.language as pl  # noqa: E402
from pypto.ir.errors import KernelError  # noqa: E402

R, C = 16, 32
DTYPES = (torch.float32, torch.float16, torch.bfloat16)


@pl.jit
def unary_k(  # noqa: PLR0917 -- a kernel takes each of its tensors positionally
    a: pl.Tensor,
    tanh: pl.Out[pl.Tensor],
    sigmoid: pl.Out[pl.Tensor],
    silu: pl.Out[pl.Tensor],
    gelu: pl.Out[pl.Tensor],
    gelu_tanh: pl.Out[pl.Tensor],
    erf: pl.Out[pl.Tensor],
    softplus: pl.Out[pl.Tensor],
    softplus_beta: pl.Out[pl.Tensor],
    tanh_tile: pl.Out[pl.Tensor],
):
    # every unary composed op in one kernel (one compile per dtype); tensor forms, one tile form
    with pl.at(level=pl.Level.CORE_GROUP):
        tanh[:] = pl.tanh(a)
        sigmoid[:] = pl.sigmoid(a)
        silu[:] = pl.silu(a)
        gelu[:] = pl.gelu(a)
        gelu_tanh[:] = pl.gelu(a, approximate="tanh")
        erf[:] = pl.erf(a)
        softplus[:] = pl.softplus(a)
        softplus_beta[:] = pl.softplus(a, beta=2.0, threshold=10.0)
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 32])
        pl.store(pl.tile.tanh(t), [0, 0], tanh_tile)
    return tanh, sigmoid, silu, gelu, gelu_tanh, erf, softplus, softplus_beta, tanh_tile


def _edges(dtype: torch.dtype) -> list[float]:
    fi = torch.finfo(dtype)
    base = [0.0, fi.smallest_normal, fi.smallest_normal / 4, fi.tiny, 1e-30, 1e-8, 1e-4, 0.01, 0.1]
    base += [0.2, 0.249, 0.25, 0.251, 0.3, 0.49, 0.5, 0.51, 0.7, 1.0, 1.5, 2.0, 3.0, 5.0, 9.0, 10.0]
    base += [15.0, 19.9, 20.0, 20.1, 30.0, 44.0, 45.0, 80.0, 88.0, 89.0, 100.0, 1e4, 1e20, fi.max]
    if dtype is torch.float32:
        base.append(2.0**-149)  # the smallest FP32 denormal
    elif dtype is torch.float16:
        base.append(2.0**-24)
    vals = base + [-v for v in base] + [math.inf, -math.inf, math.nan]
    return [v for v in vals if abs(v) <= fi.max or math.isinf(v) or math.isnan(v)]


def inputs(dtype: torch.dtype, lo: float = -12.0, hi: float = 12.0) -> torch.Tensor:
    edges = torch.tensor(_edges(dtype), dtype=torch.float64)
    fill = torch.linspace(lo, hi, R * C - len(edges), dtype=torch.float64)
    return torch.cat([edges, fill]).reshape(R, C).to(dtype)


def check(got: torch.Tensor, want64: torch.Tensor, rtol: float | torch.Tensor, atol: float) -> None:
    """``got`` against the float64 reference: NaN where it is NaN, equal infinities, and
    ``|got - want| <= atol + rtol * |want|`` elsewhere (tolerances in the operand dtype's terms)."""
    g = got.to(torch.float64)
    w = want64.to(got.dtype).to(torch.float64)  # the correctly rounded result (double rounding aside)
    assert torch.equal(torch.isnan(g), torch.isnan(w)), (
        f"NaN at {torch.nonzero(torch.isnan(g) != torch.isnan(w))}"
    )
    fin = torch.isfinite(w)
    assert torch.equal(g[~fin & ~torch.isnan(w)], w[~fin & ~torch.isnan(w)])
    err = (g[fin] - w[fin]).abs()
    bound = atol + (rtol[fin] if isinstance(rtol, torch.Tensor) else rtol) * w[fin].abs()
    worst = torch.argmax(err - bound)
    assert bool((err <= bound).all()), (
        f"max excess at {w[fin][worst].item()!r}: got {g[fin][worst].item()!r}, err {err[worst].item():.3g}"
    )


def tol(dtype: torch.dtype, ulps: float, denormal_ulps: float = 4.0) -> tuple[float, float]:
    """``ulps`` units of the dtype's relative precision, and an absolute floor of
    ``denormal_ulps`` steps of its denormals."""
    eps = torch.finfo(dtype).eps
    return ulps * eps, torch.finfo(dtype).smallest_normal * eps * denormal_ulps


def gelu64(x: torch.Tensor) -> torch.Tensor:
    """GELU in float64 as ``x * erfc(-x / sqrt(2)) / 2``: torch's ``x * (1 + erf(x / sqrt(2))) / 2``
    cancels to 0 below about -8 even in float64, and gives NaN at ``+inf`` (the limit is ``+inf``)."""
    y = x * 0.5 * torch.special.erfc(-x / math.sqrt(2.0))
    return torch.where(x == math.inf, x, y)


def gelu_tanh64(x: torch.Tensor) -> torch.Tensor:
    """The tanh-form GELU in float64 as ``x * sigmoid(2u)``, equal to ``x (1 + tanh u) / 2``
    without the cancellation of ``1 + tanh u`` (torch's form, 0 below about -19 in float64)."""
    u = math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)
    return x * torch.sigmoid(2.0 * u)


# unary_k's outputs, in order: float64 reference, FP32 ulps (FP16/BF16: the same bound in their
# ulps), denormal steps
CASES = {
    "tanh": (torch.tanh, 2.0, 4.0),
    "sigmoid": (torch.sigmoid, 2.0, 4.0),
    # silu(-100) = -100 * exp(-100) / (1 + ...): exp(-100) is an FP32 denormal (few digits)
    "silu": (F.silu, 3.0, 64.0),
    "gelu": (gelu64, 4.0, 64.0),
    "gelu_tanh": (gelu_tanh64, "exp_arg", 64.0),
    "erf": (torch.erf, 2.0, 4.0),
    "softplus": (F.softplus, 2.0, 4.0),
    "softplus_beta": (lambda x: F.softplus(x, beta=2.0, threshold=10.0), 2.0, 4.0),
    "tanh_tile": (torch.tanh, 2.0, 4.0),
}


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_matches_torch_over_edge_values(dtype: torch.dtype) -> None:
    if dtype is torch.bfloat16:
        pto_backend.needs_bfloat16()
    x = inputs(dtype)
    outs = [torch.zeros_like(x) for _ in CASES]
    unary_k(x, *outs)
    failures = []
    for (name, (ref, ulps, denormal_ulps)), got in zip(CASES.items(), outs, strict=True):
        if ulps == "exp_arg":
            # x * sigmoid(2u): the FP32 rounding of 2u = O(x**3) becomes a relative error of exp(-|2u|)
            x64 = x.to(torch.float64)
            arg = (2.0 * math.sqrt(2.0 / math.pi) * (x64 + 0.044715 * x64**3)).abs().nan_to_num(0.0, 0.0, 0.0)
            rtol: float | torch.Tensor = (4.0 + arg) * torch.finfo(torch.float32).eps
            rtol = torch.clamp(rtol, min=4.0 * torch.finfo(dtype).eps)
            atol = tol(dtype, 4.0, denormal_ulps)[1]
        else:
            rtol, atol = tol(dtype, float(ulps), denormal_ulps)
        try:
            check(got, ref(x.to(torch.float64)), rtol, atol)
        except AssertionError as exc:
            failures.append(f"{name}: {str(exc).splitlines()[0]}")
    assert not failures, "\n".join(failures)


@pl.jit
def pow_consts_k(  # noqa: PLR0917 -- a kernel takes each of its tensors positionally
    a: pl.Tensor,
    p0: pl.Out[pl.Tensor],
    p2: pl.Out[pl.Tensor],
    p3: pl.Out[pl.Tensor],
    pm3: pl.Out[pl.Tensor],
    sqrt_: pl.Out[pl.Tensor],
    rsqrt_: pl.Out[pl.Tensor],
    p25: pl.Out[pl.Tensor],
    third: pl.Out[pl.Tensor],
):
    with pl.at(level=pl.Level.CORE_GROUP):
        p0[:] = pl.pow(a, 0)
        p2[:] = pl.pow(a, 2)
        p3[:] = pl.pow(a, 3.0)
        pm3[:] = pl.pow(a, -3)
        sqrt_[:] = pl.pow(a, 0.5)
        rsqrt_[:] = pl.pow(a, -0.5)
        p25[:] = pl.pow(a, 2.5)
        third[:] = pl.pow(a, 0.3333)
    return p0, p2, p3, pm3, sqrt_, rsqrt_, p25, third


@pl.jit
def pow_tiles_k(a: pl.Tensor, b: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        o[:] = pl.pow(a, b)
    return o


def pow_bound(
    x: torch.Tensor, y: torch.Tensor, dtype: torch.dtype, ulps: float = 4.0
) -> tuple[torch.Tensor, float]:
    """The relative bound of ``exp(y log|x|)``: ``ulps`` plus ``|y ln|x||`` FP32 roundings (the
    error of the product ``y ln|x|`` becomes a relative error of the result), in FP32's units;
    no smaller than ``ulps`` of ``dtype``."""
    lnx = torch.log(x.abs().to(torch.float64)).nan_to_num(0.0, 0.0, 0.0)
    amp = (y.to(torch.float64) * lnx).abs().nan_to_num(0.0, 0.0, 0.0)
    fp32 = (ulps + amp) * torch.finfo(torch.float32).eps
    return torch.clamp(fp32, min=ulps * torch.finfo(dtype).eps), torch.finfo(
        dtype
    ).smallest_normal * torch.finfo(dtype).eps * 4


def zero_bases_checked() -> bool:
    """Whether the pow tests pass zero bases: the decomposition takes TRECIP of the base (the sign
    of a zero, and negative integer powers) and TRSQRT of it (``pow(x, -0.5)``), and both
    instructions' pages leave a zero operand target-defined. simpler's backend gives IEEE's
    signed infinity; the official CPU backend asserts (the process aborts), so its runs leave
    zero bases out (docs/pto-isa-backends.md)."""
    return not pto_backend.official()


def check_pow(got: torch.Tensor, want64: torch.Tensor, rtol: torch.Tensor, atol: float) -> None:
    g = got.to(torch.float64)
    w = want64.to(got.dtype).to(torch.float64)
    assert torch.equal(torch.isnan(g), torch.isnan(w)), (
        f"NaN at {torch.nonzero(torch.isnan(g) != torch.isnan(w)).tolist()[:5]}"
    )
    inf = torch.isinf(w)
    assert torch.equal(g[inf], w[inf]), (
        f"{g[inf & (g != w)].tolist()[:5]} where {w[inf & (g != w)].tolist()[:5]}"
    )
    fin = torch.isfinite(w)
    err = (g - w).abs()
    ok = err <= atol + rtol * w.abs()
    bad = fin & ~ok
    assert not bool(bad.any()), f"got {g[bad].tolist()[:4]}, want {w[bad].tolist()[:4]}"


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_pow_by_constants_matches_torch(dtype: torch.dtype) -> None:
    if dtype is torch.bfloat16:
        pto_backend.needs_bfloat16()
    x = inputs(dtype, -4.0, 4.0)
    if not zero_bases_checked():
        x = torch.where(x == 0, torch.ones_like(x), x)
    outs = [torch.zeros_like(x) for _ in range(8)]
    pow_consts_k(x, *outs)
    x64 = x.to(torch.float64)
    for p, got in zip((0, 2, 3.0, -3, 0.5, -0.5, 2.5, 0.3333), outs, strict=True):
        want = torch.pow(x64, p)
        if p == 0.5:  # torch's pow(x, 0.5) is sqrt(x): -inf gives NaN (IEEE's pow gives +inf)
            want = torch.sqrt(x64)
        elif p == -0.5:
            want = torch.rsqrt(x64)
        rtol, atol = pow_bound(x, torch.full_like(x, float(p)), dtype)
        check_pow(got, want, rtol, atol)


def test_pow_by_a_tile_matches_torch() -> None:
    xs = [0.0, -0.0, 1.0, -1.0, 2.0, -2.0, 0.5, -0.5, 3.7, -3.7, 1e-30, 1e30, math.inf, -math.inf, math.nan]
    ys = [0.0, 1.0, -1.0, 2.0, 3.0, -3.0, 0.5, 2.5, -2.5, 1 / 3, 10.0, math.inf, -math.inf, math.nan]
    pairs = [(a, b) for a in xs for b in ys]
    # IEEE's pow(-1, +-inf) = 1 is not taken (the decomposition gives NaN: exp(inf * 0))
    pairs = [(a, b) for a, b in pairs if not (a == -1.0 and math.isinf(b))]
    if not zero_bases_checked():
        pairs = [(a, b) for a, b in pairs if a != 0.0]
    rng = np.random.default_rng(5)
    while len(pairs) < R * C:
        pairs.append(
            (
                float(rng.uniform(-8, 8)),
                float(rng.integers(-6, 7)) if rng.random() < 0.5 else float(rng.uniform(-4, 4)),
            )
        )
    x = torch.tensor([a for a, _ in pairs], dtype=torch.float32).reshape(R, C)
    y = torch.tensor([b for _, b in pairs], dtype=torch.float32).reshape(R, C)
    o = torch.zeros_like(x)
    pow_tiles_k(x, y, o)
    rtol, atol = pow_bound(x, y, torch.float32)
    check_pow(o, torch.pow(x.to(torch.float64), y.to(torch.float64)), rtol, atol)


@pl.jit
def int_tanh_k(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        o[:] = pl.tanh(a)
    return o


@pl.jit
def bad_gelu_k(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        o[:] = pl.gelu(a, approximate="fast")
    return o


def test_refusals_name_the_argument() -> None:
    a = np.zeros((16, 16), np.int32)
    with pytest.raises(KernelError, match=r"pl.tanh: needs an operand of BF16/FP16/FP32, got INT32"):
        int_tanh_k(a, np.zeros_like(a))
    f = np.zeros((16, 16), np.float32)
    with pytest.raises(KernelError, match=r"pl.gelu: approximate must be one of 'none', 'tanh', got 'fast'"):
        bad_gelu_k(f, np.zeros_like(f))


@pl.jit
def softmax_hint_k(a: pl.Tensor, o: pl.Out[pl.Tensor], lo: pl.Out[pl.Tensor]):
    # the compositions pl's missing-name errors suggest for softmax and log_softmax (suggest.py)
    with pl.at(level=pl.Level.CORE_GROUP):
        x = pl.load(a, [0, 0], [16, 32])
        m = pl.row_max(x)
        d = pl.row_expand_sub(x, m)
        e = pl.exp(d)
        pl.store(pl.row_expand_div(e, pl.row_sum(e)), [0, 0], o)
        pl.store(pl.row_expand_sub(d, pl.log(pl.row_sum(pl.exp(d)))), [0, 0], lo)
    return o, lo


def test_suggested_softmax_compositions_are_stable() -> None:
    x = torch.linspace(-3.0, 3.0, R * C, dtype=torch.float32).reshape(R, C)
    x[0] = 1e30  # rows where exp(x) overflows or underflows without the max shift
    x[1, :16] = -1e30
    x[2] = -88.0 * torch.arange(C, dtype=torch.float32)
    o, lo = torch.zeros_like(x), torch.zeros_like(x)
    softmax_hint_k(x, o, lo)
    torch.testing.assert_close(o, torch.softmax(x.double(), 1).float(), rtol=4e-6, atol=1e-30)
    torch.testing.assert_close(lo, torch.log_softmax(x.double(), 1).float(), rtol=4e-6, atol=4e-6)
