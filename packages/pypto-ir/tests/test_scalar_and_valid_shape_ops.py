"""The front end of the tile-scalar ops (``pl.tile.adds/subs/muls/divs``, ``pl.maximums``,
``pl.minimums``), ``pl.expands``, ``pl.set_validshape`` and the ``create`` spellings: types,
errors, emitted C++ and the printed text. Their numbers on the simulated chip are checked in
pypto-runtime's tests/test_tile_scalar_ops.py."""

from __future__ import annotations

import pytest
from pypto_ir_test_helpers import HostArray, tile_op_on_itself

import pypto.language as pl
from pypto.ir import deserialize, serialize
from pypto.ir.codegen import generate_kernel
from pypto.ir.errors import KernelError
from pypto.ir.nodes import Assign, Call, structural_equal, walk_stmts
from pypto.ir.pipeline import lower
from pypto.ir.types import MemorySpace, TileType


def _calls(program: object) -> dict[str, Call]:
    """The op calls of a specialised program, by the name they are assigned to."""
    out: dict[str, Call] = {}
    for fn in program.functions.values():  # type: ignore[attr-defined]
        for s in walk_stmts(fn.body):
            if isinstance(s, Assign) and isinstance(s.value, Call):
                out[s.var.name] = s.value
    return out


def _kernels(fn: pl.JITFunction, *args: object) -> list[str]:
    prog = lower(fn.specialize(*args).program).program
    return [generate_kernel(f).text for f in prog.functions.values() if f.func_type.is_kernel]


@pl.jit
def scalar_chain(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 32])
        u = pl.tile.adds(t, 1.5)
        v = pl.tile.subs(u, 2)
        w = pl.tile.muls(v, 3.0)
        x = pl.tile.divs(w, 4.0)
        y = pl.minimums(pl.maximums(x, -1.0), 1.0)
        pl.store(y, [0, 0], out)
    return out


def test_tile_scalar_ops_keep_the_tile_type_and_call_the_scalar_library_functions() -> None:
    spec = scalar_chain.specialize(HostArray((16, 32)), HostArray((16, 32)))
    calls = _calls(spec.program)
    for name, op in (("u", "tile.adds"), ("v", "tile.subs"), ("w", "tile.muls"), ("x", "tile.divs")):
        assert calls[name].op == op
        assert calls[name].type == TileType((16, 32), pl.FP32, MemorySpace.Vec)
    (text,) = _kernels(scalar_chain, HostArray((16, 32)), HostArray((16, 32)))
    for fn in ("TADDS", "TSUBS", "TMULS", "TDIVS", "TMAXS", "TMINS"):
        assert f"{fn}(" in text


def test_the_scalar_ops_are_spelled_as_upstream_spells_them() -> None:
    assert pl.tile.adds.__pypto_op__ == "adds"
    assert pl.tensor.muls is pl.tile.muls
    assert pl.tile.maximums is pl.maximums
    with pytest.raises(AttributeError, match=r"pl\.tile\.adds"):
        pl.adds  # noqa: B018  # only pl.tile.adds / pl.tensor.adds, as upstream
    with pytest.raises(RuntimeError, match=r"pl\.tile\.divs\(\) is part of the kernel language"):
        pl.tile.divs(1, 2)


@pl.jit
def adds_two_tiles(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 16])
        pl.store(pl.tile.adds(t, t), [0, 0], out)
    return out


@pl.jit
def float_into_int(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 16])
        pl.store(pl.tile.muls(t, 0.5), [0, 0], out)
    return out


