"""The op table (pypto.ir.ops.table) against everything derived from it.

An op is one table entry plus the PTO-ISA instructions it emits. These tests enumerate the table
and fail when a part is missing: a ``pl`` export without an entry (or the reverse), a ``pl.tile``
export, a doc or signature that differs, a builder the op needs, or a tile op whose emitted
C++ does not compile against a PTO-ISA implementation (simpler's include_pto, or the official
headers with PTO_ISA_ROOT).
"""

from __future__ import annotations

import inspect
import itertools
import re
from collections.abc import Callable, Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from pypto_ir_test_helpers import HostArray as _HostArray

import pypto.language as pl
from pypto.ir.codegen.cpp import ident, kernel_cpp_type
from pypto.ir.codegen.kernel import BESPOKE, _KernelGen, tile_type
from pypto.ir.codegen.plan import render
from pypto.ir.dtypes import DataType
from pypto.ir.nodes import Arg, Assign, Call, Const, Var
from pypto.ir.ops import LANGUAGE, OPS, REQUIRED, Cpp, OpError, OpSpec, infer
from pypto.ir.ops.math_table import COMPOSED_OPS
from pypto.ir.ops.pipe_ops import PIPE_OPS
from pypto.ir.param_info import Layout
from pypto.ir.passes import decompose_math
from pypto.ir.passes.memory_alloc import KernelMemory, Slot
from pypto.ir.platforms import BackendType, TileAlloc
from pypto.ir.types import MemorySpace, PadValue, ScalarType, TensorType, TileType, Type
from pypto.language.op_builders import OP_BUILDERS

FP32 = DataType.FP32
PUBLIC = sorted(n for n, op in LANGUAGE.items() if op.public)
"""Every op with a function (``pl.<name>``, or only ``pl.tile.<name>`` / ``pl.tensor.<name>``)."""
IN_PL = sorted(LANGUAGE[n].public_name for n in PUBLIC if LANGUAGE[n].in_pl)
"""The names ``pl`` exports its ops under (an op's ``public_name``: its table key, or ``exported``)."""


def _function(name: str) -> Any:
    """The function of op ``name``, wherever the language spells it."""
    return getattr(pl.ops, name)


# ----------------------------------------------------------------------------- language exports


def _pl_ops(module: Any) -> dict[str, Any]:
    return {n: getattr(module, n) for n in dir(module) if getattr(getattr(module, n), "__pypto_op__", None)}


# upstream's short spellings of four pl.system calls, the same functions (pypto.language)
PL_SYSTEM_ALIASES = {"aic_initialize_pipe", "aiv_initialize_pipe", "import_peer_buffer", "reserve_buffer"}


def test_every_pl_op_is_a_table_entry_and_every_entry_is_exported() -> None:
    assert all(getattr(pl, n) is getattr(pl.system, n) for n in PL_SYSTEM_ALIASES)
    exported = {n: f for n, f in _pl_ops(pl).items() if n not in PL_SYSTEM_ALIASES}
    assert sorted(exported) == IN_PL
    assert all(LANGUAGE[exported[n].__pypto_op__].public_name == n for n in exported)
    # two ops of one name at two levels: pl.random is the tensor form, pl.tile.random the tile's
    assert pl.random.__pypto_op__ == "tensor_random"
    assert pl.tile.random.__pypto_op__ == "random"
    assert set(IN_PL) <= set(pl.__all__)
    # ops upstream spells only as pl.tile.<name> are not in pl itself
    assert {"adds", "subs", "muls", "divs"} <= set(PUBLIC) - set(IN_PL)
    assert not hasattr(pl, "adds")


def _level_names(kind: str) -> dict[str, str]:
    """The names ``pl.<kind>`` should export -> the op each is (the op's public name and its alias)."""
    want: dict[str, str] = {}
    for n in PUBLIC:
        if any(f.startswith(kind + ".") for f in LANGUAGE[n].ir_ops):
            want[LANGUAGE[n].public_name] = n
            if LANGUAGE[n].alias:
                want[LANGUAGE[n].alias] = n
    return want


