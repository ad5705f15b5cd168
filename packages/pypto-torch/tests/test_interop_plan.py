"""pypto.torch.interop: the per-signature plan and fast paths of describe_call check what the
general checks check.

The overlap sweep is compared with the pairwise definition, the scalar fast path with
check_scalar at its boundaries, precomputed strides with the row-major definition, and the
order in which errors are reported with the order the checks promise.
"""

from __future__ import annotations

import math
import threading
import types
from typing import Any

import pytest
import torch

from pypto import ir
from pypto.ir.param_info import ParamInfo, SignatureError
from pypto.torch import interop
from pypto.torch._platform.simulator import DEFAULT_STREAM, SimulatorStream, current_stream, use_stream
from pypto.torch.interop import ArgumentError, CallSignature, ScalarArgument

P = ParamInfo


# ---------------------------------------------------------------- overlaps


def test_overlap_sweep_is_pypto_irs() -> None:
    """interop checks overlaps with pypto-ir's sweep, whose property test (against the pairwise
    definition) is pypto-ir's tests/test_storage_rules.py."""
    assert interop._partial_overlap is ir.partial_overlap


def three_view_sig(npu: Any, directions: tuple[str, str, str]) -> CallSignature:
    return CallSignature(
        [P(name, d, [-1], "FP32") for name, d in zip("abc", directions, strict=True)], platform=npu
    )


def test_exact_alias_group_with_a_writer_partially_overlapped_by_a_reader(npu) -> None:
    base = torch.zeros(16)
    sig = three_view_sig(npu, ("In", "Out", "In"))
    with pytest.raises(ArgumentError, match=r"'b' \(Out, bytes .* and 'c' \(In, .* partially overlap"):
        sig.describe_call([npu.place(base[:8]), npu.place(base[:8]), npu.place(base[4:12])])


def test_exact_written_aliases_and_disjoint_views_accepted(npu) -> None:
    base = torch.zeros(24)
    sig = three_view_sig(npu, ("Out", "InOut", "Out"))
    frame = sig.describe_call([npu.place(base[8:16]), npu.place(base[8:16]), npu.place(base[16:24])])
    assert frame.tensors[0].data_ptr == frame.tensors[1].data_ptr
    assert frame.tensors[2].data_ptr == frame.tensors[1].data_ptr + 32


def test_read_only_views_overlapping_a_written_view_elsewhere_are_checked_pairwise(npu) -> None:
    # a and b (both read) overlap each other; c is written and disjoint from both: accepted.
    base = torch.zeros(32)
    sig = three_view_sig(npu, ("In", "In", "Out"))
    sig.describe_call([npu.place(base[:8]), npu.place(base[4:12]), npu.place(base[16:24])])
    # c now reaches into b only: rejected, naming b and c.
    with pytest.raises(ArgumentError, match=r"'b' .* and 'c' .* partially overlap"):
        sig.describe_call([npu.place(base[:8]), npu.place(base[4:12]), npu.place(base[10:18])])


# ---------------------------------------------------------------- scalars at the fast-path edges


def scalar_sig(npu: Any, dtype: str) -> CallSignature:
    return CallSignature([P("out", "Out", [1], "FP32"), P("s", "In", None, dtype)], platform=npu)


_FLOAT_LIMITS = {
    "FP32": float.fromhex("0x1.fffffep127"),
    "FP16": 65504.0,
    "BF16": float.fromhex("0x1.fep127"),
}


@pytest.mark.parametrize("dtype", sorted(_FLOAT_LIMITS))
def test_float_scalars_at_the_largest_finite_value(npu, dtype) -> None:
    sig = scalar_sig(npu, dtype)
    out = npu.place(torch.zeros(1))
    top = _FLOAT_LIMITS[dtype]
    for value in (top, -top, 0.0, -0.0, 1e-45, math.inf, -math.inf):
        got = sig.describe_call([out, value]).scalars[0].value
        assert got == value
        assert type(got) is float
    assert math.isnan(sig.describe_call([out, math.nan]).scalars[0].value)
    # Twice the largest finite value overflows every one of these types.
    for value in (2 * top, -2 * top, 1e300):
        with pytest.raises(ArgumentError, match=rf"parameter 's' .*finite value .* overflows {dtype}"):
            sig.describe_call([out, value])


