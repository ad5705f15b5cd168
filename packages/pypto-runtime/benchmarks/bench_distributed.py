"""pypto-runtime benchmark: cross-rank operations of a 2-rank program on both data paths
(issue 15), as ratios to a gloo ``all_reduce`` of the same bytes measured in the same run.

Figures, per data path (shared memory; the process group, where every cross-rank operation is a
request carried over gloo by the ranks' host processes):

- an 8 KiB ``remote_load`` (a [32, 64] FP32 tile from the peer's window);
- a 2-rank barrier round trip (``pld.tensor.barrier``).

A dispatch has a fixed cost (command delivery through the TCPStore, polled), so each figure is the
difference of two dispatches of one program, timed inside the ranks (``DistributedWorker.
rank_seconds``: the launches alone), one running the operation ``K`` more times than the other,
divided by ``K``; best of several dispatches, the smaller of the two ranks (the rank that reaches
the first barrier last waits least there). The baseline is ``torch.distributed.all_reduce`` of
8 KiB (2048 FP32) between two gloo processes started by this script, per call, best of rounds.

    python packages/pypto-runtime/benchmarks/bench_distributed.py      # or: nox -s bench
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import time
from typing import Any

import torch

import pypto.language as pl
import pypto.language.distributed as pld
from pypto.ir import DistributedConfig
from pypto.runtime import RunConfig
from pypto_testing.bench import report

ROWS, COLS = 32, 64  # 8 KiB of FP32
NBYTES = ROWS * COLS * 4


@pl.jit
def _per_rank(
    y: pl.Out[pl.Tensor[[ROWS, COLS], pl.FP32]],
    data: pld.DistributedTensor[[ROWS, COLS], pl.FP32],
    sig: pld.DistributedTensor[[2, 1], pl.INT32],
    loads: pl.Scalar[pl.INT32],
    barriers: pl.Scalar[pl.INT32],
):
    with pl.at(level=pl.Level.CORE_GROUP):
        ctx = pld.get_comm_ctx(data)
        peer = (pld.rank(ctx) + 1) % pld.nranks(ctx)
        sig = pld.tensor.barrier(sig)  # both ranks start together
        t = pl.full([ROWS, COLS], dtype=pl.FP32, value=0.0)
        # each load is added in (a reassigned load that nothing reads could be hoisted out of the loop)
        for _ in pl.range(loads):
            t = pl.add(t, pld.tile.remote_load(data, peer=peer, offsets=[0, 0], shape=[ROWS, COLS]))
        for _ in pl.range(barriers):
            sig = pld.tensor.barrier(sig)
        y = pl.store(t, [0, 0], y)
    return y


@pl.jit.host
def _host(y: pl.Out[pl.Tensor], loads: int, barriers: int):
    data = pld.alloc_window_buffer([ROWS, COLS], dtype=pl.FP32)
    sig = pld.alloc_window_buffer([2, 1], dtype=pl.INT32)
    for r in pl.range(pld.world_size()):
        _per_rank(
            y[r],
            pld.window(data, [ROWS, COLS], dtype=pl.FP32),
            pld.window(sig, [2, 1], dtype=pl.INT32),
            loads,
            barriers,
            device=r,
        )


def _rank_time(path: str, loads: int, barriers: int, dispatches: int) -> float:
    """Best over dispatches of the smaller rank-side launch time of one 2-rank program."""
    y = torch.zeros((2, ROWS, COLS))
    config = RunConfig(distributed_config=DistributedConfig(device_ids=[0, 1], data_path=path))
    compiled = _host.compile(y, loads, barriers, config=config)
    best = float("inf")
    with compiled.prepare() as w:
        for _ in range(dispatches):
            w(y, loads, barriers)
            best = min(best, *w.rank_seconds)
    return best


def _per_op(path: str, which: str, k: int, dispatches: int) -> float:
    base = _rank_time(path, 0, 0, dispatches)
    more = _rank_time(path, k, 0, dispatches) if which == "load" else _rank_time(path, 0, k, dispatches)
    return max(more - base, 0.0) / k


def _allreduce_rank(rank: int, port: int, calls: int, rounds: int, out: Any) -> None:
    import torch.distributed as dist

    store = dist.TCPStore("127.0.0.1", port, 2, is_master=rank == 0)
    dist.init_process_group("gloo", store=store, rank=rank, world_size=2)
    t = torch.ones(NBYTES // 4)
    for _ in range(50):
        dist.all_reduce(t)
    best = float("inf")
    for _ in range(rounds):
        dist.barrier()
        t0 = time.perf_counter()
        for _ in range(calls):
            dist.all_reduce(t)
        best = min(best, (time.perf_counter() - t0) / calls)
    if rank == 0:
        out.put(best)
    dist.destroy_process_group()


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _allreduce_seconds(calls: int = 200, rounds: int = 5) -> float:
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    port = _free_port()
    procs = [ctx.Process(target=_allreduce_rank, args=(r, port, calls, rounds, out)) for r in range(2)]
    for p in procs:
        p.start()
    try:
        return float(out.get(timeout=120))
    finally:
        for p in procs:
            p.join(timeout=30)


def main() -> None:
    quick = "--quick" in sys.argv
    k = 50 if quick else 200
    dispatches = 3 if quick else 6
    os.environ.setdefault("PYPTO_CACHE", "1")
    allreduce = _allreduce_seconds()
    rows = []
    for path in ("shared_memory", "process_group"):
        for which, label in (("load", "8 KiB remote_load"), ("barrier", "2-rank barrier round trip")):
            sec = _per_op(path, which, k, dispatches)
            rows.append((f"{label} ({path})", sec))
            report(
                f"distributed: {label} ({path})",
                sec * 1e6,
                allreduce * 1e6,
                "gloo all_reduce of 8 KiB, 2 processes",
                "us",
            )
    print(f"\n2 ranks, per operation (timed inside the ranks, {k} extra operations per dispatch)")
    print(f"{'figure':<48} {'us':>10} {'x all_reduce':>14}")
    print(f"{'gloo all_reduce, 8 KiB (baseline)':<48} {allreduce * 1e6:>10.1f} {1.0:>14.2f}")
    for name, sec in rows:
        print(f"{name:<48} {sec * 1e6:>10.1f} {sec / allreduce:>14.4g}")


if __name__ == "__main__":
    main()
