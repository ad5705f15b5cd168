"""``DistributedWorker``: prepared multi-chip programs, reusable across dispatches.

``prepare()`` (or ``DistributedWorker([a, b])`` for several programs on one set of ranks)
starts one process per rank (the torch.distributed engine, ``_engine``) and creates the window
buffers' shared-memory segments; every dispatch (``worker(*args)``, ``worker.run(compiled,
*args)``, ``worker.submit(...)``) copies the host tensors into an I/O segment (a worker-resident
tensor, ``alloc_tensor``, is used in place), zeroes the program's windows, has every rank run
its launches (phase by phase, with the program's SubWorker calls run on the sub-worker
processes between phases, ``sub_workers``), and copies the written host tensors back. :meth:`close` (also on
``with``-exit, garbage collection and interpreter exit) stops the ranks and removes every
segment. A failed dispatch (a rank died, raised, or did not answer in time) stops all ranks and
removes the segments; the worker cannot run again.

Under torchrun's launcher (``pypto.runtime.distributed.launch``) the ranks are torchrun's
processes (``launched.LaunchedRankGroup``), which may be on other hosts: host tensors travel
over a gloo group between this process and the ranks instead of the I/O segment, and resident
tensors live in this process's private memory and travel with each dispatch.
"""

from __future__ import annotations

import contextlib
import threading
import weakref
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

from pypto.ir import DATA_PATHS, DataType, ParamDirection
from pypto.language.interface import dtype_of, is_tensor, shape_of
from pypto.runtime.distributed import shm, sub_workers
from pypto.runtime.distributed.call_args import bind_host_args, with_outputs
from pypto.runtime.distributed.errors import DistributedRankError
from pypto.runtime.distributed.handles import DistributedRegistrationHandle, DistributedRunHandle
from pypto.runtime.distributed.host_bytes import byte_array, element_size, host_bytes
from pypto.runtime.distributed.plan import DistributedPlan
from pypto.runtime.distributed.raw_memory import RawMemory
from pypto.runtime.distributed.tensors import ContinuousTensor, SharedDeviceTensor, StackedDeviceTensor

__all__ = [
    "ContinuousTensor",
    "DistributedRegistrationHandle",
    "DistributedRunHandle",
    "DistributedWorker",
]

_ALIGN = 64  # bytes: each host tensor starts on a cache line of the I/O segment


_T = TypeVar("_T", bound=SharedDeviceTensor)


def _release_all(group: Any, segments: list[shm.Segment], tensors: dict[str, SharedDeviceTensor]) -> None:
    try:
        if group is not None:
            group.close()
    finally:
        for t in tensors.values():
            t._segment = None
        tensors.clear()
        for s in segments:
            s.release()


def _plans_of(programs: Any) -> tuple[list[DistributedPlan], list[Any]]:
    items = list(programs) if isinstance(programs, (list, tuple)) else [programs]
    if not items:
        raise ValueError(
            "DistributedWorker(programs): expected at least one DistributedCompiledProgram, got none"
        )
    plans: list[DistributedPlan] = []
    compiled: list[Any] = []
    for i, item in enumerate(items):
        plan = item if isinstance(item, DistributedPlan) else getattr(item, "plan", None)
        if not isinstance(plan, DistributedPlan):
            raise TypeError(
                f"DistributedWorker(programs): item {i}: expected a DistributedCompiledProgram, got "
                f"{type(item).__name__}"
            )
        first = plans[0] if plans else plan
        for field in ("device_ids", "platform", "runtime"):
            if getattr(plan, field) != getattr(first, field):
                raise ValueError(
                    f"DistributedWorker(programs): item {i} ({plan.name!r}) was compiled for {field} "
                    f"{getattr(plan, field)!r}, item 0 ({first.name!r}) for {getattr(first, field)!r}; "
                    "the programs of one worker share its ranks"
                )
        plans.append(plan)
        compiled.append(item)
    return plans, compiled


