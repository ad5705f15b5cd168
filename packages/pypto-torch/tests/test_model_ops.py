"""Operators for a model: generic over shapes and dtypes, functional, differentiable.

RMSNorm, a row softmax, RoPE and SwiGLU (two matmuls and the epilogue in one scope) as
functional PyPTO operators for FP32 and BF16 (kernels computing in FP32) with ``pl.dynamic``
rows (tails through valid shapes): RMSNorm and softmax one ``@pl.jit`` function each with a
``pl.dtype_var``, RoPE and SwiGLU a builder per listed dtype. Backwards: RoPE's is the RoPE
operator itself (with -sin); the others are torch code. Checked: gradcheck (FP32, fast mode,
eps 1e-3, atol/rtol 1e-2: the kernels are FP32, not FP64), opcheck, a few training steps of a
two-layer model against plain torch, and a transformer block forward and backward under
``torch.compile(fullgraph=True, dynamic=True)`` (inductor) over several sequence lengths and
two dtypes with one compile per (operator, dtype).
"""

from __future__ import annotations

import math
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from torch_test_backend import skip_bf16_on_the_official_backend

import pypto.language as pl
import pypto.torch as pt

pytestmark = pytest.mark.usefixtures("kernel_mode")

M = pl.dynamic("M")  # rows (tokens, or tokens x heads): a run-time value
N = pl.dynamic("N")  # a row's length, up to one tile
D2 = pl.dynamic("D2")  # half a head's dim
T, W = 16, 128  # the tile: 16 rows, up to 128 columns
HID, INTER = 64, 64  # SwiGLU's pinned hidden and intermediate sizes (its cube tiles)


DT = pl.dtype_var("DT", pl.FP32, pl.BF16)  # RMSNorm and softmax: one function for both dtypes


