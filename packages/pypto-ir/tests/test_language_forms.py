"""Program forms the parser accepts: ``for i in pl.spmd(n):`` and ``with pl.spmd(n):`` over inline
kernel code (one kernel scope per launch, the block index read as ``i`` or
``pl.tile.get_block_idx()``); ``@pl.program`` classes with no orchestration (libraries of
functions: they build and print, and compiling one says what is missing); subscripts (elements,
windows, sub-tiles); a plain ``pl.at`` block in an InCore function; ``pl.InOut`` around a
``pld.DistributedTensor`` window."""

from __future__ import annotations

import pytest
from pypto_ir_test_helpers import program

import pypto.language as pl
from pypto.ir import KernelError
from pypto.ir.compile import compile_to_files
from pypto.ir.nodes import For, Scope
from pypto.ir.types import FunctionType


def _loop_and_scope(prog):
    loop = next(s for s in prog.functions["main"].body if isinstance(s, For))
    (scope,) = loop.body
    assert isinstance(scope, Scope)
    return loop, scope


def test_for_over_spmd_is_a_block_loop_around_one_kernel_scope() -> None:
    P = program(
        "[48, 8]",
        main=[
            'for blk in pl.spmd(3, name_hint="rows", optimizations=[pl.split(pl.SplitMode.NONE)]):',
            "    t = pl.load(x, [blk * 16, 0], [16, 8])",
            "    y = pl.store(pl.exp(t), [blk * 16, 0], y)",
            "return y",
        ],
    )()

    loop, scope = _loop_and_scope(P)
    assert loop.var.name == "blk"
    assert (loop.start.value, loop.stop.value, loop.step.value) == (0, 3, 1)
    assert scope.name_hint == "rows"
    assert dict(scope.hints) == {"split": "NONE"}


def test_with_spmd_inline_body_reads_block_index_and_count() -> None:
    P = program(
        "[32, 8]",
        main=[
            "with pl.spmd(core_num=2):",
            "    b = pl.tile.get_block_idx()",
            "    n = pl.tile.get_block_num()",
            "    t = pl.load(x, [b * 16, 0], [16, 8])",
            "    y = pl.store(pl.mul(t, n), [b * 16, 0], y)",
            "return y",
        ],
    )()

    loop, _ = _loop_and_scope(P)
    assert loop.stop.value == 2
    # in the kernel scope the block index is the loop's variable and the count the constant 2
    text = str(P)
    assert f"b: Scalar[INT64] = {loop.var.name}" in text
    assert "tile.mul(t, 2)" in text  # n, bound to a constant, is that constant


def test_block_index_is_local_to_the_spmd_loop() -> None:
    main = [
        "for blk in pl.spmd(2):",
        "    y = pl.store(pl.load(x, [blk * 16, 0], [16, 8]), [blk * 16, 0], y)",
        "z = pl.tensor.read(x, [blk, 0])",
        "return y",
    ]
    with pytest.raises(KernelError, match="unknown name 'blk'"):
        program("[32, 8]", main=main)()


@pl.function(type=pl.FunctionType.InCore)
def _double(
    x: pl.Tensor[[16, 8], pl.FP32], y: pl.Out[pl.Tensor[[16, 8], pl.FP32]]
) -> pl.Tensor[[16, 8], pl.FP32]:
    t = pl.load(x, [0, 0], [16, 8])
    return pl.store(pl.add(t, t), [0, 0], y)


def test_scope_options_of_an_spmd_body_that_calls_kernels_are_checked() -> None:
    main = ['for _ in pl.spmd(2, name_hint="a b"):', "    y = _double(x, y)", "return y"]
    with pytest.raises(KernelError, match=r"pl\.spmd: name_hint must be an identifier string, got 'a b'"):
        program("[16, 8]", main=main, _double=_double)()


def test_spmd_for_target_must_be_one_name() -> None:
    main = ["for a, b in pl.spmd(2):", "    y = pl.store(pl.load(x, [a, b], [16, 8]), [0, 0], y)", "return y"]
    with pytest.raises(KernelError, match=r"the block index must be a single name"):
        program("[16, 8]", main=main)()


