"""The collectives (``pld.tensor.allreduce`` ... ``all_to_all_v``), ``pld.system.defer_wait``, the
region and chunk forms of ``put``/``get`` and ``remote_load(valid_shape=)``, checked against
torch on 2 and 4 ranks and on both data paths.

One kernel calls every collective, so one compiled program per rank count covers them: the
2-rank program runs on a shared-memory worker and on a process-group worker, the 4-rank one on
a shared-memory worker. A second program (a host orchestrator calling ``allreduce`` itself, its
signal synthesised) shares each worker. Compile-time refusals need no ranks.
"""

import functools
import time
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torch.distributed")

from _dist_programs import needs_host_comm_path  # noqa: E402

import pypto.language as pl  # noqa: E402
import pypto.language.distributed as pld  # noqa: E402
from pypto.ir import DistributedConfig, KernelError  # noqa: E402
from pypto.runtime import RunConfig  # noqa: E402
from pypto.runtime.distributed import DistributedRankError, DistributedWorker  # noqa: E402

C = 32  # columns of every row
M = 2  # rows per all_to_all_v block


def _rows(n: int) -> dict[str, int]:
    """Where each result lands in a rank's output rows."""
    at: dict[str, int] = {}
    row = 0
    for name, size in (
        ("sum", 1),
        ("ring_max", 1),
        ("prod", 1),
        ("bcast", 1),
        ("gather", n),
        ("scatter", 1),
        ("a2a", n * M),
        ("a2av", n * M),
        ("counts", 1),
        ("deferred", 1),
        ("valid", 2),
        ("region", 1),
    ):
        at[name] = row
        row += size
    at["total"] = row
    return at


