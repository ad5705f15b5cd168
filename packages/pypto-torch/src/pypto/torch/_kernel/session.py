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
    "RuntimePin",
    "check_runtime_interfaces",
    "check_runtime_pin",
    "config_key",
    "make_call_config",
]


@dataclass(frozen=True)
class RuntimePin:
    """The native runtime this pypto-torch was built and tested against.

    Attributes:
        distribution: The distribution that provides ``simpler``.
        version: The build identity ``simpler._native.__version__`` must report (and
            ``simpler.__version__`` with it: a Python package and a native module of different
            builds are a stale install).
        abi: The ABI versions ``simpler._native`` exposes, by attribute name: the kernel entry
            ABI generated kernels are compiled against, and the orchestration ABI.
    """

    distribution: str
    version: str
    abi: tuple[tuple[str, int], ...]

    def requirement(self) -> str:
        return f"{self.distribution}=={self.version}"


PINNED_RUNTIME = RuntimePin(
    "simpler-native", "0.1.0", (("KERNEL_ABI_VERSION", 4), ("ORCHESTRATION_ABI_VERSION", 1))
)


class RuntimeCapabilityError(RuntimeError):
    """The installed native runtime is not the pinned one, or lacks an interface kernel mode needs."""


def check_runtime_pin(simpler: ModuleType, *, skip: bool) -> None:
    """The installed simpler's build identity and ABI versions against :data:`PINNED_RUNTIME`.

    The identity is what ``simpler._native`` reports (``__version__`` and the ABI versions);
    ``simpler.__version__`` must name the same build. A missing identity (no ``_native``, or one
    of its attributes missing) and a different one both fail, unless ``skip``
    (``PYPTO_SKIP_RUNTIME_PIN=1``) says the user accepts an unpinned runtime: then nothing here
    is checked. The interface checks (:func:`check_runtime_interfaces`) run either way.

    Raises:
        RuntimeCapabilityError: Naming every missing or different field.
    """
    if skip:
        return
    pin = PINNED_RUNTIME
    advice = f"install {pin.requirement()} (rebuild it if it is an editable install) or set PYPTO_SKIP_RUNTIME_PIN=1 to accept it unchecked"
    native = getattr(simpler, "_native", None)
    if native is None:
        raise RuntimeCapabilityError(
            f"pypto.torch.init: the installed simpler has no native module (simpler._native), so its build "
            f"identity cannot be checked against the pinned {pin.requirement()}; {advice}"
        )
    problems: list[str] = []
    missing: list[str] = []
    version = getattr(native, "__version__", None)
    if not isinstance(version, str) or not version:
        missing.append("simpler._native.__version__")
    elif version != pin.version:
        problems.append(f"build {version} (pinned {pin.version})")
    py_version = getattr(simpler, "__version__", None)
    if isinstance(version, str) and py_version != version:
        problems.append(
            f"simpler.__version__ {py_version!r} differs from its native module's {version!r} (a stale build)"
        )
    for name, want in pin.abi:
        have = getattr(native, name, None)
        if isinstance(have, bool) or not isinstance(have, int):
            missing.append(f"simpler._native.{name}")
        elif have != want:
            problems.append(f"{name} {have} (pinned {want})")
    if missing:
        raise RuntimeCapabilityError(
            f"pypto.torch.init: the installed simpler does not report its identity ({', '.join(missing)} "
            f"missing), so it cannot be checked against the pinned {pin.requirement()}; {advice}"
        )
    if problems:
        raise RuntimeCapabilityError(
            f"pypto.torch.init: the installed {pin.distribution} is not the pinned one: {'; '.join(problems)}; {advice}"
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
        "Worker.launch(handle, args, stream, waits=...) and Worker.create_stream() (caller-stream submit)": worker
        is not None
        and _has_params(getattr(worker, "launch", None), "handle", "args", "stream", "waits")
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
            + f". Install {PINNED_RUNTIME.requirement()}"
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
    asynchronous: bool = False

    def key(self) -> tuple[Any, ...]:
        return (self.platform, self.runtime, self.device_index, config_key(self.config), self.asynchronous)

    def differences(self, other: KernelRequest) -> list[str]:
        out = []
        for field in ("platform", "runtime", "device_index", "asynchronous"):
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