def test_program_without_orchestration_is_a_library_entered_at_its_first_function(tmp_path) -> None:
    @pl.program
    class Lib:
        @pl.function
        def twice(self, x: pl.Tensor[[4], pl.INT32]) -> pl.Tensor[[4], pl.INT32]:
            r: pl.Tensor[[4], pl.INT32] = pl.add(x, x)
            return r

        @pl.function
        def square(self, x: pl.Tensor[[4], pl.INT32]) -> pl.Tensor[[4], pl.INT32]:
            r: pl.Tensor[[4], pl.INT32] = pl.mul(x, x)
            return r

    assert list(Lib.functions) == ["twice", "square"]  # nothing generated
    assert Lib.entry == "twice"
    assert all(f.func_type is not FunctionType.Orchestration for f in Lib.funcs)
    again = pl.parse(Lib.as_python())
    assert list(again.functions) == ["twice", "square"]
    with pytest.raises(
        ValueError, match=r"'Lib' has no orchestration function to enter \(it has twice \(\w+\), square"
    ):
        compile_to_files(Lib, tmp_path / "out", contract="PROGRAM", platform="a2a3sim")
    assert not (tmp_path / "out").exists()


def test_subscripts_become_reads_writes_and_sub_tiles() -> None:
    from pypto.ir.nodes import Assign, Call, ExprStmt

    P = program(
        "[32, 16]",
        main=[
            "r = cfg[1]",
            "cfg[2] = r",
            "with pl.at(level=pl.Level.CORE_GROUP):",
            "    t = pl.load(a, [0, 0], [32, 16])",
            "    row = t[r]",
            "    e = t[0, 1]",
            "    out = pl.store(pl.add(row, e), [0, 0], out)",
            "return out",
        ],
        ins=("a", "cfg: pl.InOut[pl.Tensor[[4], pl.INT64]]"),
        out="out",
    )()

    main = P.functions["main"]
    r = main.body[0]
    assert isinstance(r, Assign)
    assert r.value.op == "tensor.read"
    w = main.body[1]
    assert isinstance(w, ExprStmt)
    assert w.value.op == "tensor.write"
    scope = next(s for s in main.body if isinstance(s, Scope))
    ops = {s.var.name: s.value for s in scope.body if isinstance(s, Assign) and isinstance(s.value, Call)}
    assert ops["row"].op == "tile.slice"
    assert ops["row"].type.shape == (1, 16)
    assert ops["e"].op == "tile.read"


@pl.function(type=pl.FunctionType.InCore)
def _three_indices(
    a: pl.Tensor[[16, 16], pl.FP32], out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]
) -> pl.Tensor[[16, 16], pl.FP32]:
    t = pl.load(a, [0, 0], [16, 16])
    return pl.store(t[0:8, :, 0], [0, 0], out)


@pl.function(type=pl.FunctionType.InCore)
def _stepped(
    a: pl.Tensor[[16, 16], pl.FP32], out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]
) -> pl.Tensor[[16, 16], pl.FP32]:
    out[0:16:2, :] = a[0:8, :]
    return out


def test_subscript_errors_name_the_problem() -> None:
    # a standalone @pl.function is parsed on first use of .ir
    with pytest.raises(KernelError, match=r"3 indices for a rank-2 tile"):
        _ = _three_indices.ir
    with pytest.raises(KernelError, match=r"tensor windows are written with slices without a step"):
        _ = _stepped.ir


@pl.function(type=pl.FunctionType.InCore)
def _named_at_in_kernel(
    x: pl.Tensor[[16, 16], pl.FP32], out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]
) -> pl.Tensor[[16, 16], pl.FP32]:
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="inner"):
        out = pl.store(pl.load(x, [0, 0], [16, 16]), [0, 0], out)
    return out


def test_a_plain_pl_at_block_in_a_kernel_is_inlined_and_options_are_refused() -> None:
    @pl.function(type=pl.FunctionType.InCore)
    def k(
        x: pl.Tensor[[16, 16], pl.FP32], out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]
    ) -> pl.Tensor[[16, 16], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP):
            out = pl.store(pl.load(x, [0, 0], [16, 16]), [0, 0], out)
        return out

    assert not any(isinstance(s, Scope) for s in k.ir.body)
    with pytest.raises(KernelError, match=r"pl\.at\(name_hint=\.\.\.\) in a kernel"):
        _ = _named_at_in_kernel.ir


