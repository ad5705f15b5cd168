"""pypto-ir imports with no other project package and no optional runtime present."""

from __future__ import annotations

import pytest

from pypto_testing import DEFAULT_BLOCKED

BLOCKED = (*DEFAULT_BLOCKED, "simpler", "pypto.runtime", "pypto.torch", "torch")


@pytest.mark.parametrize("optimize", [0, 1, 2])
def test_import_without_optional_runtime(run_without_optional_runtime, optimize: int) -> None:  # type: ignore[no-untyped-def]
    code = "import pypto.ir, pypto.language, pypto.ir.param_info, pypto.ir.dtypes\n"
    run_without_optional_runtime(code, blocked=BLOCKED, optimize=optimize).check()


def test_pypto_is_a_namespace_package() -> None:
    import pypto

    assert getattr(pypto, "__file__", None) is None, "no wheel may ship pypto/__init__.py"
