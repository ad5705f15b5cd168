"""Generic operators by default: run-time dims for bare tensors, and a dtype variable.

A bare ``pl.Tensor`` parameter's dims are run-time values (``pl.dim(x, axis)`` in the body), so
one compile serves every shape; the compiles are counted at the compile hook
(``pypto.runtime.compile_artifact``, which every operator compile goes through), not by timing.
A ``pl.dtype_var`` makes one ``@pl.jit`` function serve several dtypes: one compile per dtype.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
import torch
from torch_test_backend import skip_bf16_on_the_official_backend

import pypto.language as pl
import pypto.runtime
import pypto.torch as pt

pytestmark = pytest.mark.usefixtures("kernel_mode")

T, W = 16, 64  # the tile
DT = pl.dtype_var("DT", pl.FP32, pl.BF16)


@pl.jit
def bare_exp(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    """exp of a [rows, cols <= 64] tensor: no annotated shape, every dim read at run time."""
    rows = pl.dim(x, 0)
    cols = pl.dim(x, 1)
    for i in pl.range((rows + T - 1) // T):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="bare_exp"):
            r = pl.min(T, rows - i * T)
            t = pl.load(x, [i * T, 0], [T, W], valid_shape=[r, cols])
            pl.store(pl.exp(t), [i * T, 0], out)
    return out


M = pl.dynamic("M")
N = pl.dynamic("N")


@pl.jit
def scaled(x: pl.Tensor[[M, N], DT], alpha: pl.FP32, out: pl.Out[pl.Tensor[[M, N], DT]]):
    """alpha * x in FP32 for an FP32 or BF16 x: one function, its dtype a variable."""
    for i in pl.range((M + T - 1) // T):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="scaled"):
            r = pl.min(T, M - i * T)
            t = pl.load(x, [i * T, 0], [T, W], valid_shape=[r, N])
            if DT != pl.FP32:
                t = pl.cast(t, target_type=pl.FP32)
            y = pl.mul(t, alpha)
            if DT != pl.FP32:
                y = pl.cast(y, target_type=DT)
            pl.store(y, [i * T, 0], out)
    return out


@pytest.fixture
def compile_hook(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every compile an operator makes, as the arguments it was specialised on."""
    seen: list[Any] = []
    real = pypto.runtime.compile_artifact

    def counting(fn: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append(args)
        return real(fn, *args, **kwargs)

    monkeypatch.setattr(pypto.runtime, "compile_artifact", counting)
    return seen


def _ns() -> str:
    return f"pypto_generic_{uuid.uuid4().hex[:8]}"


def test_a_new_shape_costs_no_compile(compile_hook: list[Any]) -> None:
    op = pt.register(bare_exp, f"{_ns()}::bare_exp", functional=True, shapes={"out": "x"})
    try:
        for shape in ((16, 64), (37, 20), (5, 64), (48, 1)):
            x = torch.randn(*shape)
            torch.testing.assert_close(op(x), x.exp())
        assert len(compile_hook) == 1  # the one compile, for FP32 rank 2
        spec = compile_hook[0][0]
        assert isinstance(spec, pl.TensorSpec)
        assert [d.name for d in spec.shape] == ["x_0", "x_1"]
        assert op.compiles == 1
        ks = op._variants.sets[None]
        assert ks.dynamic
        assert ks.pinned_reason is None
        compiled = torch.compile(lambda x: op(x) + 1, fullgraph=True, dynamic=True, backend="aot_eager")
        for rows in (9, 30):
            x = torch.randn(rows, 33)
            torch.testing.assert_close(compiled(x), x.exp() + 1)
        assert len(compile_hook) == 1
    finally:
        op.remove()


def test_pin_compiles_per_shape_and_tensor_level_ops_fall_back_to_it() -> None:
    """pin=True keys a bare tensor by its whole shape; a body with tensor-level ops (static
    shapes only) is compiled per shape after the language refuses run-time dims for it."""
    pinned = pt.register(bare_exp, f"{_ns()}::pinned", functional=True, shapes={"out": "x"}, pin=True)
    try:
        ks = pinned._variants.sets[None]
        assert not ks.dynamic
        assert ks.pinned_reason == "register(pin=True)"
        a, b = torch.empty(16, 64), torch.empty(32, 64)
        assert ks.key([a, a], 0) != ks.key([b, b], 0)
        dyn = pt.register(bare_exp, f"{_ns()}::dyn", functional=True, shapes={"out": "x"})
        dk = dyn._variants.sets[None]
        assert dk.key([a, a], 0) == dk.key([b, b], 0)
        # the dynamic key still tells dtype, rank, position and context generation apart
        keys = {
            dk.key([a, a], 0),
            dk.key([a.double(), a], 0),
            dk.key([a, a.double()], 0),
            dk.key([a.reshape(-1), a], 0),
            dk.key([a, a], 1),
        }
        assert len(keys) == 5
        dyn.remove()
    finally:
        pinned.remove()

    @pl.jit
    def neg(x: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = pl.neg(x)
        return out

    op = pt.register(neg, f"{_ns()}::neg", functional=True, shapes={"out": "x"})
    try:
        x = torch.randn(16, 16)
        torch.testing.assert_close(op(x), -x)
        ks = op._variants.sets[None]
        assert not ks.dynamic
        assert (ks.pinned_reason or "").startswith("KernelError"), ks.pinned_reason
        assert op.compiles == 1
    finally:
        op.remove()


def test_a_dtype_variable_makes_one_operator_for_each_dtype(compile_hook: list[Any]) -> None:
    op = pt.register(scaled, f"{_ns()}::scaled", functional=True)
    try:
        assert op.schema == "scaled(Tensor x, float alpha) -> Tensor"
        for dtype, tol in ((torch.float32, 1e-6), (torch.bfloat16, 1e-2)):
            if dtype is torch.bfloat16:
                skip_bf16_on_the_official_backend()
            for rows in (16, 21):
                x = torch.randn(rows, 40).to(dtype)
                y = op(x, 0.5)
                assert y.dtype == dtype
                torch.testing.assert_close(y, (x.float() * 0.5).to(dtype), rtol=tol, atol=tol)
        assert op.compiles == len(compile_hook) == 2  # one per dtype, whatever the shape
        with pytest.raises(pt.ArgumentError, match=r"dtype variable DT: expected one of .*float16"):
            op(torch.randn(4, 8, dtype=torch.float16), 1.0)
        assert op.precompile() == 0  # the variable's dtypes, both compiled
        assert len(compile_hook) == 2
    finally:
        op.remove()


def test_tensors_of_one_dtype_variable_must_agree() -> None:
    @pl.jit
    def add(a: pl.Tensor[[M, N], DT], b: pl.Tensor[[M, N], DT], out: pl.Out[pl.Tensor[[M, N], DT]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.add(pl.load(a, [0, 0], [T, W]), pl.load(b, [0, 0], [T, W]))
            pl.store(t, [0, 0], out)
        return out

    op = pt.register(add, f"{_ns()}::add")
    try:
        a = torch.randn(16, 64)
        with pytest.raises(
            pt.ArgumentError, match=r"dtype variable DT is torch\.float32 in parameter 'a' but"
        ):
            op(a, a.bfloat16(), torch.empty(16, 64))
        assert op.compiles == 0
    finally:
        op.remove()
    with pytest.raises(
        TypeError, match=r"dtype variable DT is FP32 in parameter 'a' but BF16 in parameter 'b'"
    ):
        add.specialize(torch.randn(16, 64), torch.randn(16, 64).bfloat16(), torch.empty(16, 64))
    with pytest.raises(ValueError, match=r"pl.dtype_var\(name\): expected an identifier"):
        pl.dtype_var("not a name")
