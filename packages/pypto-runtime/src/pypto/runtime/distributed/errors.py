"""The failures of a distributed dispatch: a rank failed, a SubWorker failed, or a wait ran out
of time."""

from __future__ import annotations

from pypto.runtime.errors import PyptoRuntimeError

__all__ = ["DistributedRankError", "DistributedTimeoutError", "SubWorkerError"]


class DistributedRankError(PyptoRuntimeError, RuntimeError):
    """A rank's process died or its dispatch raised; ``rank`` names it (None: not one rank)."""

    def __init__(self, message: str, rank: int | None = None) -> None:
        super().__init__(message)
        self.rank = rank


class DistributedTimeoutError(PyptoRuntimeError, TimeoutError):
    """A bounded wait of a distributed dispatch expired; ``ranks`` are the ones waited for."""

    def __init__(self, message: str, ranks: tuple[int, ...] = ()) -> None:
        super().__init__(message)
        self.ranks = ranks


class SubWorkerError(PyptoRuntimeError, RuntimeError):
    """A SubWorker call raised (its exception is ``__cause__``) or its sub-worker process died;
    ``sub_worker`` names the SubWorker (None: the processes failed to start)."""

    def __init__(self, message: str, sub_worker: str | None = None) -> None:
        super().__init__(message)
        self.sub_worker = sub_worker
