"""DistributedWorker's raw-pointer memory (``malloc``/``free``/``copy_to``/``copy_from`` with
addresses), ``register`` and the per-dispatch ``config=`` of ``run``/``submit``.

One 2-rank worker serves every test (rank processes are slow to start); the last test closes it
and checks that the closed worker refuses every memory call.
"""

from __future__ import annotations

import ctypes
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torch.distributed")

from _dist_programs import COLS, ROWS, cleaned, config, twice_host  # noqa: E402

from pypto.ir import DistributedConfig  # noqa: E402
from pypto.runtime import DistributedWorker, RunConfig  # noqa: E402
from pypto.runtime.distributed import DistributedRankError  # noqa: E402

R, C = ROWS, COLS  # the shared programs' rank slice


def _rand(*shape: int, seed: int) -> torch.Tensor:
    return torch.from_numpy(np.random.default_rng(seed).standard_normal(shape).astype(np.float32))


@pytest.fixture(scope="module")
def compiled():
    sample = torch.zeros((2, R, C))
    return twice_host.compile(sample, sample, config=config(2))


@pytest.fixture(scope="module")
def rt(compiled):
    with cleaned(DistributedWorker(compiled)) as w:
        yield w


# -- raw pointers --------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int16])
def test_malloc_round_trip_through_pointers(rt, dtype) -> None:
    src = (_rand(6, 10, seed=1) * 100).to(dtype)
    ptr = rt.malloc(src.nbytes)
    try:
        out = torch.zeros_like(src)
        rt.copy_from(out.data_ptr(), ptr, out.nbytes)
        assert torch.count_nonzero(out) == 0  # a new block is zero-filled
        rt.copy_to(ptr, src.data_ptr(), src.nbytes)
        rt.copy_from(out.data_ptr(), ptr, out.nbytes)
        torch.testing.assert_close(out, src, rtol=0, atol=0)
    finally:
        rt.free(ptr)


def test_interior_pointers_copy_part_of_a_block(rt) -> None:
    host = _rand(64, seed=2)
    ptr = rt.malloc(host.nbytes)
    try:
        rt.copy_to(ptr, host.data_ptr(), host.nbytes)
        row = torch.full((16,), -1.0)
        rt.copy_to(ptr + 8 * 4, row.data_ptr(), row.nbytes)  # elements 8..23
        expect = host.clone()
        expect[8:24] = -1.0
        part = torch.zeros(40)
        rt.copy_from(part.data_ptr(), ptr + 24 * 4, part.nbytes)  # elements 24..63
        torch.testing.assert_close(part, expect[24:], rtol=0, atol=0)
        whole = torch.zeros(64)
        rt.copy_from(whole.data_ptr(), ptr, whole.nbytes)
        torch.testing.assert_close(whole, expect, rtol=0, atol=0)
    finally:
        rt.free(ptr)


def test_pointers_reach_a_resident_tensor_the_ranks_use(rt, compiled) -> None:
    x = rt.alloc_tensor((2, R, C), torch.float32)
    try:
        host = _rand(2, R, C, seed=3)
        rt.copy_to(x.data_ptr, host.data_ptr(), host.nbytes)  # the tensor's address
        y = torch.zeros(2, R, C)
        rt(x, y)
        torch.testing.assert_close(y, 2 * host)
    finally:
        rt.free_tensor(x)


def test_free_refuses_unknown_and_freed_pointers(rt) -> None:
    ptr = rt.malloc(64)
    with pytest.raises(ValueError, match=rf"free\(ptr\): {ptr + 8:#x} is not a block of this worker"):
        rt.free(ptr + 8)
    rt.free(ptr)
    with pytest.raises(ValueError, match=rf"free\(ptr\): {ptr:#x} was already freed"):
        rt.free(ptr)
    buf = torch.zeros(16)
    with pytest.raises(ValueError, match=rf"{ptr:#x} was freed; malloc another block"):
        rt.copy_to(ptr, buf.data_ptr(), 64)
    with pytest.raises(TypeError, match=r"free\(ptr\): expected an address \(an int > 0\), got 'x'"):
        rt.free("x")