@pytest.mark.parametrize("kind", ["tile", "tensor"])
def test_pl_tile_and_pl_tensor_export_the_ops_with_that_form(kind: str) -> None:
    module = getattr(pl, kind)
    want = _level_names(kind)
    assert sorted(_pl_ops(module)) == sorted(want) == sorted(module.__all__)
    assert all(getattr(module, n) is _function(op) for n, op in want.items())
    assert all(
        getattr(module, n) is getattr(pl, LANGUAGE[op].public_name)
        for n, op in want.items()
        if LANGUAGE[op].in_pl
    )
    if kind == "tile":
        assert {"add", "adds", "create"} <= set(want)
        assert "dim" not in want
        assert "create_tensor" not in want
        assert pl.tile.create is pl.create_tile
    else:
        assert {"read", "dim", "create", "adds"} <= set(want)
        assert pl.tensor.create is pl.create_tensor


@pytest.mark.parametrize("name", PUBLIC)
def test_pl_op_doc_and_signature_are_the_tables(name: str) -> None:
    fn = _function(name)
    op = LANGUAGE[name]
    assert op.doc.strip(), f"pl.{name} has no doc in the op table"
    assert fn.__doc__ == op.doc
    assert inspect.getdoc(fn) == inspect.cleandoc(op.doc)  # what help(pl.<name>) shows
    params = inspect.signature(fn).parameters
    assert list(params) == [p.name for p in op.params]
    for p in op.params:
        default = params[p.name].default
        assert default is inspect.Parameter.empty if p.default is REQUIRED else default == p.default
    # the parser binds calls against the same signature
    assert inspect.signature(fn.__wrapped__) == inspect.signature(fn)
    spelled = LANGUAGE[name].spelled.replace(".", r"\.")
    with pytest.raises(RuntimeError, match=rf"{spelled}\(\) is part of the kernel language"):
        fn()


def test_every_ir_op_is_reachable_from_a_pl_function() -> None:
    reached = {ir for op in LANGUAGE.values() for ir in op.ir_ops}
    assert reached == set(OPS)
    for op in LANGUAGE.values():
        for kind, ir in op.forms.items():
            assert OPS[ir].kind == kind, f"pl.{op.name}: the {kind} form is {ir}"


def _pld_functions() -> dict[str, object]:
    import pypto.language.distributed as pld

    found = {}
    for space in (pld, pld.system, pld.tile, pld.tensor):
        for name in space.__all__:
            fn = getattr(space, name)
            if hasattr(fn, "__pypto_op__"):
                found[f"{space.__name__}.{name}"] = fn
    return found


PLD_OPS = {fn.__pypto_op__ for fn in _pld_functions().values()}  # type: ignore[attr-defined]


def test_every_distributed_op_is_a_pld_function_spelled_as_its_table_says() -> None:
    distributed = {n for n, op in LANGUAGE.items() if op.group == "distributed"}
    assert distributed == PLD_OPS
    for where, fn in _pld_functions().items():
        op = LANGUAGE[fn.__pypto_op__]  # type: ignore[attr-defined]
        assert not op.public, f"{where}: a pld op is not a pl function"
        assert op.spelled.rsplit(".", 1)[1] == where.rsplit(".", 1)[1]
        assert fn.__doc__ == op.doc


def _plain_operands(op_name: str) -> bool:
    """The generic builder suffices: every parameter is an operand, no attributes or offsets."""
    op = LANGUAGE[op_name]
    specs = [OPS[n] for n in op.ir_ops]
    return all(not s.attrs and s.offsets_at is None and s.max_args == len(op.params) for s in specs)


def test_ops_with_attributes_or_offsets_have_a_builder() -> None:
    # pl.<name>, or a function of a pl namespace (pl.array.create, pl.system.task_dummy)
    system = {getattr(pl.system, n).__pypto_op__ for n in pl.system.__all__ if n != "AUTO"}
    namespaced = {pl.array.create.__pypto_op__} | system | PLD_OPS
    assert set(OP_BUILDERS) <= set(PUBLIC) | namespaced
    missing = [n for n in PUBLIC if not _plain_operands(n) and n not in OP_BUILDERS]
    assert not missing, f"ops whose parameters are not all operands need a builder: {missing}"
    assert [n for n in ("add", "row_sum", "load", "slice", "transpose") if _plain_operands(n)] == [
        "add",
        "row_sum",
    ]


# ----------------------------------------------------------------------------- the emitter

