"""simpler.comm: the comm context a rank process sets, on the shared-memory and the host path."""

from __future__ import annotations

import mmap

import pytest

from simpler import comm


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
