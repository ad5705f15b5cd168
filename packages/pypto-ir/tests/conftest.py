"""Shared fixtures of the pypto-ir tests: a C++ syntax checker against simpler's headers, and
this folder on sys.path for the helpers of pypto_ir_test_helpers.py."""

from __future__ import annotations

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
        if (cand / "simpler" / "tile.hpp").is_file() and (
            cand / "simpler" / "runtime" / "orchestration.hpp"
        ).is_file():
            return cand
    return None


@pytest.fixture(scope="session")
def cpp_toolchain() -> tuple[str, Path]:
    """``(compiler, simpler include dir)`` for building generated kernels into a host program.

    Skips (saying why) when either is missing, like ``cpp_check``.
    """
    cxx = shutil.which("g++") or shutil.which("clang++")
    inc = _include_dir()
    if cxx is None:
        pytest.skip("no C++ compiler (g++/clang++) on PATH: cannot build generated kernels")
    if inc is None:
        pytest.skip("simpler-native headers (simpler/tile.hpp) not on disk: cannot build generated kernels")
    return cxx, inc


@pytest.fixture(scope="session")
def cpp_check() -> Callable[[Iterable[Path]], None]:
    """Compile generated sources with ``g++ -fsyntax-only`` against simpler's headers.

    Skips (saying why) when no C++ compiler or no simpler headers are on disk; when both are
    there, every file must compile cleanly (warnings are errors).
    """
    cxx = shutil.which("g++") or shutil.which("clang++")
    inc = _include_dir()
    if cxx is None:
        pytest.skip("no C++ compiler (g++/clang++) on PATH: cannot syntax-check generated C++")
    if inc is None:
        pytest.skip(
            "simpler-native headers (simpler/tile.hpp, simpler/runtime/orchestration.hpp) not on disk"
        )

    def check(files: Iterable[Path]) -> None:
        paths = [str(f) for f in files]
        # two compiler processes (the machines have two cores), each checking half the files
        batches = [paths[i::2] for i in range(2) if paths[i::2]]
        procs = [
            subprocess.Popen(
                [cxx, "-std=c++17", "-fsyntax-only", "-Wall", "-Wextra", "-Werror", "-I", str(inc), *batch],
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
            for batch in batches
        ]
        errors = []
        for proc in procs:
            out, _ = proc.communicate(timeout=300)
            if proc.returncode:
                errors.append(out)
        assert not errors, "generated C++ does not compile:\n" + "\n".join(errors)

    return check
