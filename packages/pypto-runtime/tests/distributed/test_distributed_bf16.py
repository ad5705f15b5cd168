"""BF16 host tensors and windows of a multi-chip program, against torch.

numpy has no BF16 (nor FP8): host tensors and windows cross processes as raw bytes, and a rank
hands its chip bytes + DataType. One 2-rank program (an allreduce through BF16 windows, a
neighbour exchange, an FP32 output beside the BF16 ones) runs on both data paths; the caller's
torch tensors receive the results. FP8 travels through a resident tensor; FP4 (half a byte per
element) stays refused.
"""

from __future__ import annotations

import numpy
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torch.distributed")

import pto_backend  # noqa: E402
from _dist_programs import cleaned, config, windows  # noqa: E402

import pypto.language as pl  # noqa: E402
import pypto.language.distributed as pld  # noqa: E402
from pypto.ir import DataType  # noqa: E402

COLS = 64
RANKS = 2


@pl.jit
def _per_rank(
    x: pl.Tensor[[1, COLS], pl.BF16],
    y: pl.Out[pl.Tensor[[2, COLS], pl.BF16]],
    total: pl.Out[pl.Tensor[[1, COLS], pl.FP32]],
    data: pld.DistributedTensor[[1, COLS], pl.BF16],
    sig: pld.DistributedTensor[[RANKS, 1], pl.INT32],
):
    with pl.at(level=pl.Level.CORE_GROUP):
        ctx = pld.get_comm_ctx(data)
        me = pld.rank(ctx)
        n = pld.nranks(ctx)
        t = pl.load(x, [0, 0], [1, COLS])
        data = pl.store(t, [0, 0], data)
        sig = pld.tensor.barrier(sig)
        # row 0: the sum over ranks, added in FP32 and rounded to BF16 once
        s = pl.full([1, COLS], dtype=pl.FP32, value=0.0)
        for p in pl.range(n):
            s = pl.add(
                s, pl.cast(pld.tile.remote_load(data, peer=p, offsets=[0, 0], shape=[1, COLS]), pl.FP32)
            )
        total = pl.store(s, [0, 0], total)
        y = pl.store(pl.cast(s, pl.BF16, mode="rint"), [0, 0], y)
        # row 1: the next rank's x, bit for bit
        y = pl.store(
            pld.tile.remote_load(data, peer=(me + 1) % n, offsets=[0, 0], shape=[1, COLS]), [1, 0], y
        )
    return y, total


@pl.jit.host
def _host(x: pl.Tensor, y: pl.Out[pl.Tensor], total: pl.Out[pl.Tensor]):
    views = windows(([1, COLS], pl.BF16), ([RANKS, 1], pl.INT32))
    for r in pl.range(pld.world_size()):
        _per_rank(x[r], y[r], total[r], *views(), device=r)


def _args() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    x = torch.randn((RANKS, 1, COLS)).to(torch.bfloat16)
    y = torch.full((RANKS, 2, COLS), float("nan"), dtype=torch.bfloat16)
    total = torch.full((RANKS, 1, COLS), float("nan"))
    return x, y, total


def _check(x: torch.Tensor, y: torch.Tensor, total: torch.Tensor) -> None:
    want = x.float().sum(0, keepdim=True).expand(RANKS, 1, COLS)
    torch.testing.assert_close(total, want)
    torch.testing.assert_close(y[:, :1], want.to(torch.bfloat16), rtol=0, atol=0)
    assert torch.equal(y[:, 1:].view(torch.int16), x.roll(-1, dims=0).view(torch.int16))


@pytest.fixture(scope="module")
def compiled():
    x, y, total = _args()
    return _host.compile(x, y, total, config=config(RANKS))


def test_the_plan_records_bf16_tensors_and_windows(compiled) -> None:
    assert [p.dtype for p in compiled.plan.params] == ["BF16", "BF16", "FP32"]
    assert [(w.dtype, w.nbytes) for w in compiled.plan.windows] == [("BF16", 2 * COLS), ("INT32", 4 * RANKS)]


def test_bf16_allreduce_on_shared_memory_matches_torch(compiled) -> None:
    pto_backend.needs_bfloat16()
    with cleaned(compiled.prepare()) as w:
        for _ in range(2):  # a second dispatch reuses the ranks and windows
            x, y, total = _args()
            w(x, y, total)
            _check(x, y, total)
        # a read-only array for an Out parameter is refused before the ranks run; the worker stays up
        x, y, _ = _args()
        frozen = numpy.zeros((RANKS, 1, COLS), dtype=numpy.float32)
        frozen.flags.writeable = False
        with pytest.raises(
            TypeError, match=r"parameter 'total': the results are written into it, but the array is read-only"
        ):
            w(x, y, frozen)
        assert not w.closed
        # FP8 has no numpy type either: a resident FP8 tensor round-trips through the worker
        fp8 = torch.randn((3, 5)).to(torch.float8_e4m3fn)
        t = w.alloc_tensor((3, 5), torch.float8_e4m3fn, init=fp8)
        assert t.data_type is DataType.FP8E4M3FN
        back = torch.zeros((3, 5), dtype=torch.float8_e4m3fn)
        w.copy_from(t, back)
        assert torch.equal(back.view(torch.uint8), fp8.view(torch.uint8))
        with pytest.raises(TypeError, match=r"numpy has no FP8E4M3FN type; copy it into a torch tensor"):
            w.copy_from(t)
        with pytest.raises(
            TypeError, match=r"alloc_tensor\(dtype\): dtype FP4E2M1 packs 2 elements into a byte"
        ):
            w.alloc_tensor((2, 2), DataType.FP4E2M1)


def test_bf16_allreduce_on_the_process_group_path_matches_torch(compiled) -> None:
    pto_backend.needs_bfloat16()
    x, y, total = _args()
    with cleaned(compiled.prepare(config(RANKS, data_path="process_group"))) as w:
        assert w.data_path == "process_group"
        w(x, y, total)
    _check(x, y, total)


def test_a_bf16_call_with_the_wrong_dtype_is_refused(compiled) -> None:
    x, y, total = _args()
    with pytest.raises(
        TypeError, match=r"parameter 'x'.*compiled for shape \[2, 1, 64\] BF16, got \[2, 1, 64\] FP16"
    ):
        compiled(x.half(), y, total)
