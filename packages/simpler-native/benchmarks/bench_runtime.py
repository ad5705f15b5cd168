"""Benchmarks of the simulated chip: runtime overhead per task and end-to-end tiled kernels.

Every figure is printed beside a baseline measured in the same run, as a ratio:
- per-task overhead (empty kernels through the runtime) vs calling the same kernel entry
  directly from C through ctypes, one call per task;
- tiled vector add and tiled matmul through the runtime vs torch (CPU) if importable, else numpy;
- a 384x384x384 FP32 matmul in 64x64 tiles whose kernel is a PTO-ISA cube pipeline
  (TLOAD -> Mat -> TMOV Left/Right -> TMATMUL_ACC -> TSTORE, as pypto-ir generates it) on one cube thread,
  vs ``torch.matmul`` on one thread (the same thread count), and the old scalar tile matmul
  (triple loop) in the same run for comparison;
- the host_build_graph runtime (HBG) vs TMR on the same programs (empty-kernel graph, tiled
  vector add, tiled matmul, a one-task kernel-mode launch), TMR measured in the same run.

Run: ``python packages/simpler-native/benchmarks/bench_runtime.py [--quick]``.
"""

from __future__ import annotations

import argparse
import ctypes
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

import simpler
from pypto_testing.bench import print_table, report
from simpler import ArgDirection as D
from simpler import Buffer, DataType, TaskArgs, toolchain

CSRC = Path(__file__).resolve().parents[1] / "tests" / "csrc"
KERNELS = {
    0: ("vadd", [D.In, D.In, D.Out], "aiv"),
    4: ("matmul", [D.In, D.In, D.Out], "aic"),
    6: ("empty", [D.In], "aiv"),
}
ORCHS = {
    "vadd_tiles": [D.In, D.In, D.Out, D.Scalar],
    "matmul_tiles": [D.In, D.In, D.Out, D.Scalar],
    "empties": [D.In, D.Scalar],
}


# C[64, 64] = A[64, K] @ B[K, 64] (K a multiple of 64) as a PTO-ISA cube kernel, as pypto-ir
# generates one; the orchestration matmul_tiles submits one task per 64x64 block of C.
TILE_MATMUL = """
#include <cstdint>
#include <simpler/kernel_prologue.hpp>
#include <pto/pto-inst.hpp>
#include <simpler/kernel_args.hpp>

using namespace pto;
namespace sk = simpler::kernel;
SIMPLER_DEFINE_KERNEL_ABI();

static inline void sync(pipe_t from, pipe_t to) {
    set_flag(from, to, EVENT_ID0);
    wait_flag(from, to, EVENT_ID0);
}

extern "C" __attribute__((visibility("default"))) void tile_matmul(std::int64_t* args) {
    const simpler::ChipTensor& a = sk::tensor_arg(args[0]);
    const simpler::ChipTensor& b = sk::tensor_arg(args[1]);
    const simpler::ChipTensor& c = sk::tensor_arg(args[2]);
    constexpr auto f32 = static_cast<std::uint8_t>(simpler::DataType::FLOAT32);
    const int k = static_cast<int>(a.shapes[1]);
    Tile<TileType::Mat, float, 64, 64, BLayout::ColMajor, 64, 64, SLayout::RowMajor> ma, mb;
    TileLeft<float, 64, 64> l;
    TileRight<float, 64, 64> r;
    TileAcc<float, 64, 64> acc;
    TASSIGN(ma, 0x0);
    TASSIGN(mb, 0x4000);
    TASSIGN(l, 0x0);
    TASSIGN(r, 0x0);
    TASSIGN(acc, 0x0);
    for (int p = 0; p < k; p += 64) {
        sk::GmView<float> ga, gb;
        if (!sk::gm_view<float>(ga, "TLOAD a", a, f32, {0, p}, 64, 64)) return;
        if (!sk::gm_view<float>(gb, "TLOAD b", b, f32, {p, 0}, 64, 64)) return;
        TLOAD(ma, ga);
        TLOAD(mb, gb);
        sync(PIPE_MTE2, PIPE_MTE1);
        TMOV(l, ma);
        TMOV(r, mb);
        sync(PIPE_MTE1, PIPE_M);
        if (p == 0)
            TMATMUL(acc, l, r);
        else
            TMATMUL_ACC(acc, l, r);
        sync(PIPE_MTE1, PIPE_MTE2);  // ma, mb free for the next loads
        sync(PIPE_M, PIPE_MTE1);     // l, r free for the next moves
    }
    sync(PIPE_M, PIPE_FIX);
    sk::GmView<float> gc;
    if (!sk::gm_view<float>(gc, "TSTORE c", c, f32, {0, 0}, 64, 64)) return;
    TSTORE(gc, acc);
}
"""

