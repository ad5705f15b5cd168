"""simpler.kernel: constants, enums, argument checking and the shared admission checks."""

from __future__ import annotations

import struct

import pytest

from simpler import kernel as k

BINDING = k.TmrBindingRef(0x7F0000001000, 9)


def _tile(addr: int = 0x10000) -> object:
    return k.ChipTensor(addr, 4096, k.DataType.FLOAT32, (32, 32), (32, 1))


def test_constants_match_wire_md() -> None:
    assert (k.HEADER_BYTES, k.BINDING_REF_BYTES, k.CHIP_TENSOR_BYTES) == (40, 16, 128)
    assert (k.MAX_CALLABLES, k.MAX_TENSORS, k.MAX_SCALARS, k.MAX_ARGUMENTS) == (64, 256, 128, 256)
    assert k.tmr_invocation_size(0, 0) == 56
    assert k.tmr_invocation_size(3, 5) == 56 + 3 * 128 + 5 * 8
    assert k.tmr_invocation_size(256, 0) == k.MAX_PACKET_BYTES == 32824


def test_enum_codes_are_the_wire_codes() -> None:
    names = "FLOAT32 FLOAT16 INT32 INT16 INT8 UINT8 BFLOAT16 INT64 UINT64 UINT16 UINT32 BOOL FP8E4M3FN FP8E8M0 FP4E2M1"
    assert [(m.name, m.value) for m in k.DataType] == [(n, i) for i, n in enumerate(names.split())]
    assert [m.name for m in k.InvocationStatus] == [
        "Ok",
        "InvalidArgument",
        "InvalidHeader",
        "InvalidCounts",
        "InvalidSignature",
        "InvalidSize",
        "StaleCallable",
        "InvalidBinding",
        "InvalidTensor",
        "AllocationFailure",
    ]
    assert (k.ArgDirection.Scalar.value, k.ArgDirection.In.value, k.ArgDirection.InOut.value) == (0, 1, 3)
    assert (k.AddressSpace.HOST.value, k.AddressSpace.DEVICE.value) == (0, 1)
    assert k.DEVICE == k.AddressSpace.DEVICE


@pytest.mark.parametrize(
    ("t", "s"),
    [(-1, 0), (0, -1), (257, 0), (0, 129), (200, 57)],
)
def test_tmr_invocation_size_rejects_counts_outside_the_limits(t: int, s: int) -> None:
    with pytest.raises(ValueError, match="tmr_invocation_size"):
        k.tmr_invocation_size(t, s)


def test_chip_tensor_fields_and_bytes() -> None:
    t = k.ChipTensor(0x1000, 8192, k.DataType.BFLOAT16, (2, 3), (3, 1), start_offset=5)
    assert (t.addr, t.size, t.dtype, t.shapes, t.strides, t.start_offset) == (
        0x1000,
        8192,
        k.DataType.BFLOAT16,
        (2, 3),
        (3, 1),
        5,
    )
    assert t.ndims == 2
    assert t.address_space == k.DEVICE
    raw = t.to_bytes()
    assert len(raw) == 128
    addr, size, owner, start = struct.unpack_from("<QQQQ", raw)
    assert (addr, size, owner, start) == (0x1000, 8192, 0, 5)
    assert raw[40] == 6  # dtype code
    assert raw[43] == 1  # DEVICE
    assert struct.unpack_from("<5I", raw, 44) == (2, 3, 0, 0, 0)
    assert struct.unpack_from("<5I", raw, 72) == (3, 1, 0, 0, 0)
    assert k.ChipTensor.from_bytes(raw) == t
    assert t != _tile()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"addr": -1}, r"ChipTensor\(addr\): expected an integer in \[0, 2\*\*64\), got -1"),
        ({"size": 2**64}, r"ChipTensor\(size\)"),
        ({"shapes": (1, 2, 3, 4, 5, 6), "strides": (1,) * 6}, r"ChipTensor\(shapes\): expected at most 5"),
        ({"strides": (1,)}, r"ChipTensor\(strides\): expected one stride per dimension \(2\), got 1"),
        ({"shapes": (2**32, 1)}, r"ChipTensor\(shapes\)\[0\]"),
        ({"dtype": 300}, r"ChipTensor\(dtype\)"),
        ({"start_offset": -5}, r"ChipTensor\(start_offset\)"),
    ],
)
def test_chip_tensor_rejects_unrepresentable_arguments(kwargs: dict[str, object], message: str) -> None:
    args: dict[str, object] = {
        "addr": 0x1000,
        "size": 64,
        "dtype": k.DataType.INT8,
        "shapes": (8, 8),
        "strides": (8, 1),
    }
    args.update(kwargs)
    with pytest.raises(ValueError, match=message):
        k.ChipTensor(**args)


