"""The two data paths of multi-chip programs, checked against torch: shared memory (every rank
maps every window) and the process group (private windows; every cross-rank operation is a
request the rank's host process carries over gloo). ``DistributedConfig(data_path=...)`` and
``PYPTO_DIST_DATA_PATH`` choose one.

One kernel uses every cross-rank operation (remote_store plain and atomic, notify + wait, the
barrier, get, put, remote_load in an allreduce), so each (ranks, path) pair is one prepared
worker. The wait-timeout and dead-rank tests run on both paths in test_distributed_comm.py.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torch.distributed")

from _dist_programs import config, needs_host_comm_path, windows  # noqa: E402

import pypto.language as pl  # noqa: E402
import pypto.language.distributed as pld  # noqa: E402
from pypto.ir import DistributedConfig  # noqa: E402
from pypto.runtime import DistributedWorker  # noqa: E402
from pypto.runtime.settings import SettingsError  # noqa: E402

COLS = 32
MAX_RANKS = 4
ROWS = 5


@pl.jit
def _per_rank(  # noqa: PLR0917 - a program takes its tensors positionally
    x: pl.Tensor[[1, COLS], pl.FP32],
    y: pl.Out[pl.Tensor[[ROWS, COLS], pl.FP32]],
    inbox: pld.DistributedTensor[[1, COLS], pl.FP32],
    acc: pld.DistributedTensor[[1, COLS], pl.FP32],
    got: pld.DistributedTensor[[1, COLS], pl.FP32],
    sig: pld.DistributedTensor[[MAX_RANKS, 1], pl.INT32],
    flag: pld.DistributedTensor[[1, 1], pl.INT32],
):
    with pl.at(level=pl.Level.CORE_GROUP):
        ctx = pld.get_comm_ctx(inbox)
        me = pld.rank(ctx)
        n = pld.nranks(ctx)
        nxt = (me + 1) % n
        prv = (me + n - 1) % n
        t = pl.load(x, [0, 0], [1, COLS])

        # row 0: x into the next rank's inbox, then a notify (AtomicAdd); the next rank's wait (Ge)
        # sees the notify only after the data (one rank's requests arrive in order)
        pld.tile.remote_store(t, inbox, peer=nxt, offsets=[0, 0])
        pld.system.notify(flag, peer=nxt, offsets=[0, 0], value=1, op=pld.NotifyOp.AtomicAdd)
        pld.system.wait(flag, offsets=[0, 0], expected=1, cmp=pld.WaitCmp.Ge)
        y = pl.store(pl.load(inbox, [0, 0], [1, COLS]), [0, 0], y)

        # row 1: every rank adds x into rank 0's acc (atomic remote_store), then reads it back
        pld.tile.remote_store(t, acc, peer=0, offsets=[0, 0], atomic=pld.AtomicType.Add)
        sig = pld.tensor.barrier(sig)
        y = pl.store(pld.tile.remote_load(acc, peer=0, offsets=[0, 0], shape=[1, COLS]), [1, 0], y)

        # row 2: get the previous rank's inbox (it holds the x of the rank before that)
        pld.tensor.get(got, peer=prv, src=inbox)
        y = pl.store(pl.load(got, [0, 0], [1, COLS]), [2, 0], y)

        # row 3: put this rank's inbox into the next rank's `got`, once every get above is done
        sig = pld.tensor.barrier(sig)
        pld.tensor.put(got, peer=nxt, src=inbox)
        sig = pld.tensor.barrier(sig)
        y = pl.store(pl.load(got, [0, 0], [1, COLS]), [3, 0], y)

        # row 4: an allreduce: every rank loads every rank's inbox (its own included) and sums
        s = pl.full([1, COLS], dtype=pl.FP32, value=0.0)
        for p in pl.range(n):
            s = pl.add(s, pld.tile.remote_load(inbox, peer=p, offsets=[0, 0], shape=[1, COLS]))
        y = pl.store(s, [4, 0], y)
    return y


@pl.jit.host
def _host(x: pl.Tensor, y: pl.Out[pl.Tensor]):
    views = windows(
        ([1, COLS], pl.FP32),
        ([1, COLS], pl.FP32),
        ([1, COLS], pl.FP32),
        ([MAX_RANKS, 1], pl.INT32),
        ([1, 1], pl.INT32),
    )
    for r in pl.range(pld.world_size()):
        _per_rank(x[r], y[r], *views(), device=r)


def _expected(x: torch.Tensor) -> torch.Tensor:
    n = x.shape[0]
    xs = x[:, 0]
    y = torch.empty((n, ROWS, COLS))
    for r in range(n):
        prv = (r - 1) % n
        y[r, 0] = xs[prv]  # the inbox holds the previous rank's x
        y[r, 1] = xs.sum(dim=0)
        y[r, 2] = xs[(r - 2) % n]  # the previous rank's inbox
        y[r, 3] = xs[(prv - 1) % n]  # the previous rank's inbox, put here
        y[r, 4] = xs.sum(dim=0)  # every inbox holds some rank's x once
    return y


def _inputs(n: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    # small integers: sums are exact in any order
    return torch.randint(-8, 9, (n, 1, COLS), generator=g).float(), torch.full((n, ROWS, COLS), -1.0)


@pytest.mark.parametrize(
    ("n", "path"),
    [
        (2, "shared_memory"),
        (2, "process_group"),
        pytest.param(4, "shared_memory", marks=pytest.mark.slow),
        pytest.param(4, "process_group", marks=pytest.mark.slow),
    ],
)
def test_every_cross_rank_operation_on_both_data_paths(n: int, path: str) -> None:
    if path == "process_group":
        needs_host_comm_path()
    x, y = _inputs(n, n)
    compiled = _host.compile(x, y, config=config(n, data_path=path))
    with compiled.prepare() as w:
        assert w.data_path == path
        if path == "process_group":
            assert w.segment_names == ()  # no window segment: each rank holds its own windows
        w(x, y)
        torch.testing.assert_close(y, _expected(x), rtol=0, atol=0)
        # a second dispatch starts from zeroed windows (acc, the flag) on either path
        x2, y2 = _inputs(n, n + 10)
        w(x2, y2)
        torch.testing.assert_close(y2, _expected(x2), rtol=0, atol=0)


def test_the_environment_variable_chooses_the_path_when_the_config_does_not(monkeypatch) -> None:
    x, y = _inputs(2, 0)
    compiled = _host.compile(x, y, config=config(2))
    monkeypatch.setenv("PYPTO_DIST_DATA_PATH", "process_group")
    assert compiled.data_path() == "process_group"
    assert compiled.data_path(config(2, data_path="shared_memory")) == "shared_memory"
    monkeypatch.setenv("PYPTO_DIST_DATA_PATH", "carrier_pigeon")
    with pytest.raises(
        SettingsError, match=r"PYPTO_DIST_DATA_PATH: expected one of shared_memory, process_group"
    ):
        compiled.data_path()


def test_a_bad_data_path_is_refused_naming_the_argument() -> None:
    with pytest.raises(ValueError, match=r"DistributedConfig\(data_path\): expected one of .*got 'gloo'"):
        DistributedConfig(device_ids=[0, 1], data_path="gloo")
    x, y = _inputs(2, 0)
    compiled = _host.compile(x, y, config=config(2))
    with pytest.raises(ValueError, match=r"DistributedWorker\(data_path\): expected one of .*got 'gloo'"):
        DistributedWorker(compiled, data_path="gloo")  # refused before any rank starts


@pl.jit
def _adds_rank(  # noqa: PLR0917 - a program takes its tensors positionally
    h: pl.Tensor[[1, COLS], pl.FP16],
    i: pl.Tensor[[1, COLS], pl.INT32],
    yh: pl.Out[pl.Tensor[[1, COLS], pl.FP16]],
    yi: pl.Out[pl.Tensor[[1, COLS], pl.INT32]],
    hsrc: pld.DistributedTensor[[1, COLS], pl.FP16],
    hacc: pld.DistributedTensor[[1, COLS], pl.FP16],
    iacc: pld.DistributedTensor[[1, COLS], pl.INT32],
    sig: pld.DistributedTensor[[MAX_RANKS, 1], pl.INT32],
):
    with pl.at(level=pl.Level.CORE_GROUP):
        # every rank adds its FP16 row (put, Add) and its INT32 row (remote_store, Add) into the last
        # rank's windows, then reads both back from there
        last = pld.nranks(pld.get_comm_ctx(hsrc)) - 1
        hsrc = pl.store(pl.load(h, [0, 0], [1, COLS]), [0, 0], hsrc)
        pld.tensor.put(hacc, peer=last, src=hsrc, atomic=pld.AtomicType.Add)
        pld.tile.remote_store(
            pl.load(i, [0, 0], [1, COLS]), iacc, peer=last, offsets=[0, 0], atomic=pld.AtomicType.Add
        )
        sig = pld.tensor.barrier(sig)
        yh = pl.store(pld.tile.remote_load(hacc, peer=last, offsets=[0, 0], shape=[1, COLS]), [0, 0], yh)
        yi = pl.store(pld.tile.remote_load(iacc, peer=last, offsets=[0, 0], shape=[1, COLS]), [0, 0], yi)
    return yh, yi


@pl.jit.host
def _adds_host(h: pl.Tensor, i: pl.Tensor, yh: pl.Out[pl.Tensor], yi: pl.Out[pl.Tensor]):
    views = windows(
        ([1, COLS], pl.FP16), ([1, COLS], pl.FP16), ([1, COLS], pl.INT32), ([MAX_RANKS, 1], pl.INT32)
    )
    for r in pl.range(pld.world_size()):
        _adds_rank(h[r], i[r], yh[r], yi[r], *views(), device=r)


def test_fp16_and_int32_atomic_adds_through_the_process_group() -> None:
    needs_host_comm_path()
    n = 2
    g = torch.Generator().manual_seed(7)
    h = (torch.randint(-64, 65, (n, 1, COLS), generator=g) / 4).half()  # exact in FP16
    i = torch.randint(-(2**30), 2**30, (n, 1, COLS), generator=g, dtype=torch.int32)
    yh, yi = torch.zeros((n, 1, COLS), dtype=torch.half), torch.zeros((n, 1, COLS), dtype=torch.int32)
    compiled = _adds_host.compile(h, i, yh, yi, config=config(n, data_path="process_group"))
    compiled(h, i, yh, yi)
    torch.testing.assert_close(
        yh, h.float().sum(dim=0, keepdim=True).expand(n, 1, COLS).half(), rtol=0, atol=0
    )
    # int32 sums wrap around, as the shared-memory path's atomic add
    torch.testing.assert_close(
        yi, i.sum(dim=0, keepdim=True, dtype=torch.int32).expand(n, 1, COLS), rtol=0, atol=0
    )


@pl.jit
def _pass_on_rank(
    x: pl.Tensor[[1, COLS], pl.FP32],
    y: pl.Out[pl.Tensor[[1, COLS], pl.FP32]],
    box: pld.DistributedTensor[[1, COLS], pl.FP32],
    sig: pld.DistributedTensor[[MAX_RANKS, 1], pl.INT32],
):
    with pl.at(level=pl.Level.CORE_GROUP):
        ctx = pld.get_comm_ctx(box)
        nxt = (pld.rank(ctx) + 1) % pld.nranks(ctx)
        pld.tile.remote_store(pl.load(x, [0, 0], [1, COLS]), box, peer=nxt, offsets=[0, 0])
        sig = pld.tensor.barrier(sig)
        y = pl.store(pl.load(box, [0, 0], [1, COLS]), [0, 0], y)
    return y


@pl.jit.host
def _pass_on_host(x: pl.Tensor, y: pl.Out[pl.Tensor]):
    # two window buffers where _host has five: window 1 is the barrier's signal here, `acc` there
    views = windows(([1, COLS], pl.FP32), ([MAX_RANKS, 1], pl.INT32))
    for r in pl.range(pld.world_size()):
        _pass_on_rank(x[r], y[r], *views(), device=r)


def test_programs_of_one_worker_each_have_their_windows_on_the_process_group_path() -> None:
    needs_host_comm_path()
    # a rank serving the other program's windows would put the barrier's notifies in the wrong
    # buffer, and the barrier's wait would time out
    x, y = _inputs(2, 3)
    xp, yp = x.clone(), torch.full((2, 1, COLS), -1.0)
    ops = _host.compile(x, y, config=config(2, data_path="process_group", timeout=30))
    ring = _pass_on_host.compile(xp, yp, config=config(2, data_path="process_group", timeout=30))
    with ops.prepare(extra_compiled=[ring]) as w:
        assert w.data_path == "process_group"
        for program, args in ((ops, (x, y)), (ring, (xp, yp)), (ops, (x, y))):
            args[1].fill_(-1.0)
            w.run(program, *args)
        torch.testing.assert_close(y, _expected(x), rtol=0, atol=0)
        torch.testing.assert_close(yp, xp.roll(1, dims=0), rtol=0, atol=0)


ADDS = 300


@pl.jit
def _contended_rank(
    x: pl.Tensor[[1, COLS], pl.INT32],
    y: pl.Out[pl.Tensor[[1, COLS], pl.INT32]],
    acc: pld.DistributedTensor[[1, COLS], pl.INT32],
    sig: pld.DistributedTensor[[MAX_RANKS, 1], pl.INT32],
):
    with pl.at(level=pl.Level.CORE_GROUP):
        # every rank adds x into the last rank's acc ADDS times: the last rank's own adds (applied
        # in its process) and its peers' (applied by its service thread) hit the same cells at once
        # (each add is followed by a read of the next rank's acc, so that the adds of every rank
        # spread over the same stretch of time)
        ctx = pld.get_comm_ctx(acc)
        last = pld.nranks(ctx) - 1
        nxt = (pld.rank(ctx) + 1) % pld.nranks(ctx)
        t = pl.load(x, [0, 0], [1, COLS])
        for _ in pl.range(ADDS):
            pld.tile.remote_store(t, acc, peer=last, offsets=[0, 0], atomic=pld.AtomicType.Add)
            y = pl.store(pld.tile.remote_load(acc, peer=nxt, offsets=[0, 0], shape=[1, COLS]), [0, 0], y)
        sig = pld.tensor.barrier(sig)
        y = pl.store(pld.tile.remote_load(acc, peer=last, offsets=[0, 0], shape=[1, COLS]), [0, 0], y)
    return y


@pl.jit.host
def _contended_host(x: pl.Tensor, y: pl.Out[pl.Tensor]):
    views = windows(([1, COLS], pl.INT32), ([MAX_RANKS, 1], pl.INT32))
    for r in pl.range(pld.world_size()):
        _contended_rank(x[r], y[r], *views(), device=r)


def test_a_ranks_own_atomic_adds_and_its_peers_do_not_lose_each_other() -> None:
    needs_host_comm_path()
    n = 2
    x = torch.arange(1, n * COLS + 1, dtype=torch.int32).reshape(n, 1, COLS)
    y = torch.zeros((n, 1, COLS), dtype=torch.int32)
    compiled = _contended_host.compile(x, y, config=config(n, data_path="process_group"))
    compiled(x, y)
    torch.testing.assert_close(
        y, (ADDS * x.sum(dim=0, keepdim=True, dtype=torch.int32)).expand(n, 1, COLS), rtol=0, atol=0
    )
