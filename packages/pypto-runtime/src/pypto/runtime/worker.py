"""Program-mode Workers: created only after this process has claimed PROGRAM mode.

:func:`program_worker` is the direct-initialisation claim point: it claims PROGRAM mode and only
then constructs and initialises a ``simpler.Worker``, so a process in KERNEL mode is refused
before any native Worker exists. :func:`shared_worker` keeps one initialised Worker per
(platform, runtime, device, AIC threads, AIV threads) for the program runner.
"""

from __future__ import annotations

import functools
import os
import threading
from typing import Any

from pypto.ir import DEFAULT_PLATFORM, DEFAULT_RUNTIME, clear_executor_plans
from pypto.runtime import mode_gate

__all__ = [
    "DEFAULT_PLATFORM",
    "DEFAULT_RUNTIME",
    "close_shared_workers",
    "default_core_threads",
    "program_worker",
    "shared_worker",
]


@functools.cache
def default_core_threads() -> tuple[int, int]:
    """(AIC, AIV) thread counts the simulated chip runs well with on this machine.

    Idle AICore threads park (no CPU), so the counts only bound parallelism: one cube thread
    per two CPUs (at least one, at most two) and one vector thread per CPU (at least one, at
    most four) of this process's affinity mask, read once. A 2-CPU machine gets (1, 2).
    """
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        cpus = os.cpu_count() or 1
    return max(1, min(2, cpus // 2)), max(1, min(4, cpus))


def program_worker(
    *,
    platform: str = DEFAULT_PLATFORM,
    runtime: str = DEFAULT_RUNTIME,
    device_id: int = 0,
    prewarm_config: Any = None,
    aic_threads: int | None = None,
    aiv_threads: int | None = None,
) -> Any:
    """Claim PROGRAM mode, then create and initialise a ``simpler.Worker`` (level 2) with
    ``aic_threads``/``aiv_threads`` AICore threads (None: :func:`default_core_threads`).

    Raises:
        ModeConflictError: the process is in KERNEL mode (no Worker is created).
    """
    mode_gate.claim_program(f"program_worker(platform={platform!r})")
    import simpler

    aic_threads, aiv_threads = _resolve_threads(aic_threads, aiv_threads)
    worker = simpler.Worker(
        level=2,
        platform=platform,
        runtime=runtime,
        device_id=device_id,
        execution_mode=mode_gate.ProcessMode.PROGRAM.value,
        aic_threads=aic_threads,
        aiv_threads=aiv_threads,
    )
    worker.init(prewarm_config)
    return worker


def _resolve_threads(aic_threads: int | None, aiv_threads: int | None) -> tuple[int, int]:
    aic_default, aiv_default = default_core_threads()
    return (
        aic_default if aic_threads is None else aic_threads,
        aiv_default if aiv_threads is None else aiv_threads,
    )


class _Shared:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        # (platform, runtime, device_id, aic_threads, aiv_threads) -> Worker
        self.workers: dict[tuple[str, str, int, int, int], Any] = {}
        self.registered: dict[int, set[str]] = {}  # id(worker) -> digests registered on it
        # Bumped whenever a shared Worker is added, replaced or dropped: a (worker, handle)
        # pair obtained at generation g is still the shared one while the generation is g.
        self.generation = 0


_shared = _Shared()


def _changed() -> None:
    """A shared Worker was added, replaced or dropped: bump the generation and drop the
    executor plans of @pl.jit functions (each is bound to a Worker's chip)."""
    _shared.generation += 1
    clear_executor_plans()


_orphans: list[Any] = []  # a forked child's inherited parent Workers


def shared_worker(
    platform: str,
    runtime: str = DEFAULT_RUNTIME,
    device_id: int = 0,
    *,
    aic_threads: int | None = None,
    aiv_threads: int | None = None,
) -> Any:
    """The process's program Worker for ``(platform, runtime, device_id, aic_threads,
    aiv_threads)``, created on first use (None thread counts: :func:`default_core_threads`)."""
    aic_threads, aiv_threads = _resolve_threads(aic_threads, aiv_threads)
    key = (platform, runtime, device_id, aic_threads, aiv_threads)
    with _shared.lock:
        worker = _shared.workers.get(key)
        if worker is None:
            worker = program_worker(
                platform=platform,
                runtime=runtime,
                device_id=device_id,
                aic_threads=aic_threads,
                aiv_threads=aiv_threads,
            )
            _shared.workers[key] = worker
            _changed()
        return worker


def register_on_shared_worker(
    callable_: Any,
    platform: str,
    runtime: str = DEFAULT_RUNTIME,
    device_id: int = 0,
    *,
    aic_threads: int | None = None,
    aiv_threads: int | None = None,
) -> tuple[Any, Any]:
    """(worker, handle) for ``callable_`` on the shared program Worker.

    A Worker holds at most ``simpler.MAX_CALLABLES`` callables and program mode has no
    unregister, so when a new callable would not fit, the shared Worker is replaced by a fresh
    one. The old Worker is not closed here: runs in flight keep their reference and it closes
    when the last one drops it.
    """
    import simpler

    aic_threads, aiv_threads = _resolve_threads(aic_threads, aiv_threads)
    key = (platform, runtime, device_id, aic_threads, aiv_threads)

    def make() -> Any:
        return program_worker(
            platform=platform,
            runtime=runtime,
            device_id=device_id,
            aic_threads=aic_threads,
            aiv_threads=aiv_threads,
        )

    with _shared.lock:
        worker = _shared.workers.get(key)
        if worker is None:
            worker = make()
            _shared.workers[key] = worker
            _changed()
        digests = _shared.registered.setdefault(id(worker), set())
        if callable_.digest not in digests and len(digests) >= simpler.MAX_CALLABLES:
            _shared.registered.pop(id(worker), None)
            worker = make()
            _shared.workers[key] = worker
            _changed()
            digests = _shared.registered.setdefault(id(worker), set())
        handle = worker.register(callable_)
        digests.add(callable_.digest)
        return worker, handle


def shared_generation() -> int:
    """A number that changes whenever a shared Worker is created, replaced or dropped (also
    in a forked child): what :func:`register_on_shared_worker` returned at generation ``g``
    is still current while this returns ``g``."""
    return _shared.generation


def close_shared_workers() -> None:
    """Close every shared program Worker (tests, benchmarks)."""
    with _shared.lock:
        workers = list(_shared.workers.values())
        _shared.workers.clear()
        _shared.registered.clear()
        _changed()
    for w in workers:
        w.close()


def _forget_in_child() -> None:
    # A forked child has none of the parent's Worker threads: drop (never close) the parent's
    # Workers so that the child builds its own after its own PROGRAM claim.
    # Closing them here would join threads that do not exist in this process, so they are
    # kept referenced (never closed, never collected) for the child's lifetime.
    _orphans.extend(_shared.workers.values())
    _shared.workers.clear()
    _shared.registered.clear()
    _changed()
    _shared.lock = threading.Lock()


os.register_at_fork(after_in_child=_forget_in_child)