ON_CHIP = tuple(m for m in MemorySpace if m is not MemorySpace.DDR)
_TILE_POOL: tuple[Type, ...] = (
    *(TileType((16, 16), FP32, m) for m in ON_CHIP),
    TileType((16, 1), FP32, MemorySpace.Vec),
    TileType((1, 16), FP32, MemorySpace.Vec),
    ScalarType(FP32),
    TensorType((16, 16), FP32),
    ScalarType(DataType.INT64),
    TileType((16, 16), DataType.INT32, MemorySpace.Vec),  # bitwise ops
    TileType((16, 32), DataType.UINT8, MemorySpace.Vec),  # a predicate mask (pl.cmp of a [16, 16] tile)
    TileType((1, 16), FP32, MemorySpace.Left),  # a GEMV's row
    TileType((1, 16), FP32, MemorySpace.Acc),  # a GEMV's result
    TileType((1, 16), FP32, MemorySpace.Bias),  # a bias row
    TileType((16, 32), FP32, MemorySpace.Vec),  # values in blocks of 32 (pl.sort32)
    TileType((16, 32), DataType.UINT32, MemorySpace.Vec),  # ... and their indices
)
_ATTR_VALUES: dict[str, tuple[Any, ...]] = {
    "shape": ((16, 16), (1, 16)),  # the second: one-row tiles (pl.tile.ci)
    "dtype": (FP32, DataType.INT32),  # the second: integer tiles (pl.tile.ci)
    "memory": ON_CHIP,
    "pad": (PadValue.min,),
    "axis": (0,),
    "static_offsets": ([0, 0],),
    "layout": (None,),
    "mode": (None,),
    "cmp_type": (3,),
    "mask_pattern": (1,),
    "output_dtype": (None,),
}


def sample_call(spec: OpSpec, nz: bool = False) -> Call:
    """A call of ``spec`` that its rule accepts, from a small pool of operand types."""
    pool = tuple(
        TensorType(t.shape, t.dtype, Layout.NZ) if nz and isinstance(t, TensorType) else t for t in _TILE_POOL
    )
    names = [a for a in spec.attrs if a in _ATTR_VALUES]
    for n in range(spec.min_args, spec.max_args + 1):
        # many operands (pl.tile.random's six scalars): operands of one type first, before the
        # product, whose size grows as the pool to the n-th power
        uniform = [(t,) * n for t in pool] if n > 3 else []
        for types in itertools.chain(uniform, itertools.product(pool, repeat=n)):
            for values in itertools.product(*(_ATTR_VALUES[a] for a in names)):
                attrs = {k: v for k, v in zip(names, values, strict=True) if v is not None}
                if nz and "layout" in spec.attrs:
                    attrs["layout"] = Layout.NZ
                try:
                    result = infer(spec.name, list(types), attrs)
                except OpError:
                    continue
                args: list[Arg] = [Var(f"a{i}", t) for i, t in enumerate(types)]
                if spec.offsets_at is not None:
                    args.insert(spec.offsets_at, (Const(0, DataType.INT64), Const(0, DataType.INT64)))
                clean = {k: v for k, v in attrs.items() if k != "static_offsets"}
                return Call(spec.name, tuple(args), tuple(sorted(clean.items())), result)
    raise AssertionError(f"no operands from the pool satisfy {spec.name}; extend the test's pool")


def _declare(v: Var, slot: int) -> list[str]:
    t = v.type
    if isinstance(t, TileType):
        r, c = t.shape
        name = ident(v.name)
        return [f"{tile_type(t)} {name}({r}, {c});", f"TASSIGN({name}, 0x0);", f"(void){name};"]
    if isinstance(t, TensorType):
        return [f"const simpler::ChipTensor& {ident(v.name)} = sk::tensor_arg(args[{slot}]);"]
    assert isinstance(t, ScalarType)
    return [f"const {kernel_cpp_type(t.dtype)} {ident(v.name)} = 1;", f"(void){ident(v.name)};"]


class _AnyKey(dict[str, int]):
    """Every key names slot 0 (the probes place every tile at offset 0)."""

    def __contains__(self, key: object) -> bool:
        return True

    def __getitem__(self, key: str) -> int:
        return 0

    def get(self, key: str, default: Any = None) -> int:  # type: ignore[override]
        return 0


def _probe_memory() -> KernelMemory:
    alloc = TileAlloc("probe", MemorySpace.Vec, FP32, (1, 1))
    return KernelMemory([Slot(MemorySpace.Vec, 0, 32, (0, 0), ("probe",), alloc)], _AnyKey())


_A5_ONLY = frozenset({"tile.random"})  # TRANDOM exists on A5 only: emitted for that backend


