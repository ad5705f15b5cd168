"""pypto.torch._fast_describe: the generated fast path of describe_call agrees with the general path.

For random signatures and random (often invalid) arguments, on the simulator and on an emulated
NPU, ``describe_call`` (fast path first) and ``CallSignature._describe_general`` (every check, in
order) give the same frame or raise the same error with the same message; and the fast path on
its own (with a stand-in for the general path) never accepts a call the general path rejects.
The native fast path (``pypto.torch.build_native``; built here once, then cached by torch) is held
to the same rules on the simulator, and a failed build leaves the Python fast path in use.
"""

from __future__ import annotations

import ctypes
import linecache
import traceback
from typing import Any

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pypto.ir.param_info import ParamInfo
from pypto.torch import _native_describe
from pypto.torch.interop import CallFrame, CallSignature

P = ParamInfo
MISS = object()  # what the stand-in general path returns: the fast path did not take the call

_TORCH_DTYPES = {"FP32": torch.float32, "FP16": torch.float16, "INT32": torch.int32}
_SCALAR_DTYPES = ["INT8", "UINT8", "INT32", "UINT64", "FP32", "FP16", "BF16", "BOOL"]
_TENSOR_FAULTS = [
    "none", "not_tensor", "dtype", "rank", "static_dim", "transposed", "grad", "neg", "empty", "strided",
    "bounds", "parameter", "meta", "other_device", "unplaced", "nchw", "nz", "cpu_on_npu",
]  # fmt: skip
_SCALAR_FAULTS = ["none", "range", "kind", "bool", "nan", "ctypes", "subclass", "missing"]


class _Int(int):
    pass


def _fast_only(sig: CallSignature) -> Any:
    """The signature's fast path with a general path that only reports a miss."""
    return sig._compile_fast_path(lambda args: MISS)


@pytest.fixture(scope="module")
def native() -> Any:
    """The native describe function (built on first use on this machine, ~30 s; cached after)."""
    assert _native_describe.build_native(), _native_describe.native_error()
    return _native_describe._state.module.describe


def _native_only(describe: Any, sig: CallSignature) -> Any:
    """The signature's native path with a general path that only reports a miss."""
    plan = sig._native_plan(0)
    return lambda args: MISS if (frame := describe(plan, args)) is None else frame


def _outcome(call: Any, args: list[object]) -> tuple[str, Any]:
    try:
        return "frame", call(args)
    except Exception as exc:  # the comparison is of the exception type and message
        return "error", (type(exc), str(exc))


def _facts(frame: CallFrame) -> tuple[Any, ...]:
    """Everything in a frame, with retained objects by identity (storage by its address)."""
    tensors = tuple(
        (*t[:14], id(t.tensor), t.storage.data_ptr(), t.storage.nbytes(), type(t.shape), type(t.strides))
        for t in frame.tensors
    )
    scalars = tuple((tuple(s), type(s.value)) for s in frame.scalars)
    returned = tuple(id(r) for r in frame.return_tensors)
    return (
        id(frame.signature),
        frame.platform,
        tensors,
        scalars,
        frame.device_index,
        id(frame.stream),
        returned,
    )


@st.composite
def _signature_params(draw: st.DrawFn) -> list[ParamInfo]:
    params = []
    for k in range(draw(st.integers(1, 5))):
        if draw(st.integers(0, 3)) == 0:
            params.append(P(f"s{k}", "In", None, draw(st.sampled_from(_SCALAR_DTYPES))))
            continue
        rank = draw(st.integers(1, 3))
        shape = [draw(st.sampled_from([-1, -1, 1, 2, 3])) for _ in range(rank)]
        direction = draw(st.sampled_from(["In", "In", "Out", "InOut"]))
        params.append(P(f"t{k}", direction, shape, draw(st.sampled_from(sorted(_TORCH_DTYPES)))))
    return params


