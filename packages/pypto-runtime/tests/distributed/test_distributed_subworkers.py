"""SubWorkers of a ``@pl.program`` host orchestrator on sub-worker processes: Python bodies
(torch tensors over the dispatch's memory, scalars, keyword arguments and defaults), a
runtime-bound callback, calls with no launch between them running at the same time, and the
failures (a SubWorker that raises, one whose process dies, one that hangs past the timeout).

One compiled program and one prepared worker (1 rank, 3 sub-worker processes) serve every test
that runs; a control tensor chooses what the callback does, so no test prepares again.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torch.distributed")

from _dist_programs import chip_functions  # noqa: E402

import pypto.language as pl  # noqa: E402
from pypto import ir  # noqa: E402
from pypto.ir import DistributedConfig  # noqa: E402
from pypto.runtime.distributed import DistributedTimeoutError, shm  # noqa: E402
from pypto.runtime.distributed.errors import SubWorkerError  # noqa: E402
from pypto.runtime.distributed.host_bytes import host_bytes  # noqa: E402
from pypto.runtime.distributed.plan import DistributedPlan  # noqa: E402
from pypto.runtime.distributed.program import DistributedCompiledProgram  # noqa: E402
from pypto.runtime.distributed.sub_workers import SubWorkerPool, bind_sub_workers  # noqa: E402

R, C = 8, 16
MEET_TIMEOUT = 30.0  # seconds a meet call waits for the other one


@pl.program
class _Subs:
    add_tiles, chip_add = chip_functions(R, C)

    @pl.function(level=pl.Level.HOST, role=pl.Role.SubWorker)
    def scale(t: pl.InOut[pl.Tensor[[R, C], pl.FP32]], factor: float = 2.0):
        t.mul_(factor)

    @pl.function(level=pl.Level.HOST, role=pl.Role.SubWorker)
    def meet(span: pl.Out[pl.Tensor[[2], pl.INT64]], side: int): ...

    @pl.function(level=pl.Level.HOST, role=pl.Role.SubWorker)
    def check(
        ctrl: pl.Tensor[[2], pl.INT32],
        seen: pl.Out[pl.Tensor[[R, C], pl.FP32]],
        f: pl.Tensor[[R, C], pl.FP32],
    ): ...

    @pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)
    def host(  # noqa: PLR0917 (the host function's parameters are the program's)
        self,
        a: pl.Tensor[[R, C], pl.FP32],
        b: pl.Tensor[[R, C], pl.FP32],
        ctrl: pl.Tensor[[2], pl.INT32],
        f: pl.Out[pl.Tensor[[R, C], pl.FP32]],
        g: pl.Out[pl.Tensor[[R, C], pl.FP32]],
        spans: pl.Out[pl.Tensor[[2, 2], pl.INT64]],
        seen: pl.Out[pl.Tensor[[R, C], pl.FP32]],
    ):
        f2 = self.chip_add(a, b, f)
        f3 = self.scale(f2, factor=3.0)  # a call returns what it writes, as a launch does
        self.meet(spans[0], 0)
        self.meet(side=1, span=spans[1])
        self.check(ctrl, seen, f3)
        g2 = self.chip_add(f2, b, g)
        self.scale(g2)


# what the check callback does, by ctrl[0]
COPY, RAISE, DIE, HANG = 0, 1, 2, 3


def _callbacks(shared: torch.Tensor) -> dict:
    """The runtime-bound SubWorkers. ``shared`` (torch, in shared memory: the test sees what the
    sub-worker processes write): [pid that ran check, meet calls of side 0, of side 1]."""

    def meet(args) -> None:
        # returns only once the other side's call has started too: the two calls run at once
        span, side = args[0].numpy(), args[1]
        span[0] = time.monotonic_ns()
        shared[1 + side] += 1
        deadline = time.monotonic() + MEET_TIMEOUT
        while shared[2 - side] < shared[1 + side]:
            if time.monotonic() > deadline:
                raise TimeoutError(f"meet(side={side}): the other meet call did not run at the same time")
            time.sleep(0.001)
        span[1] = time.monotonic_ns()

    def check(args) -> None:
        ctrl = args[0].numpy()
        shared[0] = os.getpid()
        if ctrl[0] == RAISE:
            raise ValueError(f"check was told to fail (ctrl {int(ctrl[0])})")
        if ctrl[0] == DIE:
            os.kill(os.getpid(), signal.SIGKILL)
        if ctrl[0] == HANG:
            time.sleep(60)
        args[1].numpy()[...] = args[2].numpy()

    return {"meet": meet, "check": check}


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _gone(pids: tuple[int, ...]) -> list[int]:
    deadline = time.monotonic() + 10
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    return [p for p in pids if _alive(p)]


def _rand(*shape: int, seed: int) -> torch.Tensor:
    return torch.from_numpy(np.random.default_rng(seed).standard_normal(shape).astype(np.float32))


class _Call:
    """The host function's arguments, and what they must hold after a dispatch."""

    def __init__(self, seed: int, ctrl: int = COPY) -> None:
        self.a, self.b = _rand(R, C, seed=seed), _rand(R, C, seed=seed + 1)
        self.ctrl = torch.tensor([ctrl, 0], dtype=torch.int32)
        self.f, self.g, self.seen = torch.zeros(R, C), torch.zeros(R, C), torch.zeros(R, C)
        self.spans = torch.zeros(2, 2, dtype=torch.int64)

    @property
    def args(self) -> tuple[torch.Tensor, ...]:
        return self.a, self.b, self.ctrl, self.f, self.g, self.spans, self.seen

    def check(self) -> None:
        f = 3 * (self.a + self.b)
        torch.testing.assert_close(self.f, f)
        torch.testing.assert_close(self.seen, f)  # check ran after scale wrote f
        torch.testing.assert_close(self.g, 2 * (f + self.b))