@functools.cache
def _programs(n: int) -> tuple[Any, Any]:
    """The kernel-form host program and the host-form one, for ``n`` ranks."""
    at = _rows(n)
    rows, steps = at["total"], 2 * (n - 1)
    r_a2a = at["a2a"]
    r_a2av = at["a2av"]
    r_bcast = at["bcast"]
    r_counts = at["counts"]
    r_deferred = at["deferred"]
    r_gather = at["gather"]
    r_prod = at["prod"]
    r_region = at["region"]
    r_ring_max = at["ring_max"]
    r_scatter = at["scatter"]
    r_sum = at["sum"]
    r_valid = at["valid"]

    @pl.jit.incore
    def collectives(  # noqa: PLR0917 - a kernel takes its tensors positionally
        x: pl.Tensor[[n * M, C], pl.FP32],
        counts: pl.Tensor[[n, 1], pl.INT32],
        y: pl.Out[pl.Tensor[[rows, C], pl.FP32]],
        row: pld.DistributedTensor[[1, C], pl.FP32],
        blocks: pld.DistributedTensor[[n, C], pl.FP32],
        vblocks: pld.DistributedTensor[[n * M, C], pl.FP32],
        recv: pld.DistributedTensor[[n, 1], pl.INT32],
        sig: pld.DistributedTensor[[n, 1], pl.INT32],
        ring: pld.DistributedTensor[[steps, n], pl.INT32],
    ):
        me = pld.rank(pld.get_comm_ctx(sig))
        first = pl.load(x, [0, 0], [1, C])
        # allreduce: Sum (mesh), Max (ring), Prod (mesh), one signal each reused
        row = pl.store(first, [0, 0], row)
        row = pld.tensor.allreduce(row, sig, op=pld.ReduceOp.Sum)
        y = pl.store(pl.load(row, [0, 0], [1, C]), [r_sum, 0], y)
        row = pl.store(first, [0, 0], row)
        row = pld.tensor.allreduce(row, ring, op=pld.ReduceOp.Max, mode="ring")
        y = pl.store(pl.load(row, [0, 0], [1, C]), [r_ring_max, 0], y)
        row = pl.store(first, [0, 0], row)
        row = pld.tensor.allreduce(row, sig, op=pld.ReduceOp.Prod, mode="mesh")
        y = pl.store(pl.load(row, [0, 0], [1, C]), [r_prod, 0], y)
        # broadcast from the last rank
        row = pl.store(first, [0, 0], row)
        row = pld.tensor.broadcast(row, sig, root=n - 1)
        y = pl.store(pl.load(row, [0, 0], [1, C]), [r_bcast, 0], y)
        # allgather of x's first row (from a plain tensor)
        row = pl.store(first, [0, 0], row)
        blocks = pld.tensor.allgather(row, blocks, sig)
        y = pl.store(pl.load(blocks, [0, 0], [n, C]), [r_gather, 0], y)
        # remote_load of part of a tile from the next rank's gathered rows: only row 0 is loaded
        part = pld.tile.remote_load(
            blocks, peer=(me + 1) % n, offsets=[0, 0], shape=[2, C], valid_shape=[1, C]
        )
        y = pl.store(part, [r_valid, 0], y)
        sig = pld.tensor.barrier(sig)  # the next rank's rows are read before it rewrites them
        # reduce_scatter (Sum) of x's first n rows
        blocks = pl.store(pl.load(x, [0, 0], [n, C]), [0, 0], blocks)
        blocks = pld.tensor.reduce_scatter(blocks, sig, op=pld.ReduceOp.Sum)
        y = pl.store(pl.load(blocks, [me, 0], [1, C]), [r_scatter, 0], y)
        # all_to_all of x (blocks of M rows)
        vblocks = pld.tensor.all_to_all(x, vblocks, sig)
        y = pl.store(pl.load(vblocks, [0, 0], [n * M, C]), [r_a2a, 0], y)
        # all_to_all_v: blocks of M rows, counts from the host
        vblocks = pld.tensor.all_to_all_v(x, vblocks, sig, counts, recv)
        y = pl.store(pl.load(vblocks, [0, 0], [n * M, C]), [r_a2av, 0], y)
        for s in pl.range(n):
            pl.write(y, [r_counts, s], pl.cast(pl.read(recv, [s, 0]), target_type=pl.FP32))
        return y

    @pl.jit.incore
    def defer_send(
        x: pl.Tensor[[n * M, C], pl.FP32],
        row: pld.DistributedTensor[[1, C], pl.FP32],
        done: pld.DistributedTensor[[1], pl.INT32],
    ):
        # this task completes once the previous rank's row arrived; the kernel sends its own first
        me = pld.rank(pld.get_comm_ctx(done))
        nxt = (me + 1) % pld.nranks(pld.get_comm_ctx(done))
        pld.system.defer_wait(done, offsets=[0], expected=1, cmp=pld.WaitCmp.Ge)
        pld.tensor.put(row, nxt, x, dst_offsets=[0, 0], src_offsets=[1, 0], shape=[1, C])
        pld.system.notify(done, peer=nxt, offsets=[0], value=1, op=pld.NotifyOp.AtomicAdd)
        return row

    @pl.jit.incore
    def defer_read(
        y: pl.Out[pl.Tensor[[rows, C], pl.FP32]],
        row: pld.DistributedTensor[[1, C], pl.FP32],
        vblocks: pld.DistributedTensor[[n * M, C], pl.FP32],
    ):
        y = pl.store(pl.load(row, [0, 0], [1, C]), [r_deferred, 0], y)
        # a region get, chunked: row 1 of rank 0's all_to_all_v result (rank 0's x row 1)
        pld.tensor.get(
            row,
            0,
            vblocks,
            dst_offsets=[0, 0],
            src_offsets=[1, 0],
            shape=[1, C],
            chunk_rows=1,
            chunk_cols=8,
            pipeline=True,
        )
        y = pl.store(pl.load(row, [0, 0], [1, C]), [r_region, 0], y)
        return y

    @pl.jit
    def per_rank(  # noqa: PLR0917 - a program takes its tensors positionally
        x: pl.Tensor[[n * M, C], pl.FP32],
        counts: pl.Tensor[[n, 1], pl.INT32],
        y: pl.Out[pl.Tensor[[rows, C], pl.FP32]],
        row: pld.DistributedTensor[[1, C], pl.FP32],
        blocks: pld.DistributedTensor[[n, C], pl.FP32],
        vblocks: pld.DistributedTensor[[n * M, C], pl.FP32],
        recv: pld.DistributedTensor[[n, 1], pl.INT32],
        sig: pld.DistributedTensor[[n, 1], pl.INT32],
        ring: pld.DistributedTensor[[steps, n], pl.INT32],
        done: pld.DistributedTensor[[1], pl.INT32],
    ):
        y = collectives(x, counts, y, row, blocks, vblocks, recv, sig, ring)
        row = defer_send(x, row, done)
        y = defer_read(y, row, vblocks)
        return y

    @pl.jit.host
    def kernel_form(x: pl.Tensor, counts: pl.Tensor, y: pl.Out[pl.Tensor]):
        row = pld.alloc_window_buffer(C * pl.FP32.get_byte())
        blocks = pld.alloc_window_buffer([n, C], dtype=pl.FP32)
        vblocks = pld.alloc_window_buffer([n * M, C], dtype=pl.FP32)
        recv = pld.alloc_window_buffer([n, 1], dtype=pl.INT32)
        sig = pld.alloc_window_buffer([n, 1], dtype=pl.INT32)
        ring = pld.alloc_window_buffer([steps, n], dtype=pl.INT32)
        done = pld.alloc_window_buffer([1], dtype=pl.INT32)
        for r in pl.range(pld.world_size()):
            per_rank(
                x[r],
                counts[r],
                y[r],
                pld.window(row, [1, C], dtype=pl.FP32),
                pld.window(blocks, [n, C], dtype=pl.FP32),
                pld.window(vblocks, [n * M, C], dtype=pl.FP32),
                pld.window(recv, [n, 1], dtype=pl.INT32),
                pld.window(sig, [n, 1], dtype=pl.INT32),
                pld.window(ring, [steps, n], dtype=pl.INT32),
                pld.window(done, [1], dtype=pl.INT32),
                device=r,
            )

    @pl.jit
    def publish(x: pl.Tensor[[n * M, C], pl.FP32], data: pld.DistributedTensor[[1, C], pl.FP32]):
        with pl.at(level=pl.Level.CORE_GROUP):
            data = pl.store(pl.load(x, [0, 0], [1, C]), [0, 0], data)
        return data

    @pl.jit
    def consume(data: pld.DistributedTensor[[1, C], pl.FP32], out: pl.Out[pl.Tensor[[1, C], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            out = pl.store(pl.load(data, [0, 0], [1, C]), [0, 0], out)
        return out

    @pl.jit.host
    def host_form(x: pl.Tensor, out: pl.Out[pl.Tensor]):
        buf = pld.alloc_window_buffer([1, C], dtype=pl.FP32)
        for r in pl.range(pld.world_size()):
            publish(x[r], pld.window(buf, [1, C], dtype=pl.FP32), device=r)
        data = pld.tensor.allreduce(pld.window(buf, [1, C], dtype=pl.FP32), op=pld.ReduceOp.Min)
        for r in pl.range(pld.world_size()):
            consume(data, out[r], device=r)

    return kernel_form, host_form


def _inputs(n: int, seed: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    # quarters in [0.5, 1.5]: sums, maxima and products of a few are exact in FP32
    x = (torch.randint(2, 7, (n, n * M, C), generator=g) / 4.0).float()
    counts = torch.randint(0, M + 2, (n, n, 1), generator=g, dtype=torch.int32)  # some past the block
    y = torch.full((n, _rows(n)["total"], C), -1.0)
    return x, counts, y, torch.zeros((n, 1, C))


def _check(n: int, x: torch.Tensor, counts: torch.Tensor, y: torch.Tensor) -> None:
    at = _rows(n)
    first = x[:, 0]
    want = torch.full_like(y, -1.0)
    for r in range(n):
        w = want[r]
        w[at["sum"]] = first.sum(0)
        w[at["ring_max"]] = first.max(0).values
        w[at["prod"]] = first.prod(0)
        w[at["bcast"]] = first[n - 1]
        w[at["gather"] : at["gather"] + n] = first
        w[at["valid"]] = first[0]  # row 1 of the tile is outside its valid shape: not stored
        w[at["scatter"]] = x[:, r].sum(0)
        w[at["a2a"] : at["a2a"] + n * M] = x[:, r * M : (r + 1) * M].reshape(n * M, C)
        w[at["a2av"] : at["a2av"] + n * M] = x[:, r * M : (r + 1) * M].reshape(n * M, C)
        w[at["counts"], :n] = counts[:, r, 0].clamp(max=M).float()
        w[at["counts"], n:] = -1.0
        w[at["deferred"]] = x[(r - 1) % n, 1]
        w[at["region"]] = x[0, 1]
    torch.testing.assert_close(y, want, rtol=1e-6, atol=0)


def _config(n: int, **kw: object) -> RunConfig:
    return RunConfig(distributed_config=DistributedConfig(device_ids=list(range(n)), **kw))


def _run(n: int, data_path: str, seeds: tuple[int, ...]) -> DistributedWorker:
    """Compile (once per rank count) and run both programs on one worker, a dispatch per seed;
    returns the worker, still open."""
    kernel_form, host_form = _programs(n)
    x, counts, y, out = _inputs(n, 0)
    a = kernel_form.compile(x, counts, y, config=_config(n))
    b = host_form.compile(x, out, config=_config(n))
    _check_sources(a)
    worker = DistributedWorker([a, b], data_path=data_path)
    try:
        assert worker.data_path == data_path
        for seed in seeds:
            x, counts, y, out = _inputs(n, seed)
            worker.run(a, x, counts, y)
            _check(n, x, counts, y)
            worker.run(b, x, out)
            torch.testing.assert_close(out, x[:, 0:1].min(0).values.expand(n, 1, C), rtol=0, atol=0)
    except BaseException:
        worker.close()
        raise
    return worker


def _check_sources(compiled: Any) -> None:
    """The cross-rank operations are PTO-ISA communication instructions: the kernels include
    <pto/comm/pto_comm_inst.hpp> and nothing of the old tile library."""
    kernels = [
        k for d in compiled.plan.programs for k in Path(d).glob("**/*.cpp") if k.parent.name == "kernels"
    ]
    text = "\n".join(k.read_text() for k in kernels)
    assert kernels
    assert "simpler/tile" not in text
    assert "simpler::tile" not in text
    assert "#include <pto/comm/pto_comm_inst.hpp>" in text
    for instr in ("TNOTIFY(", "TPUT<AtomicType::AtomicNone>(", "TGET(", "TLOAD("):
        assert instr in text, instr


def test_two_ranks_shared_memory() -> None:
    # two dispatches: every signal is reused (left all zero), the windows are zeroed again
    _run(2, "shared_memory", (1, 2)).close()


def test_four_ranks_shared_memory() -> None:
    _run(4, "shared_memory", (3,)).close()


@pl.jit.incore
def _never(y: pl.Out[pl.Tensor[[1, 1], pl.INT32]], done: pld.DistributedTensor[[1], pl.INT32]):
    pld.system.defer_wait(done, offsets=[0], expected=1, cmp=pld.WaitCmp.Ge)
    pl.write(y, [0, 0], 7)
    return y


@pl.jit
def _never_rank(y: pl.Out[pl.Tensor[[1, 1], pl.INT32]], done: pld.DistributedTensor[[1], pl.INT32]):
    return _never(y, done)


@pl.jit.host
def _never_host(y: pl.Out[pl.Tensor]):
    done = pld.alloc_window_buffer([1], dtype=pl.INT32)
    for r in pl.range(pld.world_size()):
        _never_rank(y[r], pld.window(done, [1], dtype=pl.INT32), device=r)


def test_two_ranks_process_group_and_a_deferred_wait_that_never_holds() -> None:
    needs_host_comm_path()
    worker = _run(2, "process_group", (4,))
    try:
        # a task whose deferred condition never holds does not complete: the dispatch fails
        # with the wait's timeout, naming the rank and the cell
        y = torch.zeros((2, 1, 1), dtype=torch.int32)
        never = _never_host.compile(y, config=_config(2))
        with DistributedWorker([never], data_path="process_group") as w2:
            w2.timeout = 2.0
            start = time.monotonic()
            with pytest.raises(DistributedRankError, match=r"TWAIT: rank \d timed out .* to become >= 1"):
                w2.run(never, y)
            assert time.monotonic() - start < 15
    finally:
        worker.close()


# -- refused at compile time -------------------------------------------------------------------


def _kernel_error(body: str) -> str:
    src = (
        "import pypto.language as pl\nimport pypto.language.distributed as pld\n\n"
        "@pl.function(type=pl.FunctionType.InCore)\n"
        "def k(d: pld.DistributedTensor[[1, 32], pl.FP32], s: pld.DistributedTensor[[2, 1], pl.INT32],\n"
        "      s1: pld.DistributedTensor[[2], pl.INT32]):\n"
        f"    {body}\n"
        "    return d\n"
    )
    with pytest.raises(KernelError) as info:
        pl.parse(src)
    return str(info.value)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ('d = pld.tensor.allreduce(d, s, mode="ring", core_num=2)', r'mode="ring" requires core_num == 1'),
        ("d = pld.tensor.allreduce(d, s, core_num=2)", r"a kernel keeps core_num=1"),
        ("d = pld.tensor.allreduce(d)", r"a kernel passes its signal"),
        ('d = pld.tensor.allreduce(d, s, mode="tree")', r'mode must be "mesh" or "ring", got \'tree\''),
        ("d = pld.tensor.allreduce(d, d)", r"signal must be an INT32 window, got FP32"),
        (
            'd = pld.tensor.allreduce(d, s1, mode="ring")',
            r"ring needs a \[2 \* \(nranks - 1\), nranks\] signal",
        ),
        ("d = pld.tensor.reduce_scatter(d, s, op=1)", r"op must be pld.ReduceOp.Sum or"),
        (
            "pld.system.defer_wait(s, offsets=[0, 0], expected=1, cmp=pld.WaitCmp.Eq)",
            r"cmp must be pld.WaitCmp.Ge",
        ),
        (
            "pld.tensor.put(d, 1, d, dst_offsets=[0, 0])",
            r"dst_offsets, src_offsets and shape must be provided",
        ),
        ("pld.tensor.get(d, 1, d, pipeline=True)", r"pipeline=True needs chunk_rows > 0 and chunk_cols > 0"),
        ("pld.tensor.get(d, 1, d, chunk_rows=-1)", r"chunk_rows must be non-negative"),
        (
            "t = pld.tile.remote_load(d, peer=0, offsets=[0, 0], shape=[1, 32], valid_shape=[2, 32])",
            r"valid_shape 2 is outside \[0, 1\]",
        ),
    ],
)
def test_bad_collective_calls_are_refused_naming_the_argument(body: str, message: str) -> None:
    import re

    assert re.search(message, _kernel_error(body)), _kernel_error(body)


@pl.jit.host
def _ring_without_signal(x: pl.Tensor):
    buf = pld.alloc_window_buffer([1, C], dtype=pl.FP32)
    pld.tensor.allreduce(pld.window(buf, [1, C], dtype=pl.FP32), mode="ring")


@pl.jit.host
def _too_many_cores(x: pl.Tensor):
    buf = pld.alloc_window_buffer([1, C], dtype=pl.FP32)
    pld.tensor.allreduce(pld.window(buf, [1, C], dtype=pl.FP32), core_num=49)


def test_host_form_refusals() -> None:
    x = torch.zeros(2, 1, C)
    with pytest.raises(ValueError, match=r'mode="ring" requires an explicit signal'):
        _ring_without_signal.compile(x, config=_config(2))
    with pytest.raises(ValueError, match=r"core_num 49 exceeds the chip's 48 AIV cores"):
        _too_many_cores.compile(x, config=_config(2))
