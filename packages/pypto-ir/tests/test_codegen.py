"""Codegen: kernel and orchestration C++ are 1:1 with the lowered IR and compile."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

from pypto_ir_test_helpers import HostArray

import pypto.language as pl
from pypto.ir.codegen import abi_params, generate_kernel, generate_orchestration
from pypto.ir.compile import compile_to_files
from pypto.ir.pipeline import lower
from pypto.ir.types import CoreType


def t(*shape: int, dtype: str = "float32") -> HostArray:
    return HostArray(shape, dtype)


@pl.jit.incore
def _mixed_args(x: pl.Tensor, bias: pl.FP16, step: pl.INT32, y: pl.Out[pl.Tensor]):
    for i in pl.range(0, 32, step):
        v = pl.add(pl.load(x, [i, 0], [16, 16]), bias)
        pl.store(v, [i, 0], y)
    return y


@pl.jit
def orchestrated(x: pl.Tensor, y: pl.Out[pl.Tensor], n: pl.INT32):
    for _k in pl.range(n):
        y = _mixed_args(x, 0.5, 16, y)
    return y


@pl.jit
def accumulate(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        acc = pl.matmul(
            pl.move(
                pl.load(a, [0, 0], [16, 16], target_memory=pl.MemorySpace.Mat),
                target_memory=pl.MemorySpace.Left,
            ),
            pl.move(
                pl.load(b, [0, 0], [16, 16], target_memory=pl.MemorySpace.Mat),
                target_memory=pl.MemorySpace.Right,
            ),
        )
        for k in pl.range(1, 4):
            la = pl.load(a, [0, k * 16], [16, 16], target_memory=pl.MemorySpace.Mat)
            lb = pl.load(b, [k * 16, 0], [16, 16], target_memory=pl.MemorySpace.Mat)
            acc = pl.matmul_acc(
                acc,
                pl.move(la, target_memory=pl.MemorySpace.Left),
                pl.move(lb, target_memory=pl.MemorySpace.Right),
            )
        c[:] = pl.cast(pl.move(acc, target_memory=pl.MemorySpace.Vec), pl.FP16)
    return c


def test_kernel_abi_puts_tensors_before_scalars() -> None:
    prog = lower(
        orchestrated.specialize(t(32, 16, dtype="float16"), t(32, 16, dtype="float16"), 3).program
    ).program
    k = prog.functions["mixed_args"]
    assert [p.name for p in abi_params(k)] == ["x", "y", "bias", "step"]
    src = generate_kernel(k)
    assert src.core_type is CoreType.AIV
    assert "sk::tensor_arg(args[1]);  // Out" in src.text
    assert "sk::scalar_arg<half>(args[2])" in src.text
    assert "sk::scalar_arg<std::int32_t>(args[3])" in src.text
    assert "TADDS(" in src.text
    orch = generate_orchestration(prog.entry_function, prog, {"mixed_args": 0})
    assert "SIMPLER_ORCHESTRATION(orchestrated_orch, 2, 1)" in orch.text
    assert "orch.submit(0, {simpler::in(x), simpler::out(" in orch.text
    assert ".bits" in orch.text  # an FP16 scalar travels as its bits


def test_matmul_acc_accumulates_in_place_and_casts() -> None:
    prog = lower(accumulate.specialize(t(16, 64), t(64, 16), t(16, 16, dtype="float16")).program).program
    src = generate_kernel(prog.functions["accumulate_k0"])
    assert src.core_type is CoreType.AIC
    # the accumulator's SSA versions share one L0C address: the loop accumulates in place
    offsets = re.findall(r"TASSIGN\((acc\w*), (0x[0-9a-f]+)\);", src.text)
    assert {name for name, _ in offsets} == {"acc", "acc__1", "acc__2"}
    assert len({off for _, off in offsets}) == 1
    assert "TMATMUL_ACC(acc__2, acc__1, _t5, _t6);" in src.text
    assert "TMOV(acc__1" not in src.text  # no copy into the holder
    assert "TCVT(_t8, _t7, RoundMode::CAST_ROUND);" in src.text  # a float result: no saturation


def test_generated_kernels_are_pto_isa_programs() -> None:
    prog = lower(accumulate.specialize(t(16, 64), t(64, 16), t(16, 16, dtype="float16")).program).program
    text = generate_kernel(prog.functions["accumulate_k0"]).text
    assert "#include <pto/pto-inst.hpp>" in text
    assert "#include <simpler/kernel_args.hpp>" in text
    assert "using namespace pto;" in text
    # the __gm__/__aicore__ macros come from a header, so every leading line is an include
    # (the toolchain precompiles them: its precompiled prelude)
    head = text.split("\n\n", 1)[0].splitlines()
    assert head[1:] == [
        "#include <cstdint>",
        "#include <limits>",
        "#include <simpler/kernel_prologue.hpp>",
        "#include <pto/pto-inst.hpp>",
        "#include <simpler/kernel_args.hpp>",
    ]
    assert "SIMPLER_DEFINE_KERNEL_ABI();" in text
    assert "pt::" not in text
    assert "simpler::tile" not in text
    assert "simpler/tile" not in text
    assert "TileLeft<float, 16, 16, -1, -1>" in text
    assert "TileAcc<float, 16, 16, -1, -1>" in text


def test_generated_sources_compile(tmp_path: Path, cpp_check) -> None:  # type: ignore[no-untyped-def]
    files = []
    r1 = compile_to_files(
        orchestrated.specialize(t(32, 16, dtype="float16"), t(32, 16, dtype="float16"), 3),
        tmp_path / "o",
        contract="PROGRAM",
        platform="a2a3sim",
    )
    r2 = compile_to_files(
        accumulate.specialize(t(16, 64), t(64, 16), t(16, 16, dtype="float16")),
        tmp_path / "a",
        contract="KERNEL",
        platform="a2a3sim",
    )
    for r in (r1, r2):
        files += [f for f in r.files if f.suffix == ".cpp"]
    cpp_check(files)


def _include_closure(cmd: list[str], source: Path) -> list[str]:
    """Every header ``source`` includes, directly or not, as the compiler resolves them (``-M``:
    system headers too)."""
    out = subprocess.run(
        [*cmd, "-M", str(source)], capture_output=True, text=True, check=True, timeout=300
    ).stdout
    return out.replace("\\\n", " ").split()[2:]  # after "target:" and the source itself


def test_no_generated_source_includes_the_old_tile_library(tmp_path: Path, cpp_toolchain) -> None:  # type: ignore[no-untyped-def]
    r = compile_to_files(
        orchestrated.specialize(t(32, 16, dtype="float16"), t(32, 16, dtype="float16"), 3),
        tmp_path,
        contract="PROGRAM",
        platform="a2a3sim",
    )
    sources = [f for f in r.files if f.suffix == ".cpp"]
    kernels = [f for f in sources if "pto/pto-inst.hpp" in f.read_text()]
    orchestrations = [f for f in sources if f not in kernels]
    assert kernels
    assert orchestrations
    inc = cpp_toolchain[cpp_toolchain.index("-I") + 1]
    host = [shutil.which("g++") or shutil.which("clang++") or "g++", "-std=c++17", "-I", inc]
    for cmd, files, must in (
        (cpp_toolchain, kernels, ("/pto/pto-inst.hpp", "/simpler/kernel_abi.hpp")),
        (host, orchestrations, ("/simpler/dtype.hpp", "/simpler/runtime/orchestration.hpp")),
    ):
        for f in files:
            deps = _include_closure(cmd, f)
            for want in must:  # the closure is real: the headers the source is built from
                assert any(d.endswith(want) for d in deps), (f.name, want, deps)
            old = [d for d in deps if "/simpler/tile/" in d or d.endswith("/simpler/tile.hpp")]
            assert not old, f"{f.name} includes the old tile library: {old}"


@pl.jit.incore
def _double(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    pl.store(pl.add(pl.load(a, [0, 0], [16, 16]), pl.load(a, [0, 0], [16, 16])), [0, 0], o)
    return o


@pl.jit
def staged_loop(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    for _i in pl.range(3):
        tmp = pl.create_tensor([16, 16], dtype=pl.FP32)
        tmp = _double(a, tmp)
        o = _double(tmp, o)
    return o


def test_orchestration_loop_allocating_per_iteration_opens_a_runtime_scope(tmp_path: Path, cpp_check) -> None:  # type: ignore[no-untyped-def]
    r = compile_to_files(
        staged_loop.specialize(t(16, 16), t(16, 16)), tmp_path, contract="PROGRAM", platform="a2a3sim"
    )
    text = (tmp_path / r.metadata.orchestration.source).read_text()
    begin = text.index("orch.scope_begin()")
    assert begin < text.index("orch.alloc_tensor(") < text.index("orch.scope_end()")
    assert r.metadata.return_aliases == (1,)
    cpp_check([f for f in r.files if f.suffix == ".cpp"])


@pl.jit
def no_return(a: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        c[:] = pl.add(a, 1.0)


def test_orchestration_without_return_statement_returns_success(tmp_path: Path, cpp_check) -> None:  # type: ignore[no-untyped-def]
    r = compile_to_files(
        no_return.specialize(t(16, 16), t(16, 16)), tmp_path, contract="PROGRAM", platform="a2a3sim"
    )
    assert r.metadata.return_count == 0
    text = (tmp_path / r.metadata.orchestration.source).read_text()
    assert text.rstrip().endswith("return 0;\n}")
    cpp_check([f for f in r.files if f.suffix == ".cpp"])  # -Wreturn-type would fail without it