@pytest.fixture(scope="module")
def compiled():
    return ir.compile(_Subs, platform="a2a3sim", distributed_config=DistributedConfig([0], num_sub_workers=2))


@pytest.fixture(scope="module")
def shared():
    return torch.zeros(3, dtype=torch.int64).share_memory_()


@pytest.fixture(scope="module")
def worker(compiled, shared):
    w = compiled.prepare(callbacks=_callbacks(shared))

    def dispatch(*args: torch.Tensor) -> None:
        shared.zero_()  # the meet counters start even (a failed dispatch may have left them odd)
        w(*args)

    w.dispatch = dispatch
    yield w
    w.close()


def test_the_plan_binds_keywords_and_defaults(compiled) -> None:
    plan = compiled.plan
    assert [c.name for c in plan.callbacks] == ["scale", "meet", "meet", "check", "scale"]
    scale, meet0, meet1, check, scale2 = plan.callbacks
    assert scale.args == (("host", 3, []), ("scalar", 3.0))
    assert meet0.args == (("host", 5, [0]), ("scalar", 0))
    assert meet1.args == (("host", 5, [1]), ("scalar", 1))  # given by keyword
    assert scale2.args == (("host", 4, []), ("scalar", 2.0))  # the default
    assert check.args == (("host", 2, []), ("host", 6, []), ("host", 3, []))
    assert check.writes == (False, True, False)
    assert scale.writes == (True, False)
    assert compiled.required_callbacks == ("meet", "check")
    again = DistributedPlan.from_json(json.loads(json.dumps(plan.to_json())))
    assert again == plan


def test_bodies_and_callbacks_run_on_sub_worker_processes(worker, shared) -> None:
    pids = worker.sub_worker_pids
    assert len(pids) == 3  # max(num_sub_workers=2, 3 SubWorkers declared)
    for seed in (1, 5):  # the processes serve dispatch after dispatch
        call = _Call(seed)
        worker.dispatch(*call.args)
        call.check()
        assert int(shared[0]) in pids
        assert int(shared[0]) != os.getpid()
        # the two meet calls (no launch between them, disjoint outputs) ran at the same time:
        # each waited for the other to start
        assert shared[1:].tolist() == [1, 1]
        (s0, e0), (s1, e1) = call.spans.tolist()
        assert s1 < e0
        assert s0 < e1
    assert worker.sub_worker_pids == pids


