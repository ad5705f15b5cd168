"""pypto-runtime benchmark: instruction counts of the per-call paths (issue 32).

Wall time on the shared 2-core machine moves by 2x with other load; the number of instructions a
call executes does not. This script counts them with valgrind's callgrind for a 64x64 FP32 add:
the ``@pl.jit`` call (hot path), the ``CompiledProgram`` call, and the chip's own round trip
(``Worker.run`` of materialised arguments), against ``np.add(a, b, out=c)``, so a regression of
the hot path shows in one run of ``nox -s bench`` whatever the load.

How: the program is compiled into a fresh store first (natively); then a child Python runs under
``valgrind --tool=callgrind --instr-atstart=no`` (no instrumentation while it imports and warms
up: ``WARM`` calls of each path), and brackets ``N`` calls of each path with callgrind client
requests (a small helper library built here with the system compiler from ``valgrind/callgrind.h``): start
instrumentation and zero the counters, run, dump. The figure is the dumped instruction total
over ``N``: every thread of the process is counted (the chip's threads too), so a call that
hands work to a core thread that spins shows its spinning.

Set ``PYPTO_BENCH_CALLGRIND_DIR`` to keep the dumps (``callgrind_annotate`` shows where a
call's instructions go). Skipped, with the reason, when valgrind, its header or a C compiler is missing.

    python packages/pypto-runtime/benchmarks/bench_instructions.py      # or: nox -s bench
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from pypto_testing.bench import report

CALLS = 200
# Calls of each path before it is counted: more than a ring's task window (256 slots by
# default), so that the counted calls reuse task slots whose vectors are already allocated, as
# every call after the chip's first few hundred does (a fresh slot allocates its task's tensor
# and argument vectors once, ~800 instructions).
WARM = 300

HELPER = r"""
#include <valgrind/callgrind.h>
extern "C" void pypto_cg_start(void) { CALLGRIND_START_INSTRUMENTATION; CALLGRIND_ZERO_STATS; }
extern "C" void pypto_cg_dump(const char* name) { CALLGRIND_DUMP_STATS_AT(name); CALLGRIND_STOP_INSTRUMENTATION; }
"""

CHILD = r"""
import ctypes, sys
import numpy as np
import pypto.language as pl
import pypto.runtime as rt
from pypto.runtime.worker import register_on_shared_worker

