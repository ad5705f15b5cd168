"""What the distributed tests (test_distributed*.py) share: the run configuration of ``n``
simulated chips, the check that a closed worker left no rank process and no shared-memory
segment behind, and the program whose ranks wait on a signal (the wait-timeout and dead-rank
tests of both data paths).

The test modules import it by name (``from _dist_programs import ...``); conftest.py puts this
folder on sys.path.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pto_backend
import pytest

import pypto.language as pl
import pypto.language.distributed as pld
from pypto.ir import DistributedConfig
from pypto.runtime import RunConfig

__all__ = [
    "alive",
    "assert_cleaned",
    "config",
    "needs_host_comm_path",
    "needs_wait_timeout",
    "stuck",
    "stuck_host",
    "stuck_rank",
]


def config(n: int, **kw: object) -> RunConfig:
    """The run configuration of a program on chips ``0..n-1``; ``kw`` goes to DistributedConfig."""
    return RunConfig(distributed_config=DistributedConfig(device_ids=list(range(n)), **kw))


def needs_host_comm_path() -> None:
    """Skip the calling test on the official CPU backend (``PTO_ISA_ROOT``): its communication
    instructions and TLOAD/TSTORE dereference a peer's address, which on the process-group data
    path is not memory of the rank process (docs/pto-isa-backends.md)."""
    if pto_backend.official():
        pytest.skip(
            "official CPU backend: peers are reached by address, so only the shared-memory data path works"
        )


def needs_wait_timeout() -> None:
    """Skip the calling test on the official CPU backend: its TWAIT reports no timeout (it gives up
    silently after PTO_CPU_SIM_TWAIT_MAX_SPINS polls; docs/pto-isa-backends.md)."""
    if pto_backend.official():
        pytest.skip("official CPU backend: TWAIT has no timeout report")


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie still answers signal 0; its /proc state says it is gone
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except FileNotFoundError:
        return False


def assert_cleaned(pids: tuple[int, ...], segments: tuple[str, ...]) -> None:
    """Within 10 s no process of ``pids`` runs and no segment of ``segments`` is in /dev/shm."""
    deadline = time.monotonic() + 10
    while any(alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [p for p in pids if alive(p)] == []
    assert [s for s in segments if Path("/dev/shm", s).exists()] == []


# -- ranks waiting on a signal -----------------------------------------------------------------


@pl.jit.incore
def stuck(
    y: pl.Out[pl.Tensor[[1, 1], pl.INT32]],
    sig: pld.DistributedTensor[[2, 1], pl.INT32],
    who: pl.Scalar[pl.INT32],
    sent: pl.Scalar[pl.INT32],
):
    # rank `who` adds `sent` to rank 1's cell [1, 0]; every other rank waits for its own cell
    # [1, 0] to reach 3, which no `sent` below 3 satisfies (who = -1: every rank waits, none sends)
    me = pld.rank(pld.get_comm_ctx(sig))
    if me == who:
        pld.system.notify(sig, peer=1, offsets=[1, 0], value=sent, op=pld.NotifyOp.AtomicAdd)
    if me != who:
        pld.system.wait(sig, offsets=[1, 0], expected=3, cmp=pld.WaitCmp.Ge)
    pl.write(y, [0, 0], me)
    return y


@pl.jit
def stuck_rank(
    y: pl.Out[pl.Tensor[[1, 1], pl.INT32]],
    sig: pld.DistributedTensor[[2, 1], pl.INT32],
    who: pl.Scalar[pl.INT32],
    sent: pl.Scalar[pl.INT32],
):
    return stuck(y, sig, who, sent)


@pl.jit.host
def stuck_host(y: pl.Out[pl.Tensor], who: int, sent: int):
    """Two ranks (``y`` is [2, 1, 1] INT32): rank ``who`` sends ``sent``, the others wait for 3."""
    sig = pld.alloc_window_buffer([2, 1], dtype=pl.INT32)
    for r in pl.range(pld.world_size()):
        stuck_rank(y[r], pld.window(sig, [2, 1], dtype=pl.INT32), who, sent, device=r)
