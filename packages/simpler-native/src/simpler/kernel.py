"""Kernel-invocation wire formats, admission checks and the TMR snapshot codec.

The formats are those of WIRE.md; the checks and the codec are simpler's C++ core (headers under
``simpler.get_include()``/``simpler/wire``), bound here. A rejected invocation raises
:class:`InvocationError` whose ``.status`` is an :class:`InvocationStatus`.

Example::

    from simpler import kernel as k

    view = k.PreparedInvocationView(callable_id=1, tensor_count=1, scalar_count=1, slot_generation=1)
    binding = k.TmrBindingRef(device_binding_addr=0x7F0000001000, context_generation=9)
    x = k.ChipTensor(0x10000, 4096, k.DataType.FLOAT32, (32, 32), (32, 1))
    cache = k.TmrEncodingCache()
    candidate = cache.encode(view, binding, [x], [42])
    cache.commit(candidate)  # only after the complete enqueue succeeded
    tensors, scalars = k.decode_tmr_invocation(candidate.packet, view, binding)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

from simpler._native import kernel as _kernel

AicpuPayloadQueue: Any = _kernel.AicpuPayloadQueue
AddressSpace: Any = _kernel.AddressSpace
ArgDirection: Any = _kernel.ArgDirection
ChipTensor: Any = _kernel.ChipTensor
DataType: Any = _kernel.DataType
ExecutionMode: Any = _kernel.ExecutionMode
InvocationStatus: Any = _kernel.InvocationStatus
PreparedInvocationView: Any = _kernel.PreparedInvocationView
TmrBindingRef: Any = _kernel.TmrBindingRef
TmrCandidate: Any = _kernel.TmrCandidate
TmrEncodingCache: Any = _kernel.TmrEncodingCache
TmrSubmissionOwner: Any = _kernel.TmrSubmissionOwner
derive_invocation_counts: Any = _kernel.derive_invocation_counts
enqueue_tmr_invocation_aicpu: Any = _kernel.enqueue_tmr_invocation_aicpu
tmr_invocation_size: Any = _kernel.tmr_invocation_size
validate_invocation_header: Any = _kernel.validate_invocation_header

HEADER_BYTES: int = _kernel.HEADER_BYTES
BINDING_REF_BYTES: int = _kernel.BINDING_REF_BYTES
CHIP_TENSOR_BYTES: int = _kernel.CHIP_TENSOR_BYTES
MAX_CALLABLES: int = _kernel.MAX_CALLABLES
MAX_TENSORS: int = _kernel.MAX_TENSORS
MAX_SCALARS: int = _kernel.MAX_SCALARS
MAX_ARGUMENTS: int = _kernel.MAX_ARGUMENTS
MAX_TENSOR_DIMS: int = _kernel.MAX_TENSOR_DIMS
MAX_PACKET_BYTES: int = _kernel.MAX_PACKET_BYTES
DATA_TYPE_NAMES: tuple[str, ...] = _kernel.DATA_TYPE_NAMES
DATA_TYPE_BITS: tuple[int, ...] = _kernel.DATA_TYPE_BITS
BLOCK_PREFIX_BYTES: int = _kernel.BLOCK_PREFIX_BYTES
DEVICE: Any = _kernel.DEVICE
HOST: Any = _kernel.HOST

if TYPE_CHECKING:

    class InvocationError(ValueError):
        """A kernel invocation was rejected; ``.status`` is the :class:`InvocationStatus`."""

        status: Any

else:
    InvocationError = _kernel.InvocationError


class DecodedInvocation(NamedTuple):
    """The descriptors and scalar bits of one accepted packet (unpacks as ``tensors, scalars``)."""

    tensors: list[Any]
    scalars: list[int]


def decode_tmr_invocation(
    packet: bytes | bytearray | memoryview, view: Any, binding: Any
) -> DecodedInvocation:
    """Decode and validate a TMR packet against a trusted view and binding.

    Args:
        packet: the packet bytes (header, binding ref, descriptors, scalars), no size prefix.
        view: the :class:`PreparedInvocationView` of the live callable.
        binding: the trusted :class:`TmrBindingRef`.

    Raises:
        InvocationError: the packet is rejected; ``.status`` says why.
    """
    tensors, scalars = _kernel._decode_tmr_invocation(packet, view, binding)
    return DecodedInvocation(tensors, scalars)


def consume_tmr_invocation(
    packet: bytes | bytearray | memoryview, view: Any, binding: Any, *, block: bool = False
) -> DecodedInvocation:
    """Run the AICPU-side consumer: decode, validate and materialise into entry-argument storage.

    With ``block=True`` the input is a transport block (u64 ``packet_bytes`` prefix + packet), as
    :class:`AicpuPayloadQueue` hands it out.

    Raises:
        InvocationError: the packet is rejected; ``.status`` says why.
    """
    tensors, scalars = _kernel._consume_tmr_invocation(packet, view, binding, block)
    return DecodedInvocation(tensors, scalars)


__all__ = [
    "BINDING_REF_BYTES",
    "BLOCK_PREFIX_BYTES",
    "CHIP_TENSOR_BYTES",
    "DATA_TYPE_BITS",
    "DATA_TYPE_NAMES",
    "DEVICE",
    "HEADER_BYTES",
    "HOST",
    "MAX_ARGUMENTS",
    "MAX_CALLABLES",
    "MAX_PACKET_BYTES",
    "MAX_SCALARS",
    "MAX_TENSORS",
    "MAX_TENSOR_DIMS",
    "AddressSpace",
    "AicpuPayloadQueue",
    "ArgDirection",
    "ChipTensor",
    "DataType",
    "DecodedInvocation",
    "ExecutionMode",
    "InvocationError",
    "InvocationStatus",
    "PreparedInvocationView",
    "TmrBindingRef",
    "TmrCandidate",
    "TmrEncodingCache",
    "TmrSubmissionOwner",
    "consume_tmr_invocation",
    "decode_tmr_invocation",
    "derive_invocation_counts",
    "enqueue_tmr_invocation_aicpu",
    "tmr_invocation_size",
    "validate_invocation_header",
]
