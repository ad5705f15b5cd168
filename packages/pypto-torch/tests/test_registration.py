"""pypto.torch.registration: schemas, the Fake/Meta kernel, define() and its API fallback.

Operators live in temporary namespaces (the ``library`` fixture) with CPU fixture
implementations that stand in for a device kernel. torch.compile is slow, so the compiled
functions are built once per module and reused.
"""

from __future__ import annotations

import doctest
import uuid
from typing import Any

import pytest
import torch
from torch._dynamo.testing import CompileCounterWithBackend
from torch._subclasses.fake_tensor import FakeTensorMode

from pypto.ir.param_info import ParamInfo, SignatureError
from pypto.torch import registration
from pypto.torch.registration import ArgumentError, RegistrationSignature
from pypto_testing import DEFAULT_BLOCKED

P = ParamInfo

AXPB = [
    P("x", "In", [-1, 4], "FP32"),
    P("out", "Out", [-1, 4], "FP32"),
    P("n", "In", None, "INT32"),
    P("alpha", "In", None, "FP32"),
]


class RecordingSignature(RegistrationSignature):
    """Records what the dispatcher hands to the Fake kernel."""

    __slots__ = ("seen",)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.seen: list[tuple[Any, ...]] = []

    def fake(self, *args: Any) -> Any:
        self.seen.append(args)
        return super().fake(*args)


def axpb_cpu(x, out, n, alpha) -> None:
    out.copy_(x * alpha + n)


# ---------------------------------------------------------------- schema


def test_mutation_only_schema() -> None:
    sig = RegistrationSignature(AXPB)
    text = sig.schema("axpb")
    assert text == "axpb(Tensor x, Tensor(a!) out, SymInt n, float alpha) -> ()"
    parsed = torch._C.parse_schema(text)
    assert [a.alias_info is not None and a.alias_info.is_write for a in parsed.arguments] == [
        False,
        True,
        False,
        False,
    ]
    assert all(not a.kwarg_only and a.default_value is None for a in parsed.arguments)  # all required
    assert parsed.returns == []  # no output allocation


def test_aliased_returns_reuse_their_input_alias_sets() -> None:
    params = [
        P("x", "In", [4], "FP16"),
        P("acc", "InOut", [4], "FP32"),
        P("flag", "In", None, "BOOL"),
        P("out", "Out", [4], "BF16"),
        P("k", "In", None, "UINT32"),
    ]
    sig = RegistrationSignature(params, [3, 1, 3])
    text = sig.schema("mix")
    assert text == (
        "mix(Tensor x, Tensor(a!) acc, bool flag, Tensor(b!) out, SymInt k) -> (Tensor(b!), Tensor(a!), Tensor(b!))"
    )
    parsed = torch._C.parse_schema(text)
    assert [r.alias_info.before_set for r in parsed.returns] == [{"b"}, {"a"}, {"b"}]
    assert RegistrationSignature(params, [1]).schema("one").endswith("-> Tensor(a!)")


@pytest.mark.parametrize(
    ("params", "aliases", "message"),
    [
        (AXPB, [0], r"index 0 names read-only input 'x'; a returned tensor must be an Out or InOut"),
        (AXPB, [2], "names scalar 'n'"),
        (AXPB, [9], "outside the signature"),
        (AXPB, [True], "expected an int"),
        ([P("n", "In", None, "INT32")], [], "a scalar-only operator"),
        (
            [*AXPB[:2], P("big", "In", None, "UINT64")],
            [],
            r"UINT64 scalar cannot be registered: the dispatcher's signed",
        ),
        ([*AXPB[:2], P("f8", "In", None, "FP8E4M3FN")], [], "no scalar type"),
        ([P("def", "In", [2], "FP32")], [], "name: expected a plain identifier"),
        ([P("_x", "In", [2], "FP32")], [], "name: expected a plain identifier"),
        ([AXPB[0], AXPB[0]], [], "repeats"),
    ],
)
def test_invalid_signatures_rejected(params, aliases, message) -> None:
    with pytest.raises(SignatureError, match=message):
        RegistrationSignature(params, aliases)