# A scalar triple loop over the tiles' row-major storage (the matmul before the micro-kernel),
# for the before/after row: the kernel above with TMATMUL/TMATMUL_ACC replaced by this.
SCALAR_MATMUL = """
template <class Acc, class L, class R>
static void scalar_matmul(Acc& c, L& a, R& b, bool accumulate) {
    const int m = static_cast<int>(a.GetValidRow()), k = static_cast<int>(a.GetValidCol());
    const int n = static_cast<int>(b.GetValidCol());
    for (int i = 0; i < m; ++i) {
        float* crow = c.data() + i * Acc::Cols;
        if (!accumulate)
            for (int j = 0; j < n; ++j) crow[j] = 0.0f;
        const float* arow = a.data() + i * L::Cols;
        for (int p = 0; p < k; ++p) {
            const float av = arow[p];
            const float* brow = b.data() + p * R::Cols;
            // A pointer-width index: with an int index g++ 12 -O2 spends a register copy a step
            // (7 instructions, not the old tile library's 6), about 10% of this row.
#pragma GCC ivdep
            for (std::ptrdiff_t j = 0; j < n; ++j) crow[j] += av * brow[j];
        }
    }
}
"""


def scalar_tile_matmul_source() -> str:
    src = TILE_MATMUL.replace(
        "SIMPLER_DEFINE_KERNEL_ABI();", "SIMPLER_DEFINE_KERNEL_ABI();\n" + SCALAR_MATMUL
    )
    src = src.replace("TMATMUL(acc, l, r);", "scalar_matmul(acc, l, r, false);")
    return src.replace("TMATMUL_ACC(acc, l, r);", "scalar_matmul(acc, l, r, true);")


