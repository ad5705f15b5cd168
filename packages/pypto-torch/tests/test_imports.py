"""Importing pypto.torch and its interop and registration modules never imports torch_npu,
simpler or a native launch extension (checked under -O and -OO too)."""

from __future__ import annotations

import pytest

from pypto_testing import DEFAULT_BLOCKED

BLOCKED = (*DEFAULT_BLOCKED, "simpler")


@pytest.mark.parametrize("optimize", [0, 1, 2])
def test_import_without_optional_runtime(run_without_optional_runtime, optimize: int) -> None:  # type: ignore[no-untyped-def]
    run_without_optional_runtime("import pypto.torch", blocked=BLOCKED, optimize=optimize).check()


# optimize=0 is covered by the isolated describe/define tests in test_interop and test_registration;
# -OO (which includes -O) shows that no import hides behind an assert or a docstring.
@pytest.mark.parametrize("optimize", [2])
def test_interop_and_registration_import_without_optional_runtime(  # type: ignore[no-untyped-def]
    run_without_optional_runtime, optimize: int
) -> None:
    code = (
        "import pypto.torch.interop, pypto.torch.registration, pypto.torch._platform.npu, "
        "pypto.torch._platform.simulator"
    )
    run_without_optional_runtime(code, blocked=BLOCKED, optimize=optimize).check()
