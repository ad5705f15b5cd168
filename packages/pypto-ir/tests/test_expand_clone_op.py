"""``pl.expand_clone(src, target)`` (upstream's ``tensor.expand_clone``): its type, what the rule
refuses, the target written (an Out parameter, the value returned), the lowering (a widening
expand and a store; a loop over a rank-3 target's first axis) and the printed text parsing back.
Runs against torch are in pypto-runtime's test_expand_clone_run.py."""

from __future__ import annotations

import pytest
from pypto_ir_test_helpers import HostArray, call_ops, to_tiles

import pypto.language as pl
from pypto.ir.analysis.return_lineage import function_aliases
from pypto.ir.errors import KernelError
from pypto.ir.nodes import For, structural_equal
from pypto.ir.param_info import ParamDirection
from pypto.ir.pipeline import lower
from pypto_testing.forms import from_source


def _lower(fn, *shapes):  # type: ignore[no-untyped-def]
    return to_tiles(fn, *map(HostArray, shapes))


@pl.jit
def rows(src: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out = pl.expand_clone(src, out)
    return out


@pytest.mark.parametrize(
    ("src", "widen"),
    [((1, 32), ["tile.col_expand"]), ((16, 1), ["tile.row_expand"]), ((16, 32), [])],
)
def test_a_rank_2_target_is_one_widened_tile_stored(src: tuple[int, int], widen: list[str]) -> None:
    prog = _lower(rows, src, (16, 32))
    k = prog.functions["rows_k0"]
    create = ["tile.create"] if widen else []
    assert call_ops(k) == ["tile.load", *create, *widen, "tile.store"]
    # the target is written, not read: Out; the entry returns it
    assert [p.direction for p in k.params] == [ParamDirection.IN, ParamDirection.OUT]
    assert function_aliases(prog.entry_function, prog) == (1,)


@pl.jit
def blocks(src: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out = pl.tensor.expand_clone(src, out)
    return out


@pytest.mark.parametrize(
    ("src", "in_loop", "before"),
    [
        ((1, 8, 16), ["tile.store"], ["tile.load"]),  # repeated along the first axis: loaded once
        ((4, 1, 16), ["tile.load", "tile.create", "tile.col_expand", "tile.store"], []),
        ((4, 8, 1), ["tile.load", "tile.create", "tile.row_expand", "tile.store"], []),
        ((4, 8, 16), ["tile.load", "tile.store"], []),
    ],
)
def test_a_rank_3_target_is_written_a_block_of_its_first_axis_a_step(
    src: tuple[int, ...], in_loop: list[str], before: list[str]
) -> None:
    k = _lower(blocks, src, (4, 8, 16)).functions["blocks_k0"]
    (loop,) = [s for s in k.body if isinstance(s, For)]
    assert loop.stop.value == 4  # type: ignore[attr-defined]
    assert call_ops(k) == [*before, *in_loop]
    assert [op for op in call_ops(k) if op == "tile.store"] == ["tile.store"]  # the one in the loop
    assert k.params[1].direction is ParamDirection.OUT


def test_print_parses_back() -> None:
    src = """
@pl.function(type=pl.FunctionType.InCore)
def k(x: pl.Tensor[[1, 8, 16], pl.FP32], y: pl.Out[pl.Tensor[[4, 8, 16], pl.FP32]]) -> pl.Tensor[[4, 8, 16], pl.FP32]:
    out: pl.Tensor[[4, 8, 16], pl.FP32] = pl.expand_clone(x, y)
    return out
"""
    fn = pl.parse(src)
    printed = fn.as_python()
    assert "pl.expand_clone(x, y)" in printed
    assert structural_equal(pl.parse(printed), fn)


@pytest.mark.parametrize(
    ("src", "dst", "match"),
    [
        ("[16, 1], pl.FP16", "[16, 32], pl.FP32", r"src must have target's dtype FP32, got FP16"),
        ("[1, 1], pl.FP32", "[16, 32], pl.FP32", r"on at most one axis, where its extent is 1.*got \[1, 1\]"),
        (
            "[2, 32], pl.FP32",
            "[16, 32], pl.FP32",
            r"on at most one axis, where its extent is 1.*got \[2, 32\]",
        ),
        ("[32], pl.FP32", "[16, 32], pl.FP32", r"tensors of one rank, 2 or 3, got \[32\] and \[16, 32\]"),
        ("[1, 1, 4, 8], pl.FP32", "[2, 1, 4, 8], pl.FP32", r"tensors of one rank, 2 or 3"),
    ],
)
def test_what_the_rule_refuses(src: str, dst: str, match: str) -> None:
    text = f"""
@pl.function(type=pl.FunctionType.InCore)
def k(x: pl.Tensor[{src}], y: pl.Out[pl.Tensor[{dst}]]) -> pl.Tensor[{dst}]:
    return pl.expand_clone(x, y)
"""
    with pytest.raises(KernelError, match=match):
        pl.parse(text)


@pl.jit
def on_the_host(src: pl.Tensor, out: pl.Out[pl.Tensor]):
    out = pl.expand_clone(src, out)
    return out


def test_outside_a_kernel_it_names_where_it_runs() -> None:
    with pytest.raises(KernelError, match=r"pl.expand_clone runs on a core: put it inside `with pl.at"):
        _lower(on_the_host, (1, 32), (16, 32))


_PROGRAM = """
@pl.program
class P:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[{src}, pl.FP32], y: pl.Out[pl.Tensor[{dst}, pl.FP32]]) -> pl.Tensor[{dst}, pl.FP32]:
        y = pl.expand_clone(pl.exp(x), y)
        return y

    @pl.function(type=pl.FunctionType.Orchestration)
    def o(self, x: pl.Tensor[{src}, pl.FP32], y: pl.Out[pl.Tensor[{dst}, pl.FP32]]) -> pl.Tensor[{dst}, pl.FP32]:
        y = self.k(x, y)
        return y
"""


@pytest.mark.parametrize(
    ("src", "dst", "want"),
    [
        ([1, 32], [8, 32], ["tile.load", "tile.exp", "tile.create", "tile.col_expand", "tile.store"]),
        ([1, 8, 32], [3, 8, 32], ["tile.load", "tile.exp", "tile.store"]),  # the one plane, a step each
        # three planes loaded, the value computed once, each step's plane sliced out of it
        ([3, 8, 32], [3, 8, 32], ["tile.load"] * 3 + ["tile.exp", "tile.slice", "tile.store"]),
    ],
)
def test_a_computed_source_into_the_out_parameter_it_names(
    src: list[int], dst: list[int], want: list[str]
) -> None:
    # `y = pl.expand_clone(..., y)` of an Out parameter is a write of y's window (the parser's
    # form for assigning an Out parameter): it is the expand_clone itself
    prog = from_source(_PROGRAM.format(src=src, dst=dst), f"<expand_clone {src} {dst}>")["P"]
    k = lower(prog).program.functions["k"]
    # (a value of rank 3 is loaded plane by plane into one tile: its create and assembles left out)
    ops = [op for op in call_ops(k) if op not in ("tile.create", "tile.assemble") or len(src) == 2]
    assert ops == want
