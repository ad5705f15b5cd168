"""Parser: what the language accepts, and mistakes reported at file:line:col with the source
line, a caret and a sentence that says what is wrong and how to fix it."""

from __future__ import annotations

import inspect
import re
from typing import Any

import pytest
from pypto_ir_test_helpers import HostArray, program, scope_kernel

import pypto.language as pl
from pypto.ir.errors import KernelError
from pypto.ir.nodes import Assign, Call, For, Scope, TensorWrite, walk_stmts
from pypto.ir.types import MemorySpace, TensorType, TileType


def t(*shape: int) -> HostArray:
    return HostArray(shape)


# ----------------------------------------------------------------------------- kernels with mistakes

# Each mistake is a kernel k(a, out) whose CORE_GROUP scope runs the lines given (scope_kernel),
# mostly a load and a store of a [16, 16] tile x; one is a Python kernel (no scope at all).
LOAD = "x = pl.load(a, [0, 0], [16, 16])"
LOAD_MAT = "x = pl.load(a, [0, 0], [16, 16], target_memory=pl.MemorySpace.Mat)"


def _stores(value: str, load: str = LOAD) -> list[str]:
    return [load, f"pl.store({value}, [0, 0], out)"]


@pl.jit
def tile_op_outside_scope(a: pl.Tensor, c: pl.Out[pl.Tensor]):
    x = pl.load(a, [0, 0], [16, 16])
    pl.store(x, [0, 0], c)
    return c


def _line_of(fn: Any, needle: str) -> tuple[int, int]:
    lines, first = inspect.getsourcelines(fn.__wrapped__)
    for i, text in enumerate(lines):
        if needle in text:
            return first + i, text.index(needle) + 1
    raise AssertionError(needle)


ERRORS = [
    pytest.param(
        _stores("pl.add(x)"), "pl.add(x)", "pl.add(lhs, rhs)", "missing a required argument", id="wrong_arity"
    ),
    pytest.param(
        [LOAD, "y = pl.load(a, [0, 0], [16, 8])", "pl.store(pl.add(x, y), [0, 0], out)"],
        "pl.add(x, y)",
        "operand shapes differ: [16, 16] vs [16, 8]",
        "row_expand",
        id="shape_mismatch",
    ),
    pytest.param(
        _stores("pl.exp(x)", LOAD_MAT),
        "pl.exp(x)",
        "must be in Vec memory, got a tile in Mat",
        "pl.move(",
        id="wrong_space",
    ),
    pytest.param(
        ["try:", "    pass", "finally:", "    pass"],
        "try:",
        "unsupported Python construct in a kernel: try statements",
        "while loops",
        id="unsupported_try",
    ),
    pytest.param(
        _stores("pl.add(x, missing_tile)"),
        "missing_tile",
        "unknown name 'missing_tile'",
        "module-level constant",
        id="unknown_name",
    ),
    pytest.param(
        tile_op_outside_scope,
        "pl.load(a",
        "put it inside `with pl.at(level=pl.Level.CORE_GROUP):`",
        "incore",
        id="tile_op_outside_scope",
    ),
    pytest.param(
        _stores("x", "x = pl.load(a, [8, 0], [16, 16])"),
        "pl.load(a",
        "the window [8, 24) on axis 0 exceeds the tensor extent 16",
        "window",
        id="window_out_of_bounds",
    ),
    pytest.param(
        ["out[0:8, :] = pl.add(a, a)"],
        "out[0:8, :]",
        "shape mismatch: the window of 'out' is [8, 16] but the value is [16, 16]",
        "",
        id="write_shape_mismatch",
    ),
    pytest.param(
        _stores("x", "x = pl.load(a, [0, 0], [16, 16], memory=pl.MemorySpace.Vec)"),
        "pl.load(a",
        "unexpected keyword argument 'memory'",
        "target_memory",
        id="bad_keyword",
    ),
    pytest.param(
        _stores("x", "x: pl.Tile[[16, 8], pl.FP32] = pl.load(a, [0, 0], [16, 16])"),
        "pl.Tile[[16, 8]",
        "annotated Tile[[16, 8], FP32] but the value is Tile[[16, 16], FP32, Vec]",
        "",
        id="bad_annotation",
    ),
    pytest.param(
        _stores("pl.matmul(x, x)", LOAD_MAT),
        "pl.matmul(x, x)",
        "the left operand must be in Left memory",
        "pl.move(",
        id="matmul_wrong_space",
    ),
]


