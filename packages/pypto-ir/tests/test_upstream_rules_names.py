"""More programs upstream PyPTO's language tests reject, rejected here at the offending line:
external functions whose names clash, a name rebound to a tensor of another type, a deps list
mixing a whole task-id array with its elements, a distributed window in a split lane."""

from __future__ import annotations

from pypto_ir_test_helpers import Rejections

import pypto.language as pl
import pypto.language.distributed as pld


@pl.function
def clash(x: pl.Tensor[[64], pl.FP32]) -> pl.Tensor[[64], pl.FP32]:
    r: pl.Tensor[[64], pl.FP32] = pl.add(x, 1.0)
    return r


def _helper_v1() -> object:
    @pl.function
    def helper(x: pl.Tensor[[64], pl.FP32]) -> pl.Tensor[[64], pl.FP32]:
        r: pl.Tensor[[64], pl.FP32] = pl.add(x, 1.0)
        return r

    return helper


def _helper_v2() -> object:
    @pl.function
    def helper(x: pl.Tensor[[64], pl.FP32]) -> pl.Tensor[[64], pl.FP32]:
        r: pl.Tensor[[64], pl.FP32] = pl.mul(x, 2.0)
        return r

    return helper


rejects = Rejections()


@rejects("# the external one", "conflicts with program function 'clash'")
def external_shadows_program_function() -> object:
    @pl.program
    class P:
        @pl.function
        def clash(self, x: pl.Tensor[[64], pl.FP32]) -> pl.Tensor[[64], pl.FP32]:
            r: pl.Tensor[[64], pl.FP32] = pl.mul(x, 2.0)
            return r

        @pl.function
        def main(self, x: pl.Tensor[[64], pl.FP32]) -> pl.Tensor[[64], pl.FP32]:
            r: pl.Tensor[[64], pl.FP32] = clash(x)  # the external one
            return r

    return P


@rejects("# another 'helper'", "conflicting external functions named 'helper'")
def two_externals_one_name() -> object:
    v1, v2 = _helper_v1(), _helper_v2()

    @pl.program
    class P:
        @pl.function
        def a(self, x: pl.Tensor[[64], pl.FP32]) -> pl.Tensor[[64], pl.FP32]:
            r: pl.Tensor[[64], pl.FP32] = v1(x)
            return r

        @pl.function
        def b(self, x: pl.Tensor[[64], pl.FP32]) -> pl.Tensor[[64], pl.FP32]:
            r: pl.Tensor[[64], pl.FP32] = v2(x)  # another 'helper'
            return r

    return P


@rejects("# another shape", "cannot reassign 't' with a different type")
def rebind_other_shape() -> object:
    @pl.function
    def f(x: pl.Tensor[[16, 16], pl.FP32]) -> pl.Tensor[[16, 16], pl.FP32]:
        t = pl.create_tensor([16, 16], dtype=pl.FP32)
        t = pl.create_tensor([4, 4], dtype=pl.FP32)  # noqa: F841  # another shape
        return x

    return f.ir


def _mixed_deps(whole_first: bool) -> object:
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[64], pl.FP32]) -> pl.Tensor[[64], pl.FP32]:
            return x

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[64], pl.FP32]) -> pl.Tensor[[64], pl.FP32]:
            with pl.manual_scope():
                tids = pl.array.create(4, pl.TASK_ID)
                for n in pl.parallel(4):
                    _a, t = pl.submit(self.k, x)
                    tids[n] = t
                if whole_first:
                    b, _u = pl.submit(self.k, x, deps=[tids, tids[0]])  # whole then element
                else:
                    b, _u = pl.submit(self.k, x, deps=[tids[0], tids])  # element then whole
            return b

    return P


@rejects("# whole then element", "cannot mix a whole task-id array (tids)")
def whole_then_element() -> object:
    return _mixed_deps(True)


@rejects("# element then whole", "with per-element entries (tids[0])")
def element_then_whole() -> object:
    return _mixed_deps(False)


whole_then_element.source = element_then_whole.source = _mixed_deps  # type: ignore[attr-defined]


@rejects("pl.aiv_shard(data)", "is a pld.DistributedTensor")
def distributed_in_split_lane() -> object:
    @pl.function(type=pl.FunctionType.Orchestration)
    def f(
        out: pl.Out[pl.Tensor[[512, 128], pl.FP32]],
        data: pl.InOut[pld.DistributedTensor[[512, 128], pl.FP32]],
    ) -> pl.Tensor[[512, 128], pl.FP32]:
        for _lane in pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN):
            h = pl.aiv_shard(data)  # noqa: F841
        return out

    return f.ir


test_rejected_at_the_line = rejects.test()


def test_one_external_called_twice_and_same_shape_rebinds_are_accepted() -> None:
    @pl.program
    class P:
        @pl.function
        def a(self, x: pl.Tensor[[64], pl.FP32]) -> pl.Tensor[[64], pl.FP32]:
            r: pl.Tensor[[64], pl.FP32] = clash(x)
            r = clash(r)
            return r

        @pl.function
        def b(self, x: pl.Tensor[[64], pl.FP32]) -> pl.Tensor[[64], pl.FP32]:
            r: pl.Tensor[[64], pl.FP32] = clash(x)
            return r

    assert {f.name for f in P.funcs} == {"a", "b", "clash"}  # type: ignore[attr-defined]
