"""Artifact identity and context-bound registrations.

A :class:`KernelCallable` is one KERNEL artifact registered on the process's kernel Worker:
the artifact, its opaque ``CallableHandle``, the context generation it is bound to, the
:class:`~pypto.torch.interop.CallSignature` that describes its calls, and the launch plan that
turns a :class:`~pypto.torch.interop.CallFrame` into simpler's materialised arguments
(descriptors, directions and scalar bits) without building per-tensor Python objects.

Cached registrations are keyed by the artifact's ArtifactKey; a product that did not come
from the store (no key) is keyed by object identity, since its directory can be overwritten.
"""

from __future__ import annotations

from typing import Any

from pypto.ir import ParamDirection
from pypto.torch._native_describe import loaded_module
from pypto.torch.interop import CallFrame, CallSignature

__all__ = ["KernelCallable", "RegistrationError", "artifact_identity"]

_DIRECTION_CODES = {ParamDirection.IN: 1, ParamDirection.OUT: 2, ParamDirection.INOUT: 3}


class RegistrationError(ValueError):
    """An artifact cannot be registered on this kernel context (capability, platform, runtime)."""


def artifact_identity(artifact: Any) -> tuple[str, object]:
    """The registration cache key of ``artifact``: its ArtifactKey, else its identity."""
    key = getattr(artifact, "key", None)
    if key is not None:
        return ("key", str(key))
    return ("object", id(artifact))


class KernelCallable:
    """One artifact registered on a kernel context's Worker (immutable after construction).

    Args:
        artifact: The ``pypto.runtime.CompiledArtifact`` (retained).
        handle: The ``simpler.CallableHandle`` that ``Worker.register`` returned (opaque).
        generation: The context generation the registration belongs to.
        platform: The DevicePlatform calls are described on.
        simpler: The simpler module (for ``ChipStorageTaskArgs`` and scalar encoding).
    """

    __slots__ = (
        "_encode",
        "_last",
        "_materialized",
        "_scalar_codes",
        "_tensor_codes",
        "artifact",
        "bound",
        "directions",
        "generation",
        "handle",
        "name",
        "return_aliases",
        "signature",
    )

    def __init__(self, artifact: Any, handle: Any, generation: int, platform: Any, simpler: Any) -> None:
        self.artifact = artifact
        self.handle = handle
        self.generation = generation
        self.name: str = artifact.name
        params = artifact.params
        self.return_aliases: tuple[int, ...] = tuple(artifact.metadata.return_aliases)
        self.signature = CallSignature(params, self.return_aliases, platform=platform)
        self.directions = tuple(_DIRECTION_CODES[p.direction] for p in params if p.is_tensor)
        self._tensor_codes = tuple(p.dtype.wire_code for p in params if p.is_tensor)
        self._scalar_codes = tuple(p.dtype.wire_code for p in params if p.is_scalar)
        self._materialized = simpler.ChipStorageTaskArgs
        self._encode = simpler.task_args.encode_scalar
        self._last: Any = None  # the last ChipStorageTaskArgs built (immutable: reused when equal)
        # the bound launch of this kernel's common calls (the manager's ``bind``): None until
        # asked, () where it never applies
        self.bound: Any = None

    def materialize(self, frame: CallFrame) -> Any:
        """simpler's ``ChipStorageTaskArgs`` for one described call: a ChipTensor descriptor
        per tensor (storage base and capacity, dtype, shape, strides, element offset), the
        directions, and each scalar's 64-bit encoding by simpler. The tensor tuples are built
        by the native extension once it is loaded (the same fields). A call with the same
        descriptors and scalar bits as the last one gets the last (frozen) object again."""
        native = loaded_module()
        if native is not None:
            tensors = native.chip_tensors(frame.tensors, self._tensor_codes)
        else:
            tensors = tuple(
                (t.storage_ptr, t.storage_nbytes, code, t.shape, t.strides, t.storage_offset)
                for t, code in zip(frame.tensors, self._tensor_codes, strict=True)
            )
        codes = self._scalar_codes
        if codes:
            encode = self._encode
            scalars = tuple(encode(s.value, code) for s, code in zip(frame.scalars, codes, strict=True))
        else:
            scalars = ()
        last = self._last
        if last is not None and last.tensors == tensors and last.scalars == scalars:
            return last
        last = self._last = self._materialized(tensors, self.directions, scalars)
        return last

    def __repr__(self) -> str:
        return f"KernelCallable({self.name!r}, generation={self.generation}, slot={getattr(self.handle, 'slot', '?')})"
