"""Cross-rank operations in kernels (``pld``): ranks reading, writing and signalling each
other's windows through shared memory, checked against torch.

One kernel exercises every operation, so one prepared 2-rank worker covers them (two
dispatches: the barrier and the windows are reused); the 4-rank run, a wait that times out and a
rank dying mid-wait start their own ranks (the last two on both data paths; all but the
process-group timeout are marked ``slow``). Compile-time checks need no ranks.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torch.distributed")

from _dist_programs import (  # noqa: E402
    assert_cleaned,
    config,
    needs_host_comm_path,
    needs_wait_timeout,
    stuck,
    stuck_host,
    windows,
)

import pypto.language as pl  # noqa: E402
import pypto.language.distributed as pld  # noqa: E402
from pypto.ir import KernelError  # noqa: E402
from pypto.runtime.distributed import DistributedRankError  # noqa: E402

COLS = 64
MAX_RANKS = 4  # the barrier signal has one cell per rank
TAG = 100


@pl.jit
def _per_rank(  # noqa: PLR0917 - a program takes its tensors positionally
    x: pl.Tensor[[1, COLS], pl.FP32],
    y: pl.Out[pl.Tensor[[4, COLS], pl.FP32]],
    data: pld.DistributedTensor[[1, COLS], pl.FP32],
    acc: pld.DistributedTensor[[1, COLS], pl.FP32],
    sig: pld.DistributedTensor[[MAX_RANKS, 1], pl.INT32],
    tag: pld.DistributedTensor[[1, 1], pl.INT32],
):
    with pl.at(level=pl.Level.CORE_GROUP):
        ctx = pld.get_comm_ctx(data)
        me = pld.rank(ctx)
        n = pld.nranks(ctx)
        nxt = (me + 1) % n

        # row 0: the sum over ranks of x, every rank loading every window (its own too)
        t = pl.load(x, [0, 0], [1, COLS])
        data = pl.store(t, [0, 0], data)
        sig = pld.tensor.barrier(sig)
        s = pl.full([1, COLS], dtype=pl.FP32, value=0.0)
        for p in pl.range(n):
            s = pl.add(s, pld.tile.remote_load(data, peer=p, offsets=[0, 0], shape=[1, COLS]))
        y = pl.store(s, [0, 0], y)

        # row 1: the next rank's 2 * x, after the windows were read and rewritten (the same signal
        # serves two more barriers: a barrier that left a tally would let the load run early)
        sig = pld.tensor.barrier(sig)
        data = pl.store(pl.mul(t, 2.0), [0, 0], data)
        sig = pld.tensor.barrier(sig)
        y = pl.store(pld.tile.remote_load(data, peer=nxt, offsets=[0, 0], shape=[1, COLS]), [1, 0], y)

        # row 2: every rank adds its 2 * x into rank 0's window, then reads that window back
        pld.tensor.put(acc, peer=0, src=data, atomic=pld.AtomicType.Add)
        sig = pld.tensor.barrier(sig)
        back = pld.tile.remote_load(acc, peer=0, offsets=[0, 0], shape=[1, COLS])
        y = pl.store(back, [2, 0], y)

        # row 3: a one-to-one handshake (Set / Eq): the tag the previous rank sent, then the
        # barrier signal's own cells after the last barrier (all zero: no tally is left)
        pld.system.notify(tag, peer=nxt, offsets=[0, 0], value=me + TAG, op=pld.NotifyOp.Set)
        pld.system.wait(tag, offsets=[0, 0], expected=(me + n - 1) % n + TAG, cmp=pld.WaitCmp.Eq)
        pl.write(y, [3, 0], pl.cast(pl.read(tag, [0, 0]), target_type=pl.FP32))
        sig = pld.tensor.barrier(sig)
        for i in pl.range(MAX_RANKS):
            pl.write(y, [3, i + 1], pl.cast(pl.read(sig, [i, 0]), target_type=pl.FP32))
    return y


@pl.jit.host
def _host(x: pl.Tensor, y: pl.Out[pl.Tensor]):
    views = windows(
        ([1, COLS], pl.FP32), ([1, COLS], pl.FP32), ([MAX_RANKS, 1], pl.INT32), ([1, 1], pl.INT32)
    )
    for r in pl.range(pld.world_size()):
        _per_rank(x[r], y[r], *views(), device=r)


def _expected(x: torch.Tensor) -> torch.Tensor:
    n = x.shape[0]
    y = torch.full((n, 4, COLS), -1.0)
    for r in range(n):
        y[r, 0] = x.sum(dim=0)[0]
        y[r, 1] = 2 * x[(r + 1) % n, 0]
        y[r, 2] = (2 * x).sum(dim=0)[0]
        y[r, 3, 0] = (r - 1) % n + TAG
        y[r, 3, 1 : 1 + MAX_RANKS] = 0
    return y


def _inputs(n: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    # small integers: every sum is exact whatever order the ranks add in
    return torch.randint(-8, 9, (n, 1, COLS), generator=g).float(), torch.full((n, 4, COLS), -1.0)


def _check(y: torch.Tensor, x: torch.Tensor) -> None:
    want = _expected(x)
    torch.testing.assert_close(y[:, :3], want[:, :3], rtol=0, atol=0)
    torch.testing.assert_close(y[:, 3, : 1 + MAX_RANKS], want[:, 3, : 1 + MAX_RANKS], rtol=0, atol=0)


def test_two_ranks_exchange_through_windows_and_the_worker_is_reused() -> None:
    x, y = _inputs(2, 0)
    compiled = _host.compile(x, y, config=config(2))
    with compiled.prepare() as w:
        pids, segments = w.rank_pids, w.segment_names
        w(x, y)
        _check(y, x)
        # a second dispatch: windows start zeroed again, the barrier signal is clean
        x2, y2 = _inputs(2, 1)
        w(x2, y2)
        _check(y2, x2)
    assert_cleaned(pids, segments)


@pytest.mark.slow
def test_four_ranks_exchange_through_windows() -> None:
    x, y = _inputs(4, 2)
    compiled = _host.compile(x, y, config=config(4))
    compiled(x, y)
    _check(y, x)


# -- a wait that is never satisfied -----------------------------------------------------------


@pytest.mark.parametrize(
    ("data_path", "sent", "seconds"),
    [
        pytest.param("shared_memory", 0, 3, marks=pytest.mark.slow, id="shared_memory"),
        pytest.param("process_group", 2, 2, id="process_group"),
    ],
)
def test_a_wait_past_the_timeout_fails_the_dispatch_naming_rank_signal_and_value(
    data_path: str, sent: int, seconds: int
) -> None:
    needs_wait_timeout()
    if data_path == "process_group":
        needs_host_comm_path()
    y = torch.zeros((2, 1, 1), dtype=torch.int32)
    compiled = stuck_host.compile(y, 0, sent, config=config(2, data_path=data_path))
    w = compiled.prepare()
    pids, segments = w.rank_pids, w.segment_names
    w.timeout = float(seconds)  # the ranks are up; each dispatch hands its kernels this wait timeout
    start = time.monotonic()
    try:
        with pytest.raises(DistributedRankError) as e:
            w(y, 0, sent)
    finally:
        w.close()
    assert time.monotonic() - start < 30
    assert e.value.rank == 1
    msg = str(e.value)
    assert "rank 1 failed in stuck_host() dispatch 1" in msg
    assert (
        f"TWAIT: rank 1 timed out after {seconds} s waiting for its signal (element 1 of window buffer 0)"
        in msg
    )
    # the value rank 0's notify set (on the process-group path, through rank 1's host process)
    assert f"to become >= 3; the value seen was {sent}" in msg
    assert_cleaned(pids, segments)


@pytest.mark.slow
@pytest.mark.parametrize("data_path", ["shared_memory", "process_group"])
def test_a_rank_dying_while_another_waits_fails_the_dispatch_and_stops_every_rank(data_path: str) -> None:
    y = torch.zeros((2, 1, 1), dtype=torch.int32)
    compiled = stuck_host.compile(y, -1, 0, config=config(2, data_path=data_path, timeout=60.0))
    w = compiled.prepare()
    pids, segments = w.rank_pids, w.segment_names
    killer = threading.Timer(2.0, os.kill, (pids[1], signal.SIGKILL))  # both ranks are waiting by then
    killer.start()
    start = time.monotonic()
    try:
        with pytest.raises(DistributedRankError, match=r"rank 1 died during stuck_host\(\) dispatch 1") as e:
            w(y, -1, 0)
    finally:
        killer.cancel()
        w.close()
    assert e.value.rank == 1
    assert time.monotonic() - start < 30  # not the 60 s wait timeout
    assert w.closed
    assert_cleaned(pids, segments)


# -- compile-time checks (no ranks) -----------------------------------------------------------


def _lower_kernel(body: str, where: Path) -> None:
    """Specialise a kernel whose body is ``body`` (window ``w`` FP32 [1, 64], signal ``s``)."""
    src = f"""
