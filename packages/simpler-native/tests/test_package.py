"""The simpler package: its headers are installed and it imports without the PyPTO layers."""

from __future__ import annotations

from pathlib import Path

import pytest

import simpler
from pypto_testing import DEFAULT_BLOCKED


def test_get_include_names_installed_headers() -> None:
    include = Path(simpler.get_include())
    assert (include / "simpler" / "build_info.hpp").is_file()


@pytest.mark.parametrize("optimize", [0, 2])
def test_import_without_upper_layers(run_without_optional_runtime, optimize: int) -> None:  # type: ignore[no-untyped-def]
    blocked = (*DEFAULT_BLOCKED, "pypto", "torch")
    run_without_optional_runtime("import simpler, simpler.kernel", blocked=blocked, optimize=optimize).check()
