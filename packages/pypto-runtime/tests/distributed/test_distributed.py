"""Multi-chip programs on simulated chips: ``@pl.jit.host``, window buffers, one process per rank.

Starting rank processes is slow on a small machine (each imports torch and pypto), so one
prepared 2-rank worker serves the correctness and reuse tests; the 4-rank, failure and timeout
tests start their own ranks and are marked ``slow``. Every test that starts ranks checks that
none is left running and that no shared-memory segment is left behind.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import time
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torch.distributed")

from _dist_programs import (  # noqa: E402
    COLS,
    ROWS,
    accumulate_host,
    accumulate_rank,
    accumulated,
    assert_cleaned,
    cleaned,
    config,
)

import pypto.language as pl  # noqa: E402
import pypto.language.distributed as pld  # noqa: E402
from pypto.ir import DistributedConfig  # noqa: E402
from pypto.runtime import RunConfig  # noqa: E402
from pypto.runtime.distributed import (  # noqa: E402
    DistributedRankError,
    DistributedTimeoutError,
    DistributedWorker,
)


def _compile(n: int, **kw: object):
    x = torch.zeros((n, ROWS, COLS))
    return accumulate_host.compile(x, torch.zeros_like(x), config=config(n, **kw))


def _assert_cleaned(pids: tuple[int, ...], segments: tuple[str, ...]) -> None:
    assert segments, "the worker owned no shared-memory segment"
    assert_cleaned(pids, segments)


@pytest.fixture(scope="module")
def worker2_program():
    return _compile(2)


@pytest.fixture(scope="module")
def worker2(worker2_program):
    with cleaned(worker2_program.prepare()) as w:
        assert w.segment_names, "the worker owned no shared-memory segment"
        yield w


# -- ranks running -------------------------------------------------------------------------


def test_two_ranks_match_torch(worker2: DistributedWorker) -> None:
    x = torch.randn((2, ROWS, COLS))
    y = torch.full_like(x, float("nan"))
    worker2(x, y)
    torch.testing.assert_close(y, accumulated(x))


def test_prepared_worker_is_reused_and_windows_start_zeroed(
    worker2: DistributedWorker, worker2_program
) -> None:
    pids = worker2.rank_pids
    for _ in range(3):  # a window kept from the previous dispatch would add x again
        x = torch.randn((2, ROWS, COLS))
        y = torch.zeros_like(x)
        worker2.run(worker2_program, x, y=y)
        torch.testing.assert_close(y, accumulated(x))
    assert worker2.rank_pids == pids
    assert set(pids) <= _rank_children()


def test_preparing_keeps_this_process_signal_handlers(worker2: DistributedWorker) -> None:
    # torch's launcher installs its own handlers; the user's process keeps Python's
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
        handler = signal.getsignal(sig)
        assert not getattr(handler, "__module__", "").startswith("torch"), (sig, handler)


def test_run_takes_only_its_own_program(worker2: DistributedWorker) -> None:
    other = _host_shift.compile(
        torch.zeros((2, ROWS, COLS)), torch.zeros((2, ROWS, COLS)), 1, config=config(2)
    )
    with pytest.raises(
        ValueError,
        match=r"compiled is not a program of this worker \(it runs 'accumulate_host'\), got '_host_shift'",
    ):
        worker2.run(other, torch.zeros((2, ROWS, COLS)), torch.zeros((2, ROWS, COLS)), 1)


def test_run_checks_the_compiled_shapes(worker2: DistributedWorker) -> None:
    with pytest.raises(TypeError, match=r"parameter 'x'.*compiled for shape \[2, 4, 16\].*got \[3, 4, 16\]"):
        worker2(torch.zeros((3, ROWS, COLS)), torch.zeros((3, ROWS, COLS)))


@pytest.mark.slow
def test_four_ranks_match_torch_and_call_cleans_up() -> None:
    compiled = _compile(4)
    assert compiled.world_size == 4
    assert (compiled.output_dir / "plan.json").is_file()
    # one artifact serves every rank: the rank is a runtime scalar
    assert len(compiled.plan.programs) == 1
    assert len(compiled.plan.dispatches) == 4
    x = torch.randn((4, ROWS, COLS))
    y = torch.zeros_like(x)
    with compiled.prepare() as w:
        w(x, y)
        pids, segments = w.rank_pids, w.segment_names
    torch.testing.assert_close(y, accumulated(x))
    _assert_cleaned(pids, segments)


# -- failures ------------------------------------------------------------------------------


@pytest.mark.slow
def test_a_killed_rank_fails_the_dispatch_naming_it() -> None:
    w = _compile(2).prepare()
    pids, segments = w.rank_pids, w.segment_names
    try:
        os.kill(pids[1], signal.SIGKILL)
        with pytest.raises(
            DistributedRankError, match=r"rank 1 died .*SIGKILL.*other ranks were terminated"
        ) as e:
            w(torch.zeros((2, ROWS, COLS)), torch.zeros((2, ROWS, COLS)))
        assert e.value.rank == 1
        assert w.closed
        with pytest.raises(DistributedRankError, match="closed"):
            w(torch.zeros((2, ROWS, COLS)), torch.zeros((2, ROWS, COLS)))
    finally:
        w.close()
    _assert_cleaned(pids, segments)


@pytest.mark.slow
def test_a_rank_whose_dispatch_raises_fails_it_naming_the_rank(tmp_path: Path) -> None:
    plan = _compile(2).plan
    # rank 1's launch names a program that is not there: its dispatch raises in the rank
    broken = dataclasses.replace(
        plan,
        programs=(*plan.programs, str(tmp_path / "missing")),
        dispatches=tuple(
            dataclasses.replace(d, program=len(plan.programs)) if d.rank == 1 else d for d in plan.dispatches
        ),
    )
    w = DistributedWorker(broken, timeout=120)
    pids, segments = w.rank_pids, w.segment_names
    try:
        with pytest.raises(
            DistributedRankError,
            match=r"rank 1 failed in accumulate_host\(\) dispatch 1: .*MetadataError: .*missing/compiled_meta.json: "
            r"not found; the directory is not a compiled artifact; the other ranks were terminated",
        ) as e:
            w(torch.zeros((2, ROWS, COLS)), torch.zeros((2, ROWS, COLS)))
        assert e.value.rank == 1
    finally:
        w.close()
    _assert_cleaned(pids, segments)


@pytest.mark.slow
def _stop_outside_a_store_operation(pid: int) -> None:
    """SIGSTOP ``pid`` at a moment it holds no lock on the control store's file: a rank stopped
    inside a store operation holds that file's flock and so stalls every writer (the other ranks'
    answers too; docs/distributed.md, "Trust"), which is not what this test is about."""
    for _ in range(100):
        os.kill(pid, signal.SIGSTOP)
        time.sleep(0.01)
        if not any(line.split()[4] == str(pid) for line in Path("/proc/locks").read_text().splitlines()):
            return
        os.kill(pid, signal.SIGCONT)
        time.sleep(0.005)
    raise AssertionError(f"rank process {pid} held the control store's lock at every try")


def test_a_dispatch_past_its_timeout_names_the_rank_that_did_not_answer() -> None:
    w = _compile(2).prepare()
    pids, segments = w.rank_pids, w.segment_names
    try:
        w.timeout = 4.0  # rank 0's dispatch takes milliseconds; 4 s leaves room for a loaded machine
        _stop_outside_a_store_operation(pids[1])  # rank 1 stops answering; rank 0 runs
        with pytest.raises(
            DistributedTimeoutError,
            match=r"accumulate_host\(\) dispatch 1: rank\(s\) 1 did not answer within 4 s",
        ) as e:
            w(torch.zeros((2, ROWS, COLS)), torch.zeros((2, ROWS, COLS)))
        assert e.value.ranks == (1,)
        assert w.closed
    finally:
        w.close()
    _assert_cleaned(pids, segments)


_EXIT_WITHOUT_CLOSE = """
import os, sys, torch
import pypto.language as pl
import pypto.language.distributed as pld
from pypto.ir import DistributedConfig
from pypto.runtime import RunConfig

