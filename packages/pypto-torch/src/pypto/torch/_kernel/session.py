"""Kernel-mode configuration, runtime capability checks and the borrowed-Worker session.

Everything here runs during :func:`pypto.torch.init`'s preflight (before a process mode is
claimed or a Worker created) or on the lifecycle owner thread. simpler is imported only when
``init`` runs.

The configuration is simpler's own :class:`simpler.CallConfig` (AICPU threads, swimlane and
dependency-graph switches with their required output directory, per-ring task window, heap
and dependency pool with a scalar broadcast to the four rings, and an optional
``workspace_budget_bytes`` >= 1024 that excludes borrowed storage), validated by its own
``validate()``; ``init`` also accepts a mapping of its fields.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from pypto.runtime.mode_gate import ProcessMode

__all__ = [
    "PINNED_RUNTIME",
    "BorrowedWorkerSession",
    "KernelRequest",
    "RuntimeCapabilityError",
    "check_runtime_interfaces",
    "check_runtime_pin",
    "config_key",
    "make_call_config",
]

PINNED_RUNTIME = ("simpler-native", "0.1")
"""The native runtime this pypto-torch was built and tested against: distribution name and
the ``major.minor`` series its ``simpler.__version__`` must belong to."""


class RuntimeCapabilityError(RuntimeError):
    """The installed native runtime is not the pinned one, or lacks an interface kernel mode needs."""


def check_runtime_pin(simpler: ModuleType, *, skip: bool) -> None:
    """The installed simpler's identity against :data:`PINNED_RUNTIME`.

    A missing identity (no ``__version__``) and a version outside the pinned series both
    fail, unless ``skip`` (``PYPTO_SKIP_RUNTIME_PIN=1``) says the user accepts an unpinned
    runtime; the interface checks run either way.
    """
    name, series = PINNED_RUNTIME
    version = getattr(simpler, "__version__", None)
    if skip:
        return
    if not isinstance(version, str) or not version:
        raise RuntimeCapabilityError(
            f"pypto.torch.init: the installed simpler module reports no version, so it cannot be checked "
            f"against the pinned {name} {series}.x; install {name}=={series}.* or set "
            "PYPTO_SKIP_RUNTIME_PIN=1 to accept it unchecked"
        )
    if version != series and not version.startswith(series + "."):
        raise RuntimeCapabilityError(
            f"pypto.torch.init: the installed {name} is {version}, but this pypto-torch is pinned to "
            f"{series}.x; install {name}=={series}.* or set PYPTO_SKIP_RUNTIME_PIN=1 to accept it unchecked"
        )


def _has_params(fn: object, *names: str) -> bool:
    try:
        params = inspect.signature(fn).parameters  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return False
    return all(n in params for n in names)


def check_runtime_interfaces(simpler: ModuleType) -> None:
    """The public interfaces kernel mode uses, by name and signature (never private slots).

    Raises:
        RuntimeCapabilityError: Naming every missing interface.
    """
    worker = getattr(simpler, "Worker", None)
    checks = {
        "Worker.init(prewarm_config, borrowed_context_generation=...) (borrowed init)": worker is not None
        and _has_params(getattr(worker, "init", None), "prewarm_config", "borrowed_context_generation"),
        "Worker.register(callable)": worker is not None and callable(getattr(worker, "register", None)),
        "Worker.launch(handle, args, stream) and Worker.create_stream() (caller-stream submit)": worker
        is not None
        and _has_params(getattr(worker, "launch", None), "handle", "args", "stream")
        and callable(getattr(worker, "create_stream", None)),
        "Worker.flush_diagnostics()": worker is not None
        and callable(getattr(worker, "flush_diagnostics", None)),
        "Buffer.wrap(ptr, nbytes, owner=...)": _has_params(
            getattr(getattr(simpler, "Buffer", None), "wrap", None), "ptr", "nbytes", "owner"
        ),
        "TaskArgs and ChipStorageTaskArgs": all(
            isinstance(getattr(simpler, n, None), type) for n in ("TaskArgs", "ChipStorageTaskArgs")
        ),
        "RunHandle (done, wait, result)": all(
            hasattr(getattr(simpler, "RunHandle", None), a) for a in ("done", "wait", "result")
        ),
        "CallConfig.validate()": callable(getattr(getattr(simpler, "CallConfig", None), "validate", None)),
    }
    missing = [name for name, ok in checks.items() if not ok]
    if missing:
        raise RuntimeCapabilityError(
            "pypto.torch.init: the installed simpler lacks interfaces that kernel mode needs: "
            + "; ".join(missing)
            + f". Install {PINNED_RUNTIME[0]}=={PINNED_RUNTIME[1]}.*"
        )


def make_call_config(simpler: ModuleType, config: object) -> Any:
    """A validated ``simpler.CallConfig`` from None, a CallConfig or a mapping of its fields.

    Raises:
        TypeError: ``config`` is another kind of object, or a mapping names an unknown field.
        ValueError: CallConfig.validate()'s error for an invalid value.
    """
    cls = simpler.CallConfig
    if config is None:
        cfg = cls()
    elif isinstance(config, cls):
        cfg = dataclasses.replace(config)  # a copy: later changes to the caller's object do not count
    elif isinstance(config, Mapping):
        try:
            cfg = cls(**dict(config))
        except TypeError as exc:
            raise TypeError(
                f"pypto.torch.init(config): {exc}; fields are those of simpler.CallConfig"
            ) from None
    else:
        raise TypeError(
            f"pypto.torch.init(config): expected None, a simpler.CallConfig or a mapping of its fields, "
            f"got {type(config).__name__}"
        )
    return cfg.validate()


def config_key(cfg: Any) -> tuple[Any, ...]:
    """What makes two validated CallConfigs the same configuration (rings broadcast)."""
    return (
        cfg.aicpu_thread_num,
        cfg.swimlane,
        cfg.dep_graph,
        cfg.output_prefix or None,
        cfg.rings(),
        cfg.workspace_budget_bytes,
    )


@dataclass(frozen=True)
class KernelRequest:
    """One ``init`` request after normalisation: what identical/conflicting compares."""

    platform: str
    runtime: str
    device_index: int
    config: Any  # a validated simpler.CallConfig

    def key(self) -> tuple[Any, ...]:
        return (self.platform, self.runtime, self.device_index, config_key(self.config))

    def differences(self, other: KernelRequest) -> list[str]:
        out = []
        for field in ("platform", "runtime", "device_index"):
            mine, theirs = getattr(self, field), getattr(other, field)
            if mine != theirs:
                out.append(f"{field} {mine!r} (now) vs {theirs!r} (requested)")
        if config_key(self.config) != config_key(other.config):
            out.append(f"config {self.config!r} (now) vs {other.config!r} (requested)")
        return out


class BorrowedWorkerSession:
    """Lifecycle operations on a public ``simpler.Worker`` bound to the framework's context.

    Every method runs on the lifecycle owner thread (the context calls it through
    :class:`~pypto.torch._kernel.owner.LifecycleOwner`), after that thread has bound the
    borrowed device context. The Worker is kept after a failed ``init`` so that it can be
    closed during cleanup.
    """

    def __init__(self, simpler: ModuleType, request: KernelRequest, generation: int) -> None:
        self.simpler = simpler
        self.request = request
        self.generation = generation
        self.worker: Any = None

    def init_worker(self) -> None:
        r = self.request
        self.worker = self.simpler.Worker(
            level=2,
            platform=r.platform,
            runtime=r.runtime,
            device_id=r.device_index,
            execution_mode=ProcessMode.KERNEL.value,
        )
        self.worker.init(r.config, borrowed_context_generation=self.generation)

    def register(self, chip_callable: Any) -> Any:
        return self.worker.register(chip_callable)

    def close(self) -> None:
        if self.worker is not None:
            self.worker.close()
