"""Tiles and the simulator's AICore stacks: a kernel the compiler accepts always runs, and one the
hardware could not hold is refused at compile time instead of killing the process.

Kernels keep their tiles on the AICore thread's stack. Those threads get an explicit stack
(simpler's kCoreThreadStackBytes) instead of the process default, which follows RLIMIT_STACK
(anything from "unlimited" down to a few hundred KiB): the child process here sets the default
thread stack to 128 KiB (pthread_setattr_default_np, as a small RLIMIT_STACK would, without
starving the compiler subprocesses), where a default-sized thread cannot hold the 192 KiB of
tiles of a kernel that fills the Unified Buffer (it died with SIGSEGV before the stacks were
sized).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

CHILD = textwrap.dedent(
    """
    import ctypes
    import sys
    import numpy as np
    import pypto.language as pl
    import pypto.runtime
    from pypto.ir.platforms import BufferCapacityError

    N = 128

    @pl.jit
    def fills_ub(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        # three [128, 128] FP32 tiles live at once: 192 KiB, exactly the a2a3 Unified Buffer
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="fills_ub"):
            t = pl.load(a, [0, 0], [N, N])
            u = pl.add(t, t)
            v = pl.mul(u, t)  # t and u are read again below: three storages
            pl.store(pl.sub(pl.add(v, u), t), [0, 0], out)
        return out

    @pl.jit
    def too_big(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="too_big"):
            t = pl.load(a, [0, 0], [2048, 1024])
            pl.store(pl.add(t, t), [0, 0], out)  # the sum over t: 8 MiB
        return out

    libc = ctypes.CDLL(None, use_errno=True)
    attr = ctypes.create_string_buffer(256)  # >= sizeof(pthread_attr_t)
    assert libc.pthread_attr_init(attr) == 0
    assert libc.pthread_attr_setstacksize(attr, ctypes.c_size_t(128 * 1024)) == 0
    assert libc.pthread_setattr_default_np(attr) == 0  # threads created from now on: 128 KiB

    a = np.full((N, N), 3.0, np.float32)
    out = np.zeros_like(a)
    fills_ub(a, out)
    assert (out == 21.0).all(), out
    big = np.ones((2048, 1024), np.float32)
    try:
        too_big(big, np.empty_like(big))
    except BufferCapacityError as exc:
        print("refused:", exc.message)
    else:
        sys.exit("too_big ran")
    print("ok")
    """
)


@pytest.mark.skipif(sys.platform != "linux", reason="pthread_setattr_default_np is glibc's")
def test_kernels_run_whatever_the_stack_limit_and_oversized_ones_are_refused(tmp_path: Path) -> None:
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    env = dict(os.environ, PYPTO_CACHE_DIR=str(tmp_path / "store"))
    proc = subprocess.run(
        [sys.executable, str(script)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, (proc.returncode, proc.stdout, proc.stderr[-3000:])
    assert "ok" in proc.stdout
    assert "kernel 'too_big" in proc.stdout
    assert "Vec tiles need 8192 KiB but the UB (Unified Buffer) of a2a3sim holds 192 KiB" in proc.stdout
