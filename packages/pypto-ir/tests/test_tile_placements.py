"""Tile placements (``pl.tile.alloc``, ``pl.Ptr``, ``pl.MemRef`` in tile annotations), tile-typed
kernel parameters, ``pl.Tuple`` annotations and a kernel's results held as one tuple: what the
parser accepts, records and refuses."""

from __future__ import annotations

import pytest

import pypto.language as pl
from pypto.ir.errors import KernelError
from pypto.ir.nodes import TilePlacement
from pypto.language.memref import Allocation


def _kernel(
    body: str, params: str = "x: pl.Tensor[[32, 64], pl.FP32], out: pl.Out[pl.Tensor[[32, 64], pl.FP32]]"
) -> str:
    lines = "\n".join("        " + line for line in body.strip().splitlines())
    return f"""
@pl.program
class P:
    @pl.function(type=pl.FunctionType.AIV)
    def k(self, {params}) -> pl.Tensor[[32, 64], pl.FP32]:
{lines}
        out = pl.store(t, [0, 0], out)
        return out
"""


GOOD = """
m: pl.Ptr = pl.tile.alloc(pl.Mem.Vec, 16384, pinned=True)
s = pl.load(x, [0, 0], [32, 64])
t: pl.Tile[[32, 64], pl.FP32, pl.MemRef(m, 8192, 8192), pl.Mem.Vec] = pl.add(s, s)
"""


def test_placements_are_recorded_in_source_order_and_not_part_of_identity() -> None:
    prog = pl.parse(_kernel(GOOD))
    fn = prog.functions["k"]
    assert fn.placements == (TilePlacement("t", "m", pl.Mem.Vec, 8192, 8192, 16384),)
    unplaced = pl.parse(
        _kernel("s = pl.load(x, [0, 0], [32, 64])\nt: pl.Tile[[32, 64], pl.FP32] = pl.add(s, s)")
    )
    assert unplaced.functions["k"].placements == ()
    assert str(unplaced.functions["k"]) == str(fn)  # a placement changes no computation


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            GOOD.replace("pl.Mem.Vec, 16384", "pl.Mem.DDR, 16384"),
            r"pl.tile.alloc\(memory_space\): expected an on-chip buffer .* got pl.MemorySpace.DDR",
        ),
        (
            GOOD.replace("16384, pinned=True", "0"),
            r"pl.tile.alloc\(size\): expected an int > 0 \(bytes\), got 0",
        ),
        (GOOD.replace("pinned=True", "pinned=1"), r"pl.tile.alloc\(pinned\): expected True or False, got 1"),
        (
            GOOD.replace("m: pl.Ptr =", "m: pl.Tensor[[4], pl.FP32] ="),
            r"'m' is bound to pl.tile.alloc\(...\), so it is annotated pl.Ptr",
        ),
        (
            GOOD.replace("8192, 8192)", "8192, 4096)"),
            r"'t': the tile takes 8192 bytes but its pl.MemRef spans 4096",
        ),
        (
            GOOD.replace("8192, 8192)", "8224, 8192)"),
            r"pl.MemRef\(m, 8224, 8192\) ends at byte 16416, past the 16384 bytes of 'm'",
        ),
        (
            GOOD.replace("16384, pinned=True", "32768").replace("8192, 8192)", "8200, 8192)"),
            r"pl.MemRef byte_offset 8200 is not a multiple of 32, the start-address alignment of pl.Mem.Vec",
        ),
        (
            GOOD.replace("pl.Mem.Vec, 16384", "pl.Mem.Mat, 16384"),
            r"'t' is a tile in pl.Mem.Vec, but 'm' is an allocation of pl.Mem.Mat",
        ),
        (
            "m: pl.Ptr = pl.tile.alloc(pl.Mem.Vec, 131072)\nn: pl.Ptr = pl.tile.alloc(pl.Mem.Vec, 131072)\n"
            + GOOD.replace("m: pl.Ptr = pl.tile.alloc(pl.Mem.Vec, 16384, pinned=True)\n", ""),
            r"the allocations of pl.Mem.Vec in this function take 262144 bytes, more than the 196608 bytes",
        ),
        (
            GOOD.replace("pl.MemRef(m, 8192, 8192)", "pl.MemRef(q, 0, 8192)"),
            r"cannot evaluate the annotation of 't': name 'q' is not defined",
        ),
        (
            GOOD.replace("pl.MemRef(m, 8192, 8192)", "pl.MemRef()"),
            r"a MemRef without a byte offset and size declares an allocation .* plans no tile addresses",
        ),
        (
            GOOD.replace("pl.MemRef(m, 8192, 8192)", "pl.MemRef(m, 0, 8192, slots=2)"),
            r"slotted allocations \(slots=, slot=\) are not supported",
        ),
        (
            GOOD.replace("pl.MemRef(m, 8192, 8192)", "pl.MemRef(m, -32, 8192)"),
            r"pl.MemRef\(byte_offset\): expected an int >= 0 \(bytes\), got -32",
        ),
        (
            GOOD.replace(
                "m: pl.Ptr = pl.tile.alloc(pl.Mem.Vec, 16384, pinned=True)", "pl.tile.alloc(pl.Mem.Vec, 64)"
            ),
            r"pl.tile.alloc\(...\) is bound to a name of its own",
        ),
    ],
)
def test_placement_mistakes_are_named(body: str, message: str) -> None:
    with pytest.raises(KernelError, match=message):
        pl.parse(_kernel(body))


