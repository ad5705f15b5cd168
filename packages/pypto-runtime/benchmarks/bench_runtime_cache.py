"""pypto-runtime benchmarks: artifact cache and program-mode call overhead.

1. A 3-kernel program (matmul on AIC, bias add and exp on AIV) compiled in a fresh process
   with an empty store (cold: codegen + four builds: orchestration and three kernels) and again
   in another fresh process (cache hit: manifest validation + metadata), against one plain
   ``g++`` build (the toolchain's compiler and flags, no precompiled header) of one of its kernel
   translation units, which includes ``pto/pto-inst.hpp``. Cold compiles are measured with the
   toolchain's precompiled headers already cached (any program built before with this
   toolchain) and with an empty toolchain cache too (the first build after an install or a
   header change), and as they were built before (one compiler process at a time, every
   header parsed); each figure is the best of three fresh processes.
2. Per-call program-mode overhead: a 64x64 element-wise add run through a compiled program,
   beside numpy and torch (if installed) doing the same addition, in the same run.

    python packages/pypto-runtime/benchmarks/bench_runtime_cache.py      # or: nox -s bench
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import pypto.language as pl
import pypto.runtime as rt
from pypto_testing.bench import print_table, report
from pypto_testing.programs import add_one_tile, matmul_32

N = 32


@pl.jit.incore
def _bias(h: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    pl.store(pl.add(pl.load(h, [0, 0], [N, N]), pl.load(b, [0, 0], [N, N])), [0, 0], out)
    return out


@pl.jit.incore
def _exp(h: pl.Tensor, out: pl.Out[pl.Tensor]):
    pl.store(pl.exp(pl.load(h, [0, 0], [N, N])), [0, 0], out)
    return out


@pl.jit
def three_kernels(x: pl.Tensor, w: pl.Tensor, b: pl.Tensor, y: pl.Out[pl.Tensor]):
    h = pl.create_tensor([N, N], dtype=pl.FP32)
    h = matmul_32(x, w, h)
    g = pl.create_tensor([N, N], dtype=pl.FP32)
    g = _bias(h, b, g)
    y = _exp(g, y)
    return y


# the 64x64 FP32 add of one tile, shared with the tests (pypto_testing.programs)
add64 = add_one_tile


def _cpu() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def _child() -> None:
    """One fresh-process compile; prints the wall and CPU seconds (this process and the
    compilers it ran) spent in compile() as JSON."""
    if "--one-cpu" in sys.argv:  # builds one at a time, as before
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    x = np.zeros((N, N), np.float32)
    t0, c0 = time.perf_counter(), _cpu()
    prog = rt.compile(three_kernels, x, x, x, x)
    prog.artifact.chip_callable()  # binaries loaded and the callable assembled
    seconds, cpu = time.perf_counter() - t0, _cpu() - c0
    print(json.dumps({"seconds": seconds, "cpu": cpu, "kernels": len(prog.metadata.kernels)}))


def _fresh_compile(store: str, toolchain_cache: str, *, before: bool = False) -> tuple[float, float, float]:
    """(wall seconds inside compile, CPU seconds inside compile, wall seconds of the process).
    ``before``: as programs were built before, one compiler process at a time (the child runs
    on one CPU) and every header parsed (SIMPLER_PRECOMPILE=0)."""
    env = {**os.environ, "PYPTO_CACHE_DIR": store, "SIMPLER_CACHE_DIR": toolchain_cache}
    if before:
        env["SIMPLER_PRECOMPILE"] = "0"
    t0 = time.perf_counter()
    out = subprocess.run(
        [sys.executable, __file__, "--child", *(["--one-cpu"] if before else [])],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    wall = time.perf_counter() - t0
    data = json.loads(out.stdout.strip().splitlines()[-1])
    return float(data["seconds"]), float(data["cpu"]), wall


def _per_call(fn: object, repeat: int) -> float:
    f = fn  # type: ignore[assignment]
    for _ in range(min(20, repeat)):
        f()  # type: ignore[operator]
    t0 = time.perf_counter()
    for _ in range(repeat):
        f()  # type: ignore[operator]
    return (time.perf_counter() - t0) / repeat


def _exp_kernel_gxx(tmp: str) -> tuple[list[str], str]:
    """The plain compiler command (the kernel toolchain's compiler, flags and include roots, no
    precompiled header) that builds the program's exp kernel translation unit, and its short form."""
    from simpler import get_include, toolchain

    x = np.zeros((N, N), np.float32)
    with tempfile.TemporaryDirectory(prefix="pypto-bench-store-", dir=tmp) as store:
        os.environ["PYPTO_CACHE_DIR"] = store
        try:
            prog = rt.compile(three_kernels, x, x, x, x)
        finally:
            del os.environ["PYPTO_CACHE_DIR"]
        kernel = next(k for k in prog.metadata.kernels if "exp" in k.name)
        source = Path(tmp) / "exp_kernel.cpp"
        shutil.copyfile(Path(prog.path) / kernel.source, source)
    tc = toolchain.kernel_toolchain()  # the toolchain kernels build with (PTO_ISA_ROOT decides)
    roots = [f"-I{r}" for r in tc.include_roots]
    cmd = [tc.compiler, *tc.flags, *roots, f"-I{get_include()}", str(source), "-o", str(Path(tmp) / "k.so")]
    return cmd, f"{Path(tc.compiler).name} {' '.join(tc.flags)}"


