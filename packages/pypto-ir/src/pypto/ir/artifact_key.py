"""ArtifactKey and ToolchainIdentity: content digests that name a compiled artifact.

A key is the SHA-256 of canonical JSON (sorted keys, compact separators, UTF-8, no floats
that JSON cannot round-trip) of: the toolchain identity, the source, the specialisation and
the requested contract. Nothing that varies between processes enters it: no mtimes, object
addresses or reprs. Bump ``CODEGEN_VERSION`` whenever generated code changes for the same IR.
"""

from __future__ import annotations

import enum
import hashlib
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["CODEGEN_VERSION", "KEY_VERSION", "ArtifactKey", "ToolchainIdentity", "canonical_json"]

KEY_VERSION = 1
"""Bumped when the key's own layout changes (invalidates every key)."""

CODEGEN_VERSION = 8
"""Bumped when the code generator emits different code for the same IR, or its artifacts'
metadata changes meaning (2: artifacts carry per-kernel ``buffer_usage`` and kernels beyond the
platform's on-chip buffers are refused; 3: ``buffer_usage`` is the peak of the tiles live at
once, not the sum of every tile declared; 4: an orchestration window's descriptor keeps only the
part of its declared extent inside the tensor; 6: a tile cast passes its rounding mode, by default
ties away from zero; 7: kernels are PTO-ISA programs, tiles placed by the memory-allocation pass
and pipes ordered by the sync-insertion pass), so entries built before are not reused."""


def _canon(value: Any, path: str) -> Any:
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"canonical_json: non-finite float at {path}")
        return value
    if isinstance(value, enum.Enum):
        return _canon(value.value, path)
    if isinstance(value, Mapping):
        out = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise TypeError(f"canonical_json: key {k!r} at {path} is not a string")
            out[k] = _canon(v, f"{path}.{k}")
        return out
    if isinstance(value, (list, tuple)):
        return [_canon(v, f"{path}[{i}]") for i, v in enumerate(value)]
    to_json = getattr(value, "to_json", None)
    if callable(to_json):
        return _canon(to_json(), path)
    raise TypeError(
        f"canonical_json: {type(value).__name__} at {path} has no canonical form; pass plain data "
        "(reprs and object identities would make keys unstable)"
    )


def canonical_json(value: Any) -> str:
    """Deterministic JSON text: sorted keys, compact separators, ASCII-safe."""
    return json.dumps(
        _canon(value, "$"), sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False
    )


@dataclass(frozen=True)
class ToolchainIdentity:
    """What built (or will build) an artifact, as content: name -> digest or version string.

    Typical components: ``compiler`` (digest of the compiler binary), ``compiler_version``,
    ``flags``, ``headers`` (digest of the installed headers), ``pypto_ir`` (version) and
    ``codegen`` (``CODEGEN_VERSION``). ``default()`` holds the pypto-ir parts; the runtime
    adds what ``simpler.toolchain`` reports with ``extended``.
    """

    components: tuple[tuple[str, str], ...]

    def __init__(self, components: Mapping[str, object]) -> None:
        items = []
        for k, v in components.items():
            if not isinstance(k, str) or not k:
                raise ValueError(f"ToolchainIdentity: component names must be non-empty strings, got {k!r}")
            if not isinstance(v, (str, int)) or isinstance(v, bool):
                raise TypeError(
                    f"ToolchainIdentity: component {k!r} must be a digest/version string or int, got {type(v).__name__}"
                )
            items.append((k, str(v)))
        object.__setattr__(self, "components", tuple(sorted(items)))

    @classmethod
    def default(cls) -> ToolchainIdentity:
        from pypto.ir import __version__

        return cls({"pypto_ir": __version__, "codegen": str(CODEGEN_VERSION)})

    def extended(self, **more: object) -> ToolchainIdentity:
        merged: dict[str, object] = dict(self.components)
        merged.update(more)
        return ToolchainIdentity(merged)

    def to_json(self) -> dict[str, str]:
        return dict(self.components)

    @property
    def digest(self) -> str:
        return hashlib.sha256(canonical_json(self.to_json()).encode()).hexdigest()


@dataclass(frozen=True)
class ArtifactKey:
    """The content key of one artifact: ``hexdigest`` names its store entry."""

    digest: str
    material: str  # the canonical JSON that was hashed (for debugging and tests)

    @classmethod
    def compute(
        cls,
        *,
        toolchain: ToolchainIdentity,
        source: Any,
        specialization: Any,
        contract: Any,
        platform: str | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> ArtifactKey:
        """Hash everything an artifact depends on.

        Args:
            toolchain: The toolchain identity.
            source: Source content (e.g. ``{name: sha256 of source text}``).
            specialization: What the call specialised on (shapes, dtypes, scalar values, IR digest).
            contract: The requested contract (``Contract`` or its name).
            platform: The target platform.
            extra: Further invalidating settings (plain data).
        """
        material = canonical_json(
            {
                "key_version": KEY_VERSION,
                "toolchain": toolchain.to_json(),
                "source": source,
                "specialization": specialization,
                "contract": contract,
                "platform": platform,
                "extra": dict(extra or {}),
            }
        )
        return cls(hashlib.sha256(material.encode()).hexdigest(), material)

    def hexdigest(self) -> str:
        return self.digest

    def __str__(self) -> str:
        return self.digest
