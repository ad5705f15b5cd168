"""Multi-chip programs on simulated chips: one process per rank, bootstrapped by torch.distributed.

``host_fn.compile(*args, config=RunConfig(distributed_config=DistributedConfig(device_ids=...)))``
traces a ``@pl.jit.host`` orchestrator, compiles each per-device program through the
single-chip path (or finds it in the artifact store), stores the plan as a store entry of its own
(:mod:`pypto.runtime.distributed.entry`) and returns a :class:`DistributedCompiledProgram`. Its ``prepare()`` gives a
:class:`DistributedWorker`; torch (``torch.distributed``) is imported only then, by ``_engine``.
See docs/distributed.md.
"""

from __future__ import annotations

from pypto.runtime.distributed.entry import MissingStoreEntry
from pypto.runtime.distributed.errors import DistributedRankError, DistributedTimeoutError, SubWorkerError
from pypto.runtime.distributed.program import DistributedCompiledProgram, compile_host
from pypto.runtime.distributed.worker import DistributedWorker

__all__ = [
    "DistributedCompiledProgram",
    "DistributedRankError",
    "DistributedTimeoutError",
    "DistributedWorker",
    "MissingStoreEntry",
    "SubWorkerError",
    "compile_host",
]
