"""KernelCallable.materialize: simpler's ChipStorageTaskArgs of a described call, natively or not."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
import torch

import simpler
from pypto.ir import ParamInfo
from pypto.torch import _native_describe
from pypto.torch._kernel.callable import KernelCallable


@pytest.fixture(params=["native", "python"])
def kc(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> KernelCallable:
    """A registration of ``axpy(x, out, alpha)``; its tensor tuples built by the extension
    (built on first use) or by Python."""
    if request.param == "native":
        assert _native_describe.build_native(), _native_describe.native_error()
    else:
        monkeypatch.setattr("pypto.torch._kernel.callable.loaded_module", lambda: None)
    params = [
        ParamInfo("x", "In", [-1, 8], "FP32"),
        ParamInfo("out", "Out", [-1, 8], "FP32"),
        ParamInfo("alpha", "In", None, "FP32"),
    ]
    artifact = SimpleNamespace(name="axpy", params=params, metadata=SimpleNamespace(return_aliases=[1]))
    return KernelCallable(artifact, handle=None, generation=1, platform="a2a3sim", simpler=simpler)


def _expected(args: list[Any], scalar_bits: int) -> tuple[Any, ...]:
    tensors = []
    for t in args[:2]:
        storage = t.untyped_storage()
        shape = tuple(t.shape)
        tensors.append((storage.data_ptr(), storage.nbytes(), 0, shape, (shape[1], 1), t.storage_offset()))
    return tuple(tensors), (1, 2), (scalar_bits,)


def test_materialize_describes_each_tensor_and_encodes_scalars(kc: KernelCallable) -> None:
    base = torch.zeros(6, 8)
    args: list[Any] = [base[2:5], torch.empty(3, 8), 0.5]
    mat = kc.materialize(kc.signature.describe_call(args))
    bits = simpler.task_args.encode_scalar(0.5, 0)
    assert (mat.tensors, mat.directions, mat.scalars) == _expected(args, bits)


def test_an_equal_call_reuses_the_last_arguments_and_a_changed_one_does_not(kc: KernelCallable) -> None:
    x, out = torch.rand(4, 8), torch.empty(4, 8)
    first = kc.materialize(kc.signature.describe_call([x, out, 0.5]))
    assert kc.materialize(kc.signature.describe_call([x, out, 0.5])) is first
    other_scalar = kc.materialize(kc.signature.describe_call([x, out, 2.0]))
    assert other_scalar is not first
    assert other_scalar.scalars == (simpler.task_args.encode_scalar(2.0, 0),)
    other_tensor = kc.materialize(kc.signature.describe_call([torch.rand(4, 8), out, 2.0]))
    assert other_tensor is not other_scalar
    assert other_tensor.tensors[0][0] != x.untyped_storage().data_ptr()