@pl.jit
def maximums_of_tensor(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.maximums(a, 0.0)
    return out


def test_tile_scalar_ops_refuse_a_tile_rhs_and_a_tensor_where_there_is_no_form() -> None:
    x = HostArray((16, 16))
    with pytest.raises(
        KernelError, match=r"pl\.tile\.adds: rhs must be a scalar .* for two tiles use pl\.add"
    ):
        adds_two_tiles.specialize(x, x)
    xi = HostArray((16, 16), "int32")
    float_into_int.specialize(xi, xi)  # the float scalar is converted to INT32 (test_scalar_conversion_run)
    with pytest.raises(KernelError, match=r"pl\.maximums works on tiles, not tensors"):
        maximums_of_tensor.specialize(x, x)


@pl.jit
def tensor_scalar_ops(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.tensor.divs(pl.tensor.adds(a, 1.0), 2.0)
    return out


def test_tensor_forms_lower_to_the_tile_forms() -> None:
    x = HostArray((16, 32))
    text = "\n".join(str(f) for f in tensor_scalar_ops.specialize(x, x).program.functions.values())
    assert "tensor.divs(tensor.adds(" in text
    (text,) = _kernels(tensor_scalar_ops, x, x)
    assert "TADDS(" in text
    assert "TDIVS(" in text


@pl.jit
def expand_and_narrow(a: pl.Tensor, cfg: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        n = pl.cast(pl.read(cfg, [0]), pl.INDEX)
        t = pl.load(a, [0, 0], [16, 32])
        e = pl.expands(t, 2.0)
        v = pl.set_validshape(e, 8, n)
        pl.store(v, [0, 0], out)
    return out


def test_expands_and_set_validshape_keep_the_type_and_emit_fill_and_set_valid() -> None:
    args = (HostArray((16, 32)), HostArray((1,), "int32"), HostArray((16, 32)))
    calls = _calls(expand_and_narrow.specialize(*args).program)
    assert calls["e"].op == "tile.expands"
    assert calls["v"].op == "tile.set_validshape"
    assert calls["e"].type == calls["v"].type == TileType((16, 32), pl.FP32, MemorySpace.Vec)
    (text,) = _kernels(expand_and_narrow, *args)
    assert "TEXPANDS(e, " in text
    assert "e(t.GetValidRow(), t.GetValidCol());" in text  # the target's valid shape
    assert "v(static_cast<unsigned>(static_cast<std::int64_t>(INT64_C(8))), " in text
    # a run-time valid shape is checked against the static shape when the kernel runs
    assert 'if (!sk::valid_shape_ok("tile pl.set_validshape", ' in text


def set_validshape_cols(cols: float) -> pl.JITFunction:
    """A kernel that sets the valid columns of a [16, 32] tile to ``cols``."""

    @pl.jit
    def validshape(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(a, [0, 0], [16, 32])
            pl.store(pl.set_validshape(t, 16, cols), [0, 0], out)
        return out

    return validshape


@pl.jit
def validshape_of_tensor(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.set_validshape(a, 8, 40)
    return out


def test_set_validshape_and_expands_refuse_bad_operands() -> None:
    x = HostArray((16, 32))
    with pytest.raises(KernelError, match=r"pl\.set_validshape: valid_cols 33 is outside \[0, 32\]"):
        set_validshape_cols(33).specialize(x, x)
    with pytest.raises(
        KernelError, match=r"pl\.set_validshape: valid_cols must be an integer .* got Scalar\[FP32\]"
    ):
        set_validshape_cols(2.5).specialize(x, x)
    with pytest.raises(
        KernelError, match=r"pl\.set_validshape: valid_cols 40 is outside \[0, 32\] \(the tensor"
    ):
        validshape_of_tensor.specialize(x, x)
    with pytest.raises(KernelError, match=r"pl\.expands: the value to broadcast must be a scalar, got Tile"):
        tile_op_on_itself(pl.expands).specialize(x, x)


def test_create_is_create_tile_in_pl_tile_and_create_tensor_in_pl_tensor() -> None:
    assert pl.tile.create is pl.create_tile
    assert pl.tensor.create is pl.create_tensor

    @pl.jit
    def scratch(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.tile.create([16, 16], pl.FP32)
            u = pl.tile.muls(pl.tile.assemble(t, pl.load(a, [0, 0], [16, 16]), [0, 0]), 2.0)
            pl.store(u, [0, 0], out)
        return out

    x = HostArray((16, 16))
    calls = _calls(scratch.specialize(x, x).program)
    assert calls["t"].op == "tile.create"
    assert calls["t"].type == TileType((16, 16), pl.FP32, MemorySpace.Vec)


TEXT = """
@pl.program
class Scalars:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[16, 32], pl.FP32], n: pl.Scalar[pl.INDEX], y: pl.Out[pl.Tensor[[16, 32], pl.FP32]]) -> pl.Tensor[[16, 32], pl.FP32]:
        t = pl.load(x, [0, 0], [16, 32])
        u = pl.tile.adds(t, 1.0)
        w = pl.tile.divs(pl.minimums(u, 4.0), 2.0)
        e = pl.expands(w, 0.5)
        v = pl.set_validshape(e, 8, n)
        y = pl.store(v, [0, 0], y)
        return y
"""


def test_the_new_ops_print_parse_back_and_serialize() -> None:
    program = pl.parse(TEXT)
    text = program.as_python()
    for spelled in ("pl.tile.adds(", "pl.tile.divs(", "pl.minimums(", "pl.expands(", "pl.set_validshape("):
        assert spelled in text
    back = pl.parse(text)
    assert structural_equal(program, back)
    assert back.as_python() == text
    assert structural_equal(deserialize(serialize(program)), program)
