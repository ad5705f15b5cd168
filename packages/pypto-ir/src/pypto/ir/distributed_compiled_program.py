"""The configuration of a multi-chip (distributed) program: which devices are its ranks.

``DistributedConfig`` is pure data; the runtime (``pypto.runtime``) reads it from
``RunConfig(distributed_config=...)`` when it compiles and runs a ``@pl.jit.host`` program.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["DATA_PATHS", "DistributedConfig"]

DATA_PATHS = ("shared_memory", "process_group")
"""The values of ``DistributedConfig(data_path)``."""


@dataclass(frozen=True)
class DistributedConfig:
    """Which devices a ``@pl.jit.host`` program runs on: rank ``r`` is ``device_ids[r]``.

    Args:
        device_ids: One device ordinal per rank, distinct, ``>= 0``; the rank count is its
            length. On a simulated platform every rank is a process with its own simulated chip.
        num_sub_workers: Host-side sub-workers per rank; only 0 is supported (none are
            simulated yet).
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
        if self.num_sub_workers != 0:
            raise ValueError(
                f"DistributedConfig(num_sub_workers): only 0 is supported (host sub-workers are not "
                f"simulated), got {self.num_sub_workers}"
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