@pytest.mark.parametrize(("kernel", "needle", "message", "hint"), ERRORS)
def test_error_points_at_source(kernel: Any, needle: str, message: str, hint: str) -> None:
    fn = (
        kernel
        if isinstance(kernel, pl.JITFunction)
        else scope_kernel(kernel, f"<kernel: {'; '.join(kernel)}>")
    )
    with pytest.raises(KernelError) as info:
        fn.specialize(t(16, 16), t(16, 16))
    text = str(info.value)
    line, col = _line_of(fn, needle)
    head, src, caret = text.split("\n")[:3]
    assert head.startswith(f"{inspect.getsourcefile(fn.__wrapped__)}:{line}:{col}: error: "), head
    assert message in head
    assert hint in head
    assert needle in src
    assert caret.index("^") == src.index(needle)
    assert re.fullmatch(r" *\^~*", caret)


# ----------------------------------------------------------------------------- what parses


@pl.jit
def everything(a: pl.Tensor, b: pl.Tensor, alpha: pl.FP32, c: pl.InOut[pl.Tensor]):
    """Docstrings are skipped."""
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="body") as tid:
        for i in pl.parallel(0, 32, 16):
            x = pl.load(a, [i, 0], [16, 32])
            y = pl.load(b, [i, 0], [16, 32])
            z = (x + y) * alpha
            z = pl.maximum(z, pl.minimum(x, y))
            z -= 1.0
            pl.store(z, [i, 0], c)
    with pl.at(level=pl.Level.CORE_GROUP, deps=[tid]):
        c[:] = pl.relu(pl.add(c, a))
    return c


def test_everything_parses_into_scopes_loops_and_writes() -> None:
    spec = everything.specialize(t(32, 32), t(32, 32), 2.0, t(32, 32))
    entry = spec.program.entry_function
    scopes = [s for s in walk_stmts(entry.body) if isinstance(s, Scope)]
    assert [s.name_hint for s in scopes] == ["body", None]
    assert scopes[1].deps[0].name == "tid"  # type: ignore[union-attr]
    loops = [s for s in walk_stmts(entry.body) if isinstance(s, For)]
    assert len(loops) == 1
    ops = [s.value.op for s in walk_stmts(entry.body) if isinstance(s, Assign) and isinstance(s.value, Call)]
    assert ops.count("tile.load") == 2
    assert "tile.maximum" in ops
    assert "tile.sub" in ops  # z -= 1.0
    writes = [s for s in walk_stmts(entry.body) if isinstance(s, TensorWrite)]
    assert len(writes) == 1
    assert isinstance(writes[0].value.type, TensorType)
    # the jit scalar is a specialisation constant: inlined, but still in the signature
    assert [p.name for p in spec.params] == ["a", "b", "alpha", "c"]
    assert "2.0" in str(spec.program)


def test_annotated_program_functions() -> None:
    Prog = program(
        "[16, 16]",
        kernel=[
            "tile: pl.Tile[[16, 16], pl.FP16] = pl.load(a, [0, 0], [16, 16])",
            "result: pl.Tensor[[16, 16], pl.FP16] = pl.store(pl.abs(tile), [0, 0], out)",
            "return result",
        ],
        main=["out = self.k(a, out)", "return out"],
        ins=("a",),
        out="out",
        dtype="pl.FP16",
    )()

    assert Prog.entry == "main"
    assert set(Prog.functions) == {"k", "main"}
    k = Prog.functions["k"]
    assert k.func_type is pl.FunctionType.InCore
    tile_vars = [
        s.var for s in walk_stmts(k.body) if isinstance(s, Assign) and isinstance(s.var.type, TileType)
    ]
    assert tile_vars[0].type == TileType((16, 16), pl.FP16, MemorySpace.Vec)


def test_program_of_one_kernel_gets_a_main() -> None:
    @pl.program
    class Single:
        @pl.function
        def k(self, a: pl.Tensor[[8, 8], pl.FP32], o: pl.Out[pl.Tensor[[8, 8], pl.FP32]]):
            pl.store(pl.neg(pl.load(a, [0, 0], [8, 8])), [0, 0], o)

    assert Single.entry == "main"
    assert Single.functions["k"].func_type is pl.FunctionType.InCore


