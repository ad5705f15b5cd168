"""pypto.torch.interop: call frames on real CPU storage with an emulated NPU device label.

Only the platform queries (device label, format, physical NZ descriptor, current device and
stream) are stubbed, by the ``npu`` fixture; every storage fact comes from real tensors.
"""

from __future__ import annotations

import ctypes
import doctest
import gc
import threading
import weakref
from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from pypto.ir.param_info import ParamInfo, SignatureError
from pypto.torch import interop
from pypto.torch._platform import NpuRuntimeUnavailable, PhysicalDescriptor, platform_for
from pypto.torch._platform.simulator import DEFAULT_STREAM, SimulatorStream, use_stream
from pypto.torch.interop import ArgumentError, CallSignature, nz_physical_shape
from pypto_testing import DEFAULT_BLOCKED

P = ParamInfo


def axpy_sig(platform: Any, aliases: tuple[int, ...] = (1,)) -> CallSignature:
    return CallSignature(
        [P("x", "In", [-1, 4], "FP32"), P("out", "Out", [-1, 4], "FP32"), P("alpha", "In", None, "FP32")],
        aliases,
        platform=platform,
    )


# ---------------------------------------------------------------- frames, offsets, ownership


def test_frame_records_every_field(npu) -> None:
    base = torch.arange(40, dtype=torch.float32)
    x = npu.place(base[8:20].view(3, 4))  # nonzero storage offset
    out = npu.place(torch.zeros(3, 4))
    frame = axpy_sig(npu).describe_call([x, out, 2.5])

    tx, tout = frame.tensors
    assert (tx.param_index, tx.name, tx.direction.value, tx.dtype.value) == (0, "x", "In", "FP32")
    assert tx.shape == (3, 4)
    assert tx.strides == (4, 1)
    assert tx.storage_offset == 8
    assert tx.storage_ptr == base.data_ptr()
    assert tx.data_ptr == base.data_ptr() + 8 * 4 == x.data_ptr()
    assert tx.storage_nbytes == 160
    assert tx.nbytes == 48
    assert tx.format == 2
    assert tx.physical_shape is None
    assert tx.tensor is x
    assert tout.param_index == 1
    assert tout.direction.value == "Out"
    assert tout.storage_offset == 0
    (alpha,) = frame.scalars
    assert (alpha.param_index, alpha.name, alpha.dtype.value, alpha.value) == (2, "alpha", "FP32", 2.5)
    assert frame.device_index == 0
    assert frame.stream is npu.stream
    assert frame.platform == "a2a3"
    assert frame.return_tensors == (out,)
    assert frame.alias_result() is out
    assert frame.signature.params[1].name == "out"
    with pytest.raises(AttributeError):
        frame.device_index = 1  # type: ignore[misc]


def test_dynamic_dims_take_the_current_extent(npu) -> None:
    sig = axpy_sig(npu)
    for rows in (1, 5):
        frame = sig.describe_call([npu.place(torch.ones(rows, 4)), npu.place(torch.ones(rows, 4)), 1.0])
        assert frame.tensors[0].shape == (rows, 4)


def test_scalar_slots_keep_their_signature_index(npu) -> None:
    sig = CallSignature(
        [P("n", "In", None, "INT32"), P("out", "InOut", [2], "INT32"), P("flag", "In", None, "BOOL")],
        [1],
        platform=npu,
    )
    frame = sig.describe_call([7, npu.place(torch.zeros(2, dtype=torch.int32)), True])
    assert [(s.param_index, s.value) for s in frame.scalars] == [(0, 7), (2, True)]
    assert frame.tensors[0].param_index == 1


@pytest.mark.parametrize(("aliases", "expect"), [((), "none"), ((1,), "one"), ((1, 0, 1), "tuple")])
def test_alias_result_returns_existing_objects(npu, aliases, expect) -> None:
    x, out = npu.place(torch.ones(2, 4)), npu.place(torch.zeros(2, 4))
    result = axpy_sig(npu, aliases).describe_call([x, out, 1.0]).alias_result()
    if expect == "none":
        assert result is None
    elif expect == "one":
        assert result is out
    else:
        assert isinstance(result, tuple)
        assert len(result) == 3
        assert result[0] is out
        assert result[1] is x
        assert result[2] is out


