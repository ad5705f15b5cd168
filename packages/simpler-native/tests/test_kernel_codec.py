"""simpler.kernel: round trips, the encoding cache, and the copy-on-enqueue transport."""

from __future__ import annotations

import struct

import pytest

from simpler import kernel as k

BINDING = k.TmrBindingRef(0x7F0000001000, 9)


def _tile(addr: int = 0x10000) -> object:
    return k.ChipTensor(addr, 4096, k.DataType.FLOAT32, (32, 32), (32, 1))


def test_round_trip_and_scalar_bits() -> None:
    view = k.PreparedInvocationView(5, 2, 3, 3)
    tensors = [
        _tile(),
        k.ChipTensor(0x20000, 1 << 20, k.DataType.INT8, (2, 3, 4), (12, 4, 1), start_offset=9),
    ]
    f32 = struct.unpack("<I", struct.pack("<f", 1.5))[0]
    candidate = k.TmrEncodingCache().encode(view, BINDING, tensors, [f32, -3, 2**64 - 1])
    assert candidate.packet_bytes == k.tmr_invocation_size(2, 3) == len(candidate.packet)
    assert candidate.block == struct.pack("<Q", candidate.packet_bytes) + candidate.packet
    decoded = k.decode_tmr_invocation(candidate.packet, view, BINDING)
    assert decoded.tensors == tensors
    assert decoded.scalars == [f32, 2**64 - 3, 2**64 - 1]  # raw two's-complement bits


def test_encode_canonicalises_but_keeps_identity() -> None:
    view = k.PreparedInvocationView(1, 1, 0, 1)
    packet = k.TmrEncodingCache().encode(view, BINDING, [_tile()], []).packet
    body = packet[56:]
    assert body[16:36] == bytes(20)  # owner_task_id, start_offset (0 here), version
    assert body[92:] == bytes(36)  # padding
    assert packet[:4] == struct.pack("<I", 1)  # KERNEL
    # Bookkeeping fields, unused dims and padding set by a caller do not reach the packet.
    dirty = bytearray(_tile().to_bytes())
    dirty[16:24] = b"\x07" * 8  # owner_task_id
    dirty[41] = 1  # manual_dep
    dirty[52:56] = b"\x09" * 4  # shapes[2], unused at rank 2
    dirty[100] = 0xAB  # padding
    assert (
        k.TmrEncodingCache().encode(view, BINDING, [k.ChipTensor.from_bytes(bytes(dirty))], []).packet
        == packet
    )
    # ...and a packet that carries them is rejected.
    for offset in (16, 41, 52, 100):
        corrupt = bytearray(packet)
        corrupt[56 + offset] = 1
        with pytest.raises(k.InvocationError) as info:
            k.decode_tmr_invocation(bytes(corrupt), view, BINDING)
        assert info.value.status == k.InvocationStatus.InvalidTensor


def test_cache_hits_patch_addresses_and_scalars() -> None:
    view = k.PreparedInvocationView(1, 2, 1, 1)
    cache = k.TmrEncodingCache()
    first = cache.encode(view, BINDING, [_tile(0x10000), _tile(0x20000)], [1])
    assert not first.cache_hit
    assert cache.template_bytes == 0
    cache.commit(first)
    assert cache.template_bytes == 56 + 2 * 128
    with pytest.raises(k.InvocationError, match="uncommitted candidate of this cache"):
        cache.commit(first)
    hit = cache.encode(view, BINDING, [_tile(0x90000), _tile(0xA0000)], [77])
    assert hit.cache_hit
    assert (
        hit.packet
        == k.TmrEncodingCache().encode(view, BINDING, [_tile(0x90000), _tile(0xA0000)], [77]).packet
    )
    miss = cache.encode(view, k.TmrBindingRef(0x7F0000001000, 10), [_tile(), _tile()], [1])
    assert not miss.cache_hit
    with pytest.raises(k.InvocationError) as info:
        k.TmrEncodingCache().commit(hit)
    assert info.value.status == k.InvocationStatus.InvalidArgument


def test_failed_encode_leaves_the_template() -> None:
    view = k.PreparedInvocationView(1, 1, 0, 1)
    cache = k.TmrEncodingCache()
    cache.commit(cache.encode(view, BINDING, [_tile()], []))
    host = k.ChipTensor(0x10000, 4096, k.DataType.FLOAT32, (32, 32), (32, 1), address_space=k.HOST)
    with pytest.raises(k.InvocationError) as info:
        cache.encode(view, BINDING, [host], [])
    assert info.value.status == k.InvocationStatus.InvalidTensor
    with pytest.raises(k.InvocationError) as info:
        cache.encode(view, BINDING, [_tile(0)], [])  # null address on the hit path
    assert info.value.status == k.InvocationStatus.InvalidTensor
    assert cache.encode(view, BINDING, [_tile(0x5000)], []).cache_hit


