"""import pypto.torch never imports torch_npu, simpler or a native launch extension."""

from __future__ import annotations

import pytest

from pypto_testing import DEFAULT_BLOCKED


@pytest.mark.parametrize("optimize", [0, 1, 2])
def test_import_without_optional_runtime(run_without_optional_runtime, optimize: int) -> None:  # type: ignore[no-untyped-def]
    blocked = (*DEFAULT_BLOCKED, "simpler")
    run_without_optional_runtime("import pypto.torch", blocked=blocked, optimize=optimize).check()
