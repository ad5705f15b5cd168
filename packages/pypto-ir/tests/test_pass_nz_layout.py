"""NZ layout lowering: logical [R, C] / [B, R, C] -> unpadded blocked form in element units.

The block is Ascend's fractal NZ block as torch_npu stores it: 16 rows x C0 = 32 / itemsize
columns. C0 is pinned here as literals per dtype, not derived from the code under test.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pypto_ir_test_helpers import HostArray

import pypto.language as pl
from pypto.ir.dtypes import DataType
from pypto.ir.errors import KernelError
from pypto.ir.param_info import Layout, ParamInfo, SignatureError, nz_block_shape
from pypto.ir.passes import nz_layout


def _numel(shape: tuple[int, ...]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


# Ascend C0 (block columns) per dtype: one 32-byte block row.
C0 = {
    DataType.FP16: 16,
    DataType.BF16: 16,
    DataType.INT8: 32,
    DataType.UINT8: 32,
    DataType.INT16: 16,
    DataType.FP32: 8,
    DataType.INT32: 8,
    DataType.INT64: 4,
}


@pytest.mark.parametrize("dtype", sorted(C0, key=lambda d: d.value))
def test_block_is_16_rows_by_32_bytes(dtype: DataType) -> None:
    assert nz_block_shape(dtype) == (16, C0[dtype])
    assert nz_block_shape(dtype.value) == (16, C0[dtype])


@settings(max_examples=40, deadline=None)
@given(
    rb=st.integers(1, 16),
    cb=st.integers(1, 8),
    b=st.one_of(st.none(), st.integers(1, 4)),
    dtype=st.sampled_from([DataType.FP16, DataType.BF16, DataType.INT8, DataType.FP32]),
)
def test_blocked_form_preserves_elements_bytes_and_dtype(
    rb: int, cb: int, b: int | None, dtype: DataType
) -> None:
    r, c = 16 * rb, C0[dtype] * cb
    logical = (r, c) if b is None else (b, r, c)
    p = ParamInfo("w", "In", logical, dtype, Layout.NZ)
    q = nz_layout.lower_param(p)
    assert q.dtype is dtype
    assert q.layout is Layout.NZ
    assert q.is_blocked
    assert not p.is_blocked
    assert q.shape == (*logical[:-2], cb, rb, 16, C0[dtype])
    assert _numel(q.shape) == _numel(logical)  # type: ignore[arg-type]
    assert _numel(q.shape) * dtype.itemsize == _numel(logical) * dtype.itemsize  # type: ignore[arg-type]
    assert ParamInfo.from_json(q.to_json()) == q


def test_blocked_shapes_match_torch_npu_examples() -> None:
    # Logical [32, 64]: FP16 blocks of 16 x 16, INT8 16 x 32, FP32 16 x 8.
    assert nz_layout.blocked_shape((32, 64), "FP16") == (4, 2, 16, 16)
    assert nz_layout.blocked_shape((32, 64), "BF16") == (4, 2, 16, 16)
    assert nz_layout.blocked_shape((32, 64), "INT8") == (2, 2, 16, 32)
    assert nz_layout.blocked_shape((32, 64), "FP32") == (8, 2, 16, 8)
    assert nz_layout.blocked_shape((3, 32, 64), "INT8") == (3, 2, 2, 16, 32)


def test_dynamic_batch_and_rows_stay_dynamic() -> None:
    assert nz_layout.blocked_shape((-1, 64, 32), "FP16") == (-1, 2, 4, 16, 16)
    assert nz_layout.blocked_shape((-1, 32), "FP16") == (2, -1, 16, 16)
    assert nz_layout.blocked_shape((-1, 64, 64), "INT8") == (-1, 2, 4, 16, 32)
    assert nz_layout.blocked_shape((64, -1), "FP32") == (-1, 4, 16, 8)


def test_nd_and_scalar_params_are_unchanged() -> None:
    p = ParamInfo("x", "In", (3, 5), "FP32")
    assert nz_layout.lower_param(p) is p
    s = ParamInfo("s", "In", None, "FP32")
    assert nz_layout.lower_param(s) is s


@pytest.mark.parametrize(
    ("shape", "dtype", "message"),
    [
        ((20, 32), "FP16", "rows must be a multiple of 16"),
        ((32, 8), "FP16", "cols must be a multiple of 16"),
        ((2, 16, 17), "FP16", "cols must be a multiple of 16"),
        ((32, 48), "INT8", "cols must be a multiple of 32 for INT8"),
        ((32, 16), "INT8", "cols must be a multiple of 32 for INT8"),
        ((24, 64), "INT8", "rows must be a multiple of 16"),
        ((16, 12), "FP32", "cols must be a multiple of 8 for FP32"),
        ((8, 16), "FP32", "rows must be a multiple of 16"),
    ],
)
def test_unpadded_form_needs_whole_blocks(shape: tuple[int, ...], dtype: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        nz_layout.lower_param(ParamInfo("w", "In", shape, dtype, Layout.NZ))


def test_fp32_accepts_columns_of_8_and_int8_needs_32() -> None:
    assert nz_layout.blocked_shape((16, 8), "FP32") == (1, 1, 16, 8)
    assert nz_layout.blocked_shape((16, 24), "FP32") == (3, 1, 16, 8)
    with pytest.raises(ValueError, match="multiple of 32"):
        nz_layout.blocked_shape((16, 16), "INT8")


@pytest.mark.parametrize(
    ("shape", "dtype"),
    [
        ((2, 2, 16, 16), "INT8"),  # 16 x 16 is not INT8's block
        ((2, 2, 16, 16), "FP32"),
        ((3, 2, 2, 16, 16), "FP32"),
        ((2, 2, 16, 32), "FP16"),
        ((2, 2, 16, 8), "BF16"),
    ],
)
def test_param_info_rejects_blocked_shapes_of_another_dtype(shape: tuple[int, ...], dtype: str) -> None:
    with pytest.raises(SignatureError, match=r"blocked \[\.\., C/\d+, R/16, 16, \d+\] shape for " + dtype):
        ParamInfo("w", "In", shape, dtype, Layout.NZ)


@pytest.mark.parametrize(
    ("shape", "dtype"),
    [
        ((2, 2, 16, 32), "INT8"),
        ((4, 2, 16, 8), "FP32"),
        ((3, 4, 2, 16, 16), "BF16"),
        ((2, 2, 16, 32), "UINT8"),
    ],
)
def test_param_info_accepts_the_dtypes_blocked_shape(shape: tuple[int, ...], dtype: str) -> None:
    p = ParamInfo("w", "In", shape, dtype, Layout.NZ)
    assert p.is_blocked
    with pytest.raises(ValueError, match="already the blocked NZ form"):
        nz_layout.lower_param(p)


def test_a_blocked_shape_is_never_taken_as_logical() -> None:
    q = nz_layout.lower_param(ParamInfo("w", "In", (32, 64), "FP16", Layout.NZ))
    with pytest.raises(ValueError, match="already the blocked NZ form"):
        nz_layout.lower_param(q)


@pl.jit
def nz_tensor_op(w: pl.Tensor[[32, 32], pl.FP16, pl.NZ], out: pl.Out[pl.Tensor[[32, 32], pl.FP16]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(w, w)
    return out


def test_tensor_level_ops_on_nz_tensors_load_with_the_nz_layout() -> None:
    from pypto.ir.codegen import generate_kernel
    from pypto.ir.nodes import Assign, Call, walk_stmts
    from pypto.ir.pipeline import lower

    prog = lower(
        nz_tensor_op.specialize(HostArray((32, 32), "float16"), HostArray((32, 32), "float16")).program
    ).program
    k = prog.functions["nz_tensor_op_k0"]
    loads = [
        s.value
        for s in walk_stmts(k.body)
        if isinstance(s, Assign) and isinstance(s.value, Call) and s.value.op == "tile.load"
    ]
    assert [c.attr("layout") for c in loads] == [Layout.NZ]
    text = generate_kernel(k).text
    assert "sk::gm_view_nz<" in text
    assert re.search(r"sk::gm_view<\w+>\(out_gm", text)


@pl.jit
def nz_bad_rows(w: pl.Tensor[[24, 32], pl.FP16, pl.NZ], out: pl.Out[pl.Tensor[[24, 32], pl.FP16]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        pl.store(pl.load(w, [0, 0], [8, 32]), [0, 0], out)
    return out


def test_nz_parameter_that_cannot_be_blocked_is_rejected() -> None:
    from pypto.ir.pipeline import lower

    prog = nz_bad_rows.specialize(HostArray((24, 32), "float16"), HostArray((24, 32), "float16")).program
    with pytest.raises(KernelError, match="rows must be a multiple of 16"):
        lower(prog)


@pl.jit
def nz_batched(
    w: pl.Tensor[[pl.dynamic("B"), 32, 64], pl.FP16, pl.NZ], out: pl.Out[pl.Tensor[[32, 64], pl.FP16]]
):
    with pl.at(level=pl.Level.CORE_GROUP):
        pl.store(pl.load(w, [1, 0, 16], [1, 32, 16]), [0, 0], out[:, 0:16])
    return out


def test_compiled_metadata_keeps_logical_params_and_blocked_lowered_params(tmp_path, cpp_check) -> None:  # type: ignore[no-untyped-def]
    from pypto.ir.compile import compile_to_files

    r = compile_to_files(
        nz_batched.specialize(HostArray((3, 32, 64), "float16"), HostArray((32, 64), "float16")),
        tmp_path,
        contract="KERNEL",
        platform="a2a3sim",
    )
    w, lw = r.metadata.params[0], r.metadata.lowered_params[0]
    assert w.shape == (-1, 32, 64)
    assert not w.is_blocked
    assert lw.shape == (-1, 4, 2, 16, 16)
    assert lw.is_blocked
    assert r.metadata.kernels[0].params[0].layout is Layout.NZ
    kernel = (tmp_path / r.metadata.kernels[0].source).read_text()
    assert "sk::gm_view_nz<" in kernel
    cpp_check([f for f in r.files if f.suffix == ".cpp"])


K = pl.dynamic("K")


def nz_cols(dtype: pl.DataType, c0: int) -> pl.JITFunction:
    """Copies an NZ ``[32, K]`` tensor of ``dtype`` in column blocks of ``c0`` (its Ascend block width)."""

    @pl.jit
    def copy(w: pl.Tensor[[32, K], dtype, pl.NZ], out: pl.Out[pl.Tensor[[32, K], dtype]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            for j in pl.range(K // c0):
                pl.store(pl.load(w, [0, j * c0], [32, c0]), [0, j * c0], out)
        return out

    return copy


@pytest.mark.parametrize(
    "case",
    [
        (nz_cols(pl.INT8, 32), "int8", (-1, 2, 16, 32), "(static_cast<std::int64_t>(w.shapes[0]) * 32)"),
        (nz_cols(pl.FP32, 8), "float32", (-1, 2, 16, 8), "(static_cast<std::int64_t>(w.shapes[0]) * 8)"),
    ],
    ids=["int8", "fp32"],
)
def test_one_and_four_byte_nz_params_lower_to_their_ascend_blocks(tmp_path, cpp_check, case) -> None:  # type: ignore[no-untyped-def]
    fn, np_dtype, lowered, cols_expr = case
    from pypto.ir.compile import compile_to_files

    r = compile_to_files(
        fn.specialize(HostArray((32, 128), np_dtype), HostArray((32, 128), np_dtype)),
        tmp_path,
        contract="KERNEL",
        platform="a2a3sim",
    )
    w, lw = r.metadata.params[0], r.metadata.lowered_params[0]
    assert w.shape == (32, -1)
    assert lw.shape == lowered
    assert lw.is_blocked
    kernel = (tmp_path / r.metadata.kernels[0].source).read_text()
    # The dynamic logical column count comes back from the blocked dims as C/C0 * C0.
    assert cols_expr in kernel
    assert "sk::gm_view_nz<" in kernel
    cpp_check([f for f in r.files if f.suffix == ".cpp"])


_DRIVER = r"""
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <vector>