def emitted(call: Call) -> list[str]:
    """The kernel lines the emitter writes for ``r = call`` (every tile at offset 0, no syncs)."""
    backend = BackendType.Ascend950 if call.op in _A5_ONLY else BackendType.Ascend910B
    gen = _KernelGen(None, _probe_memory(), backend)  # type: ignore[arg-type]  # assign() reads no function state
    gen.cname_key = {}
    gen.assign(Var("r", call.type), call)
    return render(gen.items, 1)


def probe_source(calls: Iterable[Call]) -> str:
    """One translation unit with one function per call: its operands declared, then its lines."""
    out = [
        "#include <cstdint>",
        "#include <pto/pto-inst.hpp>",
        "#include <simpler/kernel_args.hpp>",
        "using namespace pto;",
        "namespace sk = simpler::kernel;",
        "",
    ]
    out.append("SIMPLER_DEFINE_KERNEL_ABI();")
    for i, call in enumerate(calls):
        out.append(f"// {call.op}")
        out.append(f'extern "C" void probe_{i}(std::int64_t* args) {{')
        out.append("    (void)args;")
        operands = list({a.name: a for a in call.args if isinstance(a, Var)}.values())  # mul(x, x)
        for slot, v in enumerate(operands):
            out += ["    " + line for line in _declare(v, slot)]
        out += emitted(call)
        out.append("    (void)r;")
        out.append("}")
    return "\n".join(out) + "\n"


COMPOSED = {f"tile.{n}" for n in COMPOSED_OPS}  # written as other tile ops by decompose_math
# the cross-core pipes have no kernel code on the simulated chip (test_cross_core_pipes.py)
TILE_OPS = sorted(n for n in OPS if n.startswith("tile.") and n not in COMPOSED and n not in PIPE_OPS)


def decomposed(name: str, **attrs: Any) -> list[Call]:
    """The tile ops ``decompose_math`` writes for a sample call of composed op ``name``."""
    call = sample_call(OPS[name])
    if attrs:
        call = replace(call, attrs=tuple(sorted(attrs.items())))
    stmts = decompose_math._decompose(Var("r", call.type), call, decompose_math._Names({"a0", "a1", "r"}))
    calls = [s.value for s in stmts if isinstance(s, Assign) and isinstance(s.value, Call)]
    assert len(calls) == len(stmts)
    return calls


_COMPOSED_SAMPLES = [(n, {}) for n in sorted(COMPOSED)] + [
    ("tile.gelu", {"approximate": "tanh"}),
    ("tile.softplus", {"beta": 2.0, "threshold": 5.0}),
]


@pytest.mark.parametrize(
    ("name", "attrs"), _COMPOSED_SAMPLES, ids=[f"{n}{a or ''}" for n, a in _COMPOSED_SAMPLES]
)
def test_composed_ops_become_table_calls(name: str, attrs: dict[str, Any]) -> None:
    assert OPS[name].cpp is None, f"{name} has an instruction; it need not be composed"
    calls = decomposed(name, **attrs)
    assert calls[-1].type == sample_call(OPS[name]).type
    for call in calls:
        spec = OPS[call.op]
        assert call.op not in COMPOSED, call.op
        assert spec.cpp is not None or call.op in BESPOKE, call.op
        if spec.cpp is not None:
            emitted_calls = library_calls(emitted(call))
            assert spec.cpp.fn in emitted_calls or spec.cpp.scalar_fn in emitted_calls, call.op


def library_calls(lines: Iterable[str]) -> set[str]:
    """The functions a kernel's lines call: PTO-ISA instructions and ``sk::`` helpers, with or
    without template arguments (``TGATHER<..., MaskPattern::P0101>(dst, src)``)."""
    return set(re.findall(r"(?<![\w:.])(?:sk::)?([A-Za-z_]\w*)(?:<[^;\n]*>)?\(", "\n".join(lines)))


@pytest.mark.parametrize("name", TILE_OPS)
def test_every_tile_op_emits_its_table_call(name: str) -> None:
    spec = OPS[name]
    assert spec.cpp is not None or name in BESPOKE, f"{name}: no C++ in the table and no emitter branch"
    calls = library_calls(emitted(sample_call(spec)))
    if spec.cpp is not None:
        assert spec.cpp.fn in calls or spec.cpp.scalar_fn in calls, f"{name} emits {calls}, not {spec.cpp.fn}"
    if spec.cpp is not None and spec.cpp.nz_fn is not None:
        assert f"sk::{spec.cpp.nz_fn}<" in "\n".join(emitted(sample_call(spec, nz=True)))


