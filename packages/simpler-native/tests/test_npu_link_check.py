"""The NPU backend's link check (src/core/npu/check_link.py, run by ``nox -s npu-compile``):
it passes a library whose open symbols are all CANN entry points declared in the headers, and
fails one that leaves anything else open or calls no CANN entry point at all."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

NATIVE = Path(__file__).resolve().parents[1]
CHECK = NATIVE / "src" / "core" / "npu" / "check_link.py"
SIMPLER_INCLUDE = NATIVE / "src" / "simpler" / "include"

pytestmark = pytest.mark.skipif(
    shutil.which("g++") is None or shutil.which("nm") is None, reason="needs g++ and nm"
)


FACTORY = 'extern "C" void* simpler_npu_backend_create() { return nullptr; }\n'


def _check(tmp_path: Path, source: str, factory: bool = True) -> subprocess.CompletedProcess[str]:
    """Build ``source`` (with the factory export unless told not to) as the backend library of a
    fake build dir and run the check on it."""
    acl = tmp_path / "acl_include"
    (acl / "acl").mkdir(parents=True)
    (acl / "acl" / "acl.h").write_text(
        "int aclInit(const char* config);\nint aclrtMalloc(void** p, unsigned long n);\n"
    )
    lib = tmp_path / "build" / "src" / "core" / "npu" / "libsimpler_npu.so"
    lib.parent.mkdir(parents=True)
    (tmp_path / "lib.cpp").write_text(source + (FACTORY if factory else ""))
    subprocess.run(["g++", "-shared", "-fPIC", str(tmp_path / "lib.cpp"), "-o", str(lib)], check=True)
    return subprocess.run(
        [sys.executable, str(CHECK), str(tmp_path / "build"), str(acl), str(SIMPLER_INCLUDE)],
        text=True,
        capture_output=True,
        check=False,
    )


def test_only_cann_symbols_open_passes(tmp_path: Path) -> None:
    r = _check(
        tmp_path,
        'extern "C" int aclInit(const char*); extern "C" int rtsLaunchCpuKernel(void*, unsigned, void*, '
        "const void*, void*);\nint f() { return aclInit(nullptr) + rtsLaunchCpuKernel(nullptr, 1, nullptr, nullptr, nullptr); }\n",
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert "2 open symbols are CANN's (1 ACL functions" in r.stdout
    assert "it exports simpler_npu_backend_create" in r.stdout


def test_a_symbol_cann_does_not_provide_fails(tmp_path: Path) -> None:
    r = _check(
        tmp_path,
        'extern "C" int aclInit(const char*); extern "C" int simpler_missing();\n'
        "int f() { return aclInit(nullptr) + simpler_missing(); }\n",
    )
    assert r.returncode == 1
    assert "['simpler_missing']" in r.stdout


def test_an_acl_name_the_headers_do_not_declare_fails(tmp_path: Path) -> None:
    r = _check(
        tmp_path, 'extern "C" int aclrtNotInTheHeaders();\nint f() { return aclrtNotInTheHeaders(); }\n'
    )
    assert r.returncode == 1
    assert "aclrtNotInTheHeaders" in r.stdout


def test_no_cann_call_at_all_fails(tmp_path: Path) -> None:
    r = _check(tmp_path, "int f() { return 1; }\n")
    assert r.returncode == 1
    assert "calls no CANN entry point" in r.stdout


def test_a_library_without_the_factory_fails(tmp_path: Path) -> None:
    r = _check(
        tmp_path,
        'extern "C" int aclInit(const char*);\nint f() { return aclInit(nullptr); }\n',
        factory=False,
    )
    assert r.returncode == 1
    assert "does not export simpler_npu_backend_create" in r.stdout
