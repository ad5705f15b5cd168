"""What a rank process executes: its dispatches of a plan, on its own simulated chip.

A rank is one process with one simulated chip: the same program-mode Worker a single-chip
program runs on (``CompiledProgram`` of each per-device artifact). Its arguments are numpy views
of the parent's shared memory: host tensors in the call's I/O segment, and its own window of
each window buffer (rank ``r``'s window starts ``r * stride`` bytes into the buffer's segment).
This module needs no torch; the torch.distributed engine (``_engine``) calls it.
"""

from __future__ import annotations

import contextlib
import mmap
from typing import Any

from pypto.ir import DataType
from pypto.runtime.compiled import CompiledProgram
from pypto.runtime.distributed import shm
from pypto.runtime.distributed.plan import DistributedPlan, dtype_itemsize
from pypto.runtime.runner import RunConfig

__all__ = ["RankRunner"]


class RankRunner:
    """Runs rank ``rank``'s dispatches of ``plan``; maps segments by name as commands name them."""

    def __init__(
        self, rank: int, plan: DistributedPlan, *, aic_threads: int | None, aiv_threads: int | None
    ) -> None:
        self.rank = rank
        self.plan = plan
        self.config = RunConfig(
            platform=plan.platform, runtime=plan.runtime, aic_threads=aic_threads, aiv_threads=aiv_threads
        )
        self.mine = [d for d in plan.dispatches if d.rank == rank]
        self._programs: dict[int, CompiledProgram] = {}
        self._maps: dict[str, mmap.mmap] = {}

    def _map(self, name: str) -> mmap.mmap:
        m = self._maps.get(name)
        if m is None:
            m = self._maps[name] = shm.attach(name)
        return m

    def _program(self, index: int) -> CompiledProgram:
        prog = self._programs.get(index)
        if prog is None:
            prog = self._programs[index] = CompiledProgram.from_dir(self.plan.programs[index])
        return prog

    def run(self, command: dict[str, Any]) -> None:
        """Run this rank's dispatches; ``command`` names the segments and host offsets."""
        import numpy

        io = self._map(command["io"]) if command["io"] else None
        windows = [self._map(name) for name in command["windows"]]
        hosts: dict[int, Any] = {}
        for i, offset in command["host_offsets"].items():
            p = self.plan.params[int(i)]
            ts, _ = dtype_itemsize(DataType(p.dtype), p.name)
            hosts[int(i)] = numpy.ndarray(p.shape, dtype=numpy.dtype(ts), buffer=io, offset=offset)
        for d in self.mine:
            args: list[Any] = []
            for a in d.args:
                if a[0] == "host":
                    view = hosts[a[1]]
                    for index in a[2]:
                        view = view[index]
                    args.append(view)
                elif a[0] == "window":
                    w = self.plan.windows[a[1]]
                    ts, _ = dtype_itemsize(DataType(w.dtype), "window")
                    args.append(
                        numpy.ndarray(
                            w.shape, dtype=numpy.dtype(ts), buffer=windows[a[1]], offset=self.rank * w.stride
                        )
                    )
                else:
                    args.append(a[1])
            self._program(d.program)(*args, config=self.config)

    def close(self) -> None:
        maps, self._maps = self._maps, {}
        for m in maps.values():
            with contextlib.suppress(BufferError):
                m.close()