@pytest.mark.parametrize("name", ["ns::op", "op.overload", "1op", "", "op-x", "for", None])
def test_invalid_operator_names_rejected(name) -> None:
    with pytest.raises(SignatureError, match=r"schema\(name\): expected a plain identifier"):
        RegistrationSignature(AXPB).schema(name)


# ---------------------------------------------------------------- the Fake kernel


def test_fake_returns_the_exact_meta_inputs() -> None:
    sig = RegistrationSignature([P("x", "In", [-1], "FP32"), P("out", "Out", [-1], "FP32")], [1, 1])
    base = torch.empty(20, device="meta")
    out = base[5:9]
    first, second = sig.fake(torch.empty(4, device="meta"), out)
    assert first is out
    assert second is out
    assert out.storage_offset() == 5
    empty = base[20:20]
    assert sig.fake(torch.empty(0, device="meta"), empty) == (empty, empty)
    assert RegistrationSignature(sig.params).fake(torch.empty(4, device="meta"), out) is None


def test_fake_accepts_fake_tensors_and_keeps_symbols() -> None:
    from torch.fx.experimental.symbolic_shapes import ShapeEnv

    sig = RegistrationSignature(AXPB, [1])
    mode = FakeTensorMode(shape_env=ShapeEnv())
    with mode:
        x = mode.from_tensor(torch.empty(3, 4))
        out = mode.from_tensor(torch.empty(6, 4))[3:]
        n = mode.shape_env.create_unbacked_symint()
        assert sig.fake(x, out, n, 0.5) is out
    with pytest.raises(ArgumentError, match=r"expected a INT32 scalar, got SymFloat"):
        sig.fake(x, out, torch.sym_float(n), 0.5)


@pytest.mark.parametrize(
    ("case", "message"),
    [
        ("real", r"parameter 'x' .* expected a FakeTensor or Meta tensor, got a real tensor on cpu"),
        ("object", "expected a FakeTensor or Meta tensor, got list"),
        ("dtype", "expected dtype torch.float32, got torch.float16"),
        ("rank", "expected rank 2"),
        ("static", "dimension 1 must be 4"),
        ("strided", r"expected a contiguous view, got strides \[1, 2\]"),
        ("grad", "requires grad while autograd is enabled"),
        ("device", r"parameter 'out' .* is on cpu, but parameter 'x' is on meta"),
        ("range", r"parameter 'n' .* outside the INT32 range"),
        ("float_to_int", "floats are not truncated"),
        ("missing", "parameter 'alpha' is In but was not supplied"),
    ],
)
def test_fake_rejects(case, message) -> None:
    sig = RegistrationSignature(AXPB)
    meta = {"device": "meta"}
    x, out, n, alpha = torch.empty(2, 4, **meta), torch.empty(2, 4, **meta), 3, 1.0
    if case == "real":
        x = torch.empty(2, 4)
    elif case == "object":
        x = [1.0]
    elif case == "dtype":
        x = torch.empty(2, 4, dtype=torch.float16, **meta)
    elif case == "rank":
        x = torch.empty(8, **meta)
    elif case == "static":
        x = torch.empty(2, 5, **meta)
    elif case == "strided":
        x = torch.empty(4, 2, **meta).t()
    elif case == "grad":
        x = torch.empty(2, 4, requires_grad=True, **meta)
    elif case == "device":
        out = FakeTensorMode().from_tensor(torch.empty(2, 4))
    elif case == "range":
        n = 2**31
    elif case == "float_to_int":
        n = 3.0
    args = (x, out, n) if case == "missing" else (x, out, n, alpha)
    with pytest.raises(SignatureError, match=message):
        sig.fake(*args)