def test_frame_keeps_tensors_and_storage_alive(npu) -> None:
    base = torch.arange(16, dtype=torch.float32)
    x = npu.place(base[4:12].view(2, 4))
    out = npu.place(torch.zeros(2, 4))
    frame = axpy_sig(npu).describe_call([x, out, 1.0])
    x_ref, out_ref = weakref.ref(x), weakref.ref(out)
    storage_ptr = base.untyped_storage().data_ptr()
    del x, out, base
    gc.collect()
    assert x_ref() is not None
    assert out_ref() is not None
    tx = frame.tensors[0]
    assert tx.storage.data_ptr() == storage_ptr == tx.storage_ptr
    assert tx.tensor.tolist() == [[4.0, 5.0, 6.0, 7.0], [8.0, 9.0, 10.0, 11.0]]
    del frame, tx
    gc.collect()
    assert x_ref() is None
    assert out_ref() is None


def test_frame_keeps_storage_alive_when_the_tensor_is_repointed(npu) -> None:
    x = npu.place(torch.arange(8, dtype=torch.float32).view(2, 4))
    frame = axpy_sig(npu).describe_call([x, npu.place(torch.zeros(2, 4)), 1.0])
    ptr = frame.tensors[0].storage_ptr
    x.set_()  # the tensor object no longer owns that storage; only the frame does
    gc.collect()
    assert x.untyped_storage().data_ptr() != ptr
    kept = frame.tensors[0].storage
    assert kept.data_ptr() == ptr
    assert torch.empty(0).set_(kept, 0, (8,), (1,)).tolist() == [float(v) for v in range(8)]


# ---------------------------------------------------------------- aliasing between arguments


def two_tensor_sig(
    npu, d0: str, d1: str, dt1: str = "FP32", shape1: tuple[int, ...] = (-1,)
) -> CallSignature:
    return CallSignature([P("a", d0, [-1], "FP32"), P("b", d1, list(shape1), dt1)], platform=npu)


def test_exact_alias_accepted_across_dtype_and_shape(npu) -> None:
    base = torch.zeros(8)
    a = npu.place(base)
    b = npu.place(base.view(torch.int32).view(2, 4))  # same 32 bytes, another dtype and shape
    frame = two_tensor_sig(npu, "In", "Out", "INT32", (2, 4)).describe_call([a, b])
    assert frame.tensors[0].data_ptr == frame.tensors[1].data_ptr
    assert frame.tensors[0].nbytes == frame.tensors[1].nbytes == 32
    two_tensor_sig(npu, "InOut", "InOut").describe_call([a, npu.place(base[:])])  # the same span twice


def test_disjoint_views_of_one_storage_accepted(npu) -> None:
    base = torch.zeros(16)
    frame = two_tensor_sig(npu, "Out", "InOut").describe_call([npu.place(base[:8]), npu.place(base[8:])])
    assert frame.tensors[0].storage_ptr == frame.tensors[1].storage_ptr
    assert frame.tensors[1].storage_offset == 8


def test_overlapping_read_only_views_accepted(npu) -> None:
    base = torch.zeros(16)
    two_tensor_sig(npu, "In", "In").describe_call([npu.place(base[:8]), npu.place(base[4:12])])


@pytest.mark.parametrize(("d0", "d1"), [("In", "Out"), ("Out", "In"), ("InOut", "In"), ("Out", "Out")])
def test_partial_overlap_with_a_written_view_rejected(npu, d0, d1) -> None:
    base = torch.zeros(16)
    with pytest.raises(ArgumentError, match=r"'a' .* and 'b' .* partially overlap"):
        two_tensor_sig(npu, d0, d1).describe_call([npu.place(base[:8]), npu.place(base[4:12])])


def test_empty_view_overlaps_nothing(npu) -> None:
    base = torch.zeros(16)
    frame = two_tensor_sig(npu, "Out", "Out").describe_call([npu.place(base[:8]), npu.place(base[4:4])])
    assert frame.tensors[1].nbytes == 0


