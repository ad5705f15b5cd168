"""pypto-runtime imports without torch, torch_npu or the torch layer."""

from __future__ import annotations

import pytest

from pypto_testing import DEFAULT_BLOCKED


@pytest.mark.parametrize("optimize", [0, 1, 2])
def test_import_without_torch_layer(run_without_optional_runtime, optimize: int) -> None:  # type: ignore[no-untyped-def]
    blocked = (*DEFAULT_BLOCKED, "pypto.torch", "torch")
    run_without_optional_runtime("import pypto.runtime", blocked=blocked, optimize=optimize).check()
