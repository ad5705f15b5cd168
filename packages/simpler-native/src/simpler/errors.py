"""Exceptions of the simpler runtime."""

from __future__ import annotations

__all__ = ["DeviceError", "SimplerError", "UnsupportedPlatformError", "WorkerClosedError"]


class SimplerError(RuntimeError):
    """Base class of simpler runtime failures."""


class DeviceError(SimplerError):
    """A run failed on the (simulated) device: a kernel, the orchestration or an invalid task.

    The message names the orchestration, the task index and the kernel. The Worker stays usable.
    """


class UnsupportedPlatformError(SimplerError):
    """The requested platform cannot run here (e.g. ``a2a3`` without CANN)."""


class WorkerClosedError(SimplerError):
    """The Worker was closed or never initialised."""
