"""More programs upstream PyPTO's language tests reject, rejected here at the offending line:
external functions whose names clash, a name rebound to a tensor of another type, a deps list
mixing a whole task-id array with its elements, a distributed window in a split lane."""

from __future__ import annotations

from pypto_ir_test_helpers import Rejections, TextProgram, task_program

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


def _mixed_deps(deps: str, name: str) -> TextProgram:
    """Four tasks whose ids fill an array, then a task after them with ``deps=[<deps>]``."""
    return task_program(
        [
            "with pl.manual_scope():",
            "    tids = pl.array.create(4, pl.TASK_ID)",
            "    for n in pl.parallel(4):",
            "        _a, t = pl.submit(self.k, x)",
            "        tids[n] = t",
            f"    b, _u = pl.submit(self.k, x, deps=[{deps}])",
            "return b",
        ],
        name,
    )


# (case, the deps list, the message), rejected at the deps list
for _name, _deps, _message in [
    ("whole_then_element", "tids, tids[0]", "cannot mix a whole task-id array (tids)"),
    ("element_then_whole", "tids[0], tids", "with per-element entries (tids[0])"),
]:
    rejects.add(_mixed_deps(_deps, f"<{_name}>"), f"deps=[{_deps}]", _message, _name)


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
