"""Registered PyPTO operators run their kernels on the simulated chip: eager, torch.compile
(aot_eager and inductor, fullgraph), inside an nn.Module, with several shapes and scalar
values, through opcheck; argument errors are describe_call's."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import torch
from torch_test_programs import add, shift_rows

import pypto.language as pl
import pypto.torch as pt
from pypto.ir import RUNTIMES
from pypto.torch._kernel import context
from pypto.torch._platform.simulator import SimulatorStream, use_stream
from pypto.torch.interop import ArgumentError
from pypto_testing.forms import cube_matmul

pytestmark = pytest.mark.usefixtures("kernel_mode")


@pl.jit
def axpy(x: pl.Tensor, alpha: pl.FP32, y: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="axpy"):
        out[:] = pl.add(pl.mul(x, alpha), y)
    return out


@pl.jit
def row_sums(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="row_sums"):
        t = pl.load(x, [0, 0], [16, 64])
        tmp = pl.create_tile([16, 64], dtype=pl.FP32, target_memory=pl.MemorySpace.Vec)
        s: pl.Tile[[16, 1], pl.FP32] = pl.row_sum(t, tmp)
        pl.store(s, [0, 0], out)
    return out


matmul = cube_matmul(32, 32, 32, "matmul")


@pl.jit
def accumulate(x: pl.Tensor, acc: pl.InOut[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="accumulate"):
        acc[:] = pl.add(acc, x)
    return acc


@pl.jit
def add_twice(a: pl.Tensor, o1: pl.Out[pl.Tensor], o2: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="add_twice"):
        o1[:] = pl.add(a, a)
        o2[:] = pl.add(a, a)
    return o1, o2


ROWS = pl.dynamic("ROWS")


@pl.jit
def exp_rows(a: pl.Tensor[[ROWS, 32], pl.FP32], out: pl.Out[pl.Tensor[[ROWS, 32], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="exp_rows"):
        for i in pl.range(ROWS // 16):
            pl.store(pl.exp(pl.load(a, [i * 16, 0], [16, 32])), [i * 16, 0], out)
    return out


@pytest.fixture(params=RUNTIMES)
def on_each_runtime(request: pytest.FixtureRequest) -> str:
    """Kernel mode initialised on each chip runtime in turn (TMR, HBG) before the first call."""
    assert pt.init(runtime=request.param).runtime == request.param
    assert context.current().worker.runtime == request.param
    return request.param


@pytest.fixture
def ns() -> str:
    return f"pypto_test_{uuid.uuid4().hex[:8]}"


@pytest.fixture
def ops(ns: str) -> Iterator[dict[str, pt.Operator]]:
    made = {
        name: pt.register(fn, f"{ns}::{name}")
        for name, fn in {
            "add": add,
            "axpy": axpy,
            "shift_rows": shift_rows,
            "row_sums": row_sums,
            "matmul": matmul,
            "accumulate": accumulate,
            "add_twice": add_twice,
            "exp_rows": exp_rows,
        }.items()
    }
    yield made
    for op in made.values():
        op.remove()


def r(*shape: int) -> torch.Tensor:
    return torch.rand(*shape)


def test_the_operator_runs_the_kernel_and_returns_the_callers_tensor(
    ops: dict[str, pt.Operator], ns: str
) -> None:
    a, b, out = r(32, 32), r(32, 32), torch.empty(32, 32)
    assert pt.state() is pt.KernelState.UNINITIALIZED
    result = ops["add"](a, b, out)  # init on first use
    assert result is out
    assert pt.state() is pt.KernelState.READY
    torch.testing.assert_close(out, a + b)
    out2 = torch.empty(32, 32)
    assert getattr(torch.ops, ns).add(a, b, out2) is None  # mutation-only: no dispatcher return
    torch.testing.assert_close(out2, a + b)
    out3 = torch.empty(32, 32)
    assert ops["add"](a, b=b, out=out3) is out3
    torch.testing.assert_close(out3, a + b)
    assert ops["add"].op is getattr(torch.ops, ns).add.default
    assert "Tensor(a!) out" in ops["add"].schema


@pytest.mark.usefixtures("on_each_runtime")
def test_results_are_visible_to_the_next_torch_operation(ops: dict[str, pt.Operator]) -> None:
    a, b, out = r(16, 16), r(16, 16), torch.zeros(16, 16)
    total = torch.stack([ops["add"](a, b, out).sum(), (a + b).sum()])
    torch.testing.assert_close(total[0], total[1])


@pytest.mark.usefixtures("on_each_runtime")
def test_scalars_are_runtime_values_one_artifact_for_every_value(ops: dict[str, pt.Operator]) -> None:
    x, y, out = r(32, 32), r(32, 32), torch.empty(32, 32)
    for alpha in (2.5, 1.5, -3.0, 0.0):
        ops["axpy"](x, alpha, y, out)
        torch.testing.assert_close(out, alpha * x + y)
    assert len(ops["axpy"]._callables) == 1  # one compile, one registration
    x = torch.arange(64 * 32, dtype=torch.float32).reshape(64, 32)
    out = torch.empty(64, 32)
    for n in (0, 1, 3, 6):
        ops["shift_rows"](x, n, out)
        expected = torch.cat([x[((i + n) % 4) * 16 :][:16] for i in range(4)])
        torch.testing.assert_close(out, expected)
    assert len(ops["shift_rows"]._callables) == 1


@pytest.mark.usefixtures("on_each_runtime")
def test_reduction_matmul_inout_and_two_outputs(ops: dict[str, pt.Operator]) -> None:
    x = r(16, 64)
    sums = torch.empty(16, 1)
    ops["row_sums"](x, sums)
    torch.testing.assert_close(sums, x.sum(dim=1, keepdim=True))
    a, b, c = r(32, 32), r(32, 32), torch.empty(32, 32)
    ops["matmul"](a, b, c)
    torch.testing.assert_close(c, a @ b, rtol=1e-5, atol=1e-5)
    acc, inc = torch.ones(8, 8), r(8, 8)
    expected = acc + inc + inc
    ops["accumulate"](inc, acc)
    assert ops["accumulate"](inc, acc) is acc
    torch.testing.assert_close(acc, expected)
    o1, o2 = torch.empty(8, 8), torch.empty(8, 8)
    got = ops["add_twice"](inc, o1, o2)
    assert got[0] is o1
    assert got[1] is o2
    torch.testing.assert_close(o2, inc + inc)


def test_several_shapes_compile_per_shape_through_the_store(ops: dict[str, pt.Operator]) -> None:
    for shape in ((16, 16), (32, 64), (8, 128), (16, 16)):
        a, b, out = r(*shape), r(*shape), torch.empty(*shape)
        ops["add"](a, b, out)
        torch.testing.assert_close(out, a + b)
    assert len(ops["add"]._callables) == 3


@pytest.mark.usefixtures("on_each_runtime")
def test_a_dynamic_dimension_serves_every_extent_with_one_registration(ops: dict[str, pt.Operator]) -> None:
    for rows in (16, 48, 32):
        a, out = r(rows, 32), torch.empty(rows, 32)
        ops["exp_rows"](a, out)
        torch.testing.assert_close(out, a.exp())
    kernels = {id(kc) for kc in ops["exp_rows"]._callables.values()}
    assert len(kernels) == 1  # one artifact, one Worker registration, for every extent
    with pytest.raises(ArgumentError, match="dimension 1 must be 32"):
        ops["exp_rows"](r(16, 16), torch.empty(16, 16))


@pytest.mark.usefixtures("on_each_runtime")
def test_views_with_offsets_are_borrowed_in_place(ops: dict[str, pt.Operator]) -> None:
    big_a, big_b, big_out = r(64, 16), r(64, 16), torch.zeros(64, 16)
    ops["add"](big_a[16:32], big_b[32:48], big_out[48:64])
    torch.testing.assert_close(big_out[48:64], big_a[16:32] + big_b[32:48])
    assert big_out[:48].abs().sum() == 0


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_torch_compile_fullgraph(ops: dict[str, pt.Operator], backend: str) -> None:
    op, scale = ops["add"], ops["axpy"]

    def f(a: torch.Tensor, b: torch.Tensor, tmp: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
        op(a, b, tmp)
        scale(tmp, 0.5, a, out)
        return out * 2

    compiled = torch.compile(f, backend=backend, fullgraph=True)
    a, b = r(32, 32), r(32, 32)
    tmp, out = torch.empty(32, 32), torch.empty(32, 32)
    got = compiled(a, b, tmp, out)
    torch.testing.assert_close(got, ((a + b) * 0.5 + a) * 2)
    torch.testing.assert_close(tmp, a + b)

    mm, sums = ops["matmul"], ops["row_sums"]

    def g(a: torch.Tensor, b: torch.Tensor, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        c = mm(a, b, torch.empty(32, 32))
        s = sums(x, torch.empty(16, 1))
        return c + 1, s

    c, s = torch.compile(g, backend=backend, fullgraph=True)(a, b, x := r(16, 64))
    torch.testing.assert_close(c, a @ b + 1, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(s, x.sum(dim=1, keepdim=True))


def test_new_shapes_need_no_graph_recompile_under_dynamic_shapes(ops: dict[str, pt.Operator]) -> None:
    graphs: list[Any] = []

    def counting_backend(gm: torch.fx.GraphModule, example_inputs: Any) -> Any:
        graphs.append(gm)
        return gm.forward

    op = ops["add"]
    compiled = torch.compile(op, backend=counting_backend, fullgraph=True, dynamic=True)
    for rows in (32, 48, 64):  # never equal to the 16 columns (duck sizing would tie them)
        a, b, out = r(rows, 16), r(rows, 16), torch.empty(rows, 16)
        compiled(a, b, out)
        torch.testing.assert_close(out, a + b)
    assert len(graphs) == 1
    assert len(op._callables) == 3  # each new shape specialised through the store


def test_inside_an_nn_module(ops: dict[str, pt.Operator]) -> None:
    op = ops["axpy"]

    class Residual(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.alpha = 0.25

        def forward(self, x: torch.Tensor, skip: torch.Tensor) -> torch.Tensor:
            out = torch.empty_like(x)
            return op(x, self.alpha, skip, out)

    model = Residual()
    x, skip = r(16, 16), r(16, 16)
    torch.testing.assert_close(model(x, skip), 0.25 * x + skip)
    compiled = torch.compile(model, backend="aot_eager", fullgraph=True)
    torch.testing.assert_close(compiled(x, skip), 0.25 * x + skip)


def test_opcheck_passes(ops: dict[str, pt.Operator]) -> None:
    a, b = r(16, 16), r(16, 16)
    result = torch.library.opcheck(ops["add"].op, (a, b, torch.empty(16, 16)))
    assert set(result.values()) == {"SUCCESS"}
    result = torch.library.opcheck(ops["axpy"].op, (a, 1.5, b, torch.empty(16, 16)))
    assert set(result.values()) == {"SUCCESS"}


def test_argument_errors_are_describe_calls(ops: dict[str, pt.Operator]) -> None:
    a, b, out = r(16, 16), r(16, 16), torch.empty(16, 16)
    ops["add"](a, b, out)
    with pytest.raises(
        ArgumentError, match="describe_call: parameter 'b' \\(#1, In FP32\\): expected a contiguous view"
    ):
        ops["add"](a, r(16, 16).t(), out)
    big = r(17, 16)
    with pytest.raises(ArgumentError, match="partially overlap"):
        ops["add"](a, big[1:], big[:16])
    w = r(16, 16).requires_grad_()
    with pytest.raises(ArgumentError, match="requires grad"):
        ops["add"](a, w, out)
    with torch.no_grad():
        ops["add"](a, w, out)  # inference may borrow parameters
    torch.testing.assert_close(out, a + w.detach())
    with pytest.raises(ArgumentError, match=r"overflows FP32"):
        ops["axpy"](a, 1e300, b, out)


def test_the_fake_kernel_checks_declarations_and_allocates_nothing(ops: dict[str, pt.Operator]) -> None:
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        a, b, out = torch.empty(8, 8), torch.empty(8, 8), torch.empty(8, 8)
        assert ops["add"](a, b, out) is out
        with pytest.raises(ArgumentError, match="contiguous"):
            ops["add"](a, b, torch.empty(8, 8).t())


@pytest.mark.usefixtures("on_each_runtime")
def test_launches_follow_the_current_stream(ops: dict[str, pt.Operator]) -> None:
    a, b = r(16, 16), r(16, 16)
    outs = [torch.empty(16, 16) for _ in range(3)]
    ops["add"](a, b, outs[0])
    side = SimulatorStream()
    with use_stream(side):
        ops["add"](a, b, outs[1])
    ops["add"](a, b, outs[2])
    manager = context.current()
    worker = manager.worker
    assert manager.stream_for(side) is not worker.default_stream
    assert manager.stream_for(side).worker is worker
    for o in outs:
        torch.testing.assert_close(o, a + b)


def test_register_checks_its_arguments(ns: str) -> None:
    with pytest.raises(TypeError, match=r"@pl\.jit function"):
        pt.register(lambda x: x, f"{ns}::f")
    with pytest.raises(ValueError, match="namespace::name"):
        pt.register(add, "no_namespace")
    with pytest.raises(TypeError, match="name 'namespace::name' is required"):
        pt.register(add)
    op = pt.register(add, f"{ns}::dup")
    try:
        with pytest.raises(RuntimeError):
            pt.register(add, f"{ns}::dup")  # torch's own duplicate-definition error
    finally:
        op.remove()


def test_register_works_as_a_decorator(ns: str) -> None:
    @pt.register(f"{ns}::triple")
    @pl.jit
    def triple(x: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="triple"):
            out[:] = pl.add(pl.add(x, x), x)
        return out

    try:
        x = r(16, 16)
        torch.testing.assert_close(triple(x, torch.empty(16, 16)), 3 * x)
    finally:
        triple.remove()