# ---------------------------------------------------------------- snapshots and context queries


def test_scalar_snapshots_are_independent(npu) -> None:
    sig = CallSignature([P("out", "Out", [2], "INT32"), P("n", "In", None, "INT32")], platform=npu)
    out = npu.place(torch.zeros(2, dtype=torch.int32))
    n = ctypes.c_int32(5)
    first = sig.describe_call([out, n])
    n.value = 9  # a mutable ctypes input is copied, not referenced
    second = sig.describe_call([out, n])
    assert first.scalars[0].value == 5
    assert second.scalars[0].value == 9
    assert type(first.scalars[0].value) is int


def test_stream_is_queried_on_every_call_and_retained(npu) -> None:
    sig = axpy_sig(npu)
    args = [npu.place(torch.ones(1, 4)), npu.place(torch.zeros(1, 4)), 1.0]
    first = sig.describe_call(args)
    side = npu.stream = FakeStream = type(npu.stream)(0, "side")
    second = sig.describe_call(args)
    assert first.stream is not second.stream
    assert second.stream is side
    assert npu.log.count("device") == 2
    assert npu.log.count("stream") == 2
    side_ref = weakref.ref(FakeStream)
    npu.stream = type(side)(0, "other")
    del side, FakeStream
    gc.collect()
    assert side_ref() is second.stream  # the frame retains its stream


def test_device_is_queried_on_every_call(npu) -> None:
    sig = axpy_sig(npu)
    args = [npu.place(torch.ones(1, 4), 1), npu.place(torch.zeros(1, 4), 1), 1.0]
    npu.device = 1
    npu.stream = type(npu.stream)(1, "s1")
    assert sig.describe_call(args).device_index == 1
    npu.device = 0
    with pytest.raises(ArgumentError, match=r"tensors are on npu:1 but the current device is npu:0"):
        sig.describe_call(args)


def test_binding_happens_before_any_framework_query(npu) -> None:
    with pytest.raises(SignatureError, match=r"parameter 'out' is Out but was not supplied"):
        axpy_sig(npu).describe_call([npu.place(torch.ones(1, 4))])
    with pytest.raises(SignatureError, match=r"'out' \(Out\) was passed None"):
        axpy_sig(npu).describe_call([npu.place(torch.ones(1, 4)), None, 1.0])
    assert npu.log == []


def test_context_is_queried_after_argument_validation(npu) -> None:
    with pytest.raises(ArgumentError, match="dtype"):
        axpy_sig(npu).describe_call(
            [npu.place(torch.ones(1, 4, dtype=torch.float16)), npu.place(torch.ones(1, 4)), 1.0]
        )
    assert "device" not in npu.log
    assert "stream" not in npu.log


def test_stream_on_another_device_rejected(npu) -> None:
    npu.stream = type(npu.stream)(3, "elsewhere")
    with pytest.raises(
        ArgumentError, match=r"current stream .* belongs to device 3, but the current device is 0"
    ):
        axpy_sig(npu).describe_call([npu.place(torch.ones(1, 4)), npu.place(torch.zeros(1, 4)), 1.0])


# ---------------------------------------------------------------- invalid tensors, one by one


class WorkerOwnedTensor:
    """Stands in for an object owned by a simpler Worker (a device tensor PyPTO allocated)."""


WorkerOwnedTensor.__module__ = "simpler._native"


