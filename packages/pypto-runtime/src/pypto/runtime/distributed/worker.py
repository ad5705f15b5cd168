"""``DistributedWorker``: a prepared multi-chip program, reusable across dispatches.

``prepare()`` starts one process per rank (the torch.distributed engine, ``_engine``) and
creates the window buffers' shared-memory segments; every dispatch (``worker(*args)``) copies
the host tensors into an I/O segment, zeroes the windows, has every rank run its dispatches,
and copies the written host tensors back. :meth:`close` (also on ``with``-exit, garbage
collection and interpreter exit) stops the ranks and removes every segment. A failed dispatch
(a rank died, raised, or did not answer in time) stops all ranks and removes the segments; the
worker cannot run again.
"""

from __future__ import annotations

import weakref
from typing import Any

from pypto.ir import DataType, ParamDirection
from pypto.language.binding import dtype_of, is_tensor, shape_of
from pypto.runtime.distributed import shm
from pypto.runtime.distributed.errors import DistributedRankError
from pypto.runtime.distributed.plan import DistributedPlan, dtype_itemsize

__all__ = ["DistributedWorker", "bind_host_args"]

_ALIGN = 64  # bytes: each host tensor starts on a cache line of the I/O segment


def _as_numpy(value: Any, what: str) -> Any:
    import numpy

    if isinstance(value, numpy.ndarray):
        return value
    to_numpy = getattr(value, "numpy", None)
    if to_numpy is None:
        raise TypeError(f"{what}: expected a torch tensor or numpy array, got {type(value).__name__}")
    if getattr(value, "device", None) is not None and str(value.device) != "cpu":
        raise TypeError(f"{what}: expected a CPU tensor, got one on {value.device}")
    return to_numpy()


def _release_all(group: Any, segments: list[shm.Segment]) -> None:
    try:
        if group is not None:
            group.close()
    finally:
        for s in segments:
            s.release()


