"""The optional torch_npu adapter's Python side and its configure-time ABI check.

The native module itself is compiled and linked in CI by ``nox -s npu-compile`` against the
torch-npu wheel (no CANN here, so it is never run); these tests cover what runs without
torch_npu: the targeted import errors (with stand-in ``torch_npu`` modules in a child
interpreter) and the C++11 ABI check, also under PYTHONOPTIMIZE.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

NATIVE = Path(__file__).resolve().parents[1] / "native"
SRC = Path(__file__).resolve().parents[1] / "src"


def _import_adapter(
    tmp_path: Path, torch_npu_source: str | None, optimize: str = ""
) -> subprocess.CompletedProcess[str]:
    """Import pypto._torch_npu in a child whose ``torch_npu`` is the given stand-in source."""
    fake = tmp_path / "fake"
    fake.mkdir(exist_ok=True)
    if torch_npu_source is not None:
        (fake / "torch_npu.py").write_text(textwrap.dedent(torch_npu_source))
    code = textwrap.dedent(
        """
        import pypto._torch_npu as adapter
        """
    )
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(fake), str(SRC)]),
        "TORCH_DEVICE_BACKEND_AUTOLOAD": "0",
    }
    env.pop("PYTHONOPTIMIZE", None)
    if optimize:
        env["PYTHONOPTIMIZE"] = optimize
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False, timeout=120
    )


@pytest.mark.parametrize("optimize", ["", "2"])
def test_missing_cann_library_is_named(tmp_path: Path, optimize: str) -> None:
    r = _import_adapter(
        tmp_path,
        'raise ImportError("libhccl.so: cannot open shared object file: No such file or directory")',
        optimize,
    )
    assert r.returncode != 0
    assert "AdapterUnavailable" in r.stderr
    assert "CANN's environment is missing" in r.stderr
    assert "libhccl.so" in r.stderr
    assert "set_env.sh" in r.stderr


def test_missing_torch_npu_names_the_extra(tmp_path: Path) -> None:
    r = _import_adapter(tmp_path, None)  # torch_npu is not installed
    assert r.returncode != 0
    assert "AdapterUnavailable" in r.stderr
    assert "pypto-torch[npu]" in r.stderr


def test_adapter_not_built_says_how_to_build_it(tmp_path: Path) -> None:
    r = _import_adapter(tmp_path, "VERSION = 'stand-in'\n")
    assert r.returncode != 0
    assert "AdapterUnavailable" in r.stderr
    assert "native module is not built" in r.stderr
    assert "-Dtorch_npu=enabled" in r.stderr


def _abi_check_module():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("torch_npu_config", NATIVE / "torch_npu_config.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_abi_check_accepts_a_matching_library(tmp_path: Path) -> None:
    config = _abi_check_module()
    lib = tmp_path / "libtorch_npu.so"
    lib.write_bytes(b"\x7fELF...._ZNSt7__cxx1112basic_string...")
    assert config.check_abi(True, lib) == 1
    lib.write_bytes(b"\x7fELF....old-abi-only")
    assert config.check_abi(False, lib) == 0


@pytest.mark.parametrize("optimize", ["", "-O", "-OO"])
def test_abi_mismatch_fails_configuration_even_optimized(tmp_path: Path, optimize: str) -> None:
    lib = tmp_path / "libtorch_npu.so"
    lib.write_bytes(b"\x7fELF....old-abi-only")
    code = (
        "import importlib.util, sys\n"
        f"spec = importlib.util.spec_from_file_location('c', {str(NATIVE / 'torch_npu_config.py')!r})\n"
        "m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)\n"
        f"m.check_abi(True, __import__('pathlib').Path({str(lib)!r}))\n"
        "print('ACCEPTED')\n"
    )
    args = [sys.executable, *([optimize] if optimize else []), "-c", code]
    r = subprocess.run(args, capture_output=True, text=True, check=False, timeout=60)
    assert r.returncode != 0
    assert "ACCEPTED" not in r.stdout
    assert "ABI mismatch" in r.stderr
    assert "_GLIBCXX_USE_CXX11_ABI=1" in r.stderr


def test_abi_check_names_a_missing_library(tmp_path: Path) -> None:
    config = _abi_check_module()
    with pytest.raises(SystemExit, match="not found"):
        config.check_abi(True, tmp_path / "absent.so")