def _invalid_x(npu, kind: str) -> tuple[Any, str]:
    """An invalid first argument of ``axpy_sig`` and the error it must raise."""
    good = torch.ones(2, 4)
    if kind == "cpu":
        return good, r"expected a tensor on the npu device of platform 'a2a3', got a tensor on cpu"
    if kind == "meta":
        return torch.ones(2, 4, device="meta"), "got a Meta tensor"
    if kind == "fake":
        from torch._subclasses.fake_tensor import FakeTensorMode

        return FakeTensorMode().from_tensor(good), "got a Fake tensor"
    if kind == "worker":
        return WorkerOwnedTensor(), r"Worker-owned simpler\._native\.WorkerOwnedTensor"
    if kind == "not_tensor":
        return [[1.0] * 4] * 2, "expected a torch.Tensor, got list"
    if kind == "dtype":
        return npu.place(good.half()), r"expected dtype torch.float32, got torch.float16"
    if kind == "rank":
        return npu.place(torch.ones(8)), r"expected rank 2 \(shape \[-1, 4\]\), got rank 1"
    if kind == "static_dim":
        return npu.place(torch.ones(2, 5)), r"dimension 1 must be 4 .* got 5"
    if kind == "transposed":
        return npu.place(
            torch.ones(4, 2).t()
        ), r"expected a contiguous view, got shape \[2, 4\] with strides \[1, 2\]"
    if kind == "strided":
        return npu.place(torch.ones(2, 8)[:, ::2]), "expected a contiguous view"
    if kind == "format":
        return npu.place(good, fmt=3), r"got storage format 3; expected base format ND \(2\) or NCHW \(0\)"
    if kind == "nz_format_on_nd_param":
        return npu.place(good, fmt=29), r"format 29 \(fractal NZ\); it is admitted only for"
    if kind == "grad":
        return npu.place(torch.ones(2, 4, requires_grad=True)), "requires grad while autograd is enabled"
    if kind == "conj":
        return npu.place(torch.ones(2, 4, dtype=torch.complex64).conj()), "unresolved conjugate view"
    if kind == "neg":
        neg = torch.ones(2, 4, dtype=torch.complex64).conj().imag
        assert neg.is_neg()
        assert neg.dtype == torch.float32
        return npu.place(neg), "unresolved negative view"
    if kind == "bounds":
        base = torch.ones(16)
        view = base[8:16].view(2, 4)
        base.untyped_storage().resize_(40)  # the storage shrinks under the view
        return npu.place(view), r"invalid storage bounds: the view reaches byte 64 .* storage of 40 bytes"
    raise AssertionError(kind)


INVALID_TENSORS = [
    "cpu", "meta", "fake", "worker", "not_tensor", "dtype", "rank", "static_dim", "transposed",
    "strided", "format", "nz_format_on_nd_param", "grad", "conj", "neg", "bounds",
]  # fmt: skip


@pytest.mark.parametrize("kind", INVALID_TENSORS)
def test_invalid_tensor_rejected(npu, kind) -> None:
    x, message = _invalid_x(npu, kind)
    with pytest.raises(ArgumentError, match=r"parameter 'x' \(#0, In FP32\): .*" + message):
        axpy_sig(npu).describe_call([x, npu.place(torch.zeros(2, 4)), 1.0])
    assert "stream" not in npu.log  # rejected before any context query


def test_tensors_on_two_devices_rejected(npu) -> None:
    with pytest.raises(
        ArgumentError, match=r"tensors span devices: parameter 'x' is on npu:0, parameter 'out' is on npu:1"
    ):
        axpy_sig(npu).describe_call([npu.place(torch.ones(2, 4), 0), npu.place(torch.zeros(2, 4), 1), 1.0])


def test_no_grad_may_borrow_parameters(npu) -> None:
    weight = npu.place(torch.nn.Parameter(torch.ones(2, 4)))
    with torch.no_grad():
        frame = axpy_sig(npu).describe_call([weight, npu.place(torch.zeros(2, 4)), 1.0])
    assert frame.tensors[0].tensor is weight


def test_empty_view_may_start_past_capacity(npu) -> None:
    storage = torch.zeros(4).untyped_storage()
    empty = torch.empty(0).set_(storage, 100, (0, 4), (4, 1))
    assert empty.storage_offset() * 4 > storage.nbytes()
    frame = axpy_sig(npu).describe_call([npu.place(empty), npu.place(torch.zeros(0, 4)), 1.0])
    assert frame.tensors[0].storage_offset == 100
    assert frame.tensors[0].nbytes == 0


