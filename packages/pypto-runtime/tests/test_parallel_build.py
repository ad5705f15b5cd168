"""The build step: a program's distinct sources built once each, in parallel, with precompiled
preludes, giving the binaries a one-at-a-time build gives."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import pypto.language as pl
import pypto.runtime as rt
from pypto.runtime import compiled

N = 16


@pl.jit.incore
def _double(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    pl.store(pl.add(pl.load(x, [0, 0], [N, N]), pl.load(x, [0, 0], [N, N])), [0, 0], out)
    return out


@pl.jit.incore
def _square(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    pl.store(pl.mul(pl.load(x, [0, 0], [N, N]), pl.load(x, [0, 0], [N, N])), [0, 0], out)
    return out


@pl.jit
def two_stages(x: pl.Tensor, y: pl.Out[pl.Tensor]):
    h = pl.create_tensor([N, N], dtype=pl.FP32)
    h = _double(x, h)
    y = _square(h, y)
    return y


class _Recorder:
    def __init__(self, real: Any) -> None:
        self.real = real
        self.calls: list[tuple[str, bool]] = []
        self.lock = threading.Lock()

    def __call__(
        self, sources: Mapping[str, str], *, extra_flags: Sequence[str] = (), precompile: bool = False
    ) -> bytes:
        with self.lock:
            self.calls.append((threading.current_thread().name, precompile))
        data: bytes = self.real(sources, extra_flags=extra_flags, precompile=precompile)
        return data


@pytest.fixture
def recorder(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> _Recorder:
    from simpler import toolchain

    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    monkeypatch.setenv("SIMPLER_CACHE_DIR", str(tmp_path / "toolchain"))
    monkeypatch.setattr(compiled, "_binary_memo", {})
    rec = _Recorder(toolchain.compile_shared)
    monkeypatch.setattr(toolchain, "compile_shared", rec)
    return rec


def test_a_program_builds_each_source_once_on_build_threads(recorder: _Recorder) -> None:
    x = np.arange(N * N, dtype=np.float32).reshape(N, N)
    y = np.zeros_like(x)
    prog = rt.compile(two_stages, x, y)
    prog(x, y)
    np.testing.assert_allclose(y, (2 * x) ** 2)
    assert len(recorder.calls) == 1 + len(prog.metadata.kernels) == 3
    assert all(pre for _, pre in recorder.calls)
    assert all(name.startswith("pypto-build") for name, _ in recorder.calls)


def test_parallel_build_gives_the_sequential_binaries(
    recorder: _Recorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    x = np.zeros((N, N), np.float32)
    prog = rt.compile(two_stages, x, x)
    meta = prog.metadata
    parallel = compiled._compile_all(Path(prog.path), meta, meta.platform)
    assert set(parallel) == {"prebuilt/orchestration.so"} | {
        f"prebuilt/kernels/{k.name}.so" for k in meta.kernels
    }
    monkeypatch.setattr(compiled, "_binary_memo", {})
    monkeypatch.setattr(compiled, "_build_jobs", lambda: 1)
    monkeypatch.setenv("SIMPLER_PRECOMPILE", "0")
    assert compiled._compile_all(Path(prog.path), meta, meta.platform) == parallel


def test_a_failing_source_fails_the_build(recorder: _Recorder, monkeypatch: pytest.MonkeyPatch) -> None:
    from simpler import toolchain

    def broken(
        sources: Mapping[str, str], *, extra_flags: Sequence[str] = (), precompile: bool = False
    ) -> bytes:
        if any("kernel_entry" in text for text in sources.values()):
            raise toolchain.CompileError("compile_shared: g++ failed: boom", "boom")
        return recorder(sources, extra_flags=extra_flags, precompile=precompile)

    monkeypatch.setattr(toolchain, "compile_shared", broken)
    x = np.zeros((N, N), np.float32)
    with pytest.raises(toolchain.CompileError, match="boom"):
        rt.compile(two_stages, x, x).artifact.chip_callable()