def test_a_sub_worker_that_raises_fails_its_dispatch(worker) -> None:
    pids = worker.sub_worker_pids
    call = _Call(7, ctrl=RAISE)
    with pytest.raises(
        SubWorkerError, match=r"host\(\) dispatch \d+: SubWorker 'check' raised ValueError: check was told"
    ) as e:
        worker.dispatch(*call.args)
    assert e.value.sub_worker == "check"
    assert isinstance(e.value.__cause__, ValueError)
    assert not worker.closed
    assert worker.sub_worker_pids == pids
    call = _Call(8)
    worker.dispatch(*call.args)
    call.check()


def test_private_memory_passes_through_the_scratch_segment(worker) -> None:
    # host tensors in no segment (under torchrun's launcher they are private copies): scale
    # writes f, check copies f into seen; both use one scratch copy of f, so check sees the write
    f0 = np.arange(R * C, dtype=np.float32).reshape(R, C)
    f, seen, ctrl = f0.copy(), np.zeros((R, C), np.float32), np.zeros(2, np.int32)
    pool = worker._sub_workers  # the worker's own pool, called as a dispatch under torchrun does
    # (a dispatch's views are byte arrays, host_bytes: here over the memory of these arrays)
    views = {i: host_bytes(a, f"parameter {i}") for i, a in ((2, ctrl), (3, f), (6, seen))}
    pool.run(worker.plan, [0, 3], views, segments=[], what="direct", timeout=60)
    np.testing.assert_array_equal(f, 3 * f0)
    np.testing.assert_array_equal(seen, 3 * f0)


def test_a_sub_worker_process_that_dies_fails_its_dispatch(worker) -> None:
    pids = worker.sub_worker_pids
    with pytest.raises(
        SubWorkerError, match=r"SubWorker 'check': its sub-worker process died .*signal SIGKILL"
    ) as e:
        worker.dispatch(*_Call(9, ctrl=DIE).args)
    assert e.value.sub_worker == "check"
    assert _gone(pids) == []  # the others are stopped too
    assert not worker.closed
    call = _Call(10)
    worker.dispatch(*call.args)  # new sub-worker processes
    call.check()
    assert len(worker.sub_worker_pids) == 3
    assert not set(worker.sub_worker_pids) & set(pids)


def test_a_sub_worker_past_the_timeout_fails_its_dispatch(worker) -> None:
    pids, timeout = worker.sub_worker_pids, worker.timeout
    worker.timeout = 2.0
    try:
        with pytest.raises(DistributedTimeoutError, match=r"SubWorker 'check' did not finish within 2.0 s"):
            worker.dispatch(*_Call(11, ctrl=HANG).args)
    finally:
        worker.timeout = timeout
    assert _gone(pids) == []  # started again by the next dispatch, as after a death (above)
    assert worker.sub_worker_pids == ()


def test_close_leaves_no_process_or_segment(worker) -> None:
    pids = worker.rank_pids + worker.sub_worker_pids
    worker.close()
    assert worker.sub_worker_pids == ()
    assert _gone(pids) == []
    assert [s for s in os.listdir("/dev/shm") if s.startswith(shm.segment_prefix())] == []