def test_packed_fp4_uses_the_carrier_shape_as_is(npu) -> None:
    sig = CallSignature([P("w", "In", [4, 8], "FP4E2M1"), P("out", "Out", [4, 16], "FP16")], platform=npu)
    w = npu.place(torch.empty(4, 8, dtype=torch.float4_e2m1fn_x2))  # 8 carrier bytes hold 16 values
    frame = sig.describe_call([w, npu.place(torch.zeros(4, 16, dtype=torch.float16))])
    assert frame.tensors[0].shape == (4, 8)
    assert frame.tensors[0].nbytes == 32
    with pytest.raises(ArgumentError, match="dimension 1 must be 8"):
        sig.describe_call(
            [npu.place(torch.empty(4, 16, dtype=torch.float4_e2m1fn_x2)), frame.tensors[1].tensor]
        )


# ---------------------------------------------------------------- NZ inputs on a2a3


def nz_sig(platform: Any, direction: str = "In", dtype: str = "FP16", layout: str = "NZ") -> CallSignature:
    return CallSignature(
        [P("w", direction, [32, 64], dtype, layout), P("out", "Out", [-1], "FP32")], platform=platform
    )


def nz_tensor(npu, dtype=torch.float16, physical=None, offset_elems: int = 0) -> Any:
    itemsize = torch.empty(0, dtype=dtype).element_size()
    shape = nz_physical_shape((32, 64), itemsize)
    assert shape is not None
    desc = physical or PhysicalDescriptor(29, shape, 0, 32 * 64 * itemsize)
    base = torch.zeros(32 * 64 + offset_elems, dtype=dtype)
    return npu.place(base[offset_elems:].view(32, 64), fmt=29, physical=desc)


def test_nz_physical_shape() -> None:
    assert nz_physical_shape((32, 64), 2) == (4, 2, 16, 16)
    assert nz_physical_shape((32, 64), 1) == (2, 2, 16, 32)
    assert nz_physical_shape((3, 32, 64), 1) == (3, 2, 2, 16, 32)
    assert nz_physical_shape((32, 64), 4) == (8, 2, 16, 8)
    assert nz_physical_shape((30, 64), 2) is None  # rows would be padded
    assert nz_physical_shape((32, 40), 2) is None
    assert nz_physical_shape((32, 48), 1) is None  # INT8 columns come in blocks of 32


@pytest.mark.parametrize("dtype", ["FP16", "BF16", "INT8"])
@pytest.mark.parametrize("logical", [(32, 64), (16, 32), (3, 48, 128)])
def test_nz_physical_shape_is_the_ir_lowered_shape(dtype: str, logical: tuple[int, ...]) -> None:
    # The storage torch_npu holds must be exactly what the compiled kernel's lowered ABI declares.
    from pypto.ir.dtypes import DataType
    from pypto.ir.passes import nz_layout

    lowered = nz_layout.lower_param(P("w", "In", list(logical), dtype, "NZ"))
    assert lowered.is_blocked
    assert nz_physical_shape(logical, DataType.parse(dtype).itemsize) == lowered.shape


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.int8])
def test_nz_input_admitted_with_complete_physical_matrix(npu, dtype) -> None:
    name = {torch.float16: "FP16", torch.bfloat16: "BF16", torch.int8: "INT8"}[dtype]
    w = nz_tensor(npu, dtype)
    frame = nz_sig(npu, dtype=name).describe_call([w, npu.place(torch.zeros(3))])
    t = frame.tensors[0]
    assert t.format == 29
    assert t.shape == (32, 64)
    assert t.physical_shape == nz_physical_shape((32, 64), w.element_size())
    assert npu.log.count("physical") == 1


def test_nz_input_with_dynamic_batch(npu) -> None:
    sig = CallSignature([P("w", "In", [-1, 32, 64], "BF16", "NZ")], platform=npu)
    desc = PhysicalDescriptor(29, (3, 4, 2, 16, 16), 0, 3 * 32 * 64 * 2)
    w = npu.place(torch.zeros(3, 32, 64, dtype=torch.bfloat16), fmt=29, physical=desc)
    frame = sig.describe_call([w])
    assert frame.tensors[0].physical_shape == (3, 4, 2, 16, 16)
    assert frame.tensors[0].nbytes == 3 * 32 * 64 * 2


