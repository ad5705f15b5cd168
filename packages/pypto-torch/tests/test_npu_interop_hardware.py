"""Call frames on real NPU tensors (the design note's hardware interop test).

Runs only where torch_npu imports, an Ascend NPU is visible and the selected platform is not a
simulator; everywhere else every test is skipped with the reason (this machine has no NPU).
These are metadata tests (devices, streams, offsets, rejection), not kernel-execution tests.
"""

from __future__ import annotations

import importlib.util
import os
from typing import Any

import pytest
import torch

from pypto.ir import SIMULATOR_PLATFORMS
from pypto.ir.param_info import ParamInfo
from pypto.torch.interop import ArgumentError, CallSignature


def _why_no_npu() -> str | None:
    """None when a real NPU can be used here, else why not."""
    if os.environ.get("PYPTO_PLATFORM") in SIMULATOR_PLATFORMS:
        return f"PYPTO_PLATFORM={os.environ['PYPTO_PLATFORM']} selects a simulator"
    if importlib.util.find_spec("torch_npu") is None:
        return "needs a real Ascend NPU: torch_npu is not installed"
    try:
        import torch_npu  # noqa: F401
    except Exception as exc:  # CANN missing, or a broken install
        return f"needs a real Ascend NPU: torch_npu does not import ({exc})"
    if not torch.npu.is_available() or torch.npu.device_count() == 0:  # type: ignore[attr-defined]
        return "needs a real Ascend NPU: torch_npu sees no device"
    return None


_WHY = _why_no_npu()
pytestmark = [pytest.mark.npu, pytest.mark.skipif(_WHY is not None, reason=_WHY or "")]

P = ParamInfo


def _signature() -> CallSignature:
    return CallSignature(
        [P("x", "In", [-1, 4], "FP32"), P("out", "Out", [-1, 4], "FP32"), P("alpha", "In", None, "FP32")],
        (1,),
        platform="a2a3",
    )


def test_real_npu_tensors_and_an_offset_view() -> None:
    base = torch.arange(40, dtype=torch.float32).to("npu:0")
    x = base[8:20].view(3, 4)
    out = torch.zeros(3, 4, device="npu:0")
    frame = _signature().describe_call([x, out, 2.0])
    tx, tout = frame.tensors
    assert frame.device_index == 0
    assert tx.storage_offset == 8
    assert tx.data_ptr == x.data_ptr()
    assert tout.tensor is out
    assert frame.alias_result() is out


def test_the_current_non_default_stream_is_recorded() -> None:
    side: Any = torch.npu.Stream()  # type: ignore[attr-defined]
    x, out = torch.ones(2, 4, device="npu:0"), torch.zeros(2, 4, device="npu:0")
    with torch.npu.stream(side):  # type: ignore[attr-defined]
        frame = _signature().describe_call([x, out, 1.0])
    assert frame.stream == side
    assert _signature().describe_call([x, out, 1.0]).stream != side


def test_a_noncontiguous_input_is_rejected() -> None:
    x = torch.ones(4, 4, device="npu:0").t()  # a transposed view: not contiguous
    with pytest.raises(ArgumentError):
        _signature().describe_call([x, torch.zeros(4, 4, device="npu:0"), 1.0])
