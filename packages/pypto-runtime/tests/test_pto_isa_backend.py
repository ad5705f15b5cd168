"""PTO_ISA_ROOT in pypto-runtime: declared in the settings registry, part of the toolchain
identity (artifact keys), applied to kernel sources only, its errors as SettingsError."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from pypto.ir import Contract, compile_to_files
from pypto.runtime import settings
from pypto.runtime.api import artifact_key
from pypto.runtime.compiled import _compile_all, toolchain_identity
from pypto.runtime.settings import SettingsError
from pypto_testing.programs import COLS, ROWS, add_chunks

CLANG19 = "Debian clang version 19.1.7 (3~deb12u1)\n"


@pytest.fixture(autouse=True)
def _default_backend(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in ("PTO_ISA_ROOT", "PTO_ISA_CXX"):
        monkeypatch.delenv(name, raising=False)
    return


def _fake_root(tmp_path: Path) -> Path:
    root = tmp_path / "pto-isa"
    (root / "include/pto").mkdir(parents=True)
    (root / "include/pto/pto-inst.hpp").write_text("#pragma once\n")
    return root


def _stub_clang(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """clang++-19 first on PATH: prints a version, logs each argv, writes an empty ``-o``."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    log = tmp_path / "clang.argv"
    stub = bindir / "clang++-19"
    stub.write_text(
        "#!/bin/sh\n"
        f"if [ \"$1\" = --version ]; then printf '%s' '{CLANG19}'; exit 0; fi\n"
        f"printf '%s\\n' \"$@\" >> '{log}'; printf '\\n' >> '{log}'\n"
        'out=""; prev=""\n'
        'for a in "$@"; do if [ "$prev" = -o ]; then out="$a"; fi; prev="$a"; done\n'
        'if [ -n "$out" ] && [ "$out" != /dev/null ]; then printf stub > "$out"; fi\n'
    )
    stub.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    return log


def test_settings_declare_the_backend() -> None:
    assert settings.SETTINGS["PTO_ISA_ROOT"].effect is settings.Effect.INVALIDATING
    assert settings.SETTINGS["PTO_ISA_CXX"].effect is settings.Effect.INVALIDATING
    assert settings.SETTINGS["ASCEND_HOME_PATH"].effect is settings.Effect.NEUTRAL
    assert settings.pto_isa_root() is None


def test_identity_and_key_follow_pto_isa_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert toolchain_identity("a2a3sim")["pto_backend"] == "simpler"
    key = artifact_key(
        {"x": 1}, contract=Contract.PROGRAM, platform="a2a3sim", runtime="tensormap_and_ringbuffer"
    )
    _stub_clang(tmp_path, monkeypatch)
    root = _fake_root(tmp_path)
    monkeypatch.setenv("PTO_ISA_ROOT", str(root))
    identity = toolchain_identity("a2a3sim")
    assert identity["pto_backend"] == "pto-isa"
    assert identity["pto_isa_root"] == str(root)
    other = artifact_key(
        {"x": 1}, contract=Contract.PROGRAM, platform="a2a3sim", runtime="tensormap_and_ringbuffer"
    )
    assert other.digest != key.digest


@pytest.mark.parametrize(
    ("value", "expected"),
    [("relative/dir", "expected an absolute path"), ("/no/such/pto-isa", "no such directory")],
)
def test_bad_root_is_a_settings_error(monkeypatch: pytest.MonkeyPatch, value: str, expected: str) -> None:
    monkeypatch.setenv("PTO_ISA_ROOT", value)
    with pytest.raises(SettingsError, match=f"PTO_ISA_ROOT.*{expected}"):
        toolchain_identity("a2a3sim")


def test_only_kernels_use_the_official_headers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = _stub_clang(tmp_path, monkeypatch)
    root = _fake_root(tmp_path)
    monkeypatch.setenv("PTO_ISA_ROOT", str(root))
    out = tmp_path / "artifact"
    import numpy as np

    a = np.zeros((ROWS, COLS), np.float32)
    spec = add_chunks.specialize(a=a, b=a, c=a)
    result = compile_to_files(spec, out, contract=Contract.PROGRAM, platform="a2a3sim")
    meta = result.metadata
    binaries = _compile_all(out, meta, "a2a3sim")
    calls = [block.splitlines() for block in log.read_text().split("\n\n") if block.strip()]
    builds = [c for c in calls if "-o" in c and not any(a == "-###" for a in c)]
    compiled = {Path(a).name for c in builds for a in c if a.endswith(".cpp")}
    assert compiled == {Path(k.source).name for k in meta.kernels}  # no orchestration
    for c in builds:
        assert "-std=c++20" in c
        assert "-D__CPU_SIM" in c
        assert f"-I{root / 'include'}" in c
    for k in meta.kernels:
        assert binaries[f"prebuilt/kernels/{k.name}.so"] == b"stub"
    assert binaries["prebuilt/orchestration.so"][:4] == b"\x7fELF"  # the host g++ built it