def test_inout_of_a_window_view_is_the_window_view() -> None:
    import pypto.language.distributed as pld

    bare = pld.DistributedTensor[[1, 64], pl.FP32]
    assert pl.InOut[bare] is bare
    assert pl.Out[bare] is bare  # upstream's spelling of a window a kernel writes: still InOut
    with pytest.raises(TypeError, match=r"pl\.InOut\[\.\.\.\]: directions do not nest \(got pl\.Out\["):
        pl.InOut[pl.Out[pl.Tensor[[4], pl.FP32]]]


def _early_resolve_program(flag: object):
    main = ["for _ in pl.spmd(2, allow_early_resolve=flag):", "    y = _double(x, y)", "return y"]
    return program("[16, 8]", main=main, _double=_double, flag=flag)()


def test_allow_early_resolve_is_a_checked_bool_hint() -> None:
    loop = next(s for s in _early_resolve_program(True).functions["main"].body if isinstance(s, For))
    assert loop.stop.value == 2
    with pytest.raises(KernelError, match=r"pl\.spmd\(allow_early_resolve\): expected a bool, got 1"):
        _early_resolve_program(1)


def test_submit_takes_allow_early_resolve() -> None:
    P = program(
        "[16, 8]",
        kernel=["return pl.store(pl.load(x, [0, 0], [16, 8]), [0, 0], y)"],
        main=["y, _tid = pl.submit(self.k, x, y, allow_early_resolve=True)", "return y"],
    )()

    assert "k" in P.functions


_NOT_INTS = [0, 0.5]


@pl.function(type=pl.FunctionType.InCore)
def _float_offsets(
    x: pl.Tensor[[16, 16], pl.FP32], out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]
) -> pl.Tensor[[16, 16], pl.FP32]:
    return pl.store(pl.load(x, _NOT_INTS, [16, 16]), [0, 0], out)


def test_a_named_list_must_hold_ints() -> None:
    with pytest.raises(KernelError, match=r"pl\.load offsets must be a list such as \[0, 0\]"):
        _ = _float_offsets.ir


# three tasks, then one after all but task _SKIP (deps from a comprehension with a condition)
_StaticSkip = program(
    "[16, 8]",
    main=[
        "tids = pl.array.create(3, pl.TASK_ID)",
        "for i in pl.range(3):",
        "    with pl.at(level=pl.Level.CORE_GROUP) as t:",
        "        y = pl.store(pl.load(x, [0, 0], [16, 8]), [0, 0], y)",
        "    tids[i] = t",
        "with pl.at(level=pl.Level.CORE_GROUP, deps=[tids[k] for k in range(3) if k != _SKIP]):",
        "    y = pl.store(pl.load(x, [0, 0], [16, 8]), [0, 0], y)",
        "return y",
    ],
    _SKIP=1,
)()


def test_deps_comprehension_is_unrolled_when_compiling() -> None:
    main = _StaticSkip.functions["main"]
    last = [s for s in main.body if isinstance(s, Scope)][-1]
    assert len(last.deps) == 2  # k = 0 and k = 2; k = _SKIP is left out
    assert [d.args[1].value for d in last.deps] == [0, 2]
    lines = [
        "tids = pl.array.create(3, pl.TASK_ID)",
        "j = pl.tensor.read(cfg, [0])",
        "with pl.at(level=pl.Level.CORE_GROUP, deps=[tids[k] for k in range(3) if k != j]):",
        "    y = pl.store(pl.load(x, [0, 0], [16, 8]), [0, 0], y)",
        "return y",
    ]
    unknown = program("[16, 8]", main=lines, ins=("x", "cfg: pl.Tensor[[1], pl.INT64]"))
    with pytest.raises(
        KernelError, match=r"pl\.at: a deps comprehension's condition must be known when compiling"
    ):
        unknown()
