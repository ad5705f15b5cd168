"""Shared fixtures of the pypto-ir tests: a C++ syntax checker against simpler's headers, and
this folder on sys.path for the helpers of pypto_ir_test_helpers.py."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterable
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent

# Test modules import shared helpers by name (``from pypto_ir_test_helpers import HostArray``);
# with --import-mode=importlib this folder is not on sys.path, so conftest (loaded before any
# test module) puts it there.
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))


def _include_dir() -> Path | None:
    for parent in HERE.parents:
        cand = parent / "packages" / "simpler-native" / "src" / "simpler" / "include"
        if (cand / "simpler" / "dtype.hpp").is_file() and (
            cand / "simpler" / "runtime" / "orchestration.hpp"
        ).is_file():
            return cand
    return None


def _include_dir_or_skip() -> Path:
    """simpler's headers (:func:`_include_dir`); skips, saying why, when they are not on disk."""
    inc = _include_dir()
    if inc is None:
        pytest.skip(
            "simpler-native headers (simpler/dtype.hpp, simpler/runtime/orchestration.hpp) not on disk: "
            "cannot build or check generated C++"
        )
    return inc


@pytest.fixture(scope="session")
def cpp_toolchain() -> list[str]:
    """The compiler command and include flags for building generated kernels into a host
    program: a PTO-ISA implementation (:func:`_pto_include`) and simpler's headers.

    Skips (saying why) when either is missing, like ``cpp_check``.
    """
    inc = _include_dir_or_skip()
    pto = _pto_include()
    if pto is None:
        pytest.skip(
            "no PTO-ISA headers (simpler include_pto, or PTO_ISA_ROOT) and compiler: cannot build kernels"
        )
    cmd, root = pto
    return [*cmd, "-I", str(inc), "-isystem", str(root)]


def _pto_include() -> tuple[list[str], Path] | None:
    """``(compiler command, include root)`` for PTO-ISA kernel sources: the official headers
    (``PTO_ISA_ROOT``) with clang++-19/clang++ (C++20, ``__CPU_SIM``), else simpler's own
    implementation (``include_pto``) with the C++17 compiler; None when neither is on disk."""
    root = os.environ.get("PTO_ISA_ROOT", "").strip()
    if root and (Path(root) / "include" / "pto" / "pto-inst.hpp").is_file():
        cxx = shutil.which("clang++-19") or shutil.which("clang++")
        if cxx is not None:
            return [cxx, "-std=c++20", "-D__CPU_SIM"], Path(root) / "include"
    for parent in HERE.parents:
        cand = parent / "packages" / "simpler-native" / "src" / "simpler" / "include_pto"
        if (cand / "pto" / "pto-inst.hpp").is_file():
            cxx = shutil.which("g++") or shutil.which("clang++")
            if cxx is not None:
                return [cxx, "-std=c++17"], cand
    return None


@pytest.fixture(scope="session")
def cpp_check() -> Callable[[Iterable[Path]], None]:
    """Compile generated sources with ``-fsyntax-only`` against simpler's headers (warnings are
    errors). Kernels (PTO-ISA programs) compile against a PTO-ISA implementation
    (:func:`_pto_include`; its own headers' warnings are not ours: ``-isystem``).

    Skips (saying why) when no C++ compiler, no simpler headers, or (for kernels) no PTO-ISA
    headers are on disk.
    """
    cxx = shutil.which("g++") or shutil.which("clang++")
    if cxx is None:
        pytest.skip("no C++ compiler (g++/clang++) on PATH: cannot syntax-check generated C++")
    inc = _include_dir_or_skip()
    pto = _pto_include()

    def check(files: Iterable[Path]) -> None:
        paths = [str(f) for f in files]
        kernels = [p for p in paths if "pto/pto-inst.hpp" in Path(p).read_text()]
        others = [p for p in paths if p not in kernels]
        if kernels and pto is None:
            pytest.skip("no PTO-ISA headers (simpler include_pto, or PTO_ISA_ROOT): cannot check kernels")
        flags = ["-fsyntax-only", "-Wall", "-Wextra", "-Werror", "-I", str(inc)]
        cmds = []
        if others:
            cmds.append([cxx, "-std=c++17", *flags, *others])
        if kernels and pto is not None:
            cmd, root = pto
            cmds.append([*cmd, *flags, "-Wno-parentheses-equality", "-isystem", str(root), *kernels])
        procs = [
            subprocess.Popen(c, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for c in cmds
        ]
        errors = []
        for proc in procs:
            out, _ = proc.communicate(timeout=300)
            if proc.returncode:
                errors.append(out)
        assert not errors, "generated C++ does not compile:\n" + "\n".join(errors)

    return check
