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
    """Wraps ``simpler.toolchain.Toolchain.compile_shared``: records the thread, the prelude
    flag and which toolchain (its ``pto_backend``: None for orchestrations) built each source."""

    def __init__(self, real: Any) -> None:
        self.real = real
        self.calls: list[tuple[str, bool]] = []
        self.backends: list[str | None] = []
        self.lock = threading.Lock()

    def record(
        self,
        tc: Any,
        sources: Mapping[str, str],
        *,
        extra_flags: Sequence[str] = (),
        precompile: bool = False,
    ) -> bytes:
        with self.lock:
            self.calls.append((threading.current_thread().name, precompile))
            self.backends.append(tc.pto_backend)
        data: bytes = self.real(tc, sources, extra_flags=extra_flags, precompile=precompile)
        return data


@pytest.fixture(scope="module")
def toolchain_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The module's precompiled headers: built by its first build, used by the rest."""
    return tmp_path_factory.mktemp("toolchain")


@pytest.fixture
def recorder(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, toolchain_cache: Path) -> _Recorder:
    from simpler import toolchain

    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    monkeypatch.setenv("SIMPLER_CACHE_DIR", str(toolchain_cache))
    monkeypatch.setattr(compiled, "_binary_memo", {})
    rec = _Recorder(toolchain.Toolchain.compile_shared)

    def patched(
        tc: Any, sources: Mapping[str, str], *, extra_flags: Sequence[str] = (), precompile: bool = False
    ) -> bytes:
        return rec.record(tc, sources, extra_flags=extra_flags, precompile=precompile)

    monkeypatch.setattr(toolchain.Toolchain, "compile_shared", patched)
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
    # the orchestration by the default toolchain, each kernel by the kernel toolchain
    from simpler import toolchain

    kernels = toolchain.kernel_toolchain().pto_backend  # "simpler", or "pto-isa" with PTO_ISA_ROOT
    assert kernels is not None
    assert sorted(recorder.backends, key=str) == sorted([None, kernels, kernels], key=str)


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
        tc: Any, sources: Mapping[str, str], *, extra_flags: Sequence[str] = (), precompile: bool = False
    ) -> bytes:
        if any("kernel_entry" in text for text in sources.values()):
            raise toolchain.CompileError("compile_shared: g++ failed: boom", "boom")
        return recorder.record(tc, sources, extra_flags=extra_flags, precompile=precompile)

    monkeypatch.setattr(toolchain.Toolchain, "compile_shared", broken)
    x = np.zeros((N, N), np.float32)
    with pytest.raises(toolchain.CompileError, match="boom"):
        rt.compile(two_stages, x, x).artifact.chip_callable()
