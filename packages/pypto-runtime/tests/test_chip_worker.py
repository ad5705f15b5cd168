"""ChipWorker: explicit registration and dispatch on a Worker the caller owns, resident
DeviceTensors, and the errors for a wrong platform, a wrong tensor, a closed handle or worker.
Numbers are checked against numpy (and torch where it is installed: the explicit-dispatch style
of torch tensors and torch dtypes)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import pypto.language as pl
from pypto.runtime import ChipWorker, CompiledProgram, DeviceTensor, RegistrationHandle, RunConfig
from pypto.runtime.host_tensors import TensorBindingError

ROWS, COLS = 16, 64


@pl.jit
def fma_tile(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [16, 64])
        tb = pl.load(b, [0, 0], [16, 64])
        pl.store(pl.add(pl.mul(ta, tb), ta), [0, 0], c)
    return c


def _sample() -> np.ndarray:
    return np.zeros((ROWS, COLS), dtype=np.float32)


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> CompiledProgram:
    out = tmp_path_factory.mktemp("chip_worker") / "fma"
    s = _sample()
    return fma_tile.compile(s, s, s.copy(), output_dir=out)


def _inputs(seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return (
        rng.standard_normal((ROWS, COLS), dtype=np.float32),
        rng.standard_normal((ROWS, COLS), dtype=np.float32),
    )


def _nan() -> np.ndarray:
    return np.full((ROWS, COLS), np.nan, dtype=np.float32)  # a kernel that writes nothing cannot pass


def _close(got: np.ndarray, want: np.ndarray) -> None:
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_jit_compile_returns_a_compiled_program_that_runs(compiled: CompiledProgram) -> None:
    assert isinstance(compiled, CompiledProgram)
    assert compiled.param_names == ("a", "b", "c")
    a, b = _inputs(1)
    c = _nan()
    compiled(a, b, c)  # the direct call, on the shared Worker
    _close(c, a * b + a)


def test_register_once_and_dispatch_many(compiled: CompiledProgram) -> None:
    with ChipWorker(config=RunConfig()) as worker:
        assert worker.aicpu_dlopen_count == 0
        h = worker.register(compiled)
        assert isinstance(h, RegistrationHandle)
        assert worker.register(compiled) is h  # the same program: the same handle, nothing loaded
        assert worker.aicpu_dlopen_count == 1
        for seed in range(3):
            a, b = _inputs(seed)
            c = _nan()
            assert h(a, b, c) is c
            _close(c, a * b + a)
        a, b = _inputs(7)
        got = worker.run(compiled, a, b)  # the omitted Out tensor is allocated and returned
        _close(got, a * b + a)
        assert worker.aicpu_dlopen_count == 1


def test_device_tensors_stay_resident_between_dispatches(compiled: CompiledProgram) -> None:
    worker = ChipWorker()
    try:
        a, w = _inputs(3)
        w_dev = worker.alloc_tensor(w.shape, w.dtype, init=w)
        out_dev = worker.alloc_tensor((ROWS, COLS), pl.FP32)
        assert isinstance(w_dev, DeviceTensor)
        assert w_dev.data_type is pl.FP32
        h = worker.register(compiled)
        for step in range(3):
            x = a + step
            h(x, w_dev, out_dev)  # the weight is not uploaded again; the result stays on the worker
            got = worker.copy_from(np.empty((ROWS, COLS), dtype=np.float32), out_dev)
            _close(got, x * w + x)
        worker.free_tensor(w_dev)
        worker.free_tensor(w_dev)  # a second free does nothing
        assert w_dev.freed
        with pytest.raises(TensorBindingError, match="was freed"):
            h(a, w_dev, out_dev)
    finally:
        worker.close()
    assert out_dev.freed  # close released what was still owned


def test_a_tensor_of_the_wrong_shape_or_dtype_is_refused_before_anything_runs(
    compiled: CompiledProgram,
) -> None:
    with ChipWorker() as worker:
        h = worker.register(compiled)
        a, b = _inputs(4)
        c = np.zeros((ROWS, COLS), dtype=np.float32)
        with pytest.raises(TensorBindingError, match=r"argument 'b': dimension 1 must be 64"):
            h(a, np.zeros((ROWS, 32), dtype=np.float32), c)
        with pytest.raises(TensorBindingError, match=r"argument 'a': expected dtype FP32, got FP16"):
            h(a.astype(np.float16), b, c)
        with pytest.raises(TensorBindingError, match=r"expected shape \[16, 64\] and dtype FP32"):
            worker.alloc_tensor((ROWS, COLS), np.float32, init=np.zeros((ROWS, COLS), dtype=np.float16))
        with pytest.raises(TypeError, match="complex64"):
            worker.alloc_tensor((ROWS, COLS), np.complex64)
        with pytest.raises(ValueError, match=r"alloc_tensor\(shape\): expected ints > 0"):
            worker.alloc_tensor((ROWS, 0), np.float32)
        assert not c.any()  # nothing ran


def test_the_wrong_device_is_refused(compiled: CompiledProgram) -> None:
    with ChipWorker() as one, ChipWorker() as two:
        h = one.register(compiled)
        foreign = two.alloc_tensor((ROWS, COLS), np.float32)
        a, _ = _inputs(5)
        with pytest.raises(TensorBindingError, match="DeviceTensor of another ChipWorker"):
            h(a, foreign, np.zeros((ROWS, COLS), dtype=np.float32))
        with pytest.raises(ValueError, match="belongs to another ChipWorker"):
            one.free_tensor(foreign)
    with ChipWorker(config=RunConfig(platform="a5sim")) as other:
        with pytest.raises(
            ValueError, match=r"compiled for platform 'a2a3sim', but this worker runs 'a5sim'"
        ):
            other.register(compiled)
        assert other.aicpu_dlopen_count == 0
    with (
        ChipWorker() as worker,
        pytest.raises(TypeError, match=r"expected a pypto\.runtime\.CompiledProgram"),
    ):
        worker.register(fma_tile)  # type: ignore[arg-type]


def test_a_closed_handle_or_worker_refuses_use(compiled: CompiledProgram) -> None:
    worker = ChipWorker()
    h = worker.register(compiled)
    a, b = _inputs(6)
    with h:
        h(a, b, np.zeros((ROWS, COLS), dtype=np.float32))
    assert h.closed  # leaving the with block unregistered it
    with pytest.raises(RuntimeError, match="RegistrationHandle is closed"):
        h(a, b, np.zeros((ROWS, COLS), dtype=np.float32))
    h2 = worker.register(compiled)
    worker.close()
    worker.close()  # closing twice does nothing
    assert h2.closed
    with pytest.raises(RuntimeError, match="RegistrationHandle is closed"):
        h2(a, b, np.zeros((ROWS, COLS), dtype=np.float32))
    with pytest.raises(RuntimeError, match=r"ChipWorker.register: this ChipWorker is closed"):
        worker.register(compiled)
    with pytest.raises(RuntimeError, match=r"ChipWorker.alloc_tensor: this ChipWorker is closed"):
        worker.alloc_tensor((ROWS, COLS), np.float32)


def test_compile_without_a_path_uses_the_store(tmp_path: Path) -> None:
    s = _sample()
    prog = fma_tile.compile(s, s, s.copy())
    assert Path(prog.path).is_relative_to(tmp_path / "store")


def test_torch_tensors_and_dtypes_dispatch_as_in_the_explicit_style(compiled: CompiledProgram) -> None:
    torch = pytest.importorskip("torch", reason="torch is optional for pypto-runtime")
    with ChipWorker() as worker:
        h = worker.register(compiled)
        w = torch.linspace(-2.0, 2.0, ROWS * COLS, dtype=torch.float32).reshape(ROWS, COLS)
        w_dev = worker.alloc_tensor(w.shape, w.dtype, init=w)
        assert w_dev.dtype is torch.float32
        for step in range(2):
            x = torch.full((ROWS, COLS), float(step) - 0.5)
            out = torch.zeros((ROWS, COLS))
            h(x, w_dev, out)
            torch.testing.assert_close(out, x * w + x)