def test_prepare_checks_the_bindings(compiled) -> None:
    with pytest.raises(
        ValueError, match=r"SubWorker\(s\) 'check', 'meet' of program 'host' have a `\.\.\.` body"
    ):
        compiled.prepare()
    with pytest.raises(
        ValueError, match=r"'typo' is not a SubWorker of these programs \(theirs: check, meet, scale\)"
    ):
        compiled.prepare(callbacks={"check": print, "typo": print})
    with pytest.raises(TypeError, match=r"'check': expected a callable, got int"):
        compiled.prepare(callbacks={"check": 3})
    with pytest.raises(
        TypeError,
        match=r"'check': expected a callable taking one argument, fn\(args\); got the signature \(\)",
    ):
        compiled.prepare(callbacks={"check": lambda: None})
    with (
        pytest.warns(DeprecationWarning, match=r"sub_worker_overrides=\.\.\.\) is deprecated"),
        pytest.raises(ValueError, match=r"SubWorker\(s\) 'meet' of program 'host'"),
    ):
        compiled.prepare(sub_worker_overrides={"check": print})  # upstream's older spelling
    reloaded = DistributedCompiledProgram.from_dir(compiled.output_dir)
    with pytest.raises(
        ValueError, match=r"calls SubWorker 'scale', whose Python body .* \(reloaded from its output_dir\)"
    ):
        reloaded.prepare(callbacks={"check": print, "meet": print})


def test_a_callback_replaces_a_body(compiled) -> None:
    replace = lambda args: None  # noqa: E731
    bound = {"check": print, "meet": print}
    functions, count = bind_sub_workers([compiled.plan], [compiled], bound)
    assert functions["0/scale"] == (compiled.sub_workers["scale"].fn, True)
    assert functions["0/meet"] == (print, False)
    assert count == 3
    functions, _ = bind_sub_workers([compiled.plan], [compiled], {**bound, "scale": replace})
    assert functions["0/scale"] == (replace, False)


def test_an_implementation_that_cannot_be_sent_is_named() -> None:
    lock = threading.Lock()

    def holds_a_lock(args) -> None:
        with lock:
            pass

    pool = SubWorkerPool({"0/check": (holds_a_lock, False)}, 1)
    with pytest.raises(TypeError, match=r"SubWorker 'check': its implementation cannot be sent .*lock"):
        pool.start(60)
    assert pool.pids == ()


def test_sub_worker_calls_are_checked_at_compile() -> None:
    def program(call):
        @pl.program
        class Bad:
            @pl.function(type=pl.FunctionType.InCore)
            def k(
                self, a: pl.Tensor[[R, C], pl.FP32], out: pl.Out[pl.Tensor[[R, C], pl.FP32]]
            ) -> pl.Tensor[[R, C], pl.FP32]:
                return pl.store(pl.load(a, [0, 0], [R, C]), [0, 0], out)

            @pl.function(type=pl.FunctionType.Orchestration)
            def chip(
                self, a: pl.Tensor[[R, C], pl.FP32], out: pl.Out[pl.Tensor[[R, C], pl.FP32]]
            ) -> pl.Tensor[[R, C], pl.FP32]:
                return self.k(a, out)

            @pl.function(level=pl.Level.HOST, role=pl.Role.SubWorker)
            def sub(t: pl.Tensor[[R, C], pl.FP32], factor: float = 1.0):
                t.mul_(factor)

            @pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)
            def host(self, a: pl.Tensor[[R, C], pl.FP32], out: pl.Out[pl.Tensor[[R, C], pl.FP32]]):
                call(self, self.chip(a, out))

        return Bad

    config = DistributedConfig([0])
    with pytest.raises(
        TypeError, match=r"SubWorker sub\(t, factor=1.0\): got an unexpected keyword argument 'scale'"
    ):
        ir.compile(program(lambda s, t: s.sub(t, scale=2.0)), distributed_config=config)
    with pytest.raises(TypeError, match=r"SubWorker sub\(.*\): missing a required argument: 't'"):
        ir.compile(program(lambda s, t: s.sub(factor=2.0)), distributed_config=config)
    with pytest.raises(TypeError, match=r"sub\(\): argument 1 of a SubWorker call must be .* got list"):
        ir.compile(program(lambda s, t: s.sub(t, [2.0])), distributed_config=config)