def _all_probes() -> list[Call]:
    calls = [sample_call(OPS[n]) for n in TILE_OPS]
    calls += [c for n, a in _COMPOSED_SAMPLES for c in decomposed(n, **a)]
    calls += [sample_call(OPS[n], nz=True) for n in TILE_OPS if (c := OPS[n].cpp) is not None and c.nz_fn]
    # an Acc result assembled into a Mat tile (the IR allows any source space)
    mat, acc = TileType((16, 16), FP32, MemorySpace.Mat), TileType((16, 16), FP32, MemorySpace.Acc)
    zero = Const(0, DataType.INT64)
    calls.append(Call("tile.assemble", (Var("a0", mat), Var("a1", acc), (zero, zero)), (), mat))
    # a binary op's scalar form
    calls.append(Call("tile.add", (Var("a0", _TILE_POOL[0]), Var("a1", ScalarType(FP32))), (), _TILE_POOL[0]))
    return calls


def test_every_tile_op_compiles_against_the_tile_headers(
    tmp_path: Path, cpp_check: Callable[[Iterable[Path]], None]
) -> None:
    src = tmp_path / "probe_ops.cpp"
    src.write_text(probe_source(_all_probes()))
    cpp_check([src])


def test_the_header_check_fails_for_a_function_the_library_lacks(
    tmp_path: Path, cpp_check: Callable[[Iterable[Path]], None], monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = OPS["tile.exp"]
    monkeypatch.setitem(OPS, "tile.exp", OpSpec(spec.name, spec.infer, 1, 1, Cpp("no_such_tile_op")))
    call = sample_call(OPS["tile.exp"])
    assert "no_such_tile_op" in library_calls(emitted(call))
    src = tmp_path / "probe_missing.cpp"
    src.write_text(probe_source([call]))
    with pytest.raises(AssertionError, match="no_such_tile_op"):
        cpp_check([src])


def test_matmul_is_a_generic_three_operand_call() -> None:
    lines = emitted(sample_call(OPS["tile.matmul"]))
    assert lines[-1].strip() == "TMATMUL(r, a0, a1);"


def test_kernels_embed_no_tile_helpers() -> None:
    from pypto.ir.codegen import kernel

    assert not hasattr(kernel, "TILE_HELPERS")
    text = "\n".join(emitted(sample_call(OPS["tile.fillpad"])) + emitted(sample_call(OPS["tile.slice"])))
    assert "PadValue::Min> r(16, 16);" in text  # the destination's pad value
    assert "TFILLPAD(r, a0);" in text
    assert (
        "TEXTRACT(r, a0, static_cast<std::uint16_t>(INT64_C(0)), static_cast<std::uint16_t>(INT64_C(0)));"
        in text
    )
    assert "pypto_" not in text


def test_a_new_unary_op_is_one_table_line(monkeypatch: pytest.MonkeyPatch) -> None:
    """An op entered with one ``_unary`` line is parsed, checked, lowered and emitted."""
    from pypto.ir.codegen import generate_kernel
    from pypto.ir.ops import elementwise_table
    from pypto.ir.pipeline import lower
    from pypto.language.ops import make_op

    before = set(OPS), set(LANGUAGE)
    try:
        elementwise_table._unary("softsign", """Element-wise x / (1 + abs(x)).""", float_only=True)
        # pypto.language builds pl.<name> for every entry when it is imported; this entry came later
        monkeypatch.setattr(pl, "softsign", make_op(LANGUAGE["softsign"]), raising=False)
        assert inspect.getdoc(pl.softsign) == "Element-wise x / (1 + abs(x))."

        @pl.jit
        def soft(x: pl.Tensor, out: pl.Out[pl.Tensor]):  # type: ignore[no-untyped-def]
            with pl.at(level=pl.Level.CORE_GROUP):
                out[:] = pl.softsign(x)
            return out

        prog = lower(soft.specialize(_HostArray((16, 16)), _HostArray((16, 16))).program).program
        texts = [generate_kernel(f).text for f in prog.functions.values() if f.func_type.is_kernel]
        assert len(texts) == 1
        assert "TSOFTSIGN(" in texts[0]
        with pytest.raises(Exception, match=r"pl\.softsign: needs a floating-point operand, got INT32"):
            soft.specialize(_HostArray((16, 16), "int32"), _HostArray((16, 16), "int32"))
    finally:
        for name in set(OPS) - before[0]:
            del OPS[name]
        for name in set(LANGUAGE) - before[1]:
            del LANGUAGE[name]
