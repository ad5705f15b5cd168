"""simpler.toolchain: the kernel toolchain's PTO-ISA backend (ours, or the official headers
named by PTO_ISA_ROOT): selection, flags, identity, errors; one real compile against the
official headers when they and a compiler for them are present."""

from __future__ import annotations

import ctypes
import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from simpler import toolchain

CLANG19 = "Debian clang version 19.1.7 (3~deb12u1)\nTarget: x86_64-pc-linux-gnu\n"
CLANG14 = "Debian clang version 14.0.6\nTarget: x86_64-pc-linux-gnu\n"
GCC14 = "g++-14 (Debian 14.2.0-19) 14.2.0\nCopyright (C) 2024 Free Software Foundation, Inc.\n"
# The environment's official checkout (the autouse fixture clears PTO_ISA_ROOT for each test).
OFFICIAL_ROOT = os.environ.get("PTO_ISA_ROOT", "").strip()
GCC12 = "g++ (Debian 12.2.0-14+deb12u1) 12.2.0\nCopyright (C) 2022 Free Software Foundation, Inc.\n"


def _stub(bindir: Path, name: str, version: str, log: Path) -> Path:
    """A compiler stand-in: prints ``version`` for --version, appends its argv (one per line,
    then a blank line) to ``log``, and writes an empty file at ``-o``."""
    bindir.mkdir(parents=True, exist_ok=True)
    path = bindir / name
    path.write_text(
        "#!/bin/sh\n"
        f"if [ \"$1\" = --version ]; then printf '%s' '{version}'; exit 0; fi\n"
        f"printf '%s\\n' \"$@\" >> '{log}'; printf '\\n' >> '{log}'\n"
        'out=""; prev=""\n'
        'for a in "$@"; do if [ "$prev" = -o ]; then out="$a"; fi; prev="$a"; done\n'
        'if [ -n "$out" ] && [ "$out" != /dev/null ]; then : > "$out"; fi\n'
    )
    path.chmod(0o755)
    return path


def _calls(log: Path) -> list[list[str]]:
    if not log.exists():
        return []
    return [block.splitlines() for block in log.read_text().split("\n\n") if block.strip()]


def _fake_root(tmp_path: Path, name: str = "pto-isa") -> Path:
    root = tmp_path / name
    (root / "include/pto").mkdir(parents=True)
    (root / "include/pto/pto-inst.hpp").write_text("#pragma once\n")
    return root