def test_nchw_base_format_accepted(npu) -> None:
    x = npu.place(torch.ones(2, 4), fmt=0)
    frame = axpy_sig(npu).describe_call([x, npu.place(torch.zeros(2, 4)), 1.0])
    assert frame.tensors[0].format == 0


def test_physical_query_is_lazy(npu) -> None:
    nz_sig(npu).describe_call(
        [npu.place(torch.zeros(32, 64, dtype=torch.float16)), npu.place(torch.zeros(3))]
    )
    assert "physical" not in npu.log  # an ND tensor for an NZ parameter needs no physical query


@pytest.mark.parametrize(
    ("case", "message"),
    [
        ("a5", r"admitted only for a read-only FP16/BF16/INT8 input declared layout='NZ' on platform 'a2a3'"),
        ("inout", "admitted only for"),
        ("fp32", "admitted only for"),
        ("nd_layout", "admitted only for"),
        (
            "padded_dims",
            r"physical NZ dimensions \[4, 2, 16, 32\] are not the complete unpadded matrix \[4, 2, 16, 16\]",
        ),
        ("physical_offset", "physical NZ storage offset must be 0, got 16"),
        ("view_offset", "an NZ input must start at storage offset 0, got 16"),
        ("capacity", "the NZ storage holds 100 bytes, the matrix needs 4096"),
        ("format", "the physical storage reports format 2, expected 29"),
    ],
)
def test_nz_input_rejected(make_npu, case, message) -> None:
    npu = make_npu("a5" if case == "a5" else "a2a3")
    full = PhysicalDescriptor(29, (4, 2, 16, 16), 0, 4096)
    physical = {
        "padded_dims": PhysicalDescriptor(29, (4, 2, 16, 32), 0, 8192),
        "physical_offset": PhysicalDescriptor(29, full.storage_shape, 16, 4096),
        "capacity": PhysicalDescriptor(29, full.storage_shape, 0, 100),
        "format": PhysicalDescriptor(2, full.storage_shape, 0, 4096),
    }.get(case, full)
    dtype = torch.float32 if case == "fp32" else torch.float16
    w = nz_tensor(npu, dtype, physical, 16 if case == "view_offset" else 0)
    sig = nz_sig(
        npu,
        direction="InOut" if case == "inout" else "In",
        dtype="FP32" if case == "fp32" else "FP16",
        layout="ND" if case == "nd_layout" else "NZ",
    )
    with pytest.raises(ArgumentError, match=r"parameter 'w' .*" + message):
        sig.describe_call([w, npu.place(torch.zeros(3))])


# ---------------------------------------------------------------- scalars


def scalar_sig(npu, dtype: str) -> CallSignature:
    return CallSignature([P("out", "Out", [1], "FP32"), P("s", "In", None, dtype)], platform=npu)


@pytest.mark.parametrize(
    ("dtype", "value", "expected"),
    [
        ("INT8", -128, -128),
        ("INT64", 2**63 - 1, 2**63 - 1),
        ("UINT64", 2**64 - 1, 2**64 - 1),
        ("UINT8", np.uint8(255), 255),
        ("INT32", ctypes.c_int32(-7), -7),
        ("UINT16", ctypes.c_uint16(65535), 65535),
        ("INT64", ctypes.c_longlong(-1), -1),
        ("BOOL", True, True),
        ("BOOL", ctypes.c_bool(True), True),
        ("FP32", 3, 3.0),
        ("FP32", ctypes.c_float(0.5), 0.5),
        ("FP16", 65504.0, 65504.0),
        ("BF16", 3.0e38, 3.0e38),
        ("FP32", float("inf"), float("inf")),
    ],
)
def test_scalar_accepted(npu, dtype, value, expected) -> None:
    frame = scalar_sig(npu, dtype).describe_call([npu.place(torch.zeros(1)), value])
    got = frame.scalars[0].value
    assert got == expected
    assert type(got) is type(expected)


