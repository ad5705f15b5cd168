"""Control flow run on a2a3sim and checked against torch: ``while`` loops in a kernel and in an
orchestration (plain ``while`` and ``pl.while_``), ``break`` / ``continue``, names first bound
inside a loop or one if branch and read after it, and tuple values."""

from __future__ import annotations

import pytest

import pypto.language as pl
from pypto.runtime import run
from pypto_testing.forms import KernelWhile

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("n", [0, 1, 2, 4, 9])
def test_a_kernel_while_loop_with_continue_and_break(n: int) -> None:
    x = torch.randn(16, 32)
    cfg = torch.tensor([[n, 0, 0, 0]])
    out = torch.zeros(16, 32)
    run(KernelWhile, x, cfg, out)
    weight = 0
    k = 0
    while k < n:  # the same loop in Python
        k += 1
        if k == 2:
            continue
        weight += k
        if k >= 5:
            break
    torch.testing.assert_close(out, x * weight)


@pl.program
class OrchestrationWhile:
    @pl.function(type=pl.FunctionType.InCore)
    def scale_rows(
        self,
        x: pl.Tensor[[64, 16], pl.FP32],
        row: pl.Scalar[pl.INDEX],
        k: pl.Scalar[pl.INT64],
        o: pl.InOut[pl.Tensor[[64, 16], pl.FP32]],
    ) -> pl.Tensor[[64, 16], pl.FP32]:
        t = pl.load(x, [row, 0], [8, 16])
        o = pl.store(pl.mul(t, k), [row, 0], o)
        return o

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(
        self,
        x: pl.Tensor[[64, 16], pl.FP32],
        n: pl.Scalar[pl.INT64],
        out: pl.InOut[pl.Tensor[[64, 16], pl.FP32]],
    ) -> pl.Tensor[[64, 16], pl.FP32]:
        for (i,) in pl.while_(init_values=(0,)):
            pl.cond(i < n)
            if i == 3:
                i_after = pl.yield_(i + 2)  # block 3 is skipped, and so is block 4
            else:
                out = self.scale_rows(x, i * 8, i + 1, out)
                i_after = pl.yield_(i + 1)
            i_next = pl.yield_(i_after)
        j: pl.Scalar[pl.INT64] = 0
        while True:
            if j >= 2:
                break
            j = j + 1
            if i_next > 6:
                continue
            out = self.scale_rows(x, 56, j * 10 + i_next, out)
        return out


@pytest.mark.parametrize("n", [0, 2, 5, 8])
def test_orchestration_while_loops_submit_kernels_per_iteration(n: int) -> None:
    x = torch.randn(64, 16)
    out = torch.zeros(64, 16)
    run(OrchestrationWhile, x, n, out)
    want = torch.zeros(64, 16)
    i = 0
    while i < n:
        if i == 3:
            i += 2
            continue
        want[i * 8 : i * 8 + 8] = x[i * 8 : i * 8 + 8] * (i + 1)
        i += 1
    for j in (1, 2):
        if i <= 6:
            want[56:64] = x[56:64] * (j * 10 + i)
    torch.testing.assert_close(out, want)


@pl.program
class BoundInside:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(
        self,
        x: pl.Tensor[[64, 16], pl.FP32],
        n: pl.Scalar[pl.INT64],
        out: pl.Out[pl.Tensor[[8, 16], pl.FP32]],
    ) -> pl.Tensor[[8, 16], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP):
            for i in pl.range(n):
                t = pl.load(x, [i * 8, 0], [8, 16])
                last = pl.mul(t, 2.0)  # a tile first bound in the loop
                k = i * 3  # a scalar first bound in the loop
            if n > 4:
                extra = k * 100  # a scalar bound in one branch only
            out = pl.store(pl.add(last, k + extra), [0, 0], out)
        return out


@pytest.mark.parametrize("n", [1, 3, 6])
def test_names_first_bound_in_a_loop_or_one_branch_keep_their_last_value(n: int) -> None:
    x = torch.randn(64, 16)
    out = torch.zeros(8, 16)
    run(BoundInside, x, n, out)
    k = (n - 1) * 3
    extra = k * 100 if n > 4 else 0  # the branch not taken leaves the starting value 0
    torch.testing.assert_close(out, x[(n - 1) * 8 : n * 8] * 2.0 + (k + extra))


@pl.program
class Tuples:
    @pl.function(type=pl.FunctionType.InCore)
    def two(
        self,
        x: pl.Tensor[[16, 16], pl.FP32],
        a: pl.Out[pl.Tensor[[16, 16], pl.FP32]],
        b: pl.Out[pl.Tensor[[16, 16], pl.FP32]],
    ) -> tuple[pl.Tensor[[16, 16], pl.FP32], pl.Tensor[[16, 16], pl.FP32]]:
        t = pl.load(x, [0, 0], [16, 16])
        pair = (pl.mul(t, 2.0), pl.add(t, 1.0))
        nested = (pair, 3.0)
        lo, hi = pair
        hi, lo = lo, hi  # swaps
        a = pl.store(pl.add(hi, nested[1]), [0, 0], a)
        b = pl.store(nested[0][1], [0, 0], b)
        res = (a, b)
        return res


