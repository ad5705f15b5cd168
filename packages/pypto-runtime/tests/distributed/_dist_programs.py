"""What the distributed tests (test_distributed*.py) share: the run configuration of ``n``
simulated chips, the check that a closed worker left no rank process and no shared-memory
segment behind, the two-rank program y = 2 * x (``twice_host``), the program that adds its input into each rank's window (``accumulate_host``),
the chip part of the ``@pl.program`` host orchestrators (``chip_functions``) and
the program whose ranks wait on a signal (the wait-timeout and dead-rank tests of both data
paths).

The test modules import it by name (``from _dist_programs import ...``); conftest.py puts this
folder on sys.path.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pto_backend
import pytest
import torch

import pypto.language as pl
import pypto.language.distributed as pld
from pypto.ir import DistributedConfig
from pypto.runtime import RunConfig
from pypto_testing.forms import add_method

__all__ = [
    "COLS",
    "ROWS",
    "accumulate_host",
    "accumulate_rank",
    "accumulated",
    "alive",
    "assert_cleaned",
    "chip_functions",
    "cleaned",
    "config",
    "needs_host_comm_path",
    "needs_wait_timeout",
    "stuck",
    "stuck_host",
    "stuck_rank",
    "twice_chip",
    "twice_host",
    "windows",
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


@contextlib.contextmanager
def cleaned(w: Any) -> Iterator[Any]:
    """Yields the prepared worker ``w``; after the block, closes it and checks ``assert_cleaned``
    for its rank processes and segments."""
    pids, segments = w.rank_pids, w.segment_names
    try:
        yield w
    finally:
        w.close()
    assert_cleaned(pids, segments)


def chip_functions(r: int, c: int) -> tuple[Any, Any]:
    """The chip part of a ``@pl.program`` host orchestrator over [r, c] FP32 tensors: the kernel
    ``add_tiles`` and the orchestration ``chip_add`` (out = a + b). A program class binds them in
    its body: ``add_tiles, chip_add = chip_functions(R, C)``."""

    class Chip:
        add_tiles = add_method(r, c)

        @pl.function(type=pl.FunctionType.Orchestration)
        def chip_add(
            self,
            a: pl.Tensor[[r, c], pl.FP32],
            b: pl.Tensor[[r, c], pl.FP32],
            out: pl.Out[pl.Tensor[[r, c], pl.FP32]],
        ) -> pl.Tensor[[r, c], pl.FP32]:
            return self.add_tiles(a, b, out)

    return Chip.add_tiles, Chip.chip_add


def windows(*specs: tuple[list[int], Any]) -> Callable[[], list[Any]]:
    """In a ``@pl.jit.host`` body (which runs as Python when it compiles): one window buffer per
    ``(shape, dtype)`` of ``specs``; calling the result gives a launch its views of them
    (``pld.window(buf, shape, dtype=dtype)`` of each, in ``specs`` order)."""
    bufs = [(pld.alloc_window_buffer(shape, dtype=dtype), shape, dtype) for shape, dtype in specs]
    return lambda: [pld.window(buf, shape, dtype=dtype) for buf, shape, dtype in bufs]


ROWS, COLS = 4, 16  # a rank's slice of the programs below


# -- two ranks, y = 2 * x ---------------------------------------------------------------------


@pl.jit.incore
def twice(x: pl.Tensor, y: pl.Out[pl.Tensor]):
    t = pl.load(x, [0, 0], [ROWS, COLS])
    return pl.store(pl.add(t, t), [0, 0], y)


@pl.jit
def twice_chip(x: pl.Tensor, y: pl.Out[pl.Tensor]):
    return twice(x, y)


@pl.jit.host
def twice_host(x: pl.Tensor, y: pl.Out[pl.Tensor]):
    """``x`` and ``y`` are [2, ROWS, COLS] FP32: rank r writes y[r] = 2 * x[r]."""
    for r in pl.range(2):
        twice_chip(x[r], y[r], device=r)


# -- each rank adds its input into its window ---------------------------------------------------


@pl.jit.incore
def accumulate(
    x: pl.Tensor[[ROWS, COLS], pl.FP32],
    y: pl.Out[pl.Tensor[[ROWS, COLS], pl.FP32]],
    acc: pld.DistributedTensor[[ROWS, COLS], pl.FP32],
    rank: pl.Scalar[pl.INT32],
):
    # acc += x through the rank's window (which starts zeroed), then y = acc + acc + rank
    t = pl.add(pl.load(acc, [0, 0], [ROWS, COLS]), pl.load(x, [0, 0], [ROWS, COLS]))
    acc = pl.store(t, [0, 0], acc)
    back = pl.load(acc, [0, 0], [ROWS, COLS])
    out = pl.add(pl.add(back, back), pl.cast(rank, target_type=pl.FP32))
    y = pl.store(out, [0, 0], y)
    return y


@pl.jit
def accumulate_rank(
    x: pl.Tensor[[ROWS, COLS], pl.FP32],
    y: pl.Out[pl.Tensor[[ROWS, COLS], pl.FP32]],
    acc: pld.DistributedTensor[[ROWS, COLS], pl.FP32],
    rank: pl.Scalar[pl.INT32],
):
    return accumulate(x, y, acc, rank)


@pl.jit.host
def accumulate_host(x: pl.Tensor, y: pl.Out[pl.Tensor]):
    """``x`` and ``y`` are [n, ROWS, COLS] FP32 (one [ROWS, COLS] slice a rank)."""
    buf = pld.alloc_window_buffer([ROWS, COLS], dtype=pl.FP32)
    for r in pl.range(pld.world_size()):
        accumulate_rank(x[r], y[r], pld.window(buf, [ROWS, COLS], dtype=pl.FP32), r, device=r)


def accumulated(x: torch.Tensor) -> torch.Tensor:
    """What ``accumulate_host`` writes to ``y`` for ``x`` (a fresh window): 2 * x + rank."""
    ranks = torch.arange(x.shape[0], dtype=torch.float32).view(-1, 1, 1)
    return 2 * x + ranks


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