def test_chip_tensor_rejects_wrong_types() -> None:
    with pytest.raises(TypeError, match=r"ChipTensor\(shapes\): expected a sequence of ints"):
        k.ChipTensor(1, 64, k.DataType.INT8, "88", (8, 1))
    with pytest.raises(TypeError, match=r"ChipTensor\(addr\)"):
        k.ChipTensor(1.5, 64, k.DataType.INT8, (8,), (1,))


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((64, 0, 0, 1), r"callable_id\): expected 0 <= id < 64, got 64"),
        ((-1, 0, 0, 1), r"callable_id\)"),
        ((0, 257, 0, 1), r"tensor_count, scalar_count\)"),
        ((0, 0, 129, 1), r"tensor_count, scalar_count\)"),
        ((0, 200, 100, 1), r"at most 256 together, got 200 and 100"),
        ((0, 0, 0, 0), r"slot_generation\): expected a live generation >= 1, got 0"),
    ],
)
def test_prepared_view_must_be_a_live_registration(args: tuple[int, ...], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        k.PreparedInvocationView(*args)


def test_derive_invocation_counts() -> None:
    d = k.ArgDirection
    assert k.derive_invocation_counts([d.In, d.Out, d.InOut, d.Scalar]) == (3, 1)
    assert k.derive_invocation_counts([d.In, d.Scalar, d.Scalar], cached_scalar_count=2) == (1, 2)
    assert k.derive_invocation_counts([]) == (0, 0)
    cases = [
        ([d.In, d.Scalar, d.Out], 0, k.InvocationStatus.InvalidSignature),
        ([d.In, 9], 0, k.InvocationStatus.InvalidSignature),
        ([d.In, d.Scalar], 3, k.InvocationStatus.InvalidSignature),
        ([d.In] * 257, 0, k.InvocationStatus.InvalidCounts),
        ([d.Scalar] * 129, 0, k.InvocationStatus.InvalidCounts),
    ]
    for signature, cached, status in cases:
        with pytest.raises(k.InvocationError) as info:
            k.derive_invocation_counts(signature, cached_scalar_count=cached)
        assert info.value.status == status


def test_validate_invocation_header_accepts_opaque_payloads() -> None:
    view = k.PreparedInvocationView(7, 2, 3, 4)
    for payload in (b"", b"x", bytes(range(200))):
        header = struct.pack("<IiQQiiiI", 1, 7, 4, len(payload), 2, 3, 0, 0)
        fields = k.validate_invocation_header(header + payload, view)
        assert fields["payload_bytes"] == len(payload)
        assert fields["callable_id"] == 7
    bad = struct.pack("<IiQQiiiI", 0, 7, 4, 0, 2, 3, 0, 0)
    with pytest.raises(k.InvocationError) as info:
        k.validate_invocation_header(bad, view)
    assert info.value.status == k.InvocationStatus.InvalidHeader


def test_invocation_error_is_a_value_error_with_a_status() -> None:
    view = k.PreparedInvocationView(1, 0, 0, 1)
    with pytest.raises(ValueError, match="InvalidSize") as info:
        k.decode_tmr_invocation(b"\x01" * 10, view, BINDING)
    assert isinstance(info.value, k.InvocationError)
    assert info.value.status == k.InvocationStatus.InvalidSize


def test_encode_argument_errors_name_the_argument() -> None:
    cache = k.TmrEncodingCache()
    view = k.PreparedInvocationView(1, 1, 1, 1)
    with pytest.raises(TypeError, match=r"tensors\[0\]: expected a ChipTensor"):
        cache.encode(view, BINDING, [object()], [1])
    with pytest.raises(TypeError, match=r"scalars\[0\]: expected an int"):
        cache.encode(view, BINDING, [_tile()], [1.5])
    with pytest.raises(ValueError, match=r"scalars\[0\]: expected an integer in \[-2\*\*63, 2\*\*64\)"):
        cache.encode(view, BINDING, [_tile()], [2**64])
    with pytest.raises(k.InvocationError) as info:
        cache.encode(view, BINDING, [_tile(), _tile()], [1])
    assert info.value.status == k.InvocationStatus.InvalidCounts
    with pytest.raises(k.InvocationError) as info:
        cache.encode(view, k.TmrBindingRef(0, 9), [_tile()], [1])
    assert info.value.status == k.InvocationStatus.InvalidArgument


def test_invalid_tensor_messages_name_the_tensor_and_the_field() -> None:
    cache = k.TmrEncodingCache()
    view = k.PreparedInvocationView(1, 2, 0, 1)
    bad = k.ChipTensor(0, 4096, k.DataType.FLOAT32, (32, 32), (32, 1))
    with pytest.raises(k.InvocationError, match=r"tensors\[1\]: buffer.addr must be nonzero") as info:
        cache.encode(view, BINDING, [_tile(), bad], [])
    assert info.value.status == k.InvocationStatus.InvalidTensor
    short = k.ChipTensor(0x1000, 4095, k.DataType.FLOAT32, (1024,), (1,))
    with pytest.raises(k.InvocationError, match=r"tensors\[0\]: start_offset \+ extent must fit buffer.size"):
        cache.encode(view, BINDING, [short, _tile()], [])