def _run_gxx(cmd: list[str]) -> tuple[float, float]:
    t0, c0 = time.perf_counter(), _cpu()
    subprocess.run(cmd, check=True, capture_output=True)
    return time.perf_counter() - t0, _cpu() - c0


def main() -> None:
    # Each round: the baseline g++, then cold compiles in fresh processes: as built before;
    # with an empty toolchain cache; with the toolchain cache of the previous one (fresh store);
    # and a cache hit. Best of three rounds, interleaved so load changes hit every figure.
    runs: dict[str, list[tuple[float, float, float]]] = {
        k: [] for k in ("gxx", "before", "first", "cold", "hit")
    }
    with tempfile.TemporaryDirectory(prefix="pypto-bench-") as tmp:
        gxx_cmd, gxx_name = _exp_kernel_gxx(tmp)
        for i in range(3):
            tc_cache = os.path.join(tmp, f"toolchain-{i}")
            g_wall, g_cpu = _run_gxx(gxx_cmd)
            runs["gxx"].append((g_wall, g_cpu, g_wall))
            runs["before"].append(_fresh_compile(os.path.join(tmp, f"store-a{i}"), tc_cache, before=True))
            runs["first"].append(_fresh_compile(os.path.join(tmp, f"store-b{i}"), tc_cache))
            store = os.path.join(tmp, f"store-c{i}")
            runs["cold"].append(_fresh_compile(store, tc_cache))
            runs["hit"].append(_fresh_compile(store, tc_cache))
    best = {k: tuple(min(r[j] for r in v) for j in range(3)) for k, v in runs.items()}
    g_wall, g_cpu, _ = best["gxx"]
    report(
        "cold compile of a 3-kernel program, fresh store",
        best["cold"][0],
        g_wall,
        "one g++ of a kernel TU",
        "s",
        bar=3.0,
        goal=1.5,
    )

    def row(label: str, key: str, j: int = 0) -> tuple[str, ...]:
        wall, cpu = best[key][2 if j else 0], best[key][1]
        return (
            label,
            f"{wall * 1e3:.0f} ms",
            f"{wall / g_wall:.2f}x",
            "" if j else f"{cpu * 1e3:.0f} ms",
            "" if j else f"{cpu / g_cpu:.2f}x",
        )

    print_table(
        f"3-kernel program: compile in a fresh process (baseline: one `{gxx_name}` of its exp kernel"
        ", which includes pto/pto-inst.hpp; best of 3)",
        ("measurement", "wall", "ratio", "CPU", "CPU ratio"),
        [
            row("baseline: one g++ of a kernel translation unit", "gxx"),
            row("cold compile, fresh store (compile())", "cold"),
            row("cold compile, fresh store and toolchain cache (compile())", "first"),
            row("before: cold, one build at a time, no precompiled headers", "before"),
            row("cache hit (compile())", "hit"),
            row("cold: whole process", "cold", 1),
            row("cache hit: whole process", "hit", 1),
        ],
    )

    rng = np.random.default_rng(0)
    a = rng.standard_normal((64, 64)).astype(np.float32)
    b = rng.standard_normal((64, 64)).astype(np.float32)
    c = np.empty_like(a)
    prog = rt.compile(add64, a, b, c)
    prog(a, b, c)
    np.testing.assert_allclose(c, a + b)
    repeat = 300
    t_numpy = _per_call(lambda: np.add(a, b, out=c), repeat * 10)
    t_prog = _per_call(lambda: prog(a, b, c), repeat)
    t_jit = _per_call(lambda: add64(a, b, c), repeat)
    rows = [("numpy np.add(a, b, out=c)", f"{t_numpy * 1e6:.1f} us", "1.00x")]
    try:
        import torch

        ta, tb, tc = torch.from_numpy(a), torch.from_numpy(b), torch.from_numpy(c)
        t_torch = _per_call(lambda: torch.add(ta, tb, out=tc), repeat * 10)
        rows.append(("torch.add(a, b, out=c) (CPU)", f"{t_torch * 1e6:.1f} us", f"{t_torch / t_numpy:.2f}x"))
    except ImportError:
        rows.append(("torch.add (CPU)", "torch not installed", "-"))
    rows += [
        ("CompiledProgram call on a2a3sim", f"{t_prog * 1e6:.1f} us", f"{t_prog / t_numpy:.1f}x"),
        ("@pl.jit call on a2a3sim", f"{t_jit * 1e6:.1f} us", f"{t_jit / t_numpy:.1f}x"),
    ]
    print_table(
        "64x64 FP32 add: per-call program-mode overhead (baseline: numpy)",
        ("measurement", "time", "ratio to baseline"),
        rows,
    )


if __name__ == "__main__":
    if "--child" in sys.argv:
        _child()
    else:
        main()