@pl.jit
def add64(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        pl.store(pl.add(pl.load(a, [0, 0], [64, 64]), pl.load(b, [0, 0], [64, 64])), [0, 0], c)
    return c

calls, warm = int(sys.argv[2]), int(sys.argv[3])
rng = np.random.default_rng(0)
a = rng.standard_normal((64, 64), dtype=np.float32)
b = rng.standard_normal((64, 64), dtype=np.float32)
c = np.empty_like(a)
prog = rt.compile(add64, a, b, c)
config = rt.RunConfig()
prog(a, b, c)  # computes the call plan
plan = prog.artifact._call_plan
mat = plan._materialize((a, b, c))
if calls == 0:  # the compile-only pass
    sys.exit(0)
lib = ctypes.CDLL(sys.argv[1])
worker, handle = register_on_shared_worker(prog.artifact.chip_callable(), config.platform)
paths = {
    "numpy": lambda: np.add(a, b, out=c),
    "jit": lambda: add64(a, b, c),
    "prog": lambda: prog(a, b, c),
    "chip": lambda: worker.run(handle, mat),
}
for name, f in paths.items():
    for _ in range(warm):
        f()
    lib.pypto_cg_start()
    for _ in range(calls):
        f()
    lib.pypto_cg_dump(name.encode())
np.testing.assert_array_equal(c, a + b)
"""

# Dumps of the paths, in the child's order.
ROWS = {
    "jit": "@pl.jit call, 64x64 FP32 add (hot path)",
    "prog": "CompiledProgram call, 64x64 FP32 add",
    "chip": "chip round trip (Worker.run of materialised args)",
}


def _skip(why: str) -> None:
    print(f"bench_instructions: skipped: {why}")


def _totals(out_dir: Path) -> dict[str, int]:
    """Instruction totals per dump name, from callgrind's dump files."""
    found: dict[str, int] = {}
    for path in out_dir.glob("callgrind.out*"):
        text = path.read_text(encoding="utf-8", errors="replace")
        name = re.search(r"^desc: Trigger: Client Request: (\S+)", text, re.M)
        total = re.search(r"^(?:summary|totals): (\d+)", text, re.M)
        if name and total:
            found[name.group(1)] = found.get(name.group(1), 0) + int(total.group(1))
    return found


def main() -> None:
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        _skip("valgrind is not installed (apt-get install valgrind)")
        return
    cxx = shutil.which(os.environ.get("CXX", "g++")) or shutil.which("c++")
    if cxx is None:
        _skip("no C++ compiler for the callgrind helper")
        return
    with tempfile.TemporaryDirectory(prefix="pypto-bench-cg-") as tmp:
        work = Path(tmp)
        src = work / "cg.cpp"
        src.write_text(HELPER, encoding="utf-8")
        so = work / "libcg.so"
        built = subprocess.run(
            [cxx, "-O1", "-shared", "-fPIC", str(src), "-o", str(so)],
            check=False,
            capture_output=True,
            text=True,
        )
        if built.returncode != 0:
            _skip(
                f"cannot build the callgrind helper (valgrind/callgrind.h missing?): {built.stderr.strip()[:200]}"
            )
            return
        child = work / "child.py"
        child.write_text(CHILD, encoding="utf-8")
        # valgrind does not decode AVX-512: kernels are built by a compiler wrapper that adds
        # -mno-avx512f to the toolchain's -march=native (another toolchain identity, so another
        # artifact than the timed runs use; the instruction counts are of AVX2 code).
        wrapper = work / "cxx-no-avx512"
        wrapper.write_text(f'#!/bin/sh\nexec "{cxx}" "$@" -mno-avx512f\n', encoding="utf-8")
        wrapper.chmod(0o755)
        env = dict(os.environ, PYPTO_CACHE_DIR=str(work / "store"), CXX=str(wrapper))
        # Compile natively first: the child under valgrind then loads the artifact from the store.
        first = subprocess.run(
            [sys.executable, str(child), "-", "0", "0"],
            check=False,
            env=env,
            capture_output=True,
            text=True,
        )
        if first.returncode != 0:
            print(first.stderr[-3000:])
            raise SystemExit("bench_instructions: compiling the program failed")
        cmd = [
            valgrind,
            "--tool=callgrind",
            "--instr-atstart=no",
            f"--callgrind-out-file={work}/callgrind.out.%p",
            sys.executable,
            str(child),
            str(so),
            str(CALLS),
            str(WARM),
        ]
        done = subprocess.run(cmd, check=False, env=env, capture_output=True, text=True, timeout=1800)
        if done.returncode != 0:
            print(done.stderr[-3000:])
            raise SystemExit(f"bench_instructions: the child under callgrind failed ({done.returncode})")
        totals = _totals(work)
        keep = os.environ.get("PYPTO_BENCH_CALLGRIND_DIR")
        if keep:  # for callgrind_annotate: where a call's instructions go
            Path(keep).mkdir(parents=True, exist_ok=True)
            for path in work.glob("callgrind.out*"):
                shutil.copy(path, keep)
    missing = [k for k in ("numpy", *ROWS) if k not in totals]
    if missing:
        raise SystemExit(f"bench_instructions: no callgrind dump for {missing} (found {sorted(totals)})")
    base = totals["numpy"] / CALLS
    print(f"\ninstructions per call (callgrind, {CALLS} calls each, all threads)")
    print(f"  np.add(a, b, out=c): {base:,.0f}")
    for key, label in ROWS.items():
        per = totals[key] / CALLS
        print(f"  {label}: {per:,.0f} ({per / base:.1f}x np.add)")
        report(f"instructions: {label}", per, base, "np.add(out=)", "instr")


if __name__ == "__main__":
    main()
