"""What a rank process executes: its dispatches of a plan, on its own simulated chip.

A rank is one process with one simulated chip: the same program-mode Worker a single-chip
program runs on (``CompiledProgram`` of each per-device artifact). Its arguments are byte views
of the parent's shared memory (``host_bytes.ByteTensor``: bytes + DataType, so any whole-byte
dtype, BF16 and FP8 too): host tensors in the call's I/O segment, and its own window of each
window buffer (rank ``r``'s window starts ``r * stride`` bytes into the buffer's segment).
Before its launches run, the rank hands the native runtime its comm context (its rank, the rank
count, and where each window buffer's segment is mapped in this process: rank ``p``'s window at
``base + p * stride``), which every kernel receives for the cross-rank operations
(``simpler.comm``; PTO-ISA's communication instructions); a kernel's ``TWAIT`` gives up after the command's
``wait_timeout`` seconds. This module needs no torch; the torch.distributed engine
(``_engine``) calls it.

On the process-group data path (``data_path="process_group"``) the rank's windows are private
memory of this process instead: one anonymous mapping per window buffer laid out as the shared
segment (rank ``r``'s window at ``r * stride``; the other ranks' parts are never touched, so they
take no memory), zeroed by the rank before each dispatch. The comm context then names
``CommPath.Host`` and ``host_handler`` (the engine's gloo data path), and ``before_kernels`` (the
engine's barrier) runs after the zeroing, so no peer's request reaches a window before it is
cleared.
"""

from __future__ import annotations

import contextlib
import mmap
import time
from collections.abc import Callable
from typing import Any

from pypto.ir import DataType
from pypto.runtime.compiled import CompiledProgram
from pypto.runtime.distributed import shm
from pypto.runtime.distributed.host_bytes import ByteTensor, byte_array
from pypto.runtime.distributed.plan import DistributedPlan
from pypto.runtime.runner import RunConfig

__all__ = ["DATA_PATHS", "DEFAULT_WAIT_TIMEOUT", "RankRunner", "call_settings", "encode_call"]

DATA_PATHS = ("shared_memory", "process_group")
"""How ranks reach each other's windows: one shared-memory segment per window buffer, or
private windows reached through the gloo process group."""

DEFAULT_WAIT_TIMEOUT = 120.0
"""Seconds a kernel's ``pld.system.wait`` may take when the command names no ``wait_timeout``
(DistributedConfig's default timeout)."""


def _call_config(plan: DistributedPlan) -> Any:
    """The chip runs' ``simpler.CallConfig``: ``DistributedConfig(aicpu_thread_num)`` when set."""
    if not plan.aicpu_thread_num:
        return None
    import simpler

    return simpler.CallConfig(aicpu_thread_num=plan.aicpu_thread_num)


def encode_call(call: dict[str, Any]) -> dict[str, Any]:
    """A dispatch's run settings (``call_config``: a ``simpler.CallConfig`` or None,
    ``enable_chip_swimlane``, ``swimlane_dir``) as plain JSON data for the ranks' command."""
    import dataclasses

    cc = call.get("call_config")
    return {
        "call_config": None if cc is None else dataclasses.asdict(cc),
        "enable_chip_swimlane": bool(call.get("enable_chip_swimlane")),
        "swimlane_dir": call.get("swimlane_dir"),
    }


def call_settings(data: Any) -> dict[str, Any]:
    """The RunConfig fields of a command's ``call`` (:func:`encode_call`'s data), checked: a
    ``simpler.CallConfig`` of the known fields (validated), a bool and a str or None."""
    import dataclasses

    import simpler

    if not isinstance(data, dict) or set(data) != {"call_config", "enable_chip_swimlane", "swimlane_dir"}:
        raise ValueError(
            f"command 'call': expected the keys call_config, enable_chip_swimlane, swimlane_dir, got {data!r}"
        )
    swim, where = data["enable_chip_swimlane"], data["swimlane_dir"]
    if not isinstance(swim, bool) or not (where is None or isinstance(where, str)):
        raise ValueError(
            f"command 'call': expected enable_chip_swimlane a bool and swimlane_dir a str or None, got {swim!r}, {where!r}"
        )
    cc = data["call_config"]
    if cc is not None:
        known = {f.name for f in dataclasses.fields(simpler.CallConfig)}
        if not isinstance(cc, dict) or not set(cc) <= known:
            raise ValueError(f"command 'call': expected call_config fields among {sorted(known)}, got {cc!r}")
        cc = simpler.CallConfig(**cc).validate()
    return {"call_config": cc, "enable_chip_swimlane": swim, "swimlane_dir": where}