def best_of(fn: Callable[[], None], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def tensor(a: np.ndarray) -> simpler.Tensor:
    dt = "FLOAT32" if a.dtype == np.float32 else "INT64"
    return Buffer.wrap(a.ctypes.data, a.nbytes, owner=a).tensor(a.shape, dt)


def binary_args(a: np.ndarray, b: np.ndarray, c: np.ndarray, scalar: int) -> TaskArgs:
    """``(a In, b In, c Out, scalar UINT32)``: the arguments of ``vadd_tiles`` and ``matmul_tiles``."""
    args = TaskArgs().add_tensor(tensor(a), D.In).add_tensor(tensor(b), D.In).add_tensor(tensor(c), D.Out)
    return args.add_scalar(scalar, DataType.UINT32)


def ms_row(label: str, sim: Callable[[], None], ref: Callable[[], Any], repeat: int) -> tuple[str, ...]:
    """A table row: the best of ``repeat`` timings of ``sim`` and of ``ref`` in ms, and their ratio."""
    sim_s, ref_s = best_of(sim, repeat), best_of(ref, repeat)
    return (label, f"{sim_s * 1e3:.2f}", f"{ref_s * 1e3:.2f}", f"{sim_s / ref_s:.2f}x")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="smaller sizes (smoke run)")
    opts = parser.parse_args()
    n_tasks = 2_000 if opts.quick else 20_000
    n_vec = 1 << (18 if opts.quick else 22)
    n_mat = 128 if opts.quick else 384
    repeat = 3 if opts.quick else 5

    t0 = time.perf_counter()
    kbin = toolchain.compile_shared({"k.cpp": (CSRC / "test_kernels.cpp").read_text()})
    obin = toolchain.compile_shared({"o.cpp": (CSRC / "test_orchestrations.cpp").read_text()})
    compile_s = time.perf_counter() - t0
    children = [
        (fid, simpler.CoreCallable.build(sig, kbin, core, entry=entry))
        for fid, (entry, sig, core) in KERNELS.items()
    ]
    try:
        import torch

        baseline_name = f"torch {torch.__version__} CPU"
        add_ref: Callable[[Any, Any], Any] = torch.add
        mm_ref: Callable[[Any, Any], Any] = torch.matmul
        to_ref: Callable[[np.ndarray], Any] = torch.from_numpy
    except ImportError:
        baseline_name = f"numpy {np.__version__}"
        add_ref, mm_ref, to_ref = np.add, np.matmul, lambda a: a

    # The scalar tile matmul as it was built before: generic target flags (no -march=native).
    pto_root = toolchain.pto_include_dir()
    generic = toolchain.Toolchain(
        flags=tuple(f for f in toolchain.DEFAULT_FLAGS if f != "-march=native"),
        include_roots=() if pto_root is None else (pto_root,),
        pto_backend="simpler",
    )
    tile_bins = {
        "tile": toolchain.compile_kernel({"mm.cpp": TILE_MATMUL}),
        "scalar": generic.compile_shared({"mm.cpp": scalar_tile_matmul_source()}),
    }
    tile_children = {
        name: [(4, simpler.CoreCallable.build(KERNELS[4][1], data, "aic", entry="tile_matmul"))]
        for name, data in tile_bins.items()
    }

    rows: list[tuple[str, str, str, str]] = []
    with simpler.Worker(platform="a2a3sim") as w:
        w.init()
        h = {
            name: w.register(simpler.ChipCallable.build(sig, name, obin, children=children))
            for name, sig in ORCHS.items()
        }

        # 1. Per-task overhead: empty kernels through the runtime vs direct ctypes calls.
        x = np.zeros(16, dtype=np.float32)
        args = TaskArgs().add_tensor(tensor(x), D.In).add_scalar(n_tasks, DataType.INT64)
        w.run(h["empties"], args)  # warm
        runtime_s = best_of(lambda: w.run(h["empties"], args), repeat)
        with tempfile.NamedTemporaryFile(suffix=".so") as f:
            f.write(kbin)
            f.flush()
            lib = ctypes.CDLL(f.name)
            entry = lib.empty
            entry.argtypes = [ctypes.c_void_p]
            argv = (ctypes.c_int64 * 1)(0)

            def direct() -> None:
                for _ in range(n_tasks):
                    entry(argv)

            direct_s = best_of(direct, repeat)
        per_task = runtime_s / n_tasks * 1e6
        per_call = direct_s / n_tasks * 1e6
        report(
            "per-task overhead, long graph of empty kernels",
            per_task,
            per_call,
            "direct ctypes call",
            "us",
            bar=2.0,
            goal=1.0,
            on="value",
        )
        rows.append(
            (
                "per-task overhead (us)",
                f"{per_task:.2f}",
                f"{per_call:.2f} (ctypes call)",
                f"{per_task / per_call:.2f}x",
            )
        )
        rows.append(
            (
                "tasks per second",
                f"{n_tasks / runtime_s:,.0f}",
                f"{n_tasks / direct_s:,.0f} (ctypes call)",
                f"{direct_s / runtime_s:.2f}x",
            )
        )

        # 2. Tiled vector add.
        rng = np.random.default_rng(0)
        a = rng.standard_normal(n_vec).astype(np.float32)
        b = rng.standard_normal(n_vec).astype(np.float32)
        c = np.zeros_like(a)
        tile = 1 << 14
        vargs = binary_args(a, b, c, tile)
        w.run(h["vadd_tiles"], vargs)
        np.testing.assert_allclose(c, a + b)
        ra, rb = to_ref(a), to_ref(b)
        label = f"vector add {n_vec:,} f32, {n_vec // tile} tiles (ms)"
        rows.append(ms_row(label, lambda: w.run(h["vadd_tiles"], vargs), lambda: add_ref(ra, rb), repeat))

        # 3. Tiled matmul (plain-loop kernel).
        A = rng.standard_normal((n_mat, n_mat)).astype(np.float32)
        B = rng.standard_normal((n_mat, n_mat)).astype(np.float32)
        C = np.zeros_like(A)
        margs = binary_args(A, B, C, 64)
        w.run(h["matmul_tiles"], margs)
        np.testing.assert_allclose(C, A @ B, rtol=1e-3, atol=1e-3)
        rA, rB = to_ref(A), to_ref(B)
        label = f"matmul {n_mat}x{n_mat} f32, 64x64 tiles, plain-loop C kernel (ms)"
        rows.append(ms_row(label, lambda: w.run(h["matmul_tiles"], margs), lambda: mm_ref(rA, rB), repeat))

    # 4. The tile library's cube pipeline: 384x384x384 in 64x64 tiles on one cube thread, against
    # torch.matmul on one thread (same thread count); the old scalar tile matmul in the same run.
    n_tm = 384
    A = rng.standard_normal((n_tm, n_tm)).astype(np.float32)
    B = rng.standard_normal((n_tm, n_tm)).astype(np.float32)
    want = A.astype(np.float64) @ B.astype(np.float64)
    times: dict[str, float] = {}
    with simpler.Worker(platform="a2a3sim", aic_threads=1) as tw:
        tw.init()
        for name, kids in tile_children.items():
            th = tw.register(
                simpler.ChipCallable.build(ORCHS["matmul_tiles"], "matmul_tiles", obin, children=kids)
            )
            C = np.zeros_like(A)
            targs = binary_args(A, B, C, 64)
            tw.run(th, targs)
            np.testing.assert_allclose(C, want, rtol=1e-4, atol=1e-3)
            times[name] = best_of(lambda: tw.run(th, targs), repeat)  # noqa: B023 - called at once
    threads_before = None
    try:
        import torch

        threads_before = torch.get_num_threads()
        torch.set_num_threads(1)
        tA, tB = torch.from_numpy(A), torch.from_numpy(B)
        mm_one: Callable[[], Any] = lambda: torch.matmul(tA, tB)  # noqa: E731
        one_name = "torch.matmul, 1 thread"
    except ImportError:
        mm_one = lambda: np.matmul(A, B)  # noqa: E731
        one_name = "numpy matmul"
    try:
        mm_one()
        ref1_s = best_of(mm_one, max(repeat, 10))
    finally:
        if threads_before is not None:
            torch.set_num_threads(threads_before)
    labels = (("tile", "PTO-ISA kernel"), ("scalar", "before: scalar tile matmul, generic flags"))
    report(
        f"matmul {n_tm}^3 FP32 in 64x64 tiles, 1 cube thread",
        times["tile"] * 1e3,
        ref1_s * 1e3,
        one_name,
        "ms",
        bar=8.0,
        goal=3.0,
    )
    for name, label in labels:
        rows.append(
            (
                f"matmul {n_tm}^3 f32, 64x64 tiles, {label}, 1 cube thread (ms)",
                f"{times[name] * 1e3:.2f}",
                f"{ref1_s * 1e3:.2f} ({one_name})",
                f"{times[name] / ref1_s:.2f}x",
            )
        )

    # 5. Kernel mode: encode + copy-on-enqueue + AICPU decode/validate per launch, against the
    # same one-task run submitted in program mode.
    small = np.zeros(16, dtype=np.float32)
    one = TaskArgs().add_tensor(tensor(small), D.In).add_scalar(1, DataType.INT64)
    n_runs = 300 if opts.quick else 2000
    with simpler.Worker(platform="a2a3sim") as pw:
        pw.init()
        ph = pw.register(simpler.ChipCallable.build(ORCHS["empties"], "empties", obin, children=children))

        def program_runs() -> None:
            runs = [pw.submit(ph, one) for _ in range(n_runs)]
            for r in runs:
                r.result()

        program_runs()
        prog_s = best_of(program_runs, repeat)
    with simpler.Worker(platform="a2a3sim", execution_mode="kernel") as kw:
        kw.init(borrowed_context_generation=0x51_4D)
        kh = kw.register(simpler.ChipCallable.build(ORCHS["empties"], "empties", obin, children=children))

        def kernel_launches() -> None:
            for _ in range(n_runs):
                kw.launch(kh, one)
            kw.default_stream.synchronize()

        kernel_launches()
        kern_s = best_of(kernel_launches, repeat)
    rows.append(
        (
            "kernel-mode launch, 1 task (us)",
            f"{kern_s / n_runs * 1e6:.1f}",
            f"{prog_s / n_runs * 1e6:.1f} (program-mode submit)",
            f"{kern_s / prog_s:.2f}x",
        )
    )

    # 6. host_build_graph vs tensormap_and_ringbuffer on the same programs and arguments.
    hbg_programs = {
        "empties": (args, n_tasks, "graph of empty kernels, per task (us)"),
        "vadd_tiles": (vargs, 1, f"vector add {n_vec:,} f32, {n_vec // tile} tiles (ms)"),
        "matmul_tiles": (margs, 1, f"matmul {n_mat}x{n_mat} f32, 64x64 tiles (ms)"),
    }
    by_runtime: dict[str, dict[str, float]] = {}
    for runtime in simpler.RUNTIMES:
        got = by_runtime[runtime] = {}
        with simpler.Worker(platform="a2a3sim", runtime=runtime) as rw:
            rw.init()
            for name, (pargs, _, _) in hbg_programs.items():
                rh = rw.register(simpler.ChipCallable.build(ORCHS[name], name, obin, children=children))
                rw.run(rh, pargs)  # warm
                got[name] = best_of(lambda: rw.run(rh, pargs), repeat)  # noqa: B023 - called at once
        with simpler.Worker(platform="a2a3sim", runtime=runtime, execution_mode="kernel") as rk:
            rk.init(borrowed_context_generation=0x48_42 + len(by_runtime))
            kh = rk.register(simpler.ChipCallable.build(ORCHS["empties"], "empties", obin, children=children))

            def launches() -> None:
                for _ in range(n_runs):
                    rk.launch(kh, one)  # noqa: B023 - called at once
                rk.default_stream.synchronize()

            launches()
            got["launch"] = best_of(launches, repeat)
    tmr, hbg = by_runtime["tensormap_and_ringbuffer"], by_runtime["host_build_graph"]
    for name, (_, count, label) in hbg_programs.items():
        scale = 1e6 / count if count > 1 else 1e3
        rows.append(
            (
                f"HBG: {label}",
                f"{hbg[name] * scale:.2f}",
                f"{tmr[name] * scale:.2f} (TMR)",
                f"{hbg[name] / tmr[name]:.2f}x",
            )
        )
    rows.append(
        (
            "HBG: kernel-mode launch, 1 task (us)",
            f"{hbg['launch'] / n_runs * 1e6:.1f}",
            f"{tmr['launch'] / n_runs * 1e6:.1f} (TMR)",
            f"{hbg['launch'] / tmr['launch']:.2f}x",
        )
    )
    report(
        "host_build_graph per-task overhead, long graph of empty kernels",
        hbg["empties"] / n_tasks * 1e6,
        tmr["empties"] / n_tasks * 1e6,
        "tensormap_and_ringbuffer",
        "us",
        bar=3.0,
        goal=1.5,
    )

    header = ("benchmark", "a2a3sim", f"baseline ({baseline_name})", "ratio")
    print_table(f"simpler runtime (compile of test kernels: {compile_s:.2f} s)", header, rows)
    _ = statistics  # reserved for spread reporting
    return 0


if __name__ == "__main__":
    sys.exit(main())