def test_an_allocation_outside_a_kernel_is_refused() -> None:
    text = """
@pl.program
class P:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[16, 16], pl.FP32]) -> pl.Tensor[[16, 16], pl.FP32]:
        m: pl.Ptr = pl.tile.alloc(pl.Mem.Vec, 1024)
        return x
"""
    with pytest.raises(KernelError, match=r"pl.tile.alloc reserves a kernel's on-chip buffer"):
        pl.parse(text)


def test_alloc_and_memref_outside_the_parser() -> None:
    with pytest.raises(RuntimeError, match=r"pl.tile.alloc\(\) is part of the kernel language"):
        pl.tile.alloc(pl.Mem.Vec, 64)
    with pytest.raises(TypeError, match=r"pl.MemRef\(base\): expected a pl.Ptr bound in this kernel"):
        pl.MemRef("mem_vec_0", 0, 64)
    ref = pl.MemRef(Allocation("m", pl.Mem.Vec, 128), 64, 64)
    assert repr(pl.Tile[[4, 4], pl.FP32, ref, pl.Mem.Vec].memref) == "pl.MemRef(m, 64, 64)"
    with pytest.raises(TypeError, match=r"each at most once, got pl.MemorySpace.Mat"):
        pl.Tile[[4, 4], pl.FP32, pl.Mem.Vec, pl.Mem.Mat]


TILE_KERNEL = """
@pl.program
class P:
    @pl.function(type=pl.FunctionType.AIV)
    def k(self, t: pl.Tile[[64], pl.FP32], u: pl.Tile[[8, 16], pl.FP16, pl.Mem.Vec]) -> pl.Tile[[64], pl.FP32]:
        r: pl.Tile[[64], pl.FP32] = pl.add(t, t)
        return r
"""


def test_tile_parameters_and_results_of_a_kernel() -> None:
    prog = pl.parse(TILE_KERNEL)
    fn = prog.functions["k"]
    assert [str(p.var.type) for p in fn.params] == ["Tile[[1, 64], FP32, Vec]", "Tile[[8, 16], FP16, Vec]"]
    assert [str(t) for t in fn.returns] == ["Tile[[1, 64], FP32, Vec]"]
    assert prog.entry == "k"  # no generated orchestration: nothing can submit it


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ("t: pl.Out[pl.Tile[[64], pl.FP32]]", r"parameter 't': a tile parameter is In"),
        ("t: pl.Tile[[2, 4, 8], pl.FP32]", r"parameter 't': a tile is 2-D .* got shape \[2, 4, 8\]"),
    ],
)
def test_tile_parameter_mistakes(params: str, message: str) -> None:
    text = f"""
@pl.program
class P:
    @pl.function(type=pl.FunctionType.AIV)
    def k(self, {params}, out: pl.Out[pl.Tensor[[4, 4], pl.FP32]]) -> pl.Tensor[[4, 4], pl.FP32]:
        return out
"""
    with pytest.raises(KernelError, match=message):
        pl.parse(text)


CALLED = """
@pl.program
class P:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, {sig}) -> {ret}:
        {body}

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[16, 16], pl.FP32], out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
        out = self.k(x, out)
        return out
"""


def test_a_kernel_with_tile_parameters_or_results_is_not_submitted() -> None:
    takes = CALLED.format(
        sig="t: pl.Tile[[16, 16], pl.FP32], out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]",
        ret="pl.Tensor[[16, 16], pl.FP32]",
        body="out = pl.store(t, [0, 0], out)\n        return out",
    )
    with pytest.raises(KernelError, match=r"k takes tile parameter 't': a tile lives in one core's buffer"):
        pl.parse(takes)
    gives = CALLED.format(
        sig="x: pl.Tensor[[16, 16], pl.FP32], out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]",
        ret="pl.Tile[[16, 16], pl.FP32]",
        body="t = pl.load(x, [0, 0], [16, 16])\n        return t",
    )
    with pytest.raises(KernelError, match=r"k returns a tile: .* pl.store the tile into a pl.Out tensor"):
        pl.parse(gives)


def test_an_orchestration_returns_no_tile() -> None:
    text = """
@pl.program
class P:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[16, 16], pl.FP32]) -> pl.Tensor[[16, 16], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(x, [0, 0], [16, 16])
        return t
"""
    with pytest.raises(
        KernelError, match=r"a function returns tensors \(or scalars; an InCore/AIC/AIV function also tiles\)"
    ):
        pl.parse(text)


