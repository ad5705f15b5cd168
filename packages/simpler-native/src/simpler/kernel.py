"""Kernel-invocation wire formats, admission checks and the TMR snapshot codec."""

from __future__ import annotations

from simpler._native import kernel as _kernel

__all__: list[str] = []
globals().update({k: getattr(_kernel, k) for k in dir(_kernel) if not k.startswith("_")})
__all__ = [k for k in dir(_kernel) if not k.startswith("_")]
