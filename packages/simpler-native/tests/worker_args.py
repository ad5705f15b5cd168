"""Task arguments the Worker tests build again and again, imported by name (conftest.py puts
this folder on sys.path)."""

from __future__ import annotations

import numpy as np

import simpler
from simpler import ArgDirection as D
from simpler import Buffer, DataType, TaskArgs

__all__ = ["vadd_args", "vadd_operands", "wrap"]

_DTYPES = {np.float32: "FLOAT32", np.int64: "INT64", np.float16: "FLOAT16", np.int32: "INT32"}


def wrap(a: np.ndarray) -> simpler.Tensor:
    """Borrow a numpy array's storage (no copy)."""
    return Buffer.wrap(a.ctypes.data, a.nbytes, owner=a).tensor(a.shape, _DTYPES[a.dtype.type])


def vadd_args(a: np.ndarray, b: np.ndarray, c: np.ndarray, tile: int) -> TaskArgs:
    """``(a In, b In, c Out, tile UINT32)``: the arguments of ``vadd_tiles`` and its kin."""
    args = TaskArgs()
    for arr, d in ((a, D.In), (b, D.In), (c, D.Out)):
        args.add_tensor(wrap(arr), d)
    return args.add_scalar(tile, DataType.UINT32)


def vadd_operands(n: int = 1000) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """FLOAT32 ``a = 0..n-1``, ``b`` all ones and a zeroed output: operands for ``vadd_tiles``
    and its kin."""
    a = np.arange(n, dtype=np.float32)
    return a, np.ones(n, dtype=np.float32), np.zeros_like(a)
