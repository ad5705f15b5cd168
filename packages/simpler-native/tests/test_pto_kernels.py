"""PTO-ISA kernels on the simulated chip: compiled against simpler.get_pto_include(), their tiles
placed in the running core's on-chip buffers, their synchronisation and placement checked."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from worker_args import vadd_args

import simpler
from simpler import ArgDirection as D
from simpler import toolchain

# out = a + b over a 1-D slice of at most 64 floats, as a PTO-ISA program. -DNO_SYNC drops the
# MTE2 -> V synchronisation; -DPAST_UB places a tile past the end of the UB.
PTO_VADD = """
#include <cstdint>
#include <pto/pto-inst.hpp>
#include <simpler/kernel_abi.hpp>
#include <simpler/wire/chip_tensor.hpp>
using namespace pto;
SIMPLER_DEFINE_KERNEL_ABI();

using S = Shape<1, 1, 1, 1, DYNAMIC>;
using St = Stride<1, 1, 1, 1, DYNAMIC>;
using G = GlobalTensor<float, S, St>;
using V = Tile<TileType::Vec, float, 1, 64, BLayout::RowMajor, -1, -1>;

static G view(std::int64_t arg) {
    const auto& t = *reinterpret_cast<const simpler::ChipTensor*>(arg);
    float* p = reinterpret_cast<float*>(static_cast<std::uintptr_t>(t.buffer.addr)) + t.start_offset;
    return G(p, S(t.shapes[0]), St(t.strides[0]));
}

extern "C" __attribute__((visibility("default"))) void vadd(std::int64_t* args) {
    G ga = view(args[0]), gb = view(args[1]), gc = view(args[2]);
    const unsigned n = static_cast<unsigned>(gc.GetShape(4));
    V ta(1, n), tb(1, n), tc(1, n);
    TASSIGN(ta, 0x0);
    TASSIGN(tb, 0x100);
#ifdef PAST_UB
    TASSIGN(tc, 192 * 1024 - 128);
#else
    TASSIGN(tc, 0x200);
#endif
#ifdef ACC_AT_200K
    TileAcc<float, 16, 16> acc;  // 1 KiB at 200 KiB: inside a5's 256 KiB L0C, past a2a3's 128 KiB
    TASSIGN(acc, 200 * 1024);
#endif
    TLOAD(ta, ga);
    TLOAD(tb, gb);
#ifndef NO_SYNC
    set_flag(PIPE_MTE2, PIPE_V, EVENT_ID0);
    wait_flag(PIPE_MTE2, PIPE_V, EVENT_ID0);
#endif
    TADD(tc, ta, tb);
    set_flag(PIPE_V, PIPE_MTE3, EVENT_ID0);
    wait_flag(PIPE_V, PIPE_MTE3, EVENT_ID0);
    TSTORE(gc, tc);
}
"""


def test_get_pto_include_holds_only_pto() -> None:
    root = Path(simpler.get_pto_include())
    assert sorted(p.name for p in root.iterdir()) == ["pto"]
    assert (root / "pto" / "pto-inst.hpp").is_file()


def test_the_core_buffers_have_the_platform_sizes(orchestration_binary: bytes) -> None:
    for platform, fits in (("a5sim", True), ("a2a3sim", False)):
        w = simpler.Worker(platform=platform, aic_threads=1, aiv_threads=1)
        w.init()
        try:
            run, want, c = _run(w, orchestration_binary, "ACC_AT_200K")
            if fits:
                run.result(timeout=60)
                np.testing.assert_array_equal(c, want)
            else:
                with pytest.raises(
                    simpler.SimplerError, match=r"ends past the buffer's end \(L0C holds 131072 bytes\)"
                ):
                    run.result(timeout=60)
        finally:
            w.close()


def _run(
    worker: simpler.Worker, orchestration_binary: bytes, *defines: str
) -> tuple[Any, np.ndarray, np.ndarray]:
    binary = toolchain.Toolchain().compile_shared(
        {"pto_vadd.cpp": PTO_VADD},
        extra_flags=[f"-D{d}" for d in defines],
        include_dirs=[simpler.get_pto_include()],
    )
    kernel = simpler.CoreCallable.build([D.In, D.In, D.Out], binary, "aiv", entry="vadd")
    h = worker.register(
        simpler.ChipCallable.build(
            [D.In, D.In, D.Out, D.Scalar], "vadd_tiles", orchestration_binary, children=[(0, kernel)]
        )
    )
    a = np.arange(200, dtype=np.float32)
    b = np.full(200, 0.25, dtype=np.float32)
    c = np.zeros_like(a)
    return worker.submit(h, vadd_args(a, b, c, 64)), a + b, c


def test_a_synchronised_pto_kernel_runs_in_the_core_buffers(
    worker: simpler.Worker, orchestration_binary: bytes
) -> None:
    # Four tasks on one AIV thread: each invocation starts with fresh checks over the same buffers.
    run, want, c = _run(worker, orchestration_binary)
    run.result(timeout=60)
    np.testing.assert_array_equal(c, want)


@pytest.mark.parametrize(
    ("define", "message"),
    [
        (
            "NO_SYNC",
            r"kernel 'vadd'.* failed: TADD reads tile Vec FLOAT32 \[1, 64\] at UB\+0x0 \(bytes at UB\+0x0\) written by "
            r"TLOAD on PIPE_MTE2 without set_flag/wait_flag\(PIPE_MTE2, PIPE_V\)",
        ),
        (
            "PAST_UB",
            r"TASSIGN: Vec FLOAT32 \[1, 64\] tile \(256 bytes\) at UB\+0x2ff80 ends past the buffer's end",
        ),
    ],
)
def test_pto_kernel_errors_fail_the_task(
    worker: simpler.Worker, orchestration_binary: bytes, define: str, message: str
) -> None:
    run, _, _ = _run(worker, orchestration_binary, define)
    with pytest.raises(simpler.SimplerError, match=message):
        run.result(timeout=60)