@pytest.mark.parametrize(
    ("dtype", "lo", "hi"),
    [("INT8", -128, 127), ("UINT8", 0, 255), ("INT32", -(2**31), 2**31 - 1), ("UINT64", 0, 2**64 - 1)],
)
def test_integer_scalars_at_their_range_edges(npu, dtype, lo, hi) -> None:
    sig = scalar_sig(npu, dtype)
    out = npu.place(torch.zeros(1))
    for value in (lo, hi):
        assert sig.describe_call([out, value]).scalars[0].value == value
    for value in (lo - 1, hi + 1):
        with pytest.raises(ArgumentError, match=rf"{value} is outside the {dtype} range"):
            sig.describe_call([out, value])
    with pytest.raises(ArgumentError, match="floats are not truncated"):
        sig.describe_call([out, 1.0])
    with pytest.raises(ArgumentError, match="got bool"):
        sig.describe_call([out, True])


def test_bool_scalar_takes_only_bools(npu) -> None:
    sig = scalar_sig(npu, "BOOL")
    out = npu.place(torch.zeros(1))
    assert sig.describe_call([out, False]).scalars[0].value is False
    with pytest.raises(ArgumentError, match="expected a bool, got int 1"):
        sig.describe_call([out, 1])


def test_int_subclass_and_float_subclass_take_the_general_path(npu) -> None:
    class Index(int):
        pass

    class Real(float):
        pass

    frame = scalar_sig(npu, "INT16").describe_call([npu.place(torch.zeros(1)), Index(7)])
    assert frame.scalars[0].value == 7
    frame = scalar_sig(npu, "FP32").describe_call([npu.place(torch.zeros(1)), Real(0.25)])
    assert frame.scalars[0].value == 0.25


# ---------------------------------------------------------------- strides


