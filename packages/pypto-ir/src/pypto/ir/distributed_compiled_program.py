"""The configuration of a multi-chip (distributed) program, and the type of its compiled form.

``DistributedConfig`` is pure data; the runtime (``pypto.runtime``) reads it from
``RunConfig(distributed_config=...)`` (or ``pypto.ir.compile(program, distributed_config=...)``)
when it compiles and runs a multi-chip program. ``DistributedCompiledProgram`` is the type of
what that compile returns; the runtime's class (``pypto.runtime.distributed``) derives from it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["DATA_PATHS", "DistributedCompiledProgram", "DistributedConfig"]

DATA_PATHS = ("shared_memory", "process_group")
"""The values of ``DistributedConfig(data_path)``."""


@dataclass(frozen=True)
class DistributedConfig:
    """Which devices a ``@pl.jit.host`` program runs on: rank ``r`` is ``device_ids[r]``.

    Args:
        device_ids: One device ordinal per rank, distinct, ``>= 0``; the rank count is its
            length. On a simulated platform every rank is a process with its own simulated chip.
        num_sub_workers: Host-side sub-worker processes that run the SubWorker calls
            (``pl.Role.SubWorker`` functions of a ``@pl.program``). A prepared program that
            calls a SubWorker starts ``max(num_sub_workers, number of SubWorkers declared)``
            of them; ``0`` asks for no more than that.
        timeout: Seconds any wait of a dispatch may take (ranks starting, a dispatch
            finishing) before it fails naming the ranks it waited for.
        data_path: How ranks reach each other's windows: ``"shared_memory"`` (one
            shared-memory segment per window buffer, every rank maps all) or
            ``"process_group"`` (each rank's windows are private; cross-rank operations go
            through the ranks' host processes over the gloo process group, as for ranks that
            share no memory). ``None``: the ``PYPTO_DIST_DATA_PATH`` environment variable of the
            process that prepares the program, else ``"shared_memory"``.
    """

    device_ids: Sequence[int]
    num_sub_workers: int = 0
    timeout: float = 120.0
    data_path: str | None = None

    def __post_init__(self) -> None:
        ids = tuple(self.device_ids) if not isinstance(self.device_ids, (str, bytes)) else None
        if (
            not ids
            or any(isinstance(d, bool) or not isinstance(d, int) or d < 0 for d in ids)
            or len(set(ids)) != len(ids)
        ):
            raise ValueError(
                f"DistributedConfig(device_ids): expected a non-empty list of distinct ints >= 0, got {self.device_ids!r}"
            )
        object.__setattr__(self, "device_ids", ids)
        if (
            isinstance(self.num_sub_workers, bool)
            or not isinstance(self.num_sub_workers, int)
            or self.num_sub_workers < 0
        ):
            raise ValueError(
                f"DistributedConfig(num_sub_workers): expected an int >= 0, got {self.num_sub_workers!r}"
            )
        if (
            isinstance(self.timeout, bool)
            or not isinstance(self.timeout, (int, float))
            or not self.timeout > 0
        ):
            raise ValueError(f"DistributedConfig(timeout): expected seconds > 0, got {self.timeout!r}")
        if self.data_path not in (None, *DATA_PATHS):
            raise ValueError(
                f"DistributedConfig(data_path): expected one of {', '.join(map(repr, DATA_PATHS))} or None, "
                f"got {self.data_path!r}"
            )

    @property
    def world_size(self) -> int:
        return len(self.device_ids)


class DistributedCompiledProgram:
    """A compiled multi-chip program (made by the runtime: ``pypto.runtime`` compiles
    ``@pl.jit.host`` functions and ``@pl.program`` classes with a host orchestrator into its
    subclass). Call it to run once, or ``prepare()`` a worker that keeps its ranks up."""

    def prepare(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(
            f"{type(self).__name__}.prepare: made by pypto.runtime, which implements it"
        )