def test_fake_allows_parameters_under_no_grad() -> None:
    weight = torch.nn.Parameter(torch.empty(2, 4, device="meta"))
    with torch.no_grad():
        assert RegistrationSignature(AXPB).fake(weight, torch.empty(2, 4, device="meta"), 1, 1.0) is None


# ---------------------------------------------------------------- define()


def test_define_installs_schema_and_fake_only(library) -> None:
    sig = RecordingSignature(AXPB, [1])
    qualname = sig.define(library, "axpb")
    assert qualname == f"{library.ns}::axpb"
    op = getattr(torch.ops, library.ns).axpb.default
    assert (
        str(op._schema)
        == f"{library.ns}::axpb(Tensor x, Tensor(a!) out, SymInt n, float alpha) -> Tensor(a!)"
    )
    out = torch.empty(3, 4, device="meta")
    assert op(torch.empty(3, 4, device="meta"), out, 2, 1.0) is out
    with FakeTensorMode() as mode:
        fx, fout = mode.from_tensor(torch.empty(3, 4)), mode.from_tensor(torch.empty(3, 4))
        assert op(fx, fout, 2, 1.0) is fout
    assert len(sig.seen) == 2
    with pytest.raises(NotImplementedError):  # no device (or CPU) kernel was installed
        op(torch.empty(3, 4), torch.empty(3, 4), 2, 1.0)


def test_duplicate_definitions_raise_pytorchs_error(library) -> None:
    RegistrationSignature(AXPB).define(library, "dup")
    with pytest.raises(RuntimeError, match="multiple times"):
        RegistrationSignature(AXPB).define(library, "dup")
    other = RegistrationSignature([P("y", "InOut", [2], "INT32")])
    with pytest.raises(RuntimeError, match="multiple times"):
        other.define(library, "dup")
    op = getattr(torch.ops, library.ns).dup.default
    assert "SymInt n" in str(op._schema)  # the first definition stays


def test_define_rejects_a_non_library() -> None:
    with pytest.raises(TypeError, match=r"define\(library\): expected a torch.library.Library, got str"):
        RegistrationSignature(AXPB).define("pypto_test", "op")


@pytest.fixture
def older_torch(monkeypatch) -> list[str]:
    """Emulate PyTorch 2.2-2.3: no register_fake, and impl_abstract as the entry point."""
    real = torch.library.register_fake
    calls: list[str] = []

    def impl_abstract(qualname, func=None, *, lib=None, _stacklevel=1):
        calls.append(qualname)
        return real(qualname, func, lib=lib, _stacklevel=_stacklevel + 1)

    monkeypatch.delattr(torch.library, "register_fake")
    monkeypatch.setattr(torch.library, "impl_abstract", impl_abstract)
    return calls


def test_fallback_to_impl_abstract(older_torch) -> None:
    ns = f"pypto_test_{uuid.uuid4().hex[:10]}"
    lib = torch.library.Library(ns, "DEF")
    sig = RegistrationSignature(AXPB, [1])
    assert sig.define(lib, "old") == f"{ns}::old"
    assert older_torch == [f"{ns}::old"]
    out = torch.empty(2, 4, device="meta")
    assert getattr(torch.ops, ns).old(torch.empty(2, 4, device="meta"), out, 1, 1.0) is out
    with pytest.raises(RuntimeError, match="multiple times"):
        sig.define(lib, "old")
    lib._destroy()
    # The registration ended with the caller's library: the name is free again.
    again = torch.library.Library(ns, "DEF")
    try:
        assert sig.define(again, "old") == f"{ns}::old"
        assert older_torch == [f"{ns}::old", f"{ns}::old"]
    finally:
        again._destroy()