def _tensor_arg(draw: st.DrawFn, p: ParamInfo, npu: Any, bases: dict[Any, torch.Tensor]) -> object:
    fault = draw(st.sampled_from(_TENSOR_FAULTS)) if draw(st.integers(0, 2)) == 0 else "none"
    dtype = _TORCH_DTYPES[p.dtype.value]
    shape = [d if d >= 0 else draw(st.integers(1, 3)) for d in (p.shape or ())]
    if fault == "empty" and any(d < 0 for d in p.shape or ()):
        shape[[d < 0 for d in p.shape or ()].index(True)] = 0
    if fault == "rank":
        shape.append(1)
    if fault == "static_dim" and any(d >= 0 for d in p.shape or ()):
        shape[[d >= 0 for d in p.shape or ()].index(True)] += 1
    if fault == "dtype":
        dtype = torch.float64
    numel = 1
    for d in shape:
        numel *= d
    if fault == "meta":
        tensor = torch.zeros(shape, dtype=dtype, device="meta")
    elif draw(st.booleans()):
        # a view of a buffer shared by this call's tensors of the dtype: overlaps and aliases
        base = bases.setdefault(dtype, torch.zeros(64, dtype=dtype))
        start = draw(st.integers(0, 8))
        tensor = base[start : start + numel].view(shape)
    else:
        tensor = torch.zeros(shape, dtype=dtype)
    if fault == "transposed":  # the same shape, axes stored in reverse order
        tensor = torch.zeros(shape[::-1], dtype=dtype).permute(*reversed(range(len(shape))))
    if fault == "strided":  # every other element of the last axis
        tensor = torch.zeros([*shape[:-1], 2 * shape[-1]], dtype=dtype)[..., ::2]
    if fault == "grad":
        tensor = tensor.detach().clone().requires_grad_(True) if tensor.is_floating_point() else tensor
    if fault == "neg":
        tensor = torch._neg_view(tensor)  # contiguous, with the negative bit set
    if fault == "bounds" and numel:
        tensor = torch.zeros(numel + 4, dtype=dtype)[4:].view(shape)
        tensor.untyped_storage().resize_(tensor.element_size() * (numel + 2))
    if fault == "parameter" and tensor.is_floating_point():
        tensor = torch.nn.Parameter(tensor.detach().clone(), requires_grad=draw(st.booleans()))
    if fault == "not_tensor":
        return tensor.tolist()
    if npu is None or fault in ("unplaced", "meta", "cpu_on_npu"):
        return tensor
    fmt = 0 if fault == "nchw" else 29 if fault == "nz" else None
    return npu.place(tensor, 1 if fault == "other_device" else 0, fmt=fmt)


def _scalar_arg(draw: st.DrawFn, p: ParamInfo) -> object:
    fault = draw(st.sampled_from(_SCALAR_FAULTS)) if draw(st.integers(0, 2)) == 0 else "none"
    dtype = p.dtype
    if fault == "missing":
        return None
    if dtype.value == "BOOL":
        value: Any = draw(st.booleans())
        return 1 if fault in ("kind", "range") else ctypes.c_bool(value) if fault == "ctypes" else value
    if dtype.is_float:
        top = {"FP32": 3.4e38, "FP16": 65504.0, "BF16": 3.3e38}[dtype.value]
        value = draw(st.floats(-top, top, allow_nan=False))
        if fault == "range":
            return top * 2
        if fault == "nan":
            return float("nan")
        if fault in ("kind", "subclass"):
            return draw(st.integers(-3, 3))
        if fault == "bool":
            return True
        return ctypes.c_float(value) if fault == "ctypes" else value
    bits = dtype.bits
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if dtype.is_signed_int else (0, (1 << bits) - 1)
    value = draw(st.sampled_from([lo, hi, 0, 1]))
    if fault == "range":
        return hi + 1
    if fault == "kind":
        return 1.0
    if fault == "bool":
        return True
    if fault == "subclass":
        return _Int(value)
    if fault == "ctypes":
        return ctypes.c_int32(0)
    return value


@st.composite
def _call(draw: st.DrawFn, npu_class: Any) -> tuple[CallSignature, list[object], Any, bool]:
    params = draw(_signature_params())
    on_npu = draw(st.booleans())
    npu = npu_class() if on_npu else None
    aliases = [k for k, p in enumerate(params) if p.is_tensor and draw(st.booleans())]
    sig = CallSignature(params, aliases, platform=npu if npu is not None else "a2a3sim")
    bases: dict[Any, torch.Tensor] = {}
    args = [_tensor_arg(draw, p, npu, bases) if p.is_tensor else _scalar_arg(draw, p) for p in params]
    if draw(st.integers(0, 15)) == 0:
        args = args[:-1] if draw(st.booleans()) else [*args, 1]
    if npu is not None and draw(st.integers(0, 5)) == 0:
        npu.device = 1  # the current device differs from the tensors'
    if npu is not None and draw(st.integers(0, 5)) == 0:
        npu.stream = type(npu.stream)(1, "elsewhere")  # the stream is on another device
    container = draw(st.sampled_from([list, tuple]))
    return sig, container(args), npu, draw(st.booleans())


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_fast_and_general_paths_agree(make_npu, native, data) -> None:
    sig, args, npu, grad = data.draw(_call(make_npu))
    # on the simulator describe_call runs the native path (native is built), elsewhere the Python one
    assert (sig._fast is sig._python_fast) == (npu is not None)
    with torch.set_grad_enabled(grad):
        general = _outcome(sig._describe_general, args)
        public = _outcome(sig.describe_call, args)
        fast = _outcome(_fast_only(sig), args)
        native_fast = _outcome(_native_only(native, sig), args) if npu is None else ("frame", MISS)
    assert public[0] == general[0]
    if general[0] == "error":
        assert public[1] == general[1]
        # neither fast path takes a call the general path rejects (nor raises itself)
        assert fast == ("frame", MISS)
        assert native_fast == ("frame", MISS)
        return
    assert _facts(public[1]) == _facts(general[1])
    for taken in (fast, native_fast):
        assert taken[0] == "frame"
        if taken[1] is not MISS:
            assert _facts(taken[1]) == _facts(general[1])
            assert all(
                t.storage is g.storage for t, g in zip(taken[1].tensors, general[1].tensors, strict=True)
            )


