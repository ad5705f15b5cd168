"""simpler.comm: the comm context a rank process sets, on the shared-memory and the host path."""

from __future__ import annotations

import mmap

import numpy as np
import pytest

from simpler import DataType, comm


@pytest.fixture
def window():
    m = mmap.mmap(-1, 2 * 4096)
    import ctypes

    base = ctypes.addressof(ctypes.c_char.from_buffer(m))
    yield comm.CommWindow(base=base, stride=4096, nbytes=4096)
    comm.clear_context()


def test_the_host_path_takes_a_callable_and_is_reported_back(window) -> None:
    calls = []
    comm.set_context(
        rank=1, nranks=2, windows=[window], wait_timeout=1.5, path=comm.CommPath.Host, host=calls.append
    )
    rank, nranks, path, windows, timeout = comm.context()
    assert (rank, nranks, path, timeout) == (1, 2, comm.CommPath.Host, 1.5)
    assert windows == [window]
    comm.set_context(rank=0, nranks=2, windows=[window], wait_timeout=1.0)
    assert comm.context()[2] is comm.CommPath.SharedMemory


@pytest.mark.parametrize(
    ("path", "host"),
    [(comm.CommPath.Host, None), (comm.CommPath.SharedMemory, print), (comm.CommPath.Host, 42)],
)
def test_a_host_that_does_not_fit_the_path_is_refused_naming_host(window, path, host) -> None:
    with pytest.raises(ValueError, match=r"set_context\(host\): expected a callable with path=CommPath.Host"):
        comm.set_context(rank=0, nranks=2, windows=[window], wait_timeout=1.0, path=path, host=host)


def test_host_ops_are_numbered_as_the_native_enum() -> None:
    assert [op.name for op in comm.HostOp] == ["Read", "Write", "AtomicAdd", "NotifyAdd", "NotifySet"]
    assert [int(op) for op in comm.HostOp] == [0, 1, 2, 3, 4]


# ---- apply_request: a peer's host-path request applied to this rank's window ------------------

FP16, FP32 = int(DataType.FLOAT16.value), int(DataType.FLOAT32.value)


def test_a_request_writes_adds_reads_and_notifies_in_place() -> None:
    w = np.zeros(64, dtype=np.uint8)
    runs = np.array([[16, 4], [0, 4]], dtype=np.int64)
    comm.apply_request(comm.HostOp.Write, w, runs, np.array([1.5, 2.0], dtype=np.float32).view(np.uint8))
    comm.apply_request(
        comm.HostOp.AtomicAdd, w, runs, np.array([0.5, -4.0], dtype=np.float32).view(np.uint8), dtype=FP32
    )
    out = np.zeros(8, dtype=np.uint8)
    comm.apply_request(comm.HostOp.Read, w, runs, out)
    assert out.view(np.float32).tolist() == [2.0, -2.0]
    assert w[16:20].view(np.float32)[0] == 2.0  # the first run went to byte 16
    empty = np.zeros(0, dtype=np.uint8)
    cell = np.array([[32, 4]], dtype=np.int64)
    comm.apply_request(comm.HostOp.NotifySet, w, cell, empty, value=2**31 - 1)
    comm.apply_request(comm.HostOp.NotifyAdd, w, cell, empty, value=1)
    assert w[32:36].view(np.int32)[0] == -(2**31)  # wraps around, as a kernel's own notify


def test_a_16_bit_float_add_rounds_once() -> None:
    w = np.array([1.0, 1.0], dtype=np.float16).view(np.uint8).copy()
    tiny = np.array([2.0**-12, 2.0**-10], dtype=np.float16).view(np.uint8).copy()
    comm.apply_request(comm.HostOp.AtomicAdd, w, np.array([[0, 4]]), tiny, dtype=FP16)
    assert w.view(np.float16).tolist() == [1.0, 1.0 + 2.0**-10]


@pytest.mark.parametrize(
    ("runs", "data", "dtype", "why"),
    [
        ([[60, 8]], 8, FP32, r"bytes \[60, \+8\) lie outside the window's 64 bytes"),
        ([[2, 4]], 4, FP32, r"bytes \[2, \+4\) are not whole 4-byte elements"),
        ([[0, 8]], 4, FP32, r"the runs hold 8 bytes, the request says 4"),
        ([[0, 4]], 4, 99, r"atomic add of DataType code 99 is not supported"),
        ([[0, -4]], 4, FP32, r"apply_request\(runs\): run 0 is \(0, -4\)"),
        ([[0, 4, 0]], 4, FP32, r"apply_request\(runs\): expected an \(n, 2\) array"),
    ],
)
def test_a_bad_request_is_refused_and_the_window_untouched(runs, data, dtype, why) -> None:
    w = np.full(64, 7, dtype=np.uint8)
    with pytest.raises(ValueError, match=why):
        comm.apply_request(
            comm.HostOp.AtomicAdd,
            w,
            np.array(runs, dtype=np.int64),
            np.ones(data, dtype=np.uint8),
            dtype=dtype,
        )
    assert (w == 7).all()


def test_apply_request_takes_a_host_op() -> None:
    with pytest.raises(ValueError, match=r"apply_request\(op\): expected a simpler.comm.HostOp, got 1"):
        comm.apply_request(1, np.zeros(8, np.uint8), np.zeros((0, 2), np.int64), np.zeros(0, np.uint8))