import pypto.language as pl
import pypto.language.distributed as pld

@pl.jit
def k(y: pl.Out[pl.Tensor[[1, 64], pl.FP32]],
      w: pld.DistributedTensor[[1, 64], pl.FP32],
      s: pld.DistributedTensor[[2, 1], pl.INT32]):
    with pl.at(level=pl.Level.CORE_GROUP):
{body}
    return y
"""
    import runpy

    path = where / "comm_check.py"
    path.write_text(src)
    k = runpy.run_path(str(path))["k"]
    k.lower(  # type: ignore[attr-defined]
        torch.zeros(1, 64), torch.zeros(1, 64), torch.zeros((2, 1), dtype=torch.int32)
    )


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            "        pld.system.notify(w, peer=0, offsets=[0, 0], value=1, op=pld.NotifyOp.Set)",
            r"pld.system.notify: target must be an INT32 window, got FP32",
        ),
        (
            "        pld.system.wait(s, offsets=[0, 0], expected=1, cmp=1)",
            r"pld.system.wait cmp must be pld.WaitCmp.Eq or pld.WaitCmp.Ge, got 1",
        ),
        (
            "        pld.system.wait(s, offsets=[0], expected=1, cmp=pld.WaitCmp.Ge)",
            r"pld.system.wait offsets: 1 offsets for a rank-2 window",
        ),
        (
            "        t = pld.tile.remote_load(w, peer=1.5, offsets=[0, 0], shape=[1, 64])",
            r"pld.tile.remote_load: peer must be an integer scalar",
        ),
        (
            "        pld.tensor.put(w, peer=0, src=s)",
            r"pld.tensor.put: dst is FP32 but src is INT32",
        ),
        (
            "        pld.tensor.put(w, peer=0, src=w, atomic=pl.AtomicType.Add, chunk_rows=4, pipeline=True)",
            r"pipeline=True needs chunk_rows > 0 and chunk_cols > 0",
        ),
    ],
)
def test_cross_rank_ops_are_checked_when_the_kernel_is_compiled(
    body: str, message: str, tmp_path: Path
) -> None:
    with pytest.raises((KernelError, TypeError), match=message):
        _lower_kernel(body, tmp_path)


def test_cross_rank_ops_run_only_in_kernels() -> None:
    with pytest.raises(RuntimeError, match=r"pld.system.notify\(\) is part of the kernel language"):
        pld.system.notify(None, 0, [0], 1, pld.NotifyOp.Set)


def test_a_kernel_on_one_chip_has_no_comm_context() -> None:
    # the same kernel run as a single-chip program: its first cross-rank op fails the run
    import simpler

    w = torch.zeros(1, 64)
    s = torch.zeros((2, 1), dtype=torch.int32)

    @pl.jit
    def solo(y: pl.Out[pl.Tensor[[1, 1], pl.INT32]], sig: pld.DistributedTensor[[2, 1], pl.INT32]):
        return stuck(y, sig, 0, 0)

    with pytest.raises(simpler.DeviceError, match=r"comm_rank: no comm context"):
        solo(torch.zeros((1, 1), dtype=torch.int32), s)
    del w