def _row_major(shape: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(math.prod(max(d, 1) for d in shape[axis + 1 :]) for axis in range(len(shape)))


@pytest.mark.parametrize(
    ("declared", "actual"),
    [
        ([-1, 16], (3, 16)),  # strides known at construction
        ([2, 3, 4], (2, 3, 4)),
        ([-1, 0, 4], (5, 0, 4)),
        ([2, -1, 4], (2, 7, 4)),  # a dynamic inner dimension: strides worked out per call
        ([-1, -1], (3, 1)),
        ([-1, 1, -1], (2, 1, 5)),
    ],
)
def test_strides_are_row_major_whatever_is_dynamic(npu, declared, actual) -> None:
    sig = CallSignature([P("x", "In", declared, "FP32")], platform=npu)
    t = sig.describe_call([npu.place(torch.zeros(actual))]).tensors[0]
    assert t.shape == actual
    assert type(t.shape) is tuple
    assert t.strides == _row_major(actual)


def test_dynamic_inner_dimension_changes_between_calls(npu) -> None:
    sig = CallSignature([P("x", "In", [2, -1, 4], "FP32")], platform=npu)
    for inner in (1, 3, 6):
        t = sig.describe_call([npu.place(torch.zeros(2, inner, 4))]).tensors[0]
        assert t.strides == (inner * 4, 4, 1)
        assert t.nbytes == 2 * inner * 4 * 4


def test_static_dimensions_are_checked_on_every_axis(npu) -> None:
    sig = CallSignature([P("x", "In", [2, -1, 4, 5], "FP32")], platform=npu)
    sig.describe_call([npu.place(torch.zeros(2, 9, 4, 5))])
    for bad, axis in (((3, 9, 4, 5), 0), ((2, 9, 3, 5), 2), ((2, 9, 4, 6), 3)):
        with pytest.raises(ArgumentError, match=rf"dimension {axis} must be"):
            sig.describe_call([npu.place(torch.zeros(bad))])


# ---------------------------------------------------------------- the order errors are reported in


def test_binding_is_checked_before_an_earlier_invalid_tensor(npu) -> None:
    sig = CallSignature([P("x", "In", [2], "FP32"), P("y", "In", [2], "FP32")], platform=npu)
    with pytest.raises(SignatureError, match=r"'y' \(In\) was passed None"):
        sig.describe_call([torch.zeros(3, dtype=torch.int8), None])
    with pytest.raises(SignatureError, match=r"expected 2 arguments .* got 3"):
        sig.describe_call([torch.zeros(3, dtype=torch.int8), torch.zeros(2), torch.zeros(2)])
    assert npu.log == []


def test_an_argument_error_wins_over_tensors_on_two_devices(npu) -> None:
    sig = CallSignature(
        [P("x", "In", [2], "FP32"), P("y", "In", [2], "FP32"), P("n", "In", None, "INT8")], platform=npu
    )
    x, y = npu.place(torch.zeros(2), 0), npu.place(torch.zeros(2, dtype=torch.int32), 1)
    with pytest.raises(ArgumentError, match=r"'y' .*expected dtype torch.float32"):
        sig.describe_call([x, y, 1])
    y = npu.place(torch.zeros(2), 1)
    with pytest.raises(ArgumentError, match=r"'n' .*300 is outside the INT8 range"):
        sig.describe_call([x, y, 300])
    with pytest.raises(ArgumentError, match="tensors span devices: parameter 'x' is on npu:0, parameter 'y'"):
        sig.describe_call([x, y, 1])
    assert "device" not in npu.log


# ---------------------------------------------------------------- the records


def test_records_are_immutable_and_frames_compare_by_identity(npu) -> None:
    sig = CallSignature([P("x", "InOut", [2], "FP32"), P("n", "In", None, "INT32")], [0], platform=npu)
    x = npu.place(torch.zeros(2))
    first, second = sig.describe_call([x, 3]), sig.describe_call([x, 3])
    t = first.tensors[0]
    for record, attr in ((first, "stream"), (t, "data_ptr"), (first.scalars[0], "value")):
        for name in (attr, "extra"):
            with pytest.raises(AttributeError):
                setattr(record, name, None)
    assert first != second
    assert first.tensors[0] != second.tensors[0]
    assert first == first  # noqa: PLR0124 - identity is the equality
    assert len({first, second, first}) == 2
    assert first.scalars[0] == second.scalars[0] == ScalarArgument(1, "n", first.scalars[0].dtype, 3)
    assert first.scalars[0] != (1, "n", first.scalars[0].dtype, 3)  # only another ScalarArgument
    assert (1, "n", first.scalars[0].dtype, 3) != first.scalars[0]
    assert hash(first.scalars[0]) == hash(second.scalars[0])
    assert t.element_size == 4


def test_record_reprs_leave_out_retained_objects(npu) -> None:
    sig = CallSignature([P("x", "In", [2], "FP32")], platform=npu)
    frame = sig.describe_call([npu.place(torch.zeros(2))])
    text = repr(frame)
    assert text.startswith("CallFrame(platform='a2a3', tensors=(TensorArgument(param_index=0, name='x'")
    assert "storage_nbytes=8" in text
    assert "tensor(" not in text
    assert "tensor=" not in text
    assert "storage=" not in text
    assert "signature=" not in text
    assert "return_tensors=" not in text


# ---------------------------------------------------------------- the simulator's current stream


def test_simulator_stream_stack_starts_empty_in_every_thread() -> None:
    seen: list[object] = []
    side = SimulatorStream()

    def worker() -> None:
        seen.append(current_stream())
        with use_stream(side):
            seen.append(current_stream())
        seen.append(current_stream())

    with use_stream(SimulatorStream()) as mine:
        thread = threading.Thread(target=worker)
        thread.start()
        thread.join()
        assert current_stream() is mine
    assert seen == [DEFAULT_STREAM, side, DEFAULT_STREAM]
    assert current_stream() is DEFAULT_STREAM


# ---------------------------------------------------------------- the NPU platform's torch_npu


def test_npu_queries_import_torch_npu_once_and_retry_a_failed_import(monkeypatch) -> None:
    from pypto.torch._platform import NpuRuntimeUnavailable
    from pypto.torch._platform import npu as npu_module

    fake = types.ModuleType("torch_npu")
    fake.get_npu_format = lambda tensor: 29  # type: ignore[attr-defined]
    attempts: list[str] = []
    available = [False]

    def import_module(name: str) -> types.ModuleType:
        attempts.append(name)
        if not available[0]:
            raise ImportError(f"No module named {name!r}")
        return fake

    monkeypatch.setattr(npu_module, "_loaded", {})
    monkeypatch.setattr(npu_module.importlib, "import_module", import_module)
    platform = npu_module.NpuPlatform("a2a3")
    for _ in range(2):  # a failed import is attempted again on the next query
        with pytest.raises(NpuRuntimeUnavailable, match="needs torch_npu"):
            platform.tensor_format(torch.zeros(1))
    available[0] = True
    assert [platform.tensor_format(torch.zeros(1)) for _ in range(3)] == [29, 29, 29]
    assert attempts == ["torch_npu"] * 3