def _bench_call(platform: Any) -> tuple[CallSignature, list[object]]:
    params = [P("in0", "In", [-1, 16], "FP32"), P("in1", "In", [-1, 16], "FP32")]
    params += [P("out", "Out", [-1, 16], "FP32"), P("alpha", "In", None, "FP32")]
    args: list[object] = [torch.randn(4, 16), torch.randn(4, 16), torch.empty(4, 16), 0.5]
    if not isinstance(platform, str):
        args = [platform.place(a) if isinstance(a, torch.Tensor) else a for a in args]
    return CallSignature(params, [2], platform=platform), args


@pytest.mark.parametrize("where", ["sim", "npu"])
def test_common_calls_take_the_fast_path(make_npu, where) -> None:
    sig, args = _bench_call("a2a3sim" if where == "sim" else make_npu())
    frame = _fast_only(sig)(args)
    assert frame is not MISS
    assert _facts(frame) == _facts(sig._describe_general(args))
    # exact aliases of a written view, nonzero offsets, tuple arguments, grad off with a grad tensor
    base = torch.zeros(4 * 16 * 2)
    view = base[64:].view(4, 16)
    args = (args[0], view, view, 2.0)
    if where == "npu":
        args = tuple(sig.platform.place(a) if isinstance(a, torch.Tensor) else a for a in args)  # type: ignore[attr-defined]
    assert _fast_only(sig)(args) is not MISS
    with torch.no_grad():
        leaf = torch.ones(4, 16, requires_grad=True)
        if where == "npu":
            sig.platform.place(leaf)  # type: ignore[attr-defined]
        assert _fast_only(sig)([leaf, args[0], args[2], 1.0]) is not MISS


def test_native_path_takes_common_calls(native) -> None:
    sig, args = _bench_call("a2a3sim")
    native_only = _native_only(native, sig)
    frame = native_only(args)
    assert frame is not MISS
    assert _facts(frame) == _facts(sig._describe_general(args))
    assert frame.alias_result() is args[2]
    # a dynamic non-leading extent: strides worked out per call
    params = [P("x", "In", [2, -1, 3], "FP16"), P("y", "InOut", [-1], "INT32"), P("flag", "In", None, "BOOL")]
    sig = CallSignature(params, [1], platform="a2a3sim")
    base = torch.zeros(40, dtype=torch.int32)
    args = [torch.ones(2, 5, 3, dtype=torch.float16), base[3:13], True]
    frame = _native_only(native, sig)(args)
    assert frame is not MISS
    assert frame.tensors[0].strides == (15, 3, 1)
    assert _facts(frame) == _facts(sig._describe_general(args))
    # many written views: every pair is tested
    params = [P(f"o{k}", "Out", [4], "FP32") for k in range(7)]
    sig = CallSignature(params, platform="a2a3sim")
    base = torch.zeros(40)
    disjoint = [base[4 * k : 4 * k + 4] for k in range(7)]
    assert _native_only(native, sig)(disjoint) is not MISS
    assert _native_only(native, sig)([*disjoint[:6], base[2:6]]) is MISS