class RankRunner:
    """Runs rank ``rank``'s dispatches of ``plan``; maps segments by name as commands name them."""

    def __init__(
        self,
        rank: int,
        plan: DistributedPlan,
        *,
        aic_threads: int | None,
        aiv_threads: int | None,
        data_path: str = "shared_memory",
    ) -> None:
        if data_path not in DATA_PATHS:
            raise ValueError(
                f"RankRunner(data_path): expected one of {', '.join(DATA_PATHS)}, got {data_path!r}"
            )
        self.rank = rank
        self.plan = plan
        self.data_path = data_path
        self.host_handler: Callable[..., None] | None = None
        self.before_kernels: Callable[[], None] | None = None
        self._private: list[mmap.mmap] = []
        self.last_run_seconds = 0.0  # wall time of the last run's launches (after any barrier)
        if data_path == "process_group":
            self._private = [mmap.mmap(-1, max(w.stride * plan.world_size, 1)) for w in plan.windows]
        self.config = RunConfig(
            platform=plan.platform,
            runtime=plan.runtime,
            aic_threads=aic_threads,
            aiv_threads=aiv_threads,
            call_config=_call_config(plan),
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

    def host_params(self, phase: int) -> list[int]:
        """The host parameters this rank's launches of ``phase`` use (their indices)."""
        return sorted({a[1] for d in self.mine if d.phase == phase for a in d.args if a[0] == "host"})

    def run(self, command: dict[str, Any], hosts: dict[int, Any] | None = None) -> None:
        """Run this rank's dispatches of the command's ``phase``; ``command`` names the segments
        and host offsets (a tensor named in ``host_segments`` lies at its offset in that segment,
        the others in the ``io`` segment), unless ``hosts`` gives the host tensors (byte arrays
        by parameter index: the engine fetched them from the store)."""
        io = self._map(command["io"]) if command["io"] and hosts is None else None
        if self._private:
            windows = self._private
            for m, w in zip(
                windows if command.get("reset_windows", True) else [], self.plan.windows, strict=False
            ):
                start = self.rank * w.stride
                m[start : start + w.stride] = bytes(w.stride)
        else:
            windows = [self._map(name) for name in command["windows"]]
        self._set_comm_context(windows, float(command.get("wait_timeout", DEFAULT_WAIT_TIMEOUT)))
        if self.before_kernels is not None:
            self.before_kernels()
        started = time.perf_counter()
        if hosts is None:
            hosts = self._mapped_hosts(command, io)
        phase = command.get("phase", 0)
        config = self._config(command.get("call"))
        for d in self.mine:
            if d.phase != phase:
                continue
            args: list[Any] = []
            for a in d.args:
                if a[0] == "host":
                    view = hosts[a[1]]
                    for index in a[2]:
                        view = view[index]
                    args.append(ByteTensor(view, DataType(self.plan.params[a[1]].dtype)))
                elif a[0] == "window":
                    w = self.plan.windows[a[1]]
                    shape, dtype = (a[2], a[3]) if len(a) > 2 else (w.shape, w.dtype)  # the view's
                    data = byte_array(windows[a[1]], tuple(shape), DataType(dtype), self.rank * w.stride)
                    args.append(ByteTensor(data, DataType(dtype)))
                else:
                    args.append(a[1])
            self._program(d.program)(*args, config=config)
        self.last_run_seconds = time.perf_counter() - started

    def _config(self, call: dict[str, Any] | None) -> RunConfig:
        """The rank's RunConfig with a dispatch's run settings (``call``: the worker's
        ``call_config`` fields, ``enable_chip_swimlane`` and ``swimlane_dir``, as JSON data, see
        :func:`call_settings`) applied; this rank's swimlane files go to ``<swimlane_dir>/rank<r>``."""
        if not call:
            return self.config
        import dataclasses
        import os

        fields = call_settings(call)
        if fields.get("enable_chip_swimlane"):
            fields["swimlane_dir"] = os.path.join(
                fields.get("swimlane_dir") or os.path.join("build_output", "swimlane"), f"rank{self.rank}"
            )
        return dataclasses.replace(self.config, **fields)

    def _mapped_hosts(self, command: dict[str, Any], io: Any) -> dict[int, Any]:
        """The host tensors as byte views of the parent's shared memory (the command's segments)."""
        own = command.get("host_segments", {})
        hosts: dict[int, Any] = {}
        for i, offset in command["host_offsets"].items():
            p = self.plan.params[int(i)]
            buf = self._map(own[i]) if i in own else io
            hosts[int(i)] = byte_array(buf, p.shape, DataType(p.dtype), offset)
        return hosts

    def _set_comm_context(self, windows: list[mmap.mmap], wait_timeout: float) -> None:
        import numpy

        import simpler.comm

        table = []
        for m, w in zip(windows, self.plan.windows, strict=True):
            base = int(numpy.frombuffer(m, dtype=numpy.uint8, count=1).ctypes.data)
            table.append(simpler.comm.CommWindow(base=base, stride=w.stride, nbytes=w.nbytes))
        host = self.data_path == "process_group"
        simpler.comm.set_context(
            rank=self.rank,
            nranks=self.plan.world_size,
            windows=table,
            wait_timeout=wait_timeout,
            path=simpler.comm.CommPath.Host if host else simpler.comm.CommPath.SharedMemory,
            host=self.host_handler if host else None,
        )

    def forget(self, names: list[str]) -> None:
        """Unmap the segments ``names`` (the parent removed them)."""
        for name in names:
            m = self._maps.pop(name, None)
            if m is not None:
                with contextlib.suppress(BufferError):
                    m.close()

    def own_windows(self) -> list[memoryview]:
        """This rank's window of each window buffer (process-group path: private memory)."""
        return [
            memoryview(m)[self.rank * w.stride : (self.rank + 1) * w.stride]
            for m, w in zip(self._private, self.plan.windows, strict=True)
        ]

    def close(self) -> None:
        maps, self._maps = self._maps, {}
        private, self._private = self._private, []
        for m in [*maps.values(), *private]:
            with contextlib.suppress(BufferError):
                m.close()
