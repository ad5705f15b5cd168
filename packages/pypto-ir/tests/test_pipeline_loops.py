"""``pl.pipeline(..., stage=k)``: a pl.range loop carrying a software-pipelining depth. The
stage is kept on the IR loop and written as a comment in the kernel; the loop itself is an
ordinary loop (checked on the chip in pypto-runtime's test_pipeline_runs.py)."""

from __future__ import annotations

import pytest
from pypto_ir_test_helpers import HostArray

import pypto.language as pl
from pypto.ir.codegen.kernel import generate_kernel
from pypto.ir.errors import KernelError
from pypto.ir.nodes import For, walk_stmts
from pypto_testing.forms import from_source


@pl.jit
def column_sums(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        acc = pl.full([8, 32], dtype=pl.FP32, value=0.0)
        for k in pl.pipeline(0, 96, 8, stage=3):
            acc = pl.add(acc, pl.load(x, [k, 0], [8, 32]))
        pl.store(acc, [0, 0], out)
    return out


def test_the_stage_is_kept_on_the_loop_and_in_the_kernel() -> None:
    low = column_sums.lower(HostArray((96, 32)), HostArray((8, 32)))
    loops = [s for f in low.funcs for s in walk_stmts(f.body) if isinstance(s, For)]
    assert [(lp.stage, str(lp.step)) for lp in loops] == [(3, "8")]
    assert "in pipeline(0, 96, 8, stage=3)" in str(low)
    kernel = next(f for f in low.funcs if f.func_type.is_kernel)
    text = generate_kernel(kernel).text
    assert "// pl.pipeline(stage=3)" in text
    assert text.index("// pl.pipeline(stage=3)") < text.index("for (std::int64_t k")


def test_a_plain_range_has_no_stage() -> None:
    @pl.jit
    def copy(x: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            for k in pl.range(2):
                pl.store(pl.load(x, [k * 8, 0], [8, 32]), [k * 8, 0], out)
        return out

    low = copy.lower(HostArray((16, 32)), HostArray((16, 32)))
    assert [s.stage for f in low.funcs for s in walk_stmts(f.body) if isinstance(s, For)] == [None]


@pytest.mark.parametrize(
    ("loop", "message"),
    [
        ("pl.pipeline(2)", r"pl.pipeline needs stage=<depth>"),
        ("pl.pipeline(2, stage=0)", "stage must be a positive integer constant, got 0"),
        ("pl.range(2, stage=2)", "unsupported keyword 'stage'"),
    ],
)
def test_stage_mistakes(loop: str, message: str) -> None:
    src = (
        "@pl.jit\n"
        "def f(x: pl.Tensor, out: pl.Out[pl.Tensor]):\n"
        "    with pl.at(level=pl.Level.CORE_GROUP):\n"
        f"        for k in {loop}:\n"
        "            pl.store(pl.load(x, [k * 8, 0], [8, 32]), [k * 8, 0], out)\n"
        "    return out\n"
    )
    ns = from_source(src, f"<pipeline {loop}>")
    with pytest.raises(KernelError, match=message):
        ns["f"].lower(HostArray((16, 32)), HostArray((16, 32)))  # type: ignore[attr-defined]