@pl.jit.incore
def twice(x: pl.Tensor[[4, 16], pl.FP32], y: pl.Out[pl.Tensor[[4, 16], pl.FP32]]):
    t = pl.load(x, [0, 0], [4, 16])
    y = pl.store(pl.add(t, t), [0, 0], y)
    return y

@pl.jit
def per_rank(x: pl.Tensor[[4, 16], pl.FP32], y: pl.Out[pl.Tensor[[4, 16], pl.FP32]]):
    return twice(x, y)

@pl.jit.host
def host(x: pl.Tensor, y: pl.Out[pl.Tensor]):
    for r in pl.range(pld.world_size()):
        per_rank(x[r], y[r], device=r)

x = torch.randn((2, 4, 16)); y = torch.zeros_like(x)
cfg = RunConfig(distributed_config=DistributedConfig(device_ids=[0, 1]))
worker = host.compile(x, y, config=cfg).prepare()
worker(x, y)
assert torch.equal(y, 2 * x)
print("pids", *worker.rank_pids, "segments", *worker.segment_names, flush=True)
# exits without closing the worker: interpreter exit must stop the ranks
"""


@pytest.mark.slow
def test_exiting_without_close_stops_the_ranks(tmp_path: Path) -> None:
    import subprocess
    import sys

    script = tmp_path / "exit_without_close.py"
    script.write_text(_EXIT_WITHOUT_CLOSE)
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr
    words = next(line for line in done.stdout.splitlines() if line.startswith("pids")).split()
    pids = tuple(int(w) for w in words[1 : words.index("segments")])
    assert len(pids) == 2
    _assert_cleaned(pids, tuple(words[words.index("segments") + 1 :]))


def _own_segments() -> set[str]:
    return {p.name for p in Path("/dev/shm").iterdir() if p.name.startswith(f"pypto-dist-{os.getpid()}-")}


def _rank_children() -> set[int]:
    """Our child processes that run the rank engine (zombies excluded)."""
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            cmdline = (stat.parent / "cmdline").read_bytes()
        except (FileNotFoundError, ProcessLookupError, IndexError):
            continue
        if (
            int(fields[1]) == os.getpid()
            and fields[0] != "Z"
            and b"pypto.runtime.distributed._engine" in cmdline
        ):
            found.add(int(stat.parent.name))
    return found


def test_a_wait_past_its_timeout_names_the_ranks_and_stops_them() -> None:
    plan = _compile(2).plan
    before = _own_segments()  # the shared 2-rank worker may hold its own
    running = _rank_children()
    w = None
    with pytest.raises(
        DistributedTimeoutError, match=r"start: rank\(s\) 0, 1 did not answer within 0.01 s"
    ) as e:
        w = DistributedWorker(plan, timeout=0.01)  # no process imports torch that fast
    assert w is None
    assert e.value.ranks == (0, 1)
    assert _own_segments() == before
    assert _rank_children() == running


# -- what a host body may do (no ranks started) --------------------------------------------


def test_host_calls_need_a_device() -> None:
    @pl.jit.host
    def no_device(x: pl.Tensor, y: pl.Out[pl.Tensor]):
        buf = pld.alloc_window_buffer([ROWS, COLS], dtype=pl.FP32)
        accumulate_rank(x[0], y[0], pld.window(buf, [ROWS, COLS], dtype=pl.FP32), 0)

    x = torch.zeros((2, ROWS, COLS))
    with pytest.raises(TypeError, match="pass device=r"):
        no_device.compile(x, x, config=config(2))


def test_host_device_must_be_a_rank() -> None:
    @pl.jit.host
    def far(x: pl.Tensor, y: pl.Out[pl.Tensor]):
        buf = pld.alloc_window_buffer([ROWS, COLS], dtype=pl.FP32)
        accumulate_rank(x[0], y[0], pld.window(buf, [ROWS, COLS], dtype=pl.FP32), 0, device=2)

    x = torch.zeros((2, ROWS, COLS))
    with pytest.raises(ValueError, match=r"expected a rank in \[0, 2\), got 2"):
        far.compile(x, x, config=config(2))


def test_a_window_needs_a_distributed_tensor_parameter() -> None:
    @pl.jit
    def plain(x: pl.Tensor[[ROWS, COLS], pl.FP32], y: pl.Out[pl.Tensor[[ROWS, COLS], pl.FP32]]):
        return x

    @pl.jit.host
    def wrong(x: pl.Tensor, y: pl.Out[pl.Tensor]):
        buf = pld.alloc_window_buffer([ROWS, COLS], dtype=pl.FP32)
        plain(pld.window(buf, [ROWS, COLS], dtype=pl.FP32), y[0], device=0)

    x = torch.zeros((1, ROWS, COLS))
    with pytest.raises(
        TypeError, match=r"parameter 'x' \(rank 0\) receives a pld.window.*pld.DistributedTensor"
    ):
        wrong.compile(x, x, config=config(1))


def test_a_window_view_must_fit_its_buffer() -> None:
    @pl.jit.host
    def too_big(x: pl.Tensor, y: pl.Out[pl.Tensor]):
        buf = pld.alloc_window_buffer([ROWS, COLS], dtype=pl.FP32)
        pld.window(buf, [ROWS, 8], dtype=pl.FP32)  # a smaller view fits
        pld.window(buf, [ROWS, COLS], dtype=pl.INT64)

    x = torch.zeros((1, ROWS, COLS))
    with pytest.raises(ValueError, match=r"a \[4, 16\] INT64 view needs 512 bytes, the buffer has 256"):
        too_big.compile(x, x, config=config(1))


@pl.jit.host
def _host_shift(x: pl.Tensor, y: pl.Out[pl.Tensor], shift: int):
    buf = pld.alloc_window_buffer([ROWS, COLS], dtype=pl.FP32)
    for r in pl.range(pld.world_size()):
        accumulate_rank(x[r], y[r], pld.window(buf, [ROWS, COLS], dtype=pl.FP32), r + shift, device=r)


def test_a_host_scalar_is_compiled_in_and_checked_at_the_call() -> None:
    x = torch.zeros((2, ROWS, COLS))
    compiled = _host_shift.compile(x, x, 5, config=config(2))
    assert [d.args[3] for d in compiled.plan.dispatches] == [("scalar", 5), ("scalar", 6)]
    with pytest.raises(
        ValueError, match=r"parameter 'shift': this program was compiled with shift=5 .*got 6"
    ):
        compiled(x, x, 6)  # refused before any rank starts


def test_a_call_checks_platform_runtime_and_devices_before_starting_ranks() -> None:
    x = torch.zeros((2, ROWS, COLS))
    compiled = accumulate_host.compile(x, x, config=config(2))
    with pytest.raises(
        ValueError, match=r"compiled for platform 'a2a3sim', got RunConfig\(platform='a5sim'\)"
    ):
        compiled(x, x, config=RunConfig(platform="a5sim"))
    with pytest.raises(
        ValueError, match=r"compiled for runtime 'tensormap_and_ringbuffer', got RunConfig\(runtime="
    ):
        compiled(x, x, config=RunConfig(runtime="host_build_graph"))
    with pytest.raises(
        ValueError, match=r"compiled for device_ids \[0, 1\], got distributed_config.device_ids \[2, 3\]"
    ):
        compiled(x, x, config=RunConfig(distributed_config=DistributedConfig(device_ids=[2, 3])))


def test_a_kernel_mode_process_refuses_a_multi_chip_run_before_touching_host_tensors(worker2_program) -> None:
    from pypto.runtime import ModeConflictError, mode_gate

    x, y = torch.zeros((2, ROWS, COLS)), torch.zeros((2, ROWS, COLS))
    mode_gate._reset_for_tests()
    mode_gate.claim_kernel("pypto.torch.init (test)")
    try:
        with pytest.raises(ModeConflictError, match=r"one-shot distributed run.*kernel mode"):
            worker2_program(x, y)
        with pytest.raises(ModeConflictError, match="prepare"):
            worker2_program.prepare()
        assert not x.is_shared()  # nothing was moved to shared memory
        assert not y.is_shared()
    finally:
        mode_gate._reset_for_tests()


def test_compile_needs_a_distributed_config() -> None:
    x = torch.zeros((2, ROWS, COLS))
    with pytest.raises(TypeError, match=r"needs config=RunConfig\(distributed_config="):
        accumulate_host.compile(x, x, config=RunConfig())


def test_host_only_functions_outside_a_host_body() -> None:
    with pytest.raises(RuntimeError, match=r"pld.world_size\(\) runs only inside a @pl.jit.host body"):
        pld.world_size()
    with pytest.raises(RuntimeError, match="runs only inside a kernel body"):
        pl.range(2)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"device_ids": []}, "non-empty list of distinct ints"),
        ({"device_ids": [0, 0]}, "distinct ints"),
        ({"device_ids": [0, -1]}, "ints >= 0"),
        ({"device_ids": [0], "num_sub_workers": -1}, r"num_sub_workers\): expected an int >= 0"),
        ({"device_ids": [0], "timeout": 0}, r"timeout\): expected seconds > 0"),
    ],
)
def test_distributed_config_checks(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        DistributedConfig(**kwargs)  # type: ignore[arg-type]


def test_run_config_checks_the_distributed_config() -> None:
    with pytest.raises(
        TypeError, match=r"RunConfig\(distributed_config\): expected a pypto.ir.DistributedConfig"
    ):
        RunConfig(distributed_config=[0, 1])