def test_tuple_values_index_unpack_swap_and_return() -> None:
    x = torch.randn(16, 16)
    a = torch.zeros(16, 16)
    b = torch.zeros(16, 16)
    run(Tuples, x, a, b)
    torch.testing.assert_close(a, x * 2.0 + 3.0)
    torch.testing.assert_close(b, x + 1.0)


@pl.program
class PingPong:
    @pl.function(type=pl.FunctionType.InCore)
    def double(
        self, src: pl.Tensor[[16, 16], pl.FP32], dst: pl.InOut[pl.Tensor[[16, 16], pl.FP32]]
    ) -> pl.Tensor[[16, 16], pl.FP32]:
        t = pl.load(src, [0, 0], [16, 16])
        dst = pl.store(pl.add(t, t), [0, 0], dst)
        return dst

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(
        self,
        a: pl.InOut[pl.Tensor[[16, 16], pl.FP32]],
        b: pl.InOut[pl.Tensor[[16, 16], pl.FP32]],
        n: pl.Scalar[pl.INT64],
    ) -> pl.Tensor[[16, 16], pl.FP32]:
        src, dst = a, b
        k: pl.Scalar[pl.INT64] = 0
        while k < n:
            dst = self.double(src, dst)
            src, dst = dst, src  # the tensors swap roles: a while loop carrying two tensors
            k = k + 1
        return src


@pytest.mark.parametrize("n", [1, 2, 3])
def test_an_orchestration_while_loop_carries_tensors_swapped_by_tuple_unpacking(n: int) -> None:
    a0 = torch.randn(16, 16)
    a = a0.clone()
    b = torch.zeros(16, 16)
    run(PingPong, a, b, n)
    last = a if n % 2 == 0 else b  # written by the last iteration
    torch.testing.assert_close(last, a0 * 2**n)


@pl.program
class SwapScalars:
    @pl.function(type=pl.FunctionType.InCore)
    def put(
        self,
        v: pl.Scalar[pl.INT64],
        w: pl.Scalar[pl.INT64],
        y: pl.Out[pl.Tensor[[1, 2], pl.INT64]],
    ) -> pl.Tensor[[1, 2], pl.INT64]:
        pl.write(y, [0, 0], v)
        pl.write(y, [0, 1], w)
        return y

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(
        self, n: pl.Scalar[pl.INT64], out: pl.Out[pl.Tensor[[1, 2], pl.INT64]]
    ) -> pl.Tensor[[1, 2], pl.INT64]:
        a: pl.Scalar[pl.INT64] = 0
        b: pl.Scalar[pl.INT64] = 1
        for _ in pl.range(n):
            a, b = b, a + b  # both values are read before either name changes
        out = self.put(a, b, out)
        return out


@pytest.mark.parametrize("n", [0, 1, 10])
def test_tuple_assignment_reads_every_value_before_binding_any(n: int) -> None:
    out = torch.zeros(1, 2, dtype=torch.int64)
    run(SwapScalars, n, out)
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    assert out.tolist() == [[a, b]]


@pl.program
class CarriedTensors:
    @pl.function(type=pl.FunctionType.InCore)
    def double(
        self, x: pl.Tensor[[16, 32], pl.FP32], y: pl.Out[pl.Tensor[[16, 32], pl.FP32]]
    ) -> pl.Tensor[[16, 32], pl.FP32]:
        y = pl.store(pl.mul(pl.load(x, [0, 0], [16, 32]), 2.0), [0, 0], y)
        return y

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(
        self,
        x: pl.Tensor[[16, 32], pl.FP32],
        flag: pl.Scalar[pl.INT64],
        out: pl.Out[pl.Tensor[[16, 32], pl.FP32]],
    ) -> pl.Tensor[[16, 32], pl.FP32]:
        if flag > 0:  # a tensor made inside one branch is the if's result
            made = pl.create_tensor([16, 32], dtype=pl.FP32)
            made = self.double(x, made)
            src = made
        else:
            src = x
        acc = src
        other = x
        for _ in pl.range(3):  # a tensor made in the body is carried to the next iteration
            nxt = pl.create_tensor([16, 32], dtype=pl.FP32)
            nxt = self.double(acc, nxt)
            acc, other = other, nxt
        out = self.double(acc, out)
        return out


@pytest.mark.parametrize("flag", [0, 1])
def test_tensors_made_in_a_branch_or_a_loop_body_outlive_it(flag: int) -> None:
    x = torch.randn(16, 32)
    out = torch.zeros(16, 32)
    run(CarriedTensors, x, flag, out)
    acc, other = (x * 2 if flag else x), x
    for _ in range(3):
        acc, other = other, acc * 2
    torch.testing.assert_close(out, acc * 2)