class DistributedWorker:
    """Rank processes and shared memory of one or more compiled distributed programs.

    ``DistributedWorker(compiled)`` or ``DistributedWorker([a, b])`` (``a.prepare()`` /
    ``a.prepare(extra_compiled=[b])`` say the same); ``callbacks`` binds the programs'
    runtime-bound SubWorkers by name (and may replace a SubWorker's Python body). All programs must be compiled for the same devices, platform and runtime.
    """

    def __init__(
        self,
        programs: Any,
        *,
        timeout: float | None = None,
        aic_threads: int | None = 1,
        aiv_threads: int | None = 1,
        callbacks: dict[str, Callable[..., Any]] | None = None,
        data_path: str | None = None,
    ) -> None:
        from pypto.runtime.distributed import launch

        self._plans, self._compiled = _plans_of(programs)
        self.plan = self._plans[0]
        functions, count = sub_workers.bind_sub_workers(self._plans, self._compiled, callbacks)
        self._sub_workers = sub_workers.SubWorkerPool(functions, count) if count else None
        if timeout is None:
            dc = getattr(self._compiled[0], "distributed_config", None)
            timeout = dc.timeout if dc is not None else 120.0
        if data_path is None:
            resolve = getattr(self._compiled[0], "data_path", None)  # a plan alone has none
            data_path = resolve() if callable(resolve) else launch.default_data_path()
        if data_path not in DATA_PATHS:
            raise ValueError(
                f"DistributedWorker(data_path): expected one of {', '.join(DATA_PATHS)}, got {data_path!r}"
            )
        # under torchrun (pypto.runtime.distributed.launch) the launched processes are the ranks;
        # host tensors then travel through the store, since ranks may be on other hosts
        self._launch = launch.current()
        if self._launch is not None:
            _check_launched(self._launch, self.plan, data_path)
        # "process_group": the ranks hold their windows in private memory (no segments here)
        self.data_path = data_path
        self._segments: list[shm.Segment] = []
        self._tensors: dict[str, SharedDeviceTensor] = {}  # segment name -> live tensor
        self._forget: list[str] = []  # segments of freed tensors the ranks still map
        self._raw = RawMemory()  # malloc's blocks
        self._threads = (aic_threads, aiv_threads)
        self._io: shm.Segment | None = None
        self._group: Any = None
        self._lock = threading.RLock()
        self._executor: ThreadPoolExecutor | None = None
        self._last: Future[None] | None = None
        self._finalizer = weakref.finalize(self, _release_all, None, self._segments, self._tensors)
        try:
            self._windows: list[list[shm.Segment]] = []
            for plan in self._plans:
                self._windows.append([])
                for w in plan.windows if data_path == "shared_memory" else ():
                    self._windows[-1].append(shm.create(w.stride * plan.world_size))
                    self._segments.append(self._windows[-1][-1])
            self._group = self._rank_group()(
                [plan.to_json() for plan in self._plans],
                self.plan.world_size,
                timeout=timeout,
                aic_threads=aic_threads,
                aiv_threads=aiv_threads,
                data_path=data_path,
            )
            if self._sub_workers is not None:
                self._sub_workers.start(timeout)
        except BaseException:
            self.close()
            raise
        self._finalizer.detach()
        self._finalizer = weakref.finalize(self, _release_all, self._group, self._segments, self._tensors)
        self._dispatches = 0
        self.reset_windows = True
        """False: a dispatch leaves the windows as the previous one left them (upstream's
        ``prepare(persistent=True, reset_persistent_windows=False)``); True: it zeroes them."""

    def _rank_group(self) -> Callable[..., Any]:
        import functools

        if self._launch is None:
            from pypto.runtime.distributed._engine import RankGroup

            return RankGroup
        from pypto.runtime.distributed.launched import LaunchedRankGroup

        return functools.partial(LaunchedRankGroup, self._launch)

    @property
    def world_size(self) -> int:
        return self.plan.world_size

    @property
    def programs(self) -> tuple[Any, ...]:
        """The compiled programs this worker runs (the order given)."""
        return tuple(self._compiled)

    @property
    def timeout(self) -> float:
        """Seconds each wait of a dispatch may take (``DistributedConfig(timeout)`` at first)."""
        return float(self._group.timeout)

    @timeout.setter
    def timeout(self, seconds: float) -> None:
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not seconds > 0:
            raise ValueError(f"DistributedWorker.timeout: expected seconds > 0, got {seconds!r}")
        self._group.timeout = float(seconds)

    @property
    def rank_pids(self) -> tuple[int, ...]:
        """The process ids of the ranks (rank order)."""
        return self._group.pids if self._group is not None else ()

    @property
    def rank_seconds(self) -> tuple[float, ...]:
        """Seconds each rank's launches took in the last dispatch, timed inside the rank (no
        command delivery or polling; rank order); empty before the first dispatch."""
        return self._group.rank_seconds if self._group is not None else ()

    @property
    def sub_worker_pids(self) -> tuple[int, ...]:
        """The process ids of the sub-worker processes that run SubWorker calls (empty when no
        program of this worker calls a SubWorker)."""
        return self._sub_workers.pids if self._sub_workers is not None else ()

    @property
    def segment_names(self) -> tuple[str, ...]:
        """The shared-memory segments this worker owns now."""
        return tuple(s.name for s in self._segments)

    @property
    def closed(self) -> bool:
        return not self._finalizer.alive

    def __enter__(self) -> DistributedWorker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop the ranks, free every resident tensor and remove every shared-memory segment
        (idempotent). A dispatch still running fails."""
        executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=False, cancel_futures=True)
        pool = getattr(self, "_sub_workers", None)
        if pool is not None:
            pool.close()
        if self._finalizer.alive:
            self._finalizer()
        else:
            _release_all(None, self._segments, self._tensors)
        self._io = None

    def _require_open(self, what: str) -> None:
        if self.closed or self._group is None:
            raise DistributedRankError(f"DistributedWorker.{what}: this DistributedWorker is closed")

    # -- resident tensors ------------------------------------------------------------------

    def _new_tensor(self, cls: type[_T], shape: Any, dtype: Any, what: str, **extra: Any) -> _T:
        from pypto.runtime.chip_worker import _data_type

        self._require_open(what)
        dims = tuple(shape) if isinstance(shape, Sequence) and not isinstance(shape, str) else None
        if not dims or any(isinstance(d, bool) or not isinstance(d, int) or d <= 0 for d in dims):
            raise ValueError(
                f"DistributedWorker.{what}(shape): expected a sequence of ints > 0, got {shape!r}"
            )
        data_type = _data_type(dtype, f"DistributedWorker.{what}(dtype)")
        element_size(data_type, f"DistributedWorker.{what}(dtype)")
        if isinstance(dtype, type):  # a scalar type such as numpy.float32: its dtype object
            import numpy

            dtype = numpy.dtype(dtype)
        n = 1
        for d in dims:
            n *= d
        # under torchrun the ranks may be on other hosts: the memory is this process's, and its
        # bytes travel over gloo to the ranks with each dispatch that passes the tensor
        size = n * data_type.itemsize
        segment = shm.create(size) if self._launch is None else shm.private(size)
        t = cls(self, segment, dims, dtype, data_type, **extra)
        self._segments.append(segment)
        self._tensors[segment.name] = t
        return t

    def _own(self, t: Any, what: str, *, freed_ok: bool = False) -> SharedDeviceTensor:
        """``t``, checked to be a SharedDeviceTensor of this worker (and, unless ``freed_ok``, not freed)."""
        if not isinstance(t, SharedDeviceTensor):
            raise TypeError(
                f"DistributedWorker.{what}: expected a SharedDeviceTensor, got {type(t).__name__}"
            )
        if t.worker is not self:
            raise ValueError(f"DistributedWorker.{what}: {t!r} belongs to another DistributedWorker")
        if t.freed and not freed_ok:
            raise ValueError(f"DistributedWorker.{what}: {t!r} was freed (free_tensor or close)")
        return t

    def alloc_tensor(
        self, shape: Sequence[int], dtype: Any, *, init: Any = None, worker_id: int = 0
    ) -> SharedDeviceTensor:
        """A zero-filled row-major tensor in shared memory that every rank sees, kept across
        dispatches (of every program of this worker) until ``free_tensor`` or ``close``.

        ``dtype``: a torch or numpy dtype or a ``pypto.ir.DataType``; ``init``: a host tensor of
        exactly ``shape`` and ``dtype`` copied in. ``worker_id`` (a rank) is accepted for
        upstream's signature; the memory is every rank's.
        """
        self._check_worker_id(worker_id, "alloc_tensor")
        t = self._new_tensor(SharedDeviceTensor, shape, dtype, "alloc_tensor")
        return t if init is None else self._filled(t, init, "alloc_tensor(init)")

    def alloc_stacked_tensor(
        self, host: Any, *, worker_ids: Sequence[int] | None = None
    ) -> StackedDeviceTensor:
        """A resident ``[B, *tail]`` copy of ``host`` whose shard ``i`` is consumed by rank
        ``worker_ids[i]`` (default: rank ``i``); pass it for a parameter the host body indexes
        per rank (``x[r]``)."""
        self._require_open("alloc_stacked_tensor")
        if not is_tensor(host) or len(shape_of(host)) < 2 or shape_of(host)[0] < 1:
            raise ValueError(
                "DistributedWorker.alloc_stacked_tensor(host): expected a [B, *tail] host tensor (rank >= 2, "
                f"B >= 1), got {getattr(host, 'shape', type(host).__name__)}"
            )
        b = shape_of(host)[0]
        ids = tuple(range(b)) if worker_ids is None else tuple(worker_ids)
        if (
            len(ids) != b
            or len(set(ids)) != b
            or any(isinstance(w, bool) or not isinstance(w, int) or not 0 <= w < self.world_size for w in ids)
        ):
            raise ValueError(
                f"DistributedWorker.alloc_stacked_tensor(worker_ids): expected {b} distinct ranks in "
                f"[0, {self.world_size}) (one per shard of host's leading dim), got {list(ids)}"
            )
        t = self._new_tensor(
            StackedDeviceTensor, shape_of(host), host.dtype, "alloc_stacked_tensor", worker_ids=ids
        )
        return self._filled(t, host, "alloc_stacked_tensor(host)")

    def _filled(self, t: _T, host: Any, what: str) -> _T:
        """``t`` (just allocated) with ``host`` copied in; freed again if the copy fails."""
        try:
            self.copy_to(t, host, what=what)
        except BaseException:
            self.free_tensor(t)
            raise
        return t

    def free_tensor(self, t: SharedDeviceTensor, *, worker_id: int = 0) -> None:
        """Release ``t`` (a second free of the same tensor does nothing)."""
        t = self._own(t, "free_tensor(t)", freed_ok=True)
        if t.freed:
            return
        with self._lock:  # not while a dispatch uses it
            segment = t.segment
            t._segment = None
            self._tensors.pop(segment.name, None)
            if segment in self._segments:
                self._segments.remove(segment)
            segment.release()
            self._forget.append(segment.name)

    free_stacked_tensor = free_tensor

    # -- raw pointers (raw_memory) -----------------------------------------------------------

    def malloc(self, nbytes: int, *, worker_id: int = 0) -> int:
        """A zero-filled block of ``nbytes`` bytes of this worker's memory, kept until
        :meth:`free` or ``close``; returns its address. ``worker_id`` (a rank) is accepted for
        upstream's signature; the memory is every rank's."""
        self._require_open("malloc")
        if isinstance(nbytes, bool) or not isinstance(nbytes, int) or nbytes <= 0:
            raise ValueError(f"DistributedWorker.malloc(nbytes): expected an int > 0, got {nbytes!r}")
        self._check_worker_id(worker_id, "malloc")
        with self._lock:
            return self._raw.add(self._new_tensor(SharedDeviceTensor, (nbytes,), DataType.UINT8, "malloc"))

    def free(self, ptr: int, *, worker_id: int = 0) -> None:
        """Release the block at ``ptr`` (an address :meth:`malloc` returned).

        Raises:
            ValueError: ``ptr`` is not a live block of this worker, or was freed already.
        """
        self._require_open("free")
        self._check_worker_id(worker_id, "free")
        with self._lock:
            block = self._raw.take(ptr, worker_id)
        self.free_tensor(block)

    def _check_worker_id(self, worker_id: Any, what: str) -> None:
        if (
            isinstance(worker_id, bool)
            or not isinstance(worker_id, int)
            or not 0 <= worker_id < self.world_size
        ):
            raise ValueError(
                f"DistributedWorker.{what}(worker_id): expected a rank in [0, {self.world_size}), got {worker_id!r}"
            )

    def _raw_span(self, ptr: Any, nbytes: Any, what: str) -> Any:
        return self._raw.span(list(self._tensors.values()), ptr, nbytes, what)

    # -- copies ------------------------------------------------------------------------------

    def copy_to(
        self,
        t: SharedDeviceTensor | int,
        host: Any,
        nbytes: int | None = None,
        *,
        worker_id: int = 0,
        what: str = "copy_to(host)",
    ) -> None:
        """Copy the host tensor ``host`` (``t``'s shape and dtype) into the resident tensor ``t``;
        or, as ``copy_to(dst_ptr, src_host_ptr, nbytes)``, ``nbytes`` bytes from the host
        address ``src_host_ptr`` to ``dst_ptr`` in this worker's memory (see ``raw_memory``)."""
        import numpy

        self._require_open("copy_to")
        if not isinstance(t, SharedDeviceTensor) and isinstance(t, int) and not isinstance(t, bool):
            self._check_worker_id(worker_id, "copy_to")
            dst = self._raw_span(t, nbytes, "copy_to(dst_ptr, src_host_ptr, nbytes)")
            numpy.copyto(dst, RawMemory.host(host, dst.size, "DistributedWorker.copy_to(src_host_ptr)"))
            return
        if nbytes is not None:
            raise TypeError(
                "DistributedWorker.copy_to(t, host): nbytes goes with the pointer form "
                f"copy_to(dst_ptr, src_host_ptr, nbytes), got t={t!r}"
            )
        t = self._own(t, "copy_to(t)")
        if not is_tensor(host):
            raise TypeError(f"DistributedWorker.{what}: expected a host tensor, got {type(host).__name__}")
        shape, dtype = shape_of(host, what), dtype_of(host, f"DistributedWorker.{what}")
        if shape != t.shape or dtype is not t.data_type:
            raise ValueError(
                f"DistributedWorker.{what}: expected shape {list(t.shape)} {t.data_type.value}, got "
                f"{list(shape)} {dtype.value}"
            )
        numpy.copyto(t.bytes(), host_bytes(host, f"DistributedWorker.{what}"))

    def copy_from(
        self, t: SharedDeviceTensor | int, out: Any = None, nbytes: int | None = None, *, worker_id: int = 0
    ) -> Any:
        """``t``'s contents: written into the host tensor ``out`` (its shape and dtype) and
        returned, or a new numpy array when ``out`` is None (a dtype numpy lacks, BF16 or FP8,
        needs ``out``). As ``copy_from(dst_host_ptr, src_ptr, nbytes)``: ``nbytes`` bytes from
        ``src_ptr`` in this worker's memory to the host address ``dst_host_ptr``."""
        import numpy

        self._require_open("copy_from")
        if not isinstance(t, SharedDeviceTensor) and isinstance(t, int) and not isinstance(t, bool):
            self._check_worker_id(worker_id, "copy_from")
            src = self._raw_span(out, nbytes, "copy_from(dst_host_ptr, src_ptr, nbytes)")
            numpy.copyto(RawMemory.host(t, src.size, "DistributedWorker.copy_from(dst_host_ptr)"), src)
            return None
        if nbytes is not None:
            raise TypeError(
                "DistributedWorker.copy_from(t, out): nbytes goes with the pointer form "
                f"copy_from(dst_host_ptr, src_ptr, nbytes), got t={t!r}"
            )
        t = self._own(t, "copy_from(t)")
        if out is None:
            return t.numpy().copy()
        if not is_tensor(out):
            raise TypeError(
                f"DistributedWorker.copy_from(out): expected a host tensor, got {type(out).__name__}"
            )
        shape, dtype = shape_of(out, "copy_from(out)"), dtype_of(out, "DistributedWorker.copy_from(out)")
        if shape != t.shape or dtype is not t.data_type:
            raise ValueError(
                f"DistributedWorker.copy_from(out): expected shape {list(t.shape)} {t.data_type.value}, got "
                f"{list(shape)} {dtype.value}"
            )
        numpy.copyto(host_bytes(out, "DistributedWorker.copy_from(out)", write=True), t.bytes())
        return out

    def copy_stacked_from(self, stacked: StackedDeviceTensor, host: Any) -> Any:
        """Copy every shard of ``stacked`` into ``host`` (its full shape and dtype)."""
        if not isinstance(stacked, StackedDeviceTensor):
            raise TypeError(
                f"DistributedWorker.copy_stacked_from(stacked): expected a StackedDeviceTensor, got {type(stacked).__name__}"
            )
        return self.copy_from(stacked, host)

    # -- dispatch ----------------------------------------------------------------------------

    def _index_of(self, compiled: Any, what: str = "run(compiled, ...)") -> int:
        for k, c in enumerate(self._compiled):
            if c is compiled:
                return k
        plan = getattr(compiled, "plan", None)
        if isinstance(plan, DistributedPlan):
            digest = plan.digest()
            for k, p in enumerate(self._plans):
                if p.digest() == digest:
                    return k
        names = ", ".join(repr(p.name) for p in self._plans)
        raise ValueError(
            f"DistributedWorker.{what}: compiled is not a program of this worker (it runs {names}), "
            f"got {getattr(plan, 'name', type(compiled).__name__)!r}; prepare a worker with it "
            "(DistributedWorker([...]) or prepare(extra_compiled=[...]))"
        )

    def register(self, compiled: Any) -> DistributedRegistrationHandle:
        """A handle that dispatches ``compiled`` (one of this worker's programs, which every rank
        loaded when the worker started): ``handle(*args, config=None)`` is ``run``.

        Raises:
            DistributedRankError: this worker is closed.
            ValueError: ``compiled`` is not one of this worker's programs.
        """
        self._require_open("register")
        self._index_of(compiled, "register(compiled)")
        return DistributedRegistrationHandle(self, compiled)

    def run(self, compiled: Any, *args: Any, config: Any = None, **kwargs: Any) -> Any:
        """One dispatch of ``compiled``, one of this worker's programs; ``config`` (a
        ``RunConfig``) applies to this dispatch alone (see :meth:`_dispatch_config`); omitted
        ``pl.Out`` tensors are allocated and returned (``call_args.with_outputs``)."""
        k = self._index_of(compiled)
        kwargs, returned = with_outputs(self._plans[k], args, kwargs)
        self._run_now(k, args, kwargs, self._dispatch_config(k, config))
        return returned

    def _dispatch_config(self, k: int, config: Any) -> dict[str, Any]:
        """What a per-dispatch ``RunConfig`` changes: ``timeout`` (this dispatch's waits and its
        kernels' ``pld.system.wait``), and ``call_config``, ``enable_chip_swimlane`` and
        ``swimlane_dir`` (the ranks' program runs; rank ``r``'s swimlane files go to
        ``<swimlane_dir>/rank<r>``). Its platform, runtime, devices and thread counts must be
        the worker's: they were fixed when the ranks started."""
        from pypto.runtime.runner import RunConfig

        if config is None:
            return {}
        plan = self._plans[k]
        what = f"DistributedWorker.run({plan.name}, config=...)"
        if not isinstance(config, RunConfig):
            raise TypeError(
                f"{what}: expected a pypto.runtime.RunConfig or None, got {type(config).__name__}"
            )
        for field, have in (("platform", plan.platform), ("runtime", plan.runtime)):
            if getattr(config, field) != have:
                raise ValueError(
                    f"{what}: RunConfig({field}={getattr(config, field)!r}), but this worker runs {field} "
                    f"{have!r}; a dispatch's config may not change it"
                )
        dc = config.distributed_config
        if dc is not None and tuple(dc.device_ids) != tuple(plan.device_ids):
            raise ValueError(
                f"{what}: RunConfig(distributed_config) names device_ids {list(dc.device_ids)}, but this worker's "
                f"ranks are devices {list(plan.device_ids)}"
            )
        for field, threads in zip(("aic_threads", "aiv_threads"), self._threads, strict=True):
            if getattr(config, field) is not None and getattr(config, field) != threads:
                raise ValueError(
                    f"{what}: RunConfig({field}={getattr(config, field)!r}), but this worker's ranks run "
                    f"{threads!r} (set when the worker is prepared)"
                )
        call = {
            "call_config": config.call_config,
            "enable_chip_swimlane": config.enable_chip_swimlane,
            "swimlane_dir": config.swimlane_dir,
        }
        return {"timeout": config.timeout, "call": call}

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """One dispatch of this worker's program: every rank runs its launches on these host
        tensors (written in place) and resident tensors (used in place); omitted ``pl.Out``
        tensors are allocated and returned."""
        if len(self._plans) > 1:
            names = ", ".join(repr(p.name) for p in self._plans)
            raise TypeError(
                f"DistributedWorker(*args) is ambiguous: this worker runs {len(self._plans)} programs ({names}); "
                "dispatch one with worker.run(compiled, *args)"
            )
        config = kwargs.pop("config", None)  # upstream's per-dispatch config, as run's
        kwargs, returned = with_outputs(self._plans[0], args, kwargs)
        self._run_now(0, args, kwargs, self._dispatch_config(0, config))
        return returned

    def submit(self, compiled: Any, *args: Any, config: Any = None, **kwargs: Any) -> DistributedRunHandle:
        """Start a dispatch of ``compiled`` and return at once; dispatches run one at a time in
        submission order. Do not change the arguments until the handle's ``wait()`` returns.
        ``config``: as for :meth:`run`."""
        k = self._index_of(compiled, "submit(compiled, ...)")
        self._require_open("submit")
        settings = self._dispatch_config(k, config)
        bind_host_args(self._plans[k], args, kwargs)  # a wrong call fails here, not in the handle
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="pypto-dist-dispatch")
        future = self._executor.submit(self._dispatch, k, args, kwargs, settings)
        self._last = future
        return DistributedRunHandle(future)

    def _run_now(
        self, k: int, args: tuple[Any, ...], kwargs: dict[str, Any], settings: dict[str, Any] | None = None
    ) -> None:
        last = self._last
        if last is not None:  # submitted dispatches run first; their errors are theirs
            with contextlib.suppress(BaseException):
                last.result()
        self._dispatch(k, args, kwargs, settings)

    def _dispatch(
        self, k: int, args: tuple[Any, ...], kwargs: dict[str, Any], settings: dict[str, Any] | None = None
    ) -> None:
        plan = self._plans[k]
        with self._lock:
            if self.closed or self._group is None:
                raise DistributedRankError(f"{plan.name}(): this DistributedWorker is closed")
            timeout = (settings or {}).get("timeout")
            if timeout is None:
                self._dispatch_locked(k, args, kwargs, settings or {})
                return
            saved, self._group.timeout = self._group.timeout, float(timeout)
            try:
                self._dispatch_locked(k, args, kwargs, settings or {})
            finally:
                if self._group is not None:
                    self._group.timeout = saved

    def _dispatch_locked(
        self, k: int, args: tuple[Any, ...], kwargs: dict[str, Any], settings: dict[str, Any]
    ) -> None:
        import numpy

        plan = self._plans[k]
        bound = bind_host_args(plan, args, kwargs)
        layout: dict[int, int] = {}
        resident: dict[int, SharedDeviceTensor] = {}
        size = 0
        for i, p in enumerate(plan.params):
            if p.kind != "tensor":
                continue
            if isinstance(bound[i], SharedDeviceTensor):
                resident[i] = self._resident(plan, i, bound[i])
                continue
            item = element_size(DataType(p.dtype), p.name)
            layout[i] = size
            size += -(-item * int(numpy.prod(p.shape)) // _ALIGN) * _ALIGN
        if self._launch is not None:  # host and resident tensors over gloo: private copies here
            layout, resident = {}, {}
        if layout and (self._io is None or self._io.size < size):
            if self._io is not None:
                self._segments.remove(self._io)
                self._io.release()
            self._io = shm.create(size)
            self._segments.append(self._io)
        views: dict[int, Any] = {}
        for i, offset in layout.items():
            p = plan.params[i]
            assert self._io is not None  # made above for a nonempty layout
            views[i] = byte_array(self._io.buf, p.shape, DataType(p.dtype), offset)
            # Out tensors too: what a kernel leaves unwritten keeps the caller's values, as in
            # single-chip program mode, where kernels write the caller's storage itself
            writes = ParamDirection(p.direction).writes  # a read-only array fails here, before any rank runs
            numpy.copyto(views[i], host_bytes(bound[i], f"{plan.name}(): parameter {p.name!r}", write=writes))
        for i, t in resident.items():
            views[i] = t.bytes()
        io = None
        if self._launch is not None:
            io = {
                i: numpy.array(
                    host_bytes(
                        bound[i],
                        f"{plan.name}(): parameter {p.name!r}",
                        write=ParamDirection(p.direction).writes,
                    ),
                    order="C",
                )
                for i, p in enumerate(plan.params)
                if p.kind == "tensor"
            }
            views.update(io)
        windows = self._windows[k]
        if self.reset_windows:
            for w in windows:
                w.buf[:] = bytes(w.size)
        command = {
            "op": "run",
            "program": k,
            "io": self._io.name if layout and self._io is not None else "",
            "windows": [w.name for w in windows],
            "host_offsets": {str(i): o for i, o in layout.items()} | {str(i): 0 for i in resident},
            "host_segments": {str(i): t.segment.name for i, t in resident.items()},
            "wait_timeout": self._group.timeout,  # a kernel's pld.system.wait gives up after this
            "reset_windows": self.reset_windows,
        }
        if settings.get("call"):
            from pypto.runtime.distributed.rank import encode_call

            command["call"] = encode_call(settings["call"])
        self._dispatches += 1
        what = f"{plan.name}() dispatch {self._dispatches}"
        for phase, calls in sub_workers.call_groups(plan):
            if any(d.phase == phase for d in plan.dispatches):
                forget, self._forget = self._forget, []
                try:
                    self._group.dispatch({**command, "phase": phase, "forget": forget}, what, io)
                except BaseException:
                    del views
                    self.close()
                    raise
            if calls:  # a SubWorker's error fails this dispatch; the ranks stay up
                assert self._sub_workers is not None  # started for a program with calls
                self._sub_workers.run(
                    plan,
                    calls,
                    views,
                    program=k,
                    segments=self._segments,
                    what=what,
                    timeout=self._group.timeout,
                )
        for i in list(layout) + list(io or ()):
            if ParamDirection(plan.params[i].direction).writes:
                numpy.copyto(host_bytes(bound[i], plan.params[i].name, write=True), views[i])
        del views

    def _resident(self, plan: DistributedPlan, i: int, t: SharedDeviceTensor) -> SharedDeviceTensor:
        p = plan.params[i]
        what = f"{plan.name}(): parameter {p.name!r}"
        if t.worker is not self:
            raise ValueError(f"{what}: {t!r} belongs to another DistributedWorker; allocate it on this one")
        if t.freed:
            raise ValueError(f"{what}: {t!r} was freed (free_tensor or close); allocate another")
        if isinstance(t, StackedDeviceTensor):
            for d in plan.dispatches:
                for a in d.args:
                    if a[0] == "host" and a[1] == i and a[2] and t.worker_ids[a[2][0]] != d.rank:
                        raise ValueError(
                            f"{what}: shard {a[2][0]} of this StackedDeviceTensor belongs to rank "
                            f"{t.worker_ids[a[2][0]]} (worker_ids), but the program passes {p.name}[{a[2][0]}] "
                            f"to a launch on rank {d.rank}"
                        )
        return t


def _check_launched(context: Any, plan: DistributedPlan, data_path: str) -> None:
    """A worker under torchrun: the program's ranks are the launched processes, and windows in
    shared memory need every rank on the host orchestrator's host."""
    if plan.world_size != context.world_size:
        raise ValueError(
            f"DistributedWorker: program {plan.name!r} has {plan.world_size} ranks (device_ids "
            f"{list(plan.device_ids)}), but torchrun started {context.world_size} rank processes besides "
            f"the host orchestrator (WORLD_SIZE={context.world_size + 1}); start torchrun with "
            f"{plan.world_size + 1} processes in all"
        )
    if data_path == "shared_memory" and not context.all_local:
        raise ValueError(
            "DistributedWorker(data_path): 'shared_memory' needs every rank on this host, but torchrun "
            "started ranks on other hosts (LOCAL_WORLD_SIZE < WORLD_SIZE); use 'process_group'"
        )
