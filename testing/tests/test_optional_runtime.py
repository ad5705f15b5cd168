"""The optional-runtime fixture itself: clean runs pass, every attempted import is seen."""

from __future__ import annotations

import pytest

from pypto_testing import IsolatedRun, run_without_optional_runtime

OPT_LEVELS = [0, 1, 2]


@pytest.mark.parametrize("optimize", OPT_LEVELS)
def test_clean_code_passes(optimize: int) -> None:
    run = run_without_optional_runtime("import json, sys\nprint(sys.flags.optimize)", optimize=optimize)
    run.check()
    assert run.stdout.strip() == str(optimize)


@pytest.mark.parametrize("optimize", OPT_LEVELS)
@pytest.mark.parametrize(
    "statement",
    [
        "import torch_npu",
        "import importlib; importlib.import_module('torch_npu')",
        "__import__('torch_npu')",
        "from torch_npu import npu",
        "import torch_npu.contrib",
    ],
)
def test_caught_attempt_is_reported(statement: str, optimize: int) -> None:
    code = f"try:\n    {statement}\nexcept ImportError:\n    pass\n"
    run = run_without_optional_runtime(code, optimize=optimize)
    assert run.returncode == 0, run.stderr
    assert run.attempted
    assert run.attempted[0].startswith("torch_npu")
    with pytest.raises(AssertionError, match="torch_npu"):
        run.check()


@pytest.mark.parametrize("optimize", OPT_LEVELS)
def test_nonexistent_module_attempt_is_reported(optimize: int) -> None:
    name = "pypto_definitely_absent_module_xyz"
    code = f"import importlib\ntry:\n    importlib.import_module({name!r})\nexcept ImportError:\n    pass\n"
    run = run_without_optional_runtime(code, blocked=(name,), optimize=optimize)
    assert run.attempted == (name,)


def test_blocked_import_raises_module_not_found() -> None:
    code = "try:\n    import simpler\nexcept ModuleNotFoundError as e:\n    print(type(e).__name__, e.name)\n"
    run = run_without_optional_runtime(code, blocked=("simpler",))
    assert run.stdout.split() == ["ModuleNotFoundError", "simpler"]
    assert run.attempted == ("simpler",)


def test_torch_backend_autoload_disabled() -> None:
    run = run_without_optional_runtime(
        "import os; print(os.environ['TORCH_DEVICE_BACKEND_AUTOLOAD'])",
        env={"TORCH_DEVICE_BACKEND_AUTOLOAD": "1"},
    )
    assert run.check().stdout.strip() == "0"


def test_failure_exit_is_reported() -> None:
    run = run_without_optional_runtime("raise SystemExit(3)")
    with pytest.raises(AssertionError, match="exited with 3"):
        run.check()


@pytest.mark.parametrize("bad", [3, -1])
def test_bad_optimize_level_rejected(bad: int) -> None:
    with pytest.raises(ValueError, match="optimize"):
        run_without_optional_runtime("pass", optimize=bad)


def test_fixture_is_registered(run_without_optional_runtime) -> None:  # type: ignore[no-untyped-def]
    assert isinstance(run_without_optional_runtime("pass"), IsolatedRun)
