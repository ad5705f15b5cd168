"""Every key of the stack, built here from one canonical encoding.

The encoding is canonical JSON (sorted keys, compact separators, ASCII-safe, no floats that
JSON cannot round-trip) hashed with SHA-256 (:func:`digest_of`). Nothing that varies between
processes enters it: no mtimes, object addresses or reprs. The keys:

- a program's (single-chip artifact's) key, :func:`program_key`: the toolchain identity, the
  sources, the specialisation (:func:`program_material`: entry, IR text digest, call key,
  captured globals), the contract, the platform, the runtime and the invalidating settings;
- a kernel or orchestration binary's build key, :func:`binary_key`: the toolchain that builds
  it and the source texts it compiles (the in-process memo of built binaries);
- a multi-chip plan's key, :func:`plan_key`: the plan's entry JSON (which names the per-rank
  programs by their keys);
- ingredients: :func:`source_digest` (a Python function's source), :func:`tree_digest` (an
  installed header tree), :attr:`ToolchainIdentity.digest`.

``tests/test_artifact_key.py`` checks that each key changes when each ingredient does. Bump
``CODEGEN_VERSION`` whenever generated code changes for the same IR, ``KEY_VERSION`` when a
key's layout changes. (simpler-native, below pypto-ir, digests its own toolchain's binaries and
headers; those digests enter :func:`program_key` as toolchain components.)
"""

from __future__ import annotations

import enum
import hashlib
import inspect
import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "CODEGEN_VERSION",
    "KEY_VERSION",
    "ArtifactKey",
    "ToolchainIdentity",
    "binary_key",
    "canonical_json",
    "digest_of",
    "plan_key",
    "program_key",
    "program_material",
    "source_digest",
    "tree_digest",
]

KEY_VERSION = 2
"""Bumped when the key's own layout changes (invalidates every key). 2: every digest (sources, IR
text, plans, binaries) is the SHA-256 of canonical JSON, and plan keys carry this version."""

CODEGEN_VERSION = 18
"""Bumped when the code generator emits different code for the same IR, or its artifacts'
metadata changes meaning (2: artifacts carry per-kernel ``buffer_usage`` and kernels beyond the
platform's on-chip buffers are refused; 3: ``buffer_usage`` is the peak of the tiles live at
once, not the sum of every tile declared; 4: an orchestration window's descriptor keeps only the
part of its declared extent inside the tensor; 6: a tile cast passes its rounding mode, by default
ties away from zero; 7: kernels are PTO-ISA programs, tiles placed by the memory-allocation pass
and pipes ordered by the sync-insertion pass; 8: composed math written as PTO-ISA ops by the
decompose_math pass, and ``half``/``bfloat16_t``/``pto``/``sk`` renamed as C++ identifiers; 9: the ``__gm__``/``__aicore__``
macros come from ``<simpler/kernel_prologue.hpp>`` and a cast with mode ``none`` is ``CAST_RINT``; 10:
cross-rank operations are PTO-ISA communication instructions (``<pto/comm/pto_comm_inst.hpp>``) and
their staging tiles are placed like the others; 12: a Mat tile's transpose view is its NZ bytes
declared as a ZN tile and TRESHAPE'd, and a reshape's TRESHAPE runs on no pipe; 15: an
element-wise result is placed over an operand it reads for the last time; 16: an ``into`` op's
result takes the storage of the operand it updates (no TMOV copy first), and 1-byte cube tiles
are padded to 16 rows and columns where M and N lie; 17: ``pl.assemble(t, v, offsets)`` as a
statement on a scope-local tensor writes the tile that holds ``t``, which later reads see; 18: a
transposed matmul operand that the kernel only reads is loaded into L1 and read as its transpose
view, not transposed in Vec), so entries built before are not reused."""


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


def digest_of(value: Any) -> str:
    """The SHA-256 (hex) of ``value``'s canonical JSON: the one digest every key and ingredient uses."""
    return hashlib.sha256(canonical_json(value).encode()).hexdigest()


def source_digest(fn: Callable[..., Any]) -> str:
    """The digest of a Python function's source text (its qualified name when it has no source)."""
    try:
        text = inspect.getsource(fn)
    except (OSError, TypeError):
        text = fn.__qualname__
    return digest_of({"source": text})


def tree_digest(root: Path) -> str:
    """The digest of every file under ``root``: relative path and content, in path order."""
    files = sorted(p for p in root.rglob("*") if p.is_file())
    return digest_of(
        [[p.relative_to(root).as_posix(), hashlib.sha256(p.read_bytes()).hexdigest()] for p in files]
    )


def program_material(
    program: Any,
    *,
    kind: str,
    entry: str,
    sources: Mapping[str, str] | None = None,
    call_key: Any = None,
    captured: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """What a program's key specialises on: ``kind`` (``"jit"``: a ``@pl.jit`` specialisation;
    ``"ir"``: a ``Program`` given as IR), the entry function, the digest of the IR text, and for a
    specialisation its functions' source digests, its call key and its captured globals."""
    material: dict[str, Any] = {"kind": kind, "entry": entry, "ir": digest_of({"ir": str(program)})}
    if sources is not None:
        material["sources"] = dict(sorted(sources.items()))
    if call_key is not None:
        material["call_key"] = call_key
    if captured is not None:
        material["globals"] = dict(captured)
    return material


def program_key(
    material: Mapping[str, Any],
    *,
    toolchain: ToolchainIdentity,
    contract: Any,
    platform: str,
    runtime: str,
    settings: Mapping[str, Any],
) -> ArtifactKey:
    """The key of a program's artifact (:func:`program_material` for the rest): ``settings`` are
    the invalidating settings of the runtime that builds it."""
    return ArtifactKey.compute(
        toolchain=toolchain,
        source=material.get("sources", {}),
        specialization=material,
        contract=contract,
        platform=platform,
        extra={"runtime": runtime, **settings},
    )


def binary_key(toolchain: str, sources: Mapping[str, str]) -> str:
    """The build key of one kernel or orchestration binary: the identity of the toolchain that
    compiles it and the texts it compiles (name -> text)."""
    return digest_of(
        {"key_version": KEY_VERSION, "kind": "binary", "toolchain": toolchain, "sources": sources}
    )


def plan_key(entry_json: Mapping[str, Any]) -> str:
    """The store key of a multi-chip plan: its entry JSON, which names every per-rank program by
    its own :func:`program_key`."""
    return digest_of({"key_version": KEY_VERSION, "kind": "distributed", "plan": entry_json})


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
        return digest_of(self.to_json())


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
        return cls(hashlib.sha256(material.encode()).hexdigest(), material)  # digest_of(the same data)

    def hexdigest(self) -> str:
        return self.digest

    def __str__(self) -> str:
        return self.digest