@pytest.mark.parametrize(
    ("dtype", "value", "message"),
    [
        ("INT8", 128, r"128 is outside the INT8 range \[-128, 127\]"),
        ("UINT32", -1, r"-1 is outside the UINT32 range \[0, 4294967295\]"),
        ("UINT64", 2**64, "outside the UINT64 range"),
        ("INT32", 2.0, "floats are not truncated into integers"),
        ("INT32", np.float32(2.0), "floats are not truncated into integers"),
        ("INT32", True, "expected a INT32 number, got bool"),
        ("INT32", "3", "expected an integer, got str"),
        ("INT32", ctypes.c_int16(3), "ctypes.c_short does not carry INT32"),
        ("UINT32", ctypes.c_int32(3), "ctypes.c_int does not carry UINT32"),
        ("FP32", ctypes.c_int32(3), "does not carry FP32"),
        ("BOOL", 1, "expected a bool, got int 1"),
        ("FP32", 1e39, "finite value 1e\\+39 overflows FP32"),
        ("FP16", 65520.0, "overflows FP16"),
        ("BF16", 3.4e38, "overflows BF16"),
        ("FP32", 10**400, "overflows FP32"),
        ("FP32", "1.0", "expected a float, got str"),
    ],
)
def test_scalar_rejected(npu, dtype, value, message) -> None:
    with pytest.raises(
        ArgumentError, match=r"describe_call: parameter 's' \(#1, In " + dtype + r"\): .*" + message
    ):
        scalar_sig(npu, dtype).describe_call([npu.place(torch.zeros(1)), value])


# ---------------------------------------------------------------- signatures and platforms


def test_signature_rejects_bad_aliases_and_names() -> None:
    x = P("x", "In", [4], "FP32")
    with pytest.raises(SignatureError, match="names scalar 'n'"):
        CallSignature([x, P("n", "In", None, "INT32")], [1])
    with pytest.raises(SignatureError, match="outside the signature"):
        CallSignature([x], [3])
    with pytest.raises(SignatureError, match="repeats"):
        CallSignature([x, x])
    with pytest.raises(SignatureError, match=r"parameter 'f' \(#1, In FP8E4M3FN\): FP8E4M3FN has no scalar"):
        CallSignature([x, P("f", "In", None, "FP8E4M3FN")])
    with pytest.raises(ValueError, match="platform: expected one of"):
        CallSignature([x], platform="gpu")


def test_simulator_platform_uses_cpu_tensors_and_simulator_streams() -> None:
    sig = axpy_sig("a2a3sim")
    x, out = torch.ones(2, 4), torch.zeros(2, 4)
    frame = sig.describe_call([x, out, 1.0])
    assert frame.device_index == 0
    assert frame.stream is DEFAULT_STREAM
    assert frame.platform == "a2a3sim"
    side = SimulatorStream()
    with use_stream(side):
        inner = sig.describe_call([x, out, 1.0])
    assert inner.stream is side
    assert sig.describe_call([x, out, 1.0]).stream is DEFAULT_STREAM
    seen: list[object] = []
    worker = threading.Thread(target=lambda: seen.append(sig.describe_call([x, out, 1.0]).stream))
    with use_stream(side):
        worker.start()
        worker.join()
    assert seen == [DEFAULT_STREAM]  # the current stream is per thread
    with pytest.raises(ArgumentError, match="got a Meta tensor"):
        sig.describe_call([x, torch.zeros(2, 4, device="meta"), 1.0])
    assert platform_for("a5sim").is_simulator
    assert platform_for("a2a3sim") is platform_for("a2a3sim")