def bind_host_args(plan: DistributedPlan, args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[Any]:
    """A call's arguments in the host function's parameter order, checked against the plan:
    tensors of the compiled shapes and dtypes, scalars equal to the values compiled in."""
    params = plan.params
    name = plan.name
    if len(args) > len(params):
        raise TypeError(f"{name}(): takes {len(params)} arguments, got {len(args)}")
    bound: list[Any] = list(args) + [None] * (len(params) - len(args))
    index = {p.name: i for i, p in enumerate(params)}
    for k, v in kwargs.items():
        if k not in index:
            raise TypeError(f"{name}(): unexpected keyword argument {k!r}")
        if index[k] < len(args):
            raise TypeError(f"{name}(): got multiple values for argument {k!r}")
        bound[index[k]] = v
    for p, v in zip(params, bound, strict=True):
        what = f"{name}(): parameter {p.name!r}"
        if p.kind == "scalar":
            if v is None:  # omitted: its default, which the host body ran with
                continue
            if v != p.value or type(v) is not type(p.value):
                raise ValueError(
                    f"{what}: this program was compiled with {p.name}={p.value!r} (the host body ran "
                    f"with it), got {v!r}; compile again for another value"
                )
            continue
        if v is None or not is_tensor(v):
            raise TypeError(
                f"{what}: expected a tensor of shape {list(p.shape)} {p.dtype}, got {type(v).__name__}"
            )
        shape, dtype = shape_of(v, what), dtype_of(v, what)
        if shape != p.shape or dtype.value != p.dtype:
            raise TypeError(
                f"{what}: this program was compiled for shape {list(p.shape)} {p.dtype}, got "
                f"{list(shape)} {dtype.value}; compile again for other shapes"
            )
    return bound


class DistributedWorker:
    """Rank processes and window segments of one compiled distributed program."""

    def __init__(
        self,
        plan: DistributedPlan,
        *,
        timeout: float,
        aic_threads: int | None = 1,
        aiv_threads: int | None = 1,
        data_path: str = "shared_memory",
    ) -> None:
        from pypto.runtime.distributed._engine import RankGroup

        self.plan = plan
        self.data_path = data_path  # "process_group": the ranks hold their windows (no segments)
        self._segments: list[shm.Segment] = []
        self._io: shm.Segment | None = None
        self._group: Any = None
        self._finalizer = weakref.finalize(self, _release_all, None, self._segments)
        try:
            self._windows: list[shm.Segment] = []
            for w in plan.windows if data_path == "shared_memory" else ():
                self._windows.append(shm.create(w.stride * plan.world_size))
                self._segments.append(self._windows[-1])
            self._group = RankGroup(
                plan.to_json(),
                plan.world_size,
                timeout=timeout,
                aic_threads=aic_threads,
                aiv_threads=aiv_threads,
                data_path=data_path,
            )
        except BaseException:
            self.close()
            raise
        self._finalizer.detach()
        self._finalizer = weakref.finalize(self, _release_all, self._group, self._segments)
        self._dispatches = 0

    @property
    def world_size(self) -> int:
        return self.plan.world_size

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
        """Stop the ranks and remove every shared-memory segment (idempotent)."""
        if self._finalizer.alive:
            self._finalizer()
        else:
            _release_all(None, self._segments)
        self._io = None

    def run(self, compiled: Any, *args: Any, **kwargs: Any) -> None:
        """One dispatch of ``compiled``, which must be the program this worker was prepared
        for (several programs on one worker are not supported yet)."""
        plan = getattr(compiled, "plan", None)
        if plan is None or plan.digest() != self.plan.digest():
            raise ValueError(
                f"DistributedWorker.run(compiled, ...): this worker runs {self.plan.name!r} only, got "
                f"{getattr(plan, 'name', type(compiled).__name__)!r}; prepare that program's own worker"
            )
        self(*args, **kwargs)

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        """One dispatch: every rank runs its launches on these host tensors (written in place)."""
        import numpy

        if self.closed or self._group is None:
            raise DistributedRankError(f"{self.plan.name}(): this DistributedWorker is closed")
        bound = bind_host_args(self.plan, args, kwargs)
        layout: dict[int, int] = {}
        size = 0
        for i, p in enumerate(self.plan.params):
            if p.kind == "tensor":
                _, item = dtype_itemsize(DataType(p.dtype), p.name)
                layout[i] = size
                size += -(-item * int(numpy.prod(p.shape)) // _ALIGN) * _ALIGN
        if self._io is None or self._io.size < size:
            if self._io is not None:
                self._segments.remove(self._io)
                self._io.release()
            self._io = shm.create(size)
            self._segments.append(self._io)
        views = {}
        for i, offset in layout.items():
            p = self.plan.params[i]
            ts, _ = dtype_itemsize(DataType(p.dtype), p.name)
            views[i] = numpy.ndarray(p.shape, dtype=numpy.dtype(ts), buffer=self._io.buf, offset=offset)
            # Out tensors too: what a kernel leaves unwritten keeps the caller's values, as in
            # single-chip program mode, where kernels write the caller's storage itself
            numpy.copyto(views[i], _as_numpy(bound[i], f"{self.plan.name}(): parameter {p.name!r}"))
        for w in self._windows:
            w.buf[:] = bytes(w.size)
        command = {
            "op": "run",
            "io": self._io.name,
            "windows": [w.name for w in self._windows],
            "host_offsets": {str(i): o for i, o in layout.items()},
            "wait_timeout": self._group.timeout,  # a kernel's pld.system.wait gives up after this
        }
        self._dispatches += 1
        try:
            self._group.dispatch(command, f"{self.plan.name}() dispatch {self._dispatches}")
        except BaseException:
            del views
            self.close()
            raise
        for i, view in views.items():
            if ParamDirection(self.plan.params[i].direction).writes:
                numpy.copyto(_as_numpy(bound[i], self.plan.params[i].name), view)
        del views