def test_no_fake_api_fails_before_any_schema(monkeypatch, library) -> None:
    monkeypatch.delattr(torch.library, "register_fake")
    monkeypatch.delattr(torch.library, "impl_abstract")
    with pytest.raises(
        RuntimeError, match=r"neither torch\.library\.register_fake nor torch\.library\.impl_abstract"
    ):
        RegistrationSignature(AXPB).define(library, "nothing")
    monkeypatch.undo()
    RegistrationSignature(AXPB).define(library, "nothing")  # the name was never taken


# ---------------------------------------------------------------- opcheck and torch.compile


@pytest.fixture(scope="module")
def axpb_op():
    """A mutation-only operator with a CPU fixture implementation, shared by the module."""
    lib = torch.library.Library(f"pypto_test_{uuid.uuid4().hex[:10]}", "DEF")
    sig = RecordingSignature(AXPB)
    sig.define(lib, "axpb")
    lib.impl("axpb", axpb_cpu, "CPU")
    yield getattr(torch.ops, lib.ns).axpb, sig
    torch._dynamo.reset()  # drop compiled code that refers to this operator
    lib._destroy()


def test_opcheck_mutation_only(axpb_op) -> None:
    op, _ = axpb_op
    results = torch.library.opcheck(op.default, (torch.randn(3, 4), torch.empty(3, 4), 5, 0.5))
    assert results, results
    assert set(results.values()) == {"SUCCESS"}, results


def test_opcheck_catches_a_lying_schema(library) -> None:
    # A negative control: the fixture writes `x`, which the schema says is read-only.
    RegistrationSignature(AXPB).define(library, "liar")

    def liar(x, out, n, alpha):
        x.add_(1)

    library.impl("liar", liar, "CPU")
    op = getattr(torch.ops, library.ns).liar.default
    with pytest.raises(Exception, match=r"mutated|mutate"):
        torch.library.opcheck(op, (torch.randn(3, 4), torch.empty(3, 4), 5, 0.5), test_utils="test_schema")


def test_compile_shape_derived_scalar_reuses_one_graph(axpb_op) -> None:
    op, sig = axpb_op

    def f(x, out, alpha):
        op(x, out, x.shape[0], alpha)  # the wrapper returns the caller's output after the call
        return out

    counter = CompileCounterWithBackend("aot_eager")
    compiled = torch.compile(f, backend=counter, fullgraph=True, dynamic=True)
    frames = None
    for rows in (3, 5, 9):
        sig.seen.clear()
        x, out = torch.randn(rows, 4), torch.empty(rows, 4)
        assert compiled(x, out, 2.0) is out
        torch.testing.assert_close(out, x * 2.0 + rows)
        if frames is None:
            frames = counter.frame_count
            n = sig.seen[-1][2]
            assert isinstance(n, torch.SymInt)
            assert n.node.has_hint()
        assert counter.frame_count == frames  # no recompilation for a new size
    assert sum("axpb" in g.code for g in counter.graphs) == 1


def test_compile_backed_and_unbacked_int_symbols(axpb_op) -> None:
    op, sig = axpb_op

    def backed(x, out, n):
        op(x, out, n, 1.0)
        return out

    def unbacked(x, out, nt):
        op(x, out, nt.item(), 1.0)
        return out

    counter = CompileCounterWithBackend("aot_eager")
    compiled = torch.compile(backed, backend=counter, fullgraph=True, dynamic=True)
    for n in (2, 7, 11):
        x, out = torch.randn(2, 4), torch.empty(2, 4)
        compiled(x, out, n)
        torch.testing.assert_close(out, x + n)
    assert sum("axpb" in g.code for g in counter.graphs) == 1  # no equality guard on n
    sym = next(a[2] for a in sig.seen if isinstance(a[2], torch.SymInt))
    assert sym.node.has_hint()

    sig.seen.clear()
    with torch._dynamo.config.patch(capture_scalar_outputs=True):
        counter = CompileCounterWithBackend("aot_eager")
        compiled = torch.compile(unbacked, backend=counter, fullgraph=True, dynamic=True)
        for n in (3, 8):
            x, out = torch.randn(2, 4), torch.empty(2, 4)
            compiled(x, out, torch.tensor(n))
            torch.testing.assert_close(out, x + n)
        # The INT32 range is checked on the symbol (torch._check), without reading it as an int.
        with pytest.raises(Exception, match=r"parameter 'n' .*must be <= 2147483647"):
            compiled(torch.randn(2, 4), torch.empty(2, 4), torch.tensor(2**31))
    syms = [a[2] for a in sig.seen if isinstance(a[2], torch.SymInt)]
    assert any(not s.node.has_hint() for s in syms)  # an unbacked symbol reached the Fake kernel
    assert sum("axpb" in g.code for g in counter.graphs) == 1


