"""DistributedWorker beyond one program: several programs on one set of ranks, worker-resident
shared-memory tensors (plain and stacked), asynchronous ``submit``, and ``@pl.program`` host
orchestrators in the IR (their SubWorkers run in test_distributed_subworkers.py).

Rank processes are slow to start on a small machine, so one 2-rank worker with two programs
serves the multi-program, resident-tensor and submit tests; every test that starts ranks checks
that no process or segment is left behind.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torch.distributed")

from _dist_programs import COLS, ROWS, chip_functions, cleaned, config, twice_chip, twice_host  # noqa: E402

import pypto.language as pl  # noqa: E402
from pypto import ir  # noqa: E402
from pypto.ir.distributed_compiled_program import DistributedCompiledProgram  # noqa: E402
from pypto.runtime import (  # noqa: E402
    DistributedWorker,
    SharedDeviceTensor,
    StackedDeviceTensor,
)
from pypto.runtime.distributed import shm  # noqa: E402
from pypto.runtime.distributed_runner import _tensor_from_continuous  # noqa: E402

R, C = ROWS, COLS  # the shared programs' rank slice


@pl.jit.incore
def _plus(a: pl.Tensor, b: pl.Tensor, y: pl.Out[pl.Tensor]):
    s = pl.add(pl.load(a, [0, 0], [R, C]), pl.load(b, [0, 0], [R, C]))
    return pl.store(s, [0, 0], y)


@pl.jit
def _plus_chip(a: pl.Tensor, b: pl.Tensor, y: pl.Out[pl.Tensor]):
    return _plus(a, b, y)


@pl.jit.host
def _plus_host(a: pl.Tensor, b: pl.Tensor, y: pl.Out[pl.Tensor]):
    for r in pl.range(2):
        _plus_chip(a[r], b[r], y[r], device=r)


def _rand(*shape: int, seed: int) -> torch.Tensor:
    return torch.from_numpy(np.random.default_rng(seed).standard_normal(shape).astype(np.float32))


@pytest.fixture(scope="module")
def programs():
    sample = torch.zeros((2, R, C))
    twice = twice_host.compile(sample, sample, config=config(2))
    plus = _plus_host.compile(sample, sample, sample, config=config(2))
    return twice, plus


@pytest.fixture(scope="module")
def rt(programs):
    with cleaned(DistributedWorker(list(programs))) as w:
        yield w


# -- several programs on one worker -----------------------------------------------------------


def test_compiled_programs_are_the_ir_type(programs) -> None:
    assert all(isinstance(p, DistributedCompiledProgram) for p in programs)


def test_run_picks_the_program(rt, programs) -> None:
    twice, plus = programs
    x, b = _rand(2, R, C, seed=1), _rand(2, R, C, seed=2)
    y = torch.zeros(2, R, C)
    rt.run(twice, x, y)
    torch.testing.assert_close(y, 2 * x)
    rt.run(plus, x, b, y)
    torch.testing.assert_close(y, x + b)


def test_call_is_ambiguous_on_a_multi_program_worker(rt) -> None:
    x = torch.zeros(2, R, C)
    with pytest.raises(TypeError, match=r"ambiguous: this worker runs 2 programs .*worker\.run\(compiled"):
        rt(x, x)


def test_run_refuses_a_program_of_another_worker(rt) -> None:
    sample = torch.zeros((2, R, C))

    @pl.jit.host
    def other(x: pl.Tensor, y: pl.Out[pl.Tensor]):
        for r in pl.range(2):
            twice_chip(x[r], y[r], device=r)
            twice_chip(y[r], y[r], device=r)

    compiled = other.compile(sample, sample, config=config(2))
    with pytest.raises(ValueError, match="compiled is not a program of this worker"):
        rt.run(compiled, sample, sample)


def test_programs_of_one_worker_share_its_devices(programs) -> None:
    single = twice_host.compile(torch.zeros(2, R, C), torch.zeros(2, R, C), config=config(3))
    with pytest.raises(ValueError, match=r"item 1 .* device_ids \(0, 1, 2\), item 0 .* \(0, 1\)"):
        programs[0].prepare(extra_compiled=[single])


# -- resident tensors ---------------------------------------------------------------------------


def test_resident_tensor_lives_across_dispatches_and_programs(rt, programs) -> None:
    twice, plus = programs
    prompt = _rand(2, R, C, seed=3)
    kv = rt.alloc_tensor((2, R, C), torch.float32)
    assert isinstance(kv, SharedDeviceTensor)
    np.testing.assert_array_equal(rt.copy_from(kv), np.zeros((2, R, C), np.float32))
    rt.run(twice, prompt, kv)  # an Out parameter written in place
    torch.testing.assert_close(torch.from_numpy(rt.copy_from(kv)), 2 * prompt)
    logits = torch.zeros(2, R, C)
    for step in range(3):
        token = torch.full((2, R, C), float(step))
        rt.run(plus, token, kv, logits)  # an In parameter read in place
        torch.testing.assert_close(logits, token + 2 * prompt)
    rt.free_tensor(kv)


def test_copy_to_and_copy_from(rt, programs) -> None:
    twice, _ = programs
    t = rt.alloc_tensor([2, R, C], np.float32)
    src = _rand(2, R, C, seed=4)
    rt.copy_to(t, src)
    out = torch.zeros(2, R, C)
    assert rt.copy_from(t, out) is out
    torch.testing.assert_close(out, src)
    rt.run(twice, t, t)  # InOut through one resident tensor
    torch.testing.assert_close(torch.from_numpy(rt.copy_from(t)), 2 * src)
    init = rt.alloc_tensor((2, R, C), torch.float32, init=src)
    torch.testing.assert_close(torch.from_numpy(rt.copy_from(init)), src)
    rt.free_tensor(t)
    rt.free_tensor(init)


def test_freed_and_foreign_tensors_are_refused(rt, programs) -> None:
    twice, _ = programs
    t = rt.alloc_tensor((2, R, C), torch.float32)
    rt.free_tensor(t)
    rt.free_tensor(t)  # a second free does nothing
    assert t.freed
    with pytest.raises(ValueError, match=r"parameter 'x': .* was freed"):
        rt.run(twice, t, torch.zeros(2, R, C))
    with pytest.raises(ValueError, match=r"copy_from\(t\): .* was freed"):
        rt.copy_from(t)
    seg = shm.create(2 * R * C * 4)
    try:
        foreign = SharedDeviceTensor(object(), seg, (2, R, C), torch.float32, pl.FP32)
        with pytest.raises(ValueError, match=r"parameter 'x': .* belongs to another DistributedWorker"):
            rt.run(twice, foreign, torch.zeros(2, R, C))
        with pytest.raises(ValueError, match=r"free_tensor.*belongs to another DistributedWorker"):
            rt.free_tensor(foreign)
    finally:
        seg.release()
    with pytest.raises(TypeError, match=r"free_tensor\(t\): expected a SharedDeviceTensor, got Tensor"):
        rt.free_tensor(torch.zeros(1))


def test_resident_tensor_of_the_wrong_shape(rt, programs) -> None:
    twice, _ = programs
    t = rt.alloc_tensor((2, C, R), torch.float32)
    with pytest.raises(TypeError, match=r"parameter 'x': this program was compiled for shape \[2, 4, 16\]"):
        rt.run(twice, t, torch.zeros(2, R, C))
    with pytest.raises(
        ValueError, match=r"copy_to\(host\): expected shape \[2, 16, 4\] FP32, got \[2, 4, 16\]"
    ):
        rt.copy_to(t, torch.zeros(2, R, C))
    rt.free_tensor(t)


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        ({"shape": (0, 4)}, ValueError, r"alloc_tensor\(shape\): expected a sequence of ints > 0"),
        ({"shape": 4}, ValueError, r"alloc_tensor\(shape\)"),
        ({"dtype": "float99"}, TypeError, r"alloc_tensor\(dtype\)"),
        ({"worker_id": 2}, ValueError, r"alloc_tensor\(worker_id\): expected a rank in \[0, 2\)"),
    ],
)
def test_alloc_tensor_checks(rt, call: dict[str, object], error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        rt.alloc_tensor(**{"shape": (4,), "dtype": torch.float32, **call})


def test_stacked_tensor(rt, programs) -> None:
    twice, _ = programs
    host = _rand(2, R, C, seed=5)
    stacked = rt.alloc_stacked_tensor(host)
    assert isinstance(stacked, StackedDeviceTensor)
    assert stacked.worker_ids == (0, 1)
    y = torch.zeros(2, R, C)
    rt.run(twice, stacked, y)
    torch.testing.assert_close(y, 2 * host)
    back = torch.zeros(2, R, C)
    rt.copy_stacked_from(stacked, back)
    torch.testing.assert_close(back, host)
    rt.free_stacked_tensor(stacked)

    swapped = rt.alloc_stacked_tensor(host, worker_ids=[1, 0])
    with pytest.raises(
        ValueError, match=r"shard 0 of this StackedDeviceTensor belongs to rank 1 .* on rank 0"
    ):
        rt.run(twice, swapped, y)
    rt.free_tensor(swapped)
    with pytest.raises(ValueError, match=r"worker_ids\): expected 2 distinct ranks in \[0, 2\)"):
        rt.alloc_stacked_tensor(host, worker_ids=[0, 0])
    with pytest.raises(ValueError, match=r"alloc_stacked_tensor\(host\): expected a \[B, \*tail\]"):
        rt.alloc_stacked_tensor(torch.zeros(4))


# -- submit -------------------------------------------------------------------------------------


def test_submit_runs_in_order(rt, programs) -> None:
    twice, plus = programs
    x, tok = _rand(2, R, C, seed=6), _rand(2, R, C, seed=7)
    kv = rt.alloc_tensor((2, R, C), torch.float32)
    y = torch.zeros(2, R, C)
    first = rt.submit(twice, x, kv)
    second = rt.submit(plus, tok, kv, y)
    second.wait(timeout=120)
    first.result(timeout=0)
    assert first.done
    assert second.done
    torch.testing.assert_close(y, tok + 2 * x)
    rt.free_tensor(kv)


def test_submit_checks_the_call_at_once(rt, programs) -> None:
    with pytest.raises(TypeError, match=r"parameter 'x': this program was compiled for shape"):
        rt.submit(programs[0], torch.zeros(3, R, C), torch.zeros(2, R, C))


# -- @pl.program host orchestrators in the IR ------------------------------------------------


@pl.program
class _Pipeline:
    add_tiles, chip_add = chip_functions(R, C)

    @pl.function(level=pl.Level.HOST, role=pl.Role.SubWorker)
    def scale_in_place(t: pl.Tensor[[R, C], pl.FP32]):
        """Bound at runtime."""
        ...

    @pl.function(level=pl.Level.HOST, role=pl.Role.SubWorker)
    def observe(t: pl.Tensor[[R, C], pl.FP32]): ...

    @pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)
    def host(
        self,
        a: pl.Tensor[[R, C], pl.FP32],
        b: pl.Tensor[[R, C], pl.FP32],
        f: pl.Out[pl.Tensor[[R, C], pl.FP32]],
        g: pl.Out[pl.Tensor[[R, C], pl.FP32]],
    ):
        f2 = self.chip_add(a, b, f)
        self.scale_in_place(f2)
        g2 = self.chip_add(f2, b, g)
        self.observe(g2)


def test_host_level_functions_in_the_ir() -> None:
    cb = _Pipeline.get_function("scale_in_place")
    assert cb.requires_runtime_binding is True
    assert cb.level is pl.Level.HOST
    assert cb.role is pl.Role.SubWorker
    assert _Pipeline.get_function("host").requires_runtime_binding is False
    assert _Pipeline.get_function("chip_add").requires_runtime_binding is False
    assert _Pipeline.get_function("nothing") is None
    assert _Pipeline.entry == "chip_add"


def test_host_program_needs_a_distributed_config() -> None:
    with pytest.raises(ValueError, match=r"pass distributed_config=DistributedConfig\(device_ids="):
        ir.compile(_Pipeline)


def test_host_level_decorator_checks() -> None:
    with pytest.raises(
        ValueError, match=r"expected role=pl.Role.Orchestrator or pl.Role.SubWorker, got None"
    ):

        class _A:
            @pl.function(level=pl.Level.HOST)
            def f(self): ...

    with pytest.raises(ValueError, match=r"only pl.Level.HOST is a function level"):

        class _B:
            @pl.function(level=pl.Level.CORE_GROUP, role=pl.Role.SubWorker)
            def f(self): ...


def test_tensor_from_continuous_checks_its_argument() -> None:
    with pytest.raises(TypeError, match=r"_tensor_from_continuous\(arg\): expected .* got Tensor"):
        _tensor_from_continuous(torch.zeros(2))