def test_copies_must_stay_inside_one_block(rt) -> None:
    ptr = rt.malloc(64)
    host = torch.zeros(32)
    try:
        with pytest.raises(
            ValueError, match=rf"68 bytes at {ptr:#x} run past the end of the block .*64 bytes; 64 left"
        ):
            rt.copy_to(ptr, host.data_ptr(), 68)
        with pytest.raises(ValueError, match=r"60 left from that address"):
            rt.copy_from(host.data_ptr(), ptr + 4, 64)
        with pytest.raises(ValueError, match=r"is not in this worker's memory"):
            rt.copy_from(host.data_ptr(), host.data_ptr(), 4)
        with pytest.raises(
            ValueError,
            match=r"copy_to\(dst_ptr, src_host_ptr, nbytes\)\(nbytes\): expected an int > 0, got 0",
        ):
            rt.copy_to(ptr, host.data_ptr(), 0)
        with pytest.raises(ValueError, match=r"malloc\(nbytes\): expected an int > 0, got -4"):
            rt.malloc(-4)
        with pytest.raises(ValueError, match=r"malloc\(worker_id\): expected a rank in \[0, 2\), got 5"):
            rt.malloc(8, worker_id=5)
    finally:
        rt.free(ptr)


# -- register and per-dispatch config -------------------------------------------------------------


def test_register_returns_a_handle_that_dispatches(rt, compiled) -> None:
    handle = rt.register(compiled)
    x, y = _rand(2, R, C, seed=4), torch.zeros(2, R, C)
    handle(x, y)
    torch.testing.assert_close(y, 2 * x)
    handle.unregister()
    assert handle.closed
    with pytest.raises(RuntimeError, match="DistributedRegistrationHandle is closed"):
        handle(x, y)
    other = twice_host.compile(torch.zeros(2, R, C), torch.zeros(2, R, C), config=config(3))
    with pytest.raises(ValueError, match=r"register\(compiled\): compiled is not a program of this worker"):
        rt.register(other)


def test_run_config_reaches_the_ranks(rt, compiled, tmp_path: Path) -> None:
    x, y = _rand(2, R, C, seed=5), torch.zeros(2, R, C)
    before = rt.timeout
    rt.run(
        compiled, x, y, config=RunConfig(enable_chip_swimlane=True, swimlane_dir=str(tmp_path), timeout=30.0)
    )
    torch.testing.assert_close(y, 2 * x)
    assert rt.timeout == before  # the dispatch's timeout was its own
    for r in range(2):
        assert list((tmp_path / f"rank{r}").glob("*.swimlane.json")), f"rank {r} wrote no swimlane trace"
    y.zero_()
    rt.submit(compiled, x, y, config=RunConfig()).wait(60)
    torch.testing.assert_close(y, 2 * x)
    assert not list(tmp_path.glob("*.swimlane.json"))  # nothing outside the rank directories


@pytest.mark.parametrize(
    ("cfg", "message"),
    [
        ("fast", r"expected a pypto.runtime.RunConfig or None, got str"),
        (
            RunConfig(platform="a5sim"),
            r"RunConfig\(platform='a5sim'\), but this worker runs platform 'a2a3sim'",
        ),
        (
            RunConfig(distributed_config=DistributedConfig(device_ids=[0, 2])),
            r"names device_ids \[0, 2\], but this worker's ranks are devices \[0, 1\]",
        ),
        (RunConfig(aiv_threads=3), r"RunConfig\(aiv_threads=3\), but this worker's ranks run 1"),
    ],
)
def test_run_config_refuses_what_the_ranks_fixed(rt, compiled, cfg, message) -> None:
    x = torch.zeros(2, R, C)
    with pytest.raises((TypeError, ValueError), match=message):
        rt.run(compiled, x, x, config=cfg)
    with pytest.raises((TypeError, ValueError), match=message):
        rt.submit(compiled, x, x, config=cfg)


# -- last: a closed worker ----------------------------------------------------------------------


def test_closed_worker_refuses_memory_calls(rt, compiled) -> None:
    ptr = rt.malloc(16)
    rt.close()
    buf = (ctypes.c_uint8 * 16)()
    host = ctypes.addressof(buf)
    for call in (
        lambda: rt.malloc(16),
        lambda: rt.free(ptr),
        lambda: rt.copy_to(ptr, host, 16),
        lambda: rt.copy_from(host, ptr, 16),
        lambda: rt.register(compiled),
    ):
        with pytest.raises(DistributedRankError, match="this DistributedWorker is closed"):
            call()