def test_aliased_return_schema_and_fake_meta(library) -> None:
    sig = RegistrationSignature([P("x", "In", [-1], "FP32"), P("out", "Out", [-1], "FP32")], [1])
    sig.define(library, "copy_into")

    def copy_into(x, out):
        return out.copy_(x)

    library.impl("copy_into", copy_into, "CPU")
    op = getattr(torch.ops, library.ns).copy_into.default
    result = torch.library.opcheck(
        op, (torch.randn(5), torch.empty(5)), test_utils=("test_schema", "test_faketensor")
    )
    assert set(result.values()) == {"SUCCESS"}, result
    out = torch.empty(10, device="meta")[2:7]
    assert op(torch.empty(5, device="meta"), out) is out
    with FakeTensorMode() as mode:
        fout = mode.from_tensor(torch.empty(8))[3:3]
        assert op(mode.from_tensor(torch.empty(0)), fout) is fout


# ---------------------------------------------------------------- isolation


def test_registration_imports_and_dispatches_without_optional_runtime(run_without_optional_runtime) -> None:
    code = """
import importlib
import torch
before = set(torch._C._dispatch_get_all_op_names())
import pypto.torch.registration as registration
importlib.reload(registration)
assert set(torch._C._dispatch_get_all_op_names()) == before, "importing registered an operator"
from pypto.ir.param_info import ParamInfo
lib = torch.library.Library("pypto_isolated", "DEF")
sig = registration.RegistrationSignature(
    [ParamInfo("x", "In", [-1], "FP32"), ParamInfo("out", "Out", [-1], "FP32")], [1])
sig.define(lib, "op")
out = torch.empty(3, device="meta")
assert torch.ops.pypto_isolated.op(torch.empty(3, device="meta"), out) is out
"""
    run_without_optional_runtime(code, blocked=(*DEFAULT_BLOCKED, "simpler")).check()


def test_docstring_examples_run() -> None:
    assert doctest.testmod(registration).failed == 0


def test_a_describe_call_backed_operator_passes_opcheck(library) -> None:
    """The shape of the later kernel-mode operator: the real kernel describes its call on the
    simulator platform, computes through the frame, and returns the frame's alias result."""
    sig = RegistrationSignature([P("x", "In", [-1], "FP32"), P("out", "Out", [-1], "FP32")], [1])
    call = sig.call_signature(platform="a2a3sim")
    frames = []

    def kernel(x, out):
        frame = call.describe_call([x, out])
        frames.append(frame)
        src, dst = frame.tensors
        dst.tensor.copy_(src.tensor * 2)
        return frame.alias_result()

    sig.define(library, "double")
    library.impl("double", kernel, "CPU")
    op = getattr(torch.ops, library.ns).double.default
    x, out = torch.randn(6), torch.empty(6)
    assert op(x, out) is out
    torch.testing.assert_close(out, x * 2)
    assert frames[-1].stream is not None
    assert frames[-1].device_index == 0
    result = torch.library.opcheck(op, (x, torch.empty(6)), test_utils=("test_schema", "test_faketensor"))
    assert set(result.values()) == {"SUCCESS"}, result