@pytest.fixture(autouse=True)
def _fresh(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in ("PTO_ISA_ROOT", "PTO_ISA_CXX"):
        monkeypatch.delenv(name, raising=False)
    toolchain._kernel_toolchain.cache_clear()
    toolchain._root_digest.cache_clear()
    yield
    toolchain._kernel_toolchain.cache_clear()
    toolchain._root_digest.cache_clear()


def test_default_mode_adds_our_pto_root_to_the_host_compiler(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    ours = tmp_path / "include_pto"
    (ours / "pto").mkdir(parents=True)
    (ours / "pto/pto-inst.hpp").write_text("#pragma once\n")
    monkeypatch.setattr(toolchain, "pto_include_dir", lambda: ours)
    log = tmp_path / "argv"
    monkeypatch.setenv("CXX", str(_stub(tmp_path / "bin", "g++", GCC12, log)))
    tc = toolchain.kernel_toolchain()
    assert tc.pto_backend == "simpler"
    assert tc.include_roots == (ours,)
    assert tc.flags == (*toolchain.DEFAULT_FLAGS, *toolchain._tls_flags(tc.compiler))
    tc.compile_shared({"k.cpp": "int x;\n"})
    argv = _calls(log)[-1]
    assert f"-I{ours}" in argv
    assert argv.index(f"-I{ours}") < argv.index(f"-I{toolchain._include_dir()}")
    assert "-std=c++17" in argv
    assert "-D__CPU_SIM" not in argv


def test_pto_include_dir_is_simplers_own_root() -> None:
    root = toolchain.pto_include_dir()
    if root is None:
        pytest.skip("this simpler-native has no PTO-ISA include root (src/simpler/include_pto) yet")
    assert (root / "pto/pto-inst.hpp").is_file()


def test_official_mode_flags_and_include_order(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    root = _fake_root(tmp_path)
    log = tmp_path / "argv"
    _stub(tmp_path / "bin", "clang++-19", CLANG19, log)
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    monkeypatch.setenv("PTO_ISA_ROOT", str(root))
    tc = toolchain.kernel_toolchain()
    assert tc.pto_backend == "pto-isa"
    assert tc.compiler == str(tmp_path / "bin/clang++-19")
    assert tc.include_roots == (root / "include",)
    toolchain.compile_kernel({"k.cpp": "int x;\n"})
    argv = _calls(log)[-1]
    assert "-std=c++20" in argv
    assert "-std=c++17" not in argv
    assert "-D__CPU_SIM" in argv
    own = f"-I{toolchain._include_dir()}"
    assert argv.index(f"-I{root / 'include'}") < argv.index(own)
    ours = toolchain.pto_include_dir()
    assert not any(a.startswith("-I") and ours is not None and a == f"-I{ours}" for a in argv)


def test_orchestrations_keep_the_default_toolchain(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    default = toolchain.default_toolchain()
    before = (default.compiler, default.flags, default.include_roots)
    monkeypatch.setenv("PTO_ISA_ROOT", str(_fake_root(tmp_path)))
    _stub(tmp_path / "bin", "clang++-19", CLANG19, tmp_path / "argv")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    assert toolchain.kernel_toolchain().pto_backend == "pto-isa"
    assert (default.compiler, default.flags, default.include_roots) == before
    assert "-D__CPU_SIM" not in default.flags


def test_first_acceptable_compiler_is_chosen(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    log = tmp_path / "argv"
    _stub(tmp_path / "bin", "clang++", CLANG14, log)  # too old: skipped
    _stub(tmp_path / "bin", "g++-14", GCC14, log)
    _stub(tmp_path / "bin", "g++", GCC12, log)
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    monkeypatch.setenv("PTO_ISA_ROOT", str(_fake_root(tmp_path)))
    assert toolchain.kernel_toolchain().compiler == str(tmp_path / "bin/g++-14")


def test_no_acceptable_compiler_names_what_was_found(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _stub(tmp_path / "bin", "clang++", CLANG14, tmp_path / "argv")
    _stub(tmp_path / "bin", "g++", GCC12, tmp_path / "argv")
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    root = _fake_root(tmp_path)
    monkeypatch.setenv("PTO_ISA_ROOT", str(root))
    with pytest.raises(toolchain.ToolchainError) as info:
        toolchain.kernel_toolchain()
    msg = str(info.value)
    assert "PTO_ISA_ROOT" in msg
    assert str(root) in msg
    assert "clang++ >= 17 or g++ >= 14" in msg
    assert "clang 14" in msg
    assert "gcc 12" in msg
    assert "PTO_ISA_CXX" in msg


def test_named_compiler_is_used_and_checked(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PTO_ISA_ROOT", str(_fake_root(tmp_path)))
    good = _stub(tmp_path / "bin", "my-clang", CLANG19, tmp_path / "argv")
    old = _stub(tmp_path / "bin", "old-clang", CLANG14, tmp_path / "argv")
    monkeypatch.setenv("PTO_ISA_CXX", str(good))
    assert toolchain.kernel_toolchain().compiler == str(good)
    monkeypatch.setenv("PTO_ISA_CXX", str(old))
    with pytest.raises(toolchain.ToolchainError, match=r"PTO_ISA_CXX=.*old-clang.*clang 14.*clang\+\+ >= 17"):
        toolchain.kernel_toolchain()
    monkeypatch.setenv("PTO_ISA_CXX", str(tmp_path / "bin/absent"))
    with pytest.raises(toolchain.ToolchainError, match=r"PTO_ISA_CXX=.*absent.*no such compiler"):
        toolchain.kernel_toolchain()


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (lambda tmp: str(tmp / "missing"), r"PTO_ISA_ROOT=.*missing.*no such directory.*pto-inst\.hpp"),
        (str, r"PTO_ISA_ROOT=.*include/pto/pto-inst\.hpp not found"),
        (lambda tmp: "relative/pto-isa", r"PTO_ISA_ROOT='relative/pto-isa': expected an absolute path"),
    ],
)
def test_bad_root_is_named(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, make, expected: str) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("PTO_ISA_ROOT", make(tmp_path))
    with pytest.raises(toolchain.ToolchainError, match=expected):
        toolchain.kernel_toolchain()
    with pytest.raises(toolchain.ToolchainError, match=expected):
        toolchain.identity()


def test_identity_follows_backend_root_path_and_headers(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _stub(tmp_path / "bin", "clang++-19", CLANG19, tmp_path / "argv")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    default_kernel = toolchain.kernel_identity()
    default_all = toolchain.identity()
    a = _fake_root(tmp_path, "a")
    b = _fake_root(tmp_path, "b")  # same headers, other path
    monkeypatch.setenv("PTO_ISA_ROOT", str(a))
    official_a = toolchain.kernel_identity()
    assert official_a != default_kernel
    assert toolchain.identity() != default_all
    assert toolchain.kernel_identity() == official_a  # stable
    monkeypatch.setenv("PTO_ISA_ROOT", str(b))
    assert toolchain.kernel_identity() != official_a
    (b / "include/pto/pto-inst.hpp").write_text("#pragma once\n// changed\n")
    before = toolchain.kernel_identity()
    toolchain._root_digest.cache_clear()  # a digest is taken once per process and root
    toolchain._kernel_toolchain.cache_clear()
    assert toolchain.kernel_identity() != before
    monkeypatch.delenv("PTO_ISA_ROOT")
    assert toolchain.kernel_identity() == default_kernel


# --- one real compile against the official headers ---------------------------------------

KERNEL = """\
#include <cstdint>
#include <pto/pto-inst.hpp>
using namespace pto;

extern "C" __attribute__((visibility("default"))) void exp16(float* out, const float* in) {
    using G = GlobalTensor<float, Shape<1, 1, 1, 16, 16>, Stride<1, 1, 1, 16, 1>>;
    using T = Tile<TileType::Vec, float, 16, 16, BLayout::RowMajor, -1, -1>;
    G src(const_cast<float*>(in));
    G dst(out);
    T a(16, 16);
    T b(16, 16);
    TASSIGN(a, 0x0);
    TASSIGN(b, 0x400);
    TLOAD(a, src);
    set_flag(PIPE_MTE2, PIPE_V, EVENT_ID0);
    wait_flag(PIPE_MTE2, PIPE_V, EVENT_ID0);
    TEXP(b, a);
    set_flag(PIPE_V, PIPE_MTE3, EVENT_ID0);
    wait_flag(PIPE_V, PIPE_MTE3, EVENT_ID0);
    TSTORE(dst, b);
}
"""


def _official_or_skip(monkeypatch: pytest.MonkeyPatch) -> toolchain.Toolchain:
    if not OFFICIAL_ROOT:
        pytest.skip(
            "PTO_ISA_ROOT is not set: the official pto-isa headers are not part of this repository "
            "(set it to a pto-isa checkout to run this test)"
        )
    monkeypatch.setenv("PTO_ISA_ROOT", OFFICIAL_ROOT)
    root = toolchain.pto_isa_root()  # a bad root fails the test
    assert root is not None
    try:
        toolchain._pto_isa_compiler(root)
    except toolchain.ToolchainError as exc:
        pytest.skip(f"no compiler for the official headers here: {exc}")
    return toolchain.kernel_toolchain()


def test_real_compile_against_official_headers(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    tc = _official_or_skip(monkeypatch)
    assert tc.pto_backend == "pto-isa"
    data = tc.compile_shared({"k.cpp": KERNEL})
    so = tmp_path / "k.so"
    so.write_bytes(data)
    lib = ctypes.CDLL(str(so))
    x = np.linspace(-2.0, 2.0, 256, dtype=np.float32)
    y = np.zeros_like(x)
    lib.exp16(y.ctypes.data_as(ctypes.c_void_p), x.ctypes.data_as(ctypes.c_void_p))
    np.testing.assert_allclose(y, np.exp(x), rtol=1e-6)


def test_real_precompiled_prelude_with_official_headers(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    tc = _official_or_skip(monkeypatch)
    pch = toolchain.Toolchain(
        tc.compiler,
        tc.flags,
        cache_dir=tmp_path / "cache",
        include_roots=tc.include_roots,
        pto_backend="pto-isa",
    )
    first = pch.compile_shared({"k.cpp": KERNEL}, precompile=True)
    entries = list((tmp_path / "cache/pch").iterdir())
    assert len(entries) == 1
    assert (entries[0] / "prelude.hpp.gch").is_file()
    again = pch.compile_shared({"k.cpp": KERNEL}, precompile=True)
    assert first == again == pch.compile_shared({"k.cpp": KERNEL})  # same binary as parsing


@pytest.mark.parametrize(
    ("name", "version", "takes_it"),
    [("g++", GCC12, True), ("clang++-19", CLANG19, True), ("clang++", CLANG14, False)],
    ids=["gcc12", "clang19", "clang14"],
)
def test_default_flags_add_tls_descriptors_where_the_compiler_has_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, version: str, takes_it: bool
) -> None:
    # An older clang rejects -mtls-dialect=gnu2: its builds must not get it (x86-64 only).
    monkeypatch.setattr(toolchain.platform, "machine", lambda: "x86_64")
    toolchain._tls_flags.cache_clear()
    compiler = _stub(tmp_path / "bin", name, version, tmp_path / "argv")
    tc = toolchain.Toolchain(str(compiler))
    assert tc.flags[: len(toolchain.DEFAULT_FLAGS)] == toolchain.DEFAULT_FLAGS
    assert (toolchain.TLS_DESCRIPTOR_FLAG in tc.flags) == takes_it
    assert toolchain.Toolchain(str(compiler), flags=("-O1",)).flags == ("-O1",)  # given flags stay as given
    monkeypatch.setattr(toolchain.platform, "machine", lambda: "aarch64")  # its default already
    toolchain._tls_flags.cache_clear()
    assert toolchain.TLS_DESCRIPTOR_FLAG not in toolchain.Toolchain(str(compiler)).flags
    toolchain._tls_flags.cache_clear()