@pl.jit
def rms_norm(
    x: pl.Tensor[[M, N], DT], w: pl.Tensor[[N], DT], eps: pl.FP32, out: pl.Out[pl.Tensor[[M, N], DT]]
):
    for i in pl.range((M + T - 1) // T):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="rms_norm"):
            rows = pl.min(T, M - i * T)  # the last block holds the rows left
            t = pl.load(x, [i * T, 0], [T, W], valid_shape=[rows, N])
            g = pl.load(w, [0], [W], valid_shape=[1, N])
            if DT != pl.FP32:  # a BF16 kernel computes in FP32
                t = pl.cast(t, target_type=pl.FP32)
                g = pl.cast(g, target_type=pl.FP32)
            tmp = pl.create_tile([T, W], dtype=pl.FP32, target_memory=pl.MemorySpace.Vec)
            ss: pl.Tile[[T, 1], pl.FP32] = pl.row_sum(pl.mul(t, t), tmp)
            y = pl.col_expand_mul(pl.row_expand_mul(t, pl.rsqrt(pl.add(pl.div(ss, N), eps))), g)
            if DT != pl.FP32:
                y = pl.cast(y, target_type=DT)
            pl.store(y, [i * T, 0], out)
    return out


@pl.jit
def softmax(x: pl.Tensor[[M, N], DT], out: pl.Out[pl.Tensor[[M, N], DT]]):
    for i in pl.range((M + T - 1) // T):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="softmax"):
            rows = pl.min(T, M - i * T)  # the last block holds the rows left
            t = pl.load(x, [i * T, 0], [T, W], valid_shape=[rows, N])
            if DT != pl.FP32:
                t = pl.cast(t, target_type=pl.FP32)
            tmp = pl.create_tile([T, W], dtype=pl.FP32, target_memory=pl.MemorySpace.Vec)
            m: pl.Tile[[T, 1], pl.FP32] = pl.row_max(t, tmp)
            e = pl.exp(pl.row_expand_sub(t, m))
            s: pl.Tile[[T, 1], pl.FP32] = pl.row_sum(e, tmp)
            y = pl.row_expand_div(e, s)
            if DT != pl.FP32:
                y = pl.cast(y, target_type=DT)
            pl.store(y, [i * T, 0], out)
    return out


def rope(dt: Any) -> Any:
    narrow = dt != pl.FP32

    @pl.jit
    def rope_k(
        x: pl.Tensor[[M, N], dt],
        cos: pl.Tensor[[M, D2], dt],
        sin: pl.Tensor[[M, D2], dt],
        out: pl.Out[pl.Tensor[[M, N], dt]],
    ):
        for i in pl.range((M + T - 1) // T):
            with pl.at(level=pl.Level.CORE_GROUP, name_hint="rope"):
                rows = pl.min(T, M - i * T)  # the last block holds the rows left
                x1 = pl.load(x, [i * T, 0], [T, W // 2], valid_shape=[rows, D2])
                x2 = pl.load(x, [i * T, D2], [T, W // 2], valid_shape=[rows, D2])
                c = pl.load(cos, [i * T, 0], [T, W // 2], valid_shape=[rows, D2])
                s = pl.load(sin, [i * T, 0], [T, W // 2], valid_shape=[rows, D2])
                if narrow:
                    x1 = pl.cast(x1, target_type=pl.FP32)
                    x2 = pl.cast(x2, target_type=pl.FP32)
                    c = pl.cast(c, target_type=pl.FP32)
                    s = pl.cast(s, target_type=pl.FP32)
                y1 = pl.sub(pl.mul(x1, c), pl.mul(x2, s))
                y2 = pl.add(pl.mul(x2, c), pl.mul(x1, s))
                if narrow:
                    y1 = pl.cast(y1, target_type=dt)
                    y2 = pl.cast(y2, target_type=dt)
                pl.store(y1, [i * T, 0], out)
                pl.store(y2, [i * T, D2], out)
        return out

    return rope_k


def swiglu(dt: Any) -> Any:
    narrow = dt != pl.FP32
    H, FF = HID, INTER

    @pl.jit
    def swiglu_k(
        x: pl.Tensor[[M, H], dt],
        wg: pl.Tensor[[H, FF], dt],
        wu: pl.Tensor[[H, FF], dt],
        out: pl.Out[pl.Tensor[[M, FF], dt]],
    ):
        for i in pl.range((M + T - 1) // T):
            with pl.at(level=pl.Level.CORE_GROUP, name_hint="swiglu"):
                rows = pl.min(T, M - i * T)  # the last block holds the rows left
                xl = pl.load(x, [i * T, 0], [T, H], valid_shape=[rows, H], target_memory=pl.MemorySpace.Mat)
                xa = pl.move(xl, target_memory=pl.MemorySpace.Left)
                g1 = pl.load(wg, [0, 0], [H, FF], target_memory=pl.MemorySpace.Mat)
                u1 = pl.load(wu, [0, 0], [H, FF], target_memory=pl.MemorySpace.Mat)
                ga: pl.Tile[[T, FF], pl.FP32] = pl.matmul(xa, pl.move(g1, target_memory=pl.MemorySpace.Right))
                ua: pl.Tile[[T, FF], pl.FP32] = pl.matmul(xa, pl.move(u1, target_memory=pl.MemorySpace.Right))
                g = pl.move(ga, target_memory=pl.MemorySpace.Vec)
                u = pl.move(ua, target_memory=pl.MemorySpace.Vec)
                y = pl.set_validshape(
                    pl.mul(pl.mul(g, pl.recip(pl.add(pl.exp(pl.neg(g)), 1.0))), u), rows, FF
                )
                if narrow:
                    y = pl.cast(y, target_type=dt)
                pl.store(y, [i * T, 0], out)
        return out

    return swiglu_k


# -- backwards (torch code, or another PyPTO operator) ---------------------------------------------


def _rms_setup(ctx: Any, inputs: tuple[Any, ...], output: Any) -> None:
    x, w, eps = inputs
    ctx.save_for_backward(x, w)
    ctx.eps = eps


def _rms_backward(ctx: Any, grad: torch.Tensor) -> tuple[Any, ...]:
    x, w = ctx.saved_tensors
    xf, wf, gf = x.float(), w.float(), grad.float()
    r = torch.rsqrt((xf * xf).mean(-1, keepdim=True) + ctx.eps)
    n = xf * r
    gn = gf * wf
    gx = r * (gn - n * (gn * n).mean(-1, keepdim=True))
    gw = (gf * n).sum(0)
    return gx.to(x.dtype), gw.to(w.dtype), None


def _softmax_setup(ctx: Any, inputs: tuple[Any, ...], output: Any) -> None:
    ctx.save_for_backward(output)


def _softmax_backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
    (y,) = ctx.saved_tensors
    return y * (grad - (grad * y).sum(-1, keepdim=True))


def _rope_setup(ctx: Any, inputs: tuple[Any, ...], output: Any) -> None:
    ctx.save_for_backward(inputs[1], inputs[2])


def _swiglu_setup(ctx: Any, inputs: tuple[Any, ...], output: Any) -> None:
    ctx.save_for_backward(*inputs)


def _swiglu_backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, ...]:
    x, wg, wu = ctx.saved_tensors
    xf, gf = x.float(), grad.float()
    a, b = xf @ wg.float(), xf @ wu.float()
    s = torch.sigmoid(a)
    ga = gf * b * s * (1 + a * (1 - s))
    gb = gf * a * s
    gx = ga @ wg.float().T + gb @ wu.float().T
    return gx.to(x.dtype), (xf.T @ ga).to(wg.dtype), (xf.T @ gb).to(wu.dtype)


@pytest.fixture
def ops() -> Iterator[dict[str, Any]]:
    ns = f"pypto_model_{uuid.uuid4().hex[:8]}"
    dtypes = [pl.FP32, pl.BF16]
    made = {  # a pl.dtype_var function, or a builder per listed dtype: one operator either way
        "rms_norm": pt.register(rms_norm, f"{ns}::rms_norm", functional=True),
        "softmax": pt.register(softmax, f"{ns}::softmax", functional=True),
        "rope": pt.register(rope, f"{ns}::rope", functional=True, dtypes=dtypes),
        "swiglu": pt.register(swiglu, f"{ns}::swiglu", functional=True, dtypes=dtypes),
    }
    made["rms_norm"].register_autograd(_rms_backward, setup_context=_rms_setup)
    made["softmax"].register_autograd(_softmax_backward, setup_context=_softmax_setup)
    rope_op = made["rope"]

    def rope_backward(ctx: Any, grad: torch.Tensor) -> tuple[Any, ...]:
        cos, sin = ctx.saved_tensors
        return rope_op(grad, cos, -sin), None, None  # the inverse rotation: another PyPTO call

    rope_op.register_autograd(rope_backward, setup_context=_rope_setup)
    made["swiglu"].register_autograd(_swiglu_backward, setup_context=_swiglu_setup)
    yield made
    for op in made.values():
        op.remove()


# -- torch references --------------------------------------------------------------------------


def ref_rms(x: torch.Tensor, w: torch.Tensor, eps: float) -> torch.Tensor:
    xf = x.float()
    return (xf * torch.rsqrt((xf * xf).mean(-1, keepdim=True) + eps) * w.float()).to(x.dtype)


def ref_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    h = x.shape[-1] // 2
    x1, x2 = x[..., :h], x[..., h:]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], -1)


def ref_swiglu(x: torch.Tensor, wg: torch.Tensor, wu: torch.Tensor) -> torch.Tensor:
    return F.silu(x @ wg) * (x @ wu)


@pytest.mark.filterwarnings("ignore:Input #.* requires gradient and is not a double:UserWarning")
def test_gradcheck_rms_norm_softmax_swiglu_in_fp32(ops: dict[str, Any]) -> None:
    """FP32 kernels (the language has no FP64 vector math here): finite differences with
    eps 1e-3 and atol = rtol = 1e-2 (fast mode: a few directional derivatives per input)."""
    torch.manual_seed(0)
    tol = {"eps": 1e-3, "atol": 1e-2, "rtol": 1e-2, "fast_mode": True}
    x = torch.randn(21, 40, requires_grad=True)
    w = torch.randn(40, requires_grad=True)
    assert torch.autograd.gradcheck(lambda x, w: ops["rms_norm"](x, w, 1e-6), (x, w), **tol)
    s = torch.randn(19, 33, requires_grad=True)
    assert torch.autograd.gradcheck(ops["softmax"], (s,), **tol)
    xs = (torch.randn(18, HID) / 4).requires_grad_()
    wg = (torch.randn(HID, INTER) / 4).requires_grad_()
    wu = (torch.randn(HID, INTER) / 4).requires_grad_()
    assert torch.autograd.gradcheck(ops["swiglu"], (xs, wg, wu), **tol)
    assert ops["rms_norm"].compiles == ops["softmax"].compiles == ops["swiglu"].compiles == 1


def test_opcheck_and_schema_of_a_functional_operator(ops: dict[str, Any]) -> None:
    op = ops["rms_norm"]
    assert op.schema.endswith("rms_norm(Tensor x, Tensor w, float eps) -> Tensor")
    x, w = torch.randn(20, 24, requires_grad=True), torch.randn(24, requires_grad=True)
    torch.library.opcheck(op.op, (x, w, 1e-6))
    with pytest.raises(pt.ArgumentError, match="expected one of"):
        op(torch.randn(4, 8, dtype=torch.float16), torch.randn(8, dtype=torch.float16), 1e-6)
    with pytest.raises(pt.ArgumentError, match="dimension N is 24 in parameter 'x'"):
        op(torch.randn(4, 24), torch.randn(16), 1e-6)  # refused before anything compiles


def test_size_errors_are_found_before_a_compile() -> None:
    ns = f"pypto_model_{uuid.uuid4().hex[:8]}"
    op = pt.register(rms_norm, f"{ns}::rms_norm_out")  # mutation-only: the caller's out
    try:
        x, w = torch.randn(20, 24), torch.randn(24)
        with pytest.raises(
            pt.ArgumentError, match=r"dimension M is 20 in parameter 'x' .* 19 in parameter 'out'"
        ):
            op(x, w, 1e-6, torch.empty(19, 24))
        with pytest.raises(
            pt.ArgumentError, match=r"dimension N is 24 in parameter 'x' .* 16 in parameter 'w'"
        ):
            op(x, torch.randn(16), 1e-6, torch.empty(20, 24))
        with pytest.raises(
            pt.ArgumentError, match=r"dtype variable DT: expected one of .* got torch\.float64"
        ):
            op(x.double(), w, 1e-6, torch.empty(20, 24))
        assert op.compiles == 0
    finally:
        op.remove()


def test_functional_registration_errors() -> None:
    ns = f"pypto_model_{uuid.uuid4().hex[:8]}"

    @pl.jit
    def acc(x: pl.Tensor, total: pl.InOut[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            total[:] = pl.add(total, x)
        return total

    @pl.jit
    def bare(x: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = pl.exp(x)
        return out

    with pytest.raises(ValueError, match="parameter 'total' is InOut"):
        pt.register(acc, f"{ns}::acc", functional=True)
    with pytest.raises(ValueError, match="Out parameter 'out' has no annotated shape"):
        pt.register(bare, f"{ns}::bare", functional=True)
    with pytest.raises(ValueError, match="'y' is not a tensor input"):
        pt.register(bare, f"{ns}::bare", functional=True, shapes={"out": "y"})
    with pytest.raises(TypeError, match="shape rules are for functional=True"):
        pt.register(bare, f"{ns}::bare", shapes={"out": "x"})
    with pytest.raises(TypeError, match="expected a builder"):
        pt.register(bare, f"{ns}::bare", dtypes=[pl.FP32])
    op = pt.register(bare, f"{ns}::bare", functional=True, shapes={"out": lambda x: x.shape})
    try:
        assert op.schema == "bare(Tensor x) -> Tensor"
        fake = op.op(torch.empty(3, 5, device="meta"))  # the Fake kernel allocates from the rule
        assert fake.shape == (3, 5)
        assert fake.device.type == "meta"
        assert op.compiles == 0
    finally:
        op.remove()


def test_precompile_then_calls_compile_nothing(ops: dict[str, Any]) -> None:
    op = ops["softmax"]
    assert op.precompile(dtypes=[pl.FP32, "BF16"]) == 2  # a progress bar when it takes > 1 s
    assert op.precompile() == 0  # every variant is compiled already
    with pytest.raises(ValueError, match=r"no variant for dtype torch\.float16"):
        op.precompile(dtypes=[torch.float16])
    for dtype in (torch.float32, torch.bfloat16):
        if dtype is torch.bfloat16:
            assert op.compiles == 2
            skip_bf16_on_the_official_backend()
        for rows, cols in ((3, 7), (40, 128)):
            x = torch.randn(rows, cols, dtype=dtype)
            torch.testing.assert_close(op(x), torch.softmax(x.float(), -1).to(dtype), rtol=1e-2, atol=1e-2)
    assert op.compiles == 2


def test_precompile_shows_a_progress_bar_after_a_second(monkeypatch: pytest.MonkeyPatch) -> None:
    from pypto.torch import _operator_kernels

    class SlowKernels:
        compiles = 0

        def prepare(self, args: Any) -> None:
            time.sleep(0.5)
            self.compiles += 1

    class Bar:
        def __init__(self) -> None:
            self.updates: list[int] = []
            self.stopped = False

        def update(self, task: Any, completed: int) -> None:
            self.updates.append(completed)

        def stop(self) -> None:
            self.stopped = True

    bar = Bar()
    shown: list[tuple[str, int, int]] = []

    def start(label: str, total: int, done: int) -> tuple[Bar, int]:
        shown.append((label, total, done))
        return bar, 0

    monkeypatch.setattr(_operator_kernels, "_start_progress", start)
    slow = SlowKernels()
    assert _operator_kernels._run_with_progress([(slow, ())] * 4, "precompile x") == 4  # type: ignore[list-item]
    assert len(shown) == 1
    assert shown[0][:2] == ("precompile x", 4)
    assert shown[0][2] >= 1  # shown after a second, with what was done by then
    assert bar.updates[-1] == 4
    assert bar.stopped
    fast = SlowKernels()
    fast.prepare = lambda args: None  # type: ignore[method-assign]
    shown.clear()
    assert _operator_kernels._run_with_progress([(fast, ())] * 3, "quick") == 0  # type: ignore[list-item]
    assert not shown


def test_training_a_two_layer_model_matches_torch(ops: dict[str, Any]) -> None:
    """RMSNorm + SwiGLU, then a softmax head: three SGD steps, PyPTO operators vs plain torch."""
    torch.manual_seed(1)
    params = {
        "g": torch.ones(HID) + 0.1 * torch.randn(HID),
        "wg": torch.randn(HID, INTER) / 8,
        "wu": torch.randn(HID, INTER) / 8,
        "wo": torch.randn(INTER, 24) / 8,
    }
    x, target = torch.randn(27, HID), torch.softmax(torch.randn(27, 24), -1)

    def forward(p: dict[str, torch.Tensor], pypto: bool) -> torch.Tensor:
        if pypto:
            h = ops["swiglu"](ops["rms_norm"](x, p["g"], 1e-6), p["wg"], p["wu"])
            return ops["softmax"](h @ p["wo"])
        h = ref_swiglu(ref_rms(x, p["g"], 1e-6), p["wg"], p["wu"])
        return torch.softmax(h @ p["wo"], -1)

    trained = []
    for pypto in (True, False):
        p = {k: v.clone().requires_grad_() for k, v in params.items()}
        opt = torch.optim.SGD(p.values(), lr=0.5)
        for _ in range(3):
            opt.zero_grad()
            loss = ((forward(p, pypto) - target) ** 2).sum()
            loss.backward()
            opt.step()
        trained.append(p)
    for k, start in params.items():
        torch.testing.assert_close(trained[0][k], trained[1][k], rtol=1e-4, atol=1e-5)
        assert not torch.equal(trained[0][k], start)


class Block(torch.nn.Module):
    """Pre-norm attention (RoPE, softmax) and SwiGLU MLP, each kernel a PyPTO operator or not."""

    def __init__(self, ops: dict[str, Any] | None, heads: int = 2) -> None:
        super().__init__()
        self.ops, self.heads, self.hd = ops, heads, HID // heads
        g = torch.Generator().manual_seed(2)

        def p(*shape: int, scale: float) -> torch.nn.Parameter:
            return torch.nn.Parameter(torch.randn(*shape, generator=g) * scale)

        self.n1, self.n2 = p(HID, scale=0.1), p(HID, scale=0.1)
        with torch.no_grad():
            self.n1 += 1
            self.n2 += 1
        self.wqkv, self.wo = p(HID, 3 * HID, scale=0.125), p(HID, HID, scale=0.125)
        self.wg, self.wu, self.wd = (p(HID, INTER, scale=0.125) for _ in range(3))

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        s, h, hd = x.shape[0], self.heads, self.hd
        o = self.ops
        norm = (lambda t, w: o["rms_norm"](t, w, 1e-6)) if o else (lambda t, w: ref_rms(t, w, 1e-6))
        q, k, v = (norm(x, self.n1) @ self.wqkv).split(HID, -1)
        if o:  # RoPE on [tokens * heads, head_dim] rows
            q = o["rope"](q.reshape(s * h, hd), cos, sin).view(s, h, hd)
            k = o["rope"](k.reshape(s * h, hd), cos, sin).view(s, h, hd)
        else:
            q = ref_rope(q.reshape(s * h, hd), cos, sin).view(s, h, hd)
            k = ref_rope(k.reshape(s * h, hd), cos, sin).view(s, h, hd)
        scores = torch.einsum("shd,thd->hst", q, k) / math.sqrt(hd)
        if o:
            att = o["softmax"](scores.reshape(h * s, s)).view(h, s, s)
        else:
            att = torch.softmax(scores.float(), -1).to(scores.dtype)
        x = x + torch.einsum("hst,thd->shd", att, v.view(s, h, hd)).reshape(s, HID) @ self.wo
        mlp = o["swiglu"] if o else ref_swiglu
        return x + mlp(norm(x, self.n2), self.wg, self.wu) @ self.wd


def _rotary(s: int, heads: int, hd: int, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    inv = 1.0 / (10000 ** (torch.arange(0, hd, 2).float() / hd))
    ang = torch.outer(torch.arange(s).float(), inv).repeat_interleave(heads, 0)  # [s * heads, hd / 2]
    return ang.cos().to(dtype), ang.sin().to(dtype)


def test_model_block_forward_backward_compiled_dynamic(ops: dict[str, Any]) -> None:
    """The block under torch.compile(fullgraph=True, dynamic=True) over several sequence
    lengths (tails included) and two dtypes: one PyPTO compile per (operator, dtype), outputs
    and gradients matching the same block in plain torch."""
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    ours, theirs = Block(ops), Block(None)
    step = torch.compile(ours, fullgraph=True, dynamic=True)  # inductor, forward and backward
    for dtype, tol in ((torch.float32, 2e-4), (torch.bfloat16, 6e-2)):
        if dtype is torch.bfloat16:
            skip_bf16_on_the_official_backend()
        ours.to(dtype)
        theirs.to(dtype)
        for s in (37, 16, 24):  # 37 first: a first length of 16 (= head_dim / 2) would be duck-sized
            x = torch.randn(s, HID, generator=torch.Generator().manual_seed(s)).to(dtype)
            cos, sin = _rotary(s, ours.heads, ours.hd, dtype)
            got = step(x, cos, sin)
            want = theirs(x, cos, sin)
            torch.testing.assert_close(got, want, rtol=tol, atol=tol)
            got.float().square().sum().backward()
            want.float().square().sum().backward()
            for (name, a), b in zip(ours.named_parameters(), theirs.parameters(), strict=True):
                assert a.grad is not None, name
                scale = max(1.0, float(b.grad.abs().max()))
                torch.testing.assert_close(a.grad, b.grad, rtol=tol, atol=tol * scale, msg=name)
                a.grad = b.grad = None
    for name, op in ops.items():
        assert op.compiles == 2, (name, op.compiles)  # FP32 and BF16, whatever the length
    assert torch._dynamo.utils.counters["stats"]["unique_graphs"] == 2  # one graph per dtype, too