def test_imports_and_npu_queries_without_optional_runtime(run_without_optional_runtime) -> None:
    code = """
import torch
import pypto.torch, pypto.torch.interop
from pypto.ir.param_info import ParamInfo
from pypto.torch._platform import NpuRuntimeUnavailable
from pypto.torch.interop import CallSignature
params = [ParamInfo("x", "In", [2], "FP32"), ParamInfo("out", "Out", [2], "FP32")]
# The simulator describes a whole call without any optional runtime module.
assert CallSignature(params, [1]).describe_call([torch.ones(2), torch.zeros(2)]).device_index == 0
sig = CallSignature(params, platform="a2a3")
try:
    sig.describe_call([torch.ones(2), torch.zeros(2)])
except Exception as exc:
    assert "on the npu device" in str(exc), exc
else:
    raise SystemExit("a CPU tensor passed on a2a3")
try:
    sig.platform.current_device()
except NpuRuntimeUnavailable as exc:
    assert "needs torch_npu" in str(exc) and "pypto-torch[npu]" in str(exc), exc
else:
    raise SystemExit("no error without torch_npu")
print("ok")
"""
    run = run_without_optional_runtime(code, blocked=(*DEFAULT_BLOCKED, "simpler"))
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "ok"
    # Nothing was attempted until an NPU query needed torch_npu, and then only torch_npu.
    assert run.attempted == ("torch_npu",)


def test_docstring_examples_run() -> None:
    assert doctest.testmod(interop).failed == 0
    assert NpuRuntimeUnavailable.__mro__[1] is ImportError


@pytest.mark.parametrize(("shape", "dtype"), [([4, 2, 16, 16], "FP16"), ([2, 2, 16, 32], "INT8")])
def test_blocked_nz_shapes_are_never_torch_shapes(shape: list[int], dtype: str) -> None:
    try:
        blocked = P("w", "In", shape, dtype, "NZ")
    except SignatureError:
        return  # ParamInfo itself refuses a blocked shape, so none can reach a CallSignature
    with pytest.raises(SignatureError, match="lowered blocked shape, never a torch shape"):
        CallSignature([blocked])


# ---------------------------------------------------------------- dtype map and scalar ranges


def test_dtype_map_round_trips() -> None:
    from pypto.ir.dtypes import DataType
    from pypto.torch._dtypes import from_torch_dtype, to_torch_dtype

    for dtype in DataType:
        assert from_torch_dtype(to_torch_dtype(dtype)) is dtype
        assert torch.empty(0, dtype=to_torch_dtype(dtype)).element_size() == dtype.itemsize
    with pytest.raises(ValueError, match=r"weight: expected one of .* got torch.float64"):
        from_torch_dtype(torch.float64, what="weight")


_FLOAT_ORACLE = {
    "FP32": lambda v: bool(np.isinf(np.float32(v))),
    "FP16": lambda v: bool(np.isinf(np.float16(v))),
    "BF16": lambda v: bool(torch.tensor(v, dtype=torch.float64).to(torch.bfloat16).isinf()),
}


@settings(max_examples=150, deadline=None)
@given(
    dtype=st.sampled_from(sorted(_FLOAT_ORACLE)),
    value=st.one_of(
        st.floats(allow_nan=False, allow_infinity=False),
        st.floats(min_value=6.0e4, max_value=6.6e4),
        st.floats(min_value=3.38e38, max_value=3.41e38),
    ),
)
def test_finite_float_overflow_matches_a_reference_conversion(dtype, value) -> None:
    npu = platform_for("a2a3sim")
    sig = CallSignature([P("out", "Out", [1], "FP32"), P("s", "In", None, dtype)], platform=npu)
    with np.errstate(over="ignore"):
        overflows = _FLOAT_ORACLE[dtype](value)
    if overflows:
        with pytest.raises(ArgumentError, match="overflows"):
            sig.describe_call([torch.zeros(1), value])
    else:
        assert sig.describe_call([torch.zeros(1), value]).scalars[0].value == value


_INT_DTYPES = ["INT8", "INT16", "INT32", "INT64", "UINT8", "UINT16", "UINT32", "UINT64"]


@settings(max_examples=150, deadline=None)
@given(dtype=st.sampled_from(_INT_DTYPES), value=st.integers(min_value=-(2**65), max_value=2**65))
def test_integer_range_matches_numpy(dtype, value) -> None:
    info = np.iinfo(getattr(np, dtype.lower()))
    sig = CallSignature([P("out", "Out", [1], "FP32"), P("s", "In", None, dtype)])
    if info.min <= value <= info.max:
        assert sig.describe_call([torch.zeros(1), value]).scalars[0].value == value
    else:
        with pytest.raises(ArgumentError, match="outside the"):
            sig.describe_call([torch.zeros(1), value])
