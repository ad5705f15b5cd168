"""Property tests of the TMR codec through simpler.kernel (hypothesis).

Round trip for generated invocations; every truncation and every change of one header, count,
size or binding byte is rejected with the status the admission order defines.
"""

from __future__ import annotations

import struct
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from simpler import kernel as k

BITS = [32, 16, 32, 16, 8, 8, 16, 64, 64, 16, 32, 8, 8, 8, 4]
SETTINGS = settings(max_examples=60, deadline=None)


@st.composite
def tensors(draw: Any) -> Any:
    dtype = draw(st.integers(0, 14))
    ndims = draw(st.integers(1, 5))
    empty = draw(st.integers(0, 9)) == 0
    shapes = [draw(st.integers(1, 6)) for _ in range(ndims)]
    strides = [draw(st.integers(1, 40)) for _ in range(ndims)]
    start = draw(st.integers(0, 100))
    extent = 1 + sum((s - 1) * d for s, d in zip(shapes, strides, strict=True))
    size = ((start + extent) * BITS[dtype] + 7) // 8 + draw(st.integers(0, 64))
    if empty:  # a zero dimension: the tensor accesses nothing
        shapes[draw(st.integers(0, ndims - 1))] = 0
    addr = draw(st.integers(1, 2**48))
    return k.ChipTensor(addr, size, k.DataType(dtype), shapes, strides, start_offset=start)


@st.composite
def invocations(draw: Any) -> tuple[Any, Any, list[Any], list[int]]:
    ts = draw(st.lists(tensors(), max_size=4))
    scalars = draw(st.lists(st.integers(0, 2**64 - 1), max_size=4))
    view = k.PreparedInvocationView(
        draw(st.integers(0, 63)), len(ts), len(scalars), draw(st.integers(1, 2**64 - 1))
    )
    binding = k.TmrBindingRef(draw(st.integers(1, 2**64 - 1)), draw(st.integers(1, 2**64 - 1)))
    return view, binding, ts, scalars


def _status(packet: bytes, view: Any, binding: Any) -> Any:
    try:
        k.decode_tmr_invocation(packet, view, binding)
    except k.InvocationError as e:
        return e.status
    return k.InvocationStatus.Ok


@SETTINGS
@given(invocations())
def test_round_trip(inv: tuple[Any, Any, list[Any], list[int]]) -> None:
    view, binding, ts, scalars = inv
    cache = k.TmrEncodingCache()
    candidate = cache.encode(view, binding, ts, scalars)
    assert len(candidate.packet) == k.tmr_invocation_size(len(ts), len(scalars))
    decoded = k.decode_tmr_invocation(candidate.packet, view, binding)
    assert decoded.tensors == ts
    assert decoded.scalars == scalars
    cache.commit(candidate)
    again = cache.encode(view, binding, ts, scalars)
    assert again.cache_hit
    assert again.packet == candidate.packet


@SETTINGS
@given(invocations())
def test_every_truncation_is_rejected(inv: tuple[Any, Any, list[Any], list[int]]) -> None:
    view, binding, ts, scalars = inv
    packet = k.TmrEncodingCache().encode(view, binding, ts, scalars).packet
    for n in range(len(packet)):
        assert _status(packet[:n], view, binding) == k.InvocationStatus.InvalidSize
    assert _status(packet + b"\0", view, binding) == k.InvocationStatus.InvalidSize


def _expected(offset: int, changed: bytes, view: Any) -> Any:
    """The status a one-byte change at ``offset`` of the first 56 bytes must produce."""
    S = k.InvocationStatus
    if offset < 4:
        return S.InvalidHeader  # mode is no longer KERNEL
    if offset < 8:
        cid = struct.unpack_from("<i", changed, 4)[0]
        return S.StaleCallable if 0 <= cid < 64 else S.InvalidHeader
    if offset < 16:
        return S.StaleCallable  # generation
    if offset < 24:
        return S.InvalidSize  # payload_bytes
    if offset < 32:
        return S.InvalidCounts  # tensor_count / scalar_count
    if offset < 40:
        return S.InvalidHeader  # host_copy_tensor_count / reserved
    return S.InvalidBinding


@SETTINGS
@given(invocations(), st.integers(0, 55), st.integers(1, 255))
def test_every_header_and_binding_byte_change_is_rejected(
    inv: tuple[Any, Any, list[Any], list[int]], offset: int, xor: int
) -> None:
    view, binding, ts, scalars = inv
    packet = bytearray(k.TmrEncodingCache().encode(view, binding, ts, scalars).packet)
    packet[offset] ^= xor
    assert _status(bytes(packet), view, binding) == _expected(offset, bytes(packet), view)


@SETTINGS
@given(invocations(), st.integers(-3, 3), st.integers(-3, 3))
def test_counts_other_than_the_trusted_view_are_rejected(
    inv: tuple[Any, Any, list[Any], list[int]], dt: int, ds: int
) -> None:
    view, binding, ts, scalars = inv
    packet = k.TmrEncodingCache().encode(view, binding, ts, scalars).packet
    t, s = view.tensor_count + dt, view.scalar_count + ds
    if (dt, ds) == (0, 0) or not (0 <= t <= 256 and 0 <= s <= 128):
        return
    other = k.PreparedInvocationView(view.callable_id, t, s, view.slot_generation)
    assert _status(packet, other, binding) == k.InvocationStatus.InvalidCounts
