"""Kernel mode on an NPU closes before torch_npu's exit teardown, whatever the hook order.

Each case runs a child interpreter with a stand-in ``torch_npu`` package whose layout copies
the release it names (where its ``_npu_shutdown`` lives, which version it reports) and which
registers that hook with ``atexit`` at import, as torch_npu does.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"

HOOK = """
import atexit

def _npu_shutdown():
    print("framework teardown", flush=True)
"""


def _fake_torch_npu(root: Path, version: str, nested: bool) -> None:
    pkg = root / "torch_npu"
    pkg.mkdir(parents=True)
    if nested:  # 2.13: the hook lives in torch_npu._init.core.runtime_lifecycle
        core = pkg / "_init" / "core"
        core.mkdir(parents=True)
        (pkg / "_init" / "__init__.py").write_text("")
        (core / "__init__.py").write_text("")
        (core / "runtime_lifecycle.py").write_text(HOOK)
        init = "from torch_npu._init.core.runtime_lifecycle import _npu_shutdown\natexit.register(_npu_shutdown)\n"
    else:  # 2.6 / 2.10: the hook is defined in torch_npu/__init__.py
        init = HOOK + "atexit.register(_npu_shutdown)\n"
    (pkg / "__init__.py").write_text(f"import atexit\n__version__ = {version!r}\n" + init)


def _run(tmp_path: Path, version: str, nested: bool) -> subprocess.CompletedProcess[str]:
    _fake_torch_npu(tmp_path / "fake", version, nested)
    script = textwrap.dedent(
        """
        import atexit
        # PyPTO's own exit hook registered before the framework's: without the wrap, the
        # framework would tear down first (atexit runs last-registered first).
        atexit.register(lambda: print("pypto own hook", flush=True))
        import torch_npu
        from pypto.torch._platform.npu import NpuPlatform
        plat = NpuPlatform("a2a3")
        print("wrapped", plat.wrap_framework_teardown(lambda: print("pypto close", flush=True)), flush=True)
        print("again", plat.wrap_framework_teardown(lambda: print("second close", flush=True)), flush=True)
        """
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path / "fake"), str(SRC)])}
    env["TORCH_DEVICE_BACKEND_AUTOLOAD"] = "0"
    return subprocess.run(
        [sys.executable, "-c", script], check=False, capture_output=True, text=True, env=env, timeout=120
    )


@pytest.mark.parametrize(
    ("version", "nested"),
    [("2.13.0", True), ("2.10.0.post2", False), ("2.6.0.post2+gitabc123", False)],
)
def test_verified_hook_closes_pypto_first(tmp_path: Path, version: str, nested: bool) -> None:
    r = _run(tmp_path, version, nested)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert "wrapped True" in lines
    assert "again True" in lines  # wrapping twice changes nothing
    assert "second close" not in lines
    assert lines.index("pypto close") < lines.index("framework teardown")
    assert lines.count("framework teardown") == 1


def test_unverified_version_is_left_alone(tmp_path: Path) -> None:
    r = _run(tmp_path, "2.99.0", False)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert "wrapped False" in lines
    assert "pypto close" not in lines
    # Nothing was changed: the framework's hook (registered later) runs before PyPTO's own.
    assert lines.index("framework teardown") < lines.index("pypto own hook")
