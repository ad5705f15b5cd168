"""pypto-runtime imports without torch, torch_npu or the torch layer, and without its multi-chip
runtime until that is used."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from pypto_testing import DEFAULT_BLOCKED


@pytest.mark.parametrize("optimize", [0, 1, 2])
def test_import_without_torch_layer(run_without_optional_runtime, optimize: int) -> None:  # type: ignore[no-untyped-def]
    blocked = (*DEFAULT_BLOCKED, "pypto.torch", "torch")
    run_without_optional_runtime("import pypto.runtime", blocked=blocked, optimize=optimize).check()


def test_import_loads_neither_the_multi_chip_runtime_nor_torch() -> None:
    """``import pypto.runtime`` leaves ``pypto.runtime.distributed`` (and torch) unloaded until a
    distributed name is used; using one loads it, and the name is the subpackage's own object."""
    code = textwrap.dedent(
        """
        import sys
        import pypto.runtime
        loaded = sorted(m for m in sys.modules
                        if m == "torch" or m.startswith(("torch.", "pypto.runtime.distributed")))
        print(loaded)
        worker = pypto.runtime.DistributedWorker
        from pypto.runtime.distributed.worker import DistributedWorker
        print(worker is DistributedWorker, "pypto.runtime.distributed" in sys.modules)
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True
    )
    assert out.stdout.splitlines() == ["[]", "True True"], out.stdout + out.stderr


def test_an_unknown_name_is_an_attribute_error() -> None:
    import pypto.runtime

    with pytest.raises(AttributeError, match="NoSuchName"):
        pypto.runtime.NoSuchName  # noqa: B018