def test_bare_tensor_outside_jit_is_rejected() -> None:
    with pytest.raises(KernelError, match=r"bare pl\.Tensor takes its shape from the call"):

        @pl.program
        class Bad:
            @pl.function
            def k(self, a: pl.Tensor, o: pl.Out[pl.Tensor]):
                pl.store(pl.load(a, [0, 0], [8, 8]), [0, 0], o)


def test_ops_refuse_to_run_as_python() -> None:
    with pytest.raises(RuntimeError, match=r"runs only inside a @pl\.jit"):
        pl.add(1, 2)
    with pytest.raises(RuntimeError, match="runs only inside a kernel body"):
        pl.range(3)


def test_type_annotations_of_the_language() -> None:
    n = pl.dynamic("N")
    ann = pl.Tensor[[n, 64], pl.BF16]
    assert ann.shape == (n, 64)
    assert ann.dtype is pl.BF16
    assert pl.Out[pl.Tensor].direction.value == "Out"
    with pytest.raises(TypeError, match="always In"):
        pl.Out[pl.FP32]
    with pytest.raises(TypeError, match="static"):
        pl.Tile[[n, 4], pl.FP32]
    with pytest.raises(ValueError, match="identifier"):
        pl.dynamic("1x")


@pl.jit.inline
def _scaled_copy(src: pl.Tensor, dst: pl.Out[pl.Tensor], k: pl.FP32):
    with pl.at(level=pl.Level.CORE_GROUP):
        tile_a = pl.load(src, [0, 0], [16, 16])
        pl.store(pl.mul(tile_a, k), [0, 0], dst)
    return dst


@pl.jit
def uses_inline(a: pl.Tensor, c: pl.Out[pl.Tensor]):
    tile_a = pl.create_tensor([16, 16], dtype=pl.FP32)  # the same name as the helper's local
    tile_a = _scaled_copy(a, tile_a, 2.0)
    c = _scaled_copy(tile_a, c, 3.0)
    return c


def test_inline_helpers_are_spliced_with_renamed_locals() -> None:
    from pypto.ir.pipeline import lower

    spec = uses_inline.specialize(t(16, 16), t(16, 16))
    scopes = [s for s in walk_stmts(spec.program.entry_function.body) if isinstance(s, Scope)]
    assert len(scopes) == 2
    loads = [
        s.var.name
        for s in walk_stmts(spec.program.entry_function.body)
        if isinstance(s, Assign) and isinstance(s.var.type, TileType)
    ]
    assert loads == ["scaled_copy1_tile_a", "scaled_copy2_tile_a"]
    prog = lower(spec.program).program
    assert len(prog.functions) == 3
    k0, k1 = prog.functions["uses_inline_k0"], prog.functions["uses_inline_k1"]
    assert [p.name for p in k0.params] == ["a", "tile_a"]
    assert [p.name for p in k1.params] == ["c", "tile_a"]  # enclosing parameters first
    assert "2.0" in str(k0)
    assert "3.0" in str(k1)


@pl.function(type=pl.FunctionType.InCore)
def external_relu(
    x: pl.Tensor[[16, 16], pl.FP32], y: pl.Out[pl.Tensor[[16, 16], pl.FP32]]
) -> pl.Tensor[[16, 16], pl.FP32]:
    y = pl.store(pl.relu(pl.load(x, [0, 0], [16, 16])), [0, 0], y)
    return y


def test_external_function_is_added_to_the_program_once() -> None:
    @pl.program
    class UsesExternal:
        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[16, 16], pl.FP32], y: pl.Out[pl.Tensor[[16, 16], pl.FP32]]):
            y = external_relu(x, y)
            y = external_relu(y, y)
            return y

    assert list(UsesExternal.functions) == ["main", "external_relu"]
    assert external_relu.ir.func_type is pl.FunctionType.InCore
    with pytest.raises(RuntimeError, match=r"is a @pl\.function"):
        external_relu(1, 2)


@pl.jit
def int_times_half(a: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        pl.store(pl.mul(pl.load(a, [0, 0], [8, 8]), 0.5), [0, 0], c)
    return c


def test_float_scalar_on_integer_tile_is_converted_to_the_element_dtype() -> None:
    # upstream converts a float scalar operand to an integer tile's dtype (toward zero); the
    # numbers are checked in pypto-runtime's test_scalar_conversion_run.py
    program = int_times_half.specialize(HostArray((8, 8), "int32"), HostArray((8, 8), "int32")).program
    assert "mul" in str(program)