def test_native_path_leaves_calls_under_a_torch_function_mode_to_the_general_path(native) -> None:
    class Passthrough(torch.overrides.TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
            return func(*args, **(kwargs or {}))

    sig, args = _bench_call("a2a3sim")
    native_only = _native_only(native, sig)
    with Passthrough():
        assert native_only(args) is MISS
        assert _facts(sig.describe_call(args)) == _facts(sig._describe_general(args))
    assert native_only(args) is not MISS


def test_signatures_made_before_the_build_switch_to_the_native_path(native, make_npu, monkeypatch) -> None:
    built = _native_describe._state.module
    monkeypatch.setattr(_native_describe, "_state", _native_describe._State())
    monkeypatch.setattr(_native_describe, "_waiting", type(_native_describe._waiting)())
    monkeypatch.setattr(_native_describe, "_obtain", lambda verbose: built)
    sig, args = _bench_call("a2a3sim")
    npu_sig, _ = _bench_call(make_npu())
    assert sig._fast is sig._python_fast  # not built yet in this (simulated) process
    assert _native_describe.build_native()
    assert sig._fast is not sig._python_fast
    assert npu_sig._fast is npu_sig._python_fast  # NPU platforms keep the Python fast path
    assert _facts(sig.describe_call(args)) == _facts(sig._describe_general(args))


def test_a_failed_native_build_keeps_the_python_path(monkeypatch) -> None:
    def no_compiler(verbose: bool) -> None:
        raise RuntimeError("no compiler here")

    monkeypatch.setattr(_native_describe, "_state", _native_describe._State())
    monkeypatch.setattr(_native_describe, "_waiting", type(_native_describe._waiting)())
    monkeypatch.setattr(_native_describe, "_obtain", no_compiler)
    sig, args = _bench_call("a2a3sim")
    assert not _native_describe.build_native()
    assert _native_describe.native_error() == "RuntimeError: no compiler here"
    assert sig._fast is sig._python_fast
    assert _facts(sig.describe_call(args)) == _facts(sig._describe_general(args))


def test_a_background_build_runs_once_and_switches_signatures(monkeypatch) -> None:
    import threading

    release = threading.Event()
    loads: list[bool] = []

    def slow_load(verbose: bool) -> object:
        loads.append(verbose)
        release.wait(30)
        raise RuntimeError("stand-in build")

    monkeypatch.setattr(_native_describe, "_state", _native_describe._State())
    monkeypatch.setattr(_native_describe, "_waiting", type(_native_describe._waiting)())
    monkeypatch.setattr(_native_describe, "_obtain", slow_load)
    first = _native_describe.build_native_in_background()
    assert first is not None
    assert first.daemon
    assert _native_describe.build_native_in_background() is first  # one build per process
    release.set()
    first.join(30)
    assert not first.is_alive()
    assert len(loads) == 1
    assert _native_describe.native_error() == "RuntimeError: stand-in build"


def test_a_second_process_loads_the_published_build_without_building(native, monkeypatch) -> None:
    def no_build(*_: object) -> None:
        raise AssertionError("a published build was built again")

    monkeypatch.setattr(_native_describe, "_state", _native_describe._State())
    monkeypatch.setattr(_native_describe, "_waiting", type(_native_describe._waiting)())
    monkeypatch.setattr(_native_describe, "_run_builder", no_build)
    assert _native_describe.build_native(), _native_describe.native_error()
    assert _native_describe._state.module.describe is not None


def test_many_written_views_use_the_overlap_sweep() -> None:
    params = [P(f"o{k}", "Out", [4], "FP32") for k in range(7)]  # 21 written pairs
    sig = CallSignature(params, platform="a2a3sim")
    assert "partial_overlap([" in sig.fast_path_source
    base = torch.zeros(40)
    disjoint = [base[4 * k : 4 * k + 4] for k in range(7)]
    assert _fast_only(sig)(disjoint) is not MISS
    overlapping = [*disjoint[:6], base[2:6]]
    assert _fast_only(sig)(overlapping) is MISS
    with pytest.raises(Exception, match="partially overlap"):
        sig.describe_call(overlapping)


def test_generated_source_is_readable_and_in_tracebacks() -> None:
    sig, _ = _bench_call("a2a3sim")
    source = sig.fast_path_source
    assert source.startswith("def describe_call(args):")
    assert "# 'out' (#2): Out FP32 [-1, 16], ND" in source
    assert "d0_2 * 64" in source  # the static extent and element size folded into one constant

    def broken(_: object) -> None:
        raise RuntimeError("general path")

    fast = sig._compile_fast_path(broken)
    try:
        fast([None, None, None, None])
    except RuntimeError as exc:
        frames = traceback.extract_tb(exc.__traceback__)
        generated = [f for f in frames if f.filename.startswith("<describe_call fast path")]
        assert generated
        assert generated[-1].line == "return general(args)"
        assert (
            linecache.getline(generated[-1].filename, generated[-1].lineno).strip() == "return general(args)"
        )
    else:
        raise AssertionError("the stand-in general path was not called")