def test_template_bytes_stay_bounded_over_10000_encodes() -> None:
    view = k.PreparedInvocationView(2, 1, 1, 1)
    cache = k.TmrEncodingCache()
    sizes = set()
    for i in range(10_000):
        candidate = cache.encode(view, BINDING, [_tile(0x10000 + 64 * (i % 97))], [i])
        cache.commit(candidate)
        sizes.add(cache.template_bytes)
    assert sizes == {56 + 128}


def test_copy_on_enqueue_transport_and_consumer() -> None:
    queue = k.AicpuPayloadQueue()
    view = k.PreparedInvocationView(3, 1, 1, 1)
    cache = k.TmrEncodingCache()
    for i in range(5):
        candidate = cache.encode(view, BINDING, [_tile(0x10000 * (i + 1))], [i])
        k.enqueue_tmr_invocation_aicpu(queue, candidate, view, BINDING)
        cache.commit(candidate)
        del candidate  # the host packet is released at once
    assert len(queue) == 5
    for i in range(5):
        block = queue.pop()
        assert block is not None
        tensors, scalars = k.consume_tmr_invocation(block, view, BINDING, block=True)
        assert scalars == [i]
        assert tensors[0].addr == 0x10000 * (i + 1)
    assert queue.pop() is None
    assert queue.outstanding == 0


def test_enqueue_revalidates_and_never_reaches_the_runner_on_rejection() -> None:
    queue = k.AicpuPayloadQueue()
    view = k.PreparedInvocationView(3, 1, 1, 2)
    candidate = k.TmrEncodingCache().encode(view, BINDING, [_tile()], [1])
    cases = [
        (k.PreparedInvocationView(3, 1, 1, 3), BINDING, k.InvocationStatus.StaleCallable),
        (k.PreparedInvocationView(4, 1, 1, 2), BINDING, k.InvocationStatus.StaleCallable),
        (view, k.TmrBindingRef(0x7F0000001000, 10), k.InvocationStatus.InvalidBinding),
        (k.PreparedInvocationView(3, 0, 1, 2), BINDING, k.InvocationStatus.InvalidSize),
    ]
    for trusted, binding, status in cases:
        with pytest.raises(k.InvocationError) as info:
            k.enqueue_tmr_invocation_aicpu(queue, candidate, trusted, binding)
        assert info.value.status == status
    assert len(queue) == 0
    assert queue.acquired == 0


def test_clearing_the_queue_releases_every_held_block_once() -> None:
    queue = k.AicpuPayloadQueue()
    view = k.PreparedInvocationView(0, 0, 1, 1)
    cache = k.TmrEncodingCache()
    for i in range(6):
        k.enqueue_tmr_invocation_aicpu(queue, cache.encode(view, BINDING, [], [i]), view, BINDING)
    assert queue.pop() is not None
    assert queue.outstanding == 5
    assert queue.clear() == 5
    assert queue.clear() == 0
    assert (queue.acquired, queue.released, queue.outstanding) == (6, 6, 0)


def test_decode_reads_unaligned_buffers() -> None:
    view = k.PreparedInvocationView(1, 1, 1, 1)
    packet = k.TmrEncodingCache().encode(view, BINDING, [_tile()], [5]).packet
    for shift in range(1, 8):
        buf = bytearray(shift) + bytearray(packet)
        assert k.decode_tmr_invocation(memoryview(buf)[shift:], view, BINDING).scalars == [5]


def test_submission_owner_serialises_threads_and_replacement() -> None:
    import threading

    owner = k.TmrSubmissionOwner()
    queue = k.AicpuPayloadQueue()
    with pytest.raises(k.InvocationError) as info:
        owner.submit(queue, [_tile()], [1])  # nothing published yet
    assert info.value.status == k.InvocationStatus.StaleCallable
    owner.publish(k.PreparedInvocationView(4, 1, 1, 1), BINDING)
    outcomes: list[str] = []
    lock = threading.Lock()

    def submitter(t: int) -> None:
        for i in range(200):
            try:
                owner.submit(queue, [_tile(0x10000 + 0x100 * i)], [(t << 32) | i])
                result = "ok"
            except k.InvocationError as e:
                result = e.status.name
            with lock:
                outcomes.append(result)

    def replacer() -> None:
        for gen in range(2, 40):
            owner.close()
            owner.publish(k.PreparedInvocationView(4, 1, 1, gen), BINDING)

    threads = [threading.Thread(target=submitter, args=(t,)) for t in range(3)]
    threads.append(threading.Thread(target=replacer))
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert len(outcomes) == 600
    assert set(outcomes) <= {"ok", "StaleCallable"}
    assert outcomes.count("ok") == len(queue) == owner.submissions
    # Every queued block is a whole packet of one published generation.
    while (block := queue.pop()) is not None:
        generation = struct.unpack_from("<Q", block, 8 + 8)[0]
        view = k.PreparedInvocationView(4, 1, 1, generation)
        assert len(k.consume_tmr_invocation(block, view, BINDING, block=True).tensors) == 1
    assert owner.template_bytes == 56 + 128