#include <simpler/wire/chip_tensor.hpp>

extern "C" void @ENTRY@(std::int64_t* args);
extern "C" const char* simpler_kernel_take_error();

namespace {

simpler::ChipTensor describe(void* base, std::uint64_t bytes, std::initializer_list<std::uint32_t> shape) {
    simpler::ChipTensor t;
    std::memset(&t, 0, sizeof t);
    t.buffer.addr = reinterpret_cast<std::uintptr_t>(base);
    t.buffer.size = bytes;
    t.ndims = static_cast<std::uint32_t>(shape.size());
    t.dtype = @DTYPE@;
    t.address_space = static_cast<std::uint8_t>(simpler::AddressSpace::DEVICE);
    int i = 0;
    for (std::uint32_t s : shape) t.shapes[i++] = s;
    std::uint32_t stride = 1;
    for (int k = static_cast<int>(t.ndims) - 1; k >= 0; --k) {
        t.strides[k] = stride;
        stride *= t.shapes[k];
    }
    return t;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 3) return 3;
    std::vector<unsigned char> w(@W_BYTES@), out(@OUT_BYTES@, 0);
    std::FILE* f = std::fopen(argv[1], "rb");
    if (!f || std::fread(w.data(), 1, w.size(), f) != w.size()) return 4;
    std::fclose(f);
    const simpler::ChipTensor w_t = describe(w.data(), w.size(), {@W_SHAPE@});
    const simpler::ChipTensor out_t = describe(out.data(), out.size(), {@OUT_SHAPE@});
    std::int64_t args[2] = {@ARGS@};
    @ENTRY@(args);
    if (const char* e = simpler_kernel_take_error()) {
        std::fprintf(stderr, "kernel error: %s\n", e);
        return 2;
    }
    f = std::fopen(argv[2], "wb");
    if (!f || std::fwrite(out.data(), 1, out.size(), f) != out.size()) return 5;
    std::fclose(f);
    return 0;
}
"""


def _nz_pack(matrix: list[list[float | int]], c0: int) -> list[float | int]:
    """Reference packing, written from the torch_npu definition: [C/C0, R/16, 16, C0] row-major."""
    rows, cols = len(matrix), len(matrix[0])
    return [
        matrix[rb * 16 + r][cb * c0 + c]
        for cb in range(cols // c0)
        for rb in range(rows // 16)
        for r in range(16)
        for c in range(c0)
    ]


def test_generated_nz_kernels_read_torch_npu_storage_through_the_tile_library(  # type: ignore[no-untyped-def]
    tmp_path, cpp_toolchain
) -> None:
    """Compile INT8 and FP32 NZ kernels, build them against the PTO-ISA headers, and run them on
    storage packed the torch_npu way: the ND output must be the logical matrix."""
    import subprocess
    from array import array

    from pypto.ir.compile import compile_to_files

    prefix = cpp_toolchain
    rows, cols = 32, 128
    cases = {
        "int8": (
            nz_cols(pl.INT8, 32),
            DataType.INT8,
            "b",
            lambda r, c: (r * 131 + c * 7 + 3) % 251 - 125,
            32,
        ),
        "float32": (nz_cols(pl.FP32, 8), DataType.FP32, "f", lambda r, c: float(r * 1000 + c), 8),
    }
    builds = {}
    for np_dtype, (fn, dtype, code, value, c0) in cases.items():
        out_dir = tmp_path / np_dtype
        r = compile_to_files(
            fn.specialize(HostArray((rows, cols), np_dtype), HostArray((rows, cols), np_dtype)),
            out_dir,
            contract="KERNEL",
            platform="a2a3sim",
        )
        meta = r.metadata.kernels[0]
        w_shape = (cols // c0, rows // 16, 16, c0)
        lowered = r.metadata.lowered_params[0].shape
        assert lowered is not None
        assert all(d in (-1, e) for d, e in zip(lowered, w_shape, strict=True))
        nbytes = rows * cols * dtype.itemsize
        addr = {"w": "reinterpret_cast<std::int64_t>(&w_t)", "out": "reinterpret_cast<std::int64_t>(&out_t)"}
        driver = (
            _DRIVER.replace("@ENTRY@", meta.entry)
            .replace("@DTYPE@", str(dtype.wire_code))
            .replace("@W_BYTES@", str(nbytes))
            .replace("@OUT_BYTES@", str(nbytes))
            .replace("@W_SHAPE@", ", ".join(map(str, w_shape)))
            .replace("@OUT_SHAPE@", f"{rows}, {cols}")
            .replace("@ARGS@", ", ".join(addr[p.name] for p in meta.params))
        )
        (out_dir / "driver.cpp").write_text(driver)
        matrix = [[value(i, j) for j in range(cols)] for i in range(rows)]
        (out_dir / "w.bin").write_bytes(array(code, _nz_pack(matrix, c0)).tobytes())
        exe = out_dir / "run"
        cmd = [
            *prefix,
            "-O1",
            str(out_dir / meta.source),
            str(out_dir / "driver.cpp"),
        ]
        proc = subprocess.Popen(
            [*cmd, "-o", str(exe)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        builds[np_dtype] = (proc, exe, out_dir, code, matrix)
    for np_dtype, (proc, exe, out_dir, code, matrix) in builds.items():
        log, _ = proc.communicate(timeout=300)
        assert proc.returncode == 0, f"{np_dtype}: building the kernel failed:\n{log}"
        run = subprocess.run(
            [str(exe), str(out_dir / "w.bin"), str(out_dir / "out.bin")],
            check=False,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert run.returncode == 0, f"{np_dtype}: the kernel failed ({run.returncode}): {run.stderr}"
        got = array(code, (out_dir / "out.bin").read_bytes()).tolist()
        assert got == [v for row in matrix for v in row], np_dtype