TUPLE = """
@pl.program
class P:
    @pl.function(type=pl.FunctionType.InCore)
    def two(self, x: pl.Tensor[[16, 16], pl.FP32], a: pl.Out[pl.Tensor[[16, 16], pl.FP32]], b: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> tuple[pl.Tensor[[16, 16], pl.FP32], pl.Tensor[[16, 16], pl.FP32]]:
        t = pl.load(x, [0, 0], [16, 16])
        a = pl.store(t, [0, 0], a)
        b = pl.store(pl.add(t, t), [0, 0], b)
        return a, b

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[16, 16], pl.FP32], a: pl.Out[pl.Tensor[[16, 16], pl.FP32]], b: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
        res: {ann} = self.two(x, a, b)
        return res[{k}]
"""


def test_a_kernels_results_as_one_tuple() -> None:
    ok = pl.parse(
        TUPLE.format(ann="pl.Tuple[pl.Tensor[[16, 16], pl.FP32], pl.Tensor[[16, 16], pl.FP32]]", k=1)
    )
    main = ok.functions["main"]
    assert main.body[-1].values[0].name.endswith("b")  # res[1] is the tensor the kernel wrote into b
    with pytest.raises(
        KernelError, match=r"'res\[1\]' is annotated Tensor\[\[16, 8\], FP32\] but the value is"
    ):
        pl.parse(TUPLE.format(ann="pl.Tuple[pl.Tensor[[16, 16], pl.FP32], pl.Tensor[[16, 8], pl.FP32]]", k=0))
    with pytest.raises(KernelError, match=r"'res' is annotated Tuple\[.*\] but the value is"):
        pl.parse(TUPLE.format(ann="pl.Tuple[pl.Tensor[[16, 16], pl.FP32]]", k=0))
    with pytest.raises(KernelError, match=r"tuple index 2 is out of range for a tuple of 2 item\(s\)"):
        pl.parse(
            TUPLE.format(ann="pl.Tuple[pl.Tensor[[16, 16], pl.FP32], pl.Tensor[[16, 16], pl.FP32]]", k=2)
        )


def test_a_tile_window_write_takes_a_tile_of_the_windows_shape() -> None:
    text = """
@pl.program
class P:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[32, 64], pl.FP32], src: pl.Tile[[8, 16], pl.FP32], out: pl.Out[pl.Tensor[[32, 64], pl.FP32]]) -> pl.Tensor[[32, 64], pl.FP32]:
        t = pl.load(x, [0, 0], [32, 64])
        t[{window}] = {value}
        out = pl.store(t, [0, 0], out)
        return out
"""
    ok = pl.parse(text.format(window="8:16, 16:32", value="src"))
    assert "tile.assemble(t, src, [8, 16])" in str(ok.functions["k"])
    with pytest.raises(KernelError, match=r"the window of tile 't' is \[8, 8\] but the value is \[8, 16\]"):
        pl.parse(text.format(window="8:16, 16:24", value="src"))
    with pytest.raises(KernelError, match=r"the value written into the tile 't' must be a tile, got Tensor"):
        pl.parse(text.format(window="8:16, 16:32", value="x[0:8, 0:16]"))


def test_a_kernel_with_tile_parameters_prints_and_parses_back() -> None:
    text = pl.parse(TILE_KERNEL).as_python()
    assert "def k(self, t: pl.Tile[[1, 64], pl.FP32, pl.MemorySpace.Vec]," in text
    assert pl.parse(text).as_python() == text


@pl.jit.inline
def _scaled(a: pl.Tile[[16, 16], pl.FP32]) -> pl.Tile[[16, 16], pl.FP32]:
    return pl.mul(a, 2.0)


def test_an_inline_helpers_tile_parameter_is_checked_against_its_argument() -> None:
    @pl.function(type=pl.FunctionType.InCore)
    def good(
        x: pl.Tensor[[16, 16], pl.FP32], out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]
    ) -> pl.Tensor[[16, 16], pl.FP32]:
        out = pl.store(_scaled(pl.load(x, [0, 0], [16, 16])), [0, 0], out)
        return out

    assert "tile.mul" in str(good.ir)

    @pl.function(type=pl.FunctionType.InCore)
    def bad(
        x: pl.Tensor[[16, 32], pl.FP32], out: pl.Out[pl.Tensor[[16, 32], pl.FP32]]
    ) -> pl.Tensor[[16, 32], pl.FP32]:
        out = pl.store(_scaled(pl.load(x, [0, 0], [16, 32])), [0, 0], out)
        return out

    with pytest.raises(
        KernelError,
        match=r"_scaled: parameter 'a' is annotated Tile\[\[16, 16\], FP32, Vec\] but the argument is Tile\[\[16, 32\]",
    ):
        _ = bad.ir


def test_invert_takes_an_integer_scalar() -> None:
    text = """
@pl.program
class P:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, f: pl.Tensor[[1, 4], pl.FP32], x: pl.Tensor[[16, 16], pl.FP32]) -> pl.Tensor[[16, 16], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP):
            v = ~pl.read(f, [0, 0])
        return x
"""
    with pytest.raises(KernelError, match=r"~ takes an integer scalar, got Scalar\[FP32\]"):
        pl.parse(text)
