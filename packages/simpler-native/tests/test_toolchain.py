"""simpler.toolchain: shared objects from C++ text, content-based identity."""

from __future__ import annotations

import ctypes
from pathlib import Path

import pytest

from simpler import toolchain

SOURCE = 'extern "C" __attribute__((visibility("default"))) int answer() { return 42; }\n'


def test_compile_shared_returns_loadable_bytes(tmp_path: Path) -> None:
    data = toolchain.compile_shared({"a.cpp": SOURCE})
    assert data[:4] == b"\x7fELF"
    so = tmp_path / "a.so"
    so.write_bytes(data)
    assert ctypes.CDLL(str(so)).answer() == 42


def test_compile_error_carries_diagnostics() -> None:
    with pytest.raises(toolchain.CompileError, match="failed") as info:
        toolchain.compile_shared({"bad.cpp": "int f( { }"})
    assert "error" in info.value.stderr


def test_sources_are_checked() -> None:
    with pytest.raises(ValueError, match="expected at least one source"):
        toolchain.compile_shared({})
    with pytest.raises(ValueError, match="must be relative"):
        toolchain.compile_shared({"../x.cpp": SOURCE})
    with pytest.raises(ValueError, match="only headers"):
        toolchain.compile_shared({"x.hpp": SOURCE})


def test_identity_is_stable_and_depends_on_flags() -> None:
    base = toolchain.Toolchain()
    assert base.identity() == toolchain.Toolchain().identity() == toolchain.default_toolchain().identity()
    assert toolchain.identity() == toolchain.identity() != base.identity()  # orchestrations + kernels
    other = toolchain.Toolchain(flags=(*toolchain.DEFAULT_FLAGS, "-DX=1"))
    assert other.identity() != base.identity()
    assert len(base.identity()) == 64


def test_missing_compiler_is_named() -> None:
    with pytest.raises(FileNotFoundError, match="no-such-cxx"):
        toolchain.Toolchain("no-such-cxx")


def test_host_tuned_flags_add_cpu_features_to_identity() -> None:
    from simpler.toolchain import _target_features

    plain = _target_features(False)
    tuned = _target_features(True)
    assert tuned.startswith(plain + ":")
    if Path("/proc/cpuinfo").exists():
        assert len(tuned.split()) > 3  # the host's feature flags
