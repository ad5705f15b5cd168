"""Every vector of tests/data/tmr_vectors.json through the Python API (the C++ tests run them too)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from simpler import kernel as k

VECTORS: list[dict[str, Any]] = json.loads(
    (Path(__file__).parent / "data" / "tmr_vectors.json").read_text(encoding="utf-8")
)["vectors"]


def test_the_vector_file_is_complete() -> None:
    assert len(VECTORS) >= 31
    assert sum(v["expect"] == "ok" for v in VECTORS) >= 6
    assert sum(v["expect"] == "reject" for v in VECTORS) >= 20


def _trusted(v: dict[str, Any]) -> tuple[Any, Any] | None:
    """The trusted view and binding, or None when the view cannot be a live registration."""
    view = v["view"]
    try:
        trusted = k.PreparedInvocationView(
            view["callable_id"], view["tensor_count"], view["scalar_count"], view["slot_generation"]
        )
    except ValueError:
        return None
    b = v["binding"]
    return trusted, k.TmrBindingRef(b["device_binding_addr"], b["context_generation"])


@pytest.mark.parametrize("vector", VECTORS, ids=[v["name"] for v in VECTORS])
def test_vector(vector: dict[str, Any]) -> None:
    packet = bytes.fromhex(vector["packet_hex"])
    trusted = _trusted(vector)
    if vector["expect"] == "reject":
        if trusted is None:
            return  # the view itself cannot be constructed: rejected before any decode
        with pytest.raises(k.InvocationError) as info:
            k.decode_tmr_invocation(packet, *trusted)
        assert info.value.status != k.InvocationStatus.Ok
        with pytest.raises(k.InvocationError) as again:
            k.consume_tmr_invocation(packet, *trusted)
        assert again.value.status == info.value.status
        return
    assert trusted is not None
    view, binding = trusted
    tensors, scalars = k.decode_tmr_invocation(packet, view, binding)
    assert len(tensors) == view.tensor_count
    assert len(scalars) == view.scalar_count
    if vector["decoded"] is not None:
        got = [
            {
                "addr": t.addr,
                "size": t.size,
                "dtype": int(t.dtype.value),
                "shapes": list(t.shapes),
                "strides": list(t.strides),
                "start_offset": t.start_offset,
            }
            for t in tensors
        ]
        assert got == vector["decoded"]["tensors"]
        assert scalars == vector["decoded"]["scalars"]
    assert k.consume_tmr_invocation(packet, view, binding) == (tensors, scalars)
    # Re-encoding what was decoded reproduces the packet byte for byte.
    candidate = k.TmrEncodingCache().encode(view, binding, tensors, scalars)
    assert candidate.packet == packet
