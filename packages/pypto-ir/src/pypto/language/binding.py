"""The binder of a call's arguments: what a tensor argument is, its shape and dtype, a scalar's
value, and the cheap per-call key that a repeat call is recognised by.

One set of rules for every layer: ``@pl.jit`` specialisation (:mod:`pypto.language.jit`), the
runtime's program-mode executor and kernel mode's operator cache (pypto-runtime,
pypto-torch) all ask these functions. Tensors are duck-typed (anything with ``.shape`` and
``.dtype``: torch tensors, numpy arrays) so that pypto-ir never imports torch or numpy; a
dtype is recognised by its name (``torch.float32`` and numpy's ``float32`` both give FP32).
"""

from __future__ import annotations

import inspect
import math
import sys
from collections.abc import Callable
from typing import Any

from pypto.ir.dtypes import DataType

__all__ = [
    "DecoratedFunction",
    "arg_key",
    "dtype_of",
    "fast_key",
    "is_tensor",
    "scalar_of",
    "shape_of",
    "tensor_library",
]


class DecoratedFunction:
    """What a ``@pl.jit`` or ``@pl.jit.host`` object keeps of the Python function it stands for:
    the function, its names and docstring (so that it reads as the function), and its signature,
    which calls are bound against."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn
        self.__module__ = fn.__module__
        self.__name__ = fn.__name__
        self.__qualname__ = fn.__qualname__
        self.__doc__ = fn.__doc__
        self.__wrapped__ = fn
        self._sig = inspect.signature(fn)


def is_tensor(obj: Any) -> bool:
    """Whether ``obj`` is a tensor argument: it has ``.shape`` and ``.dtype`` and is not a Python
    scalar (numpy arrays, torch tensors, numpy's 0-d scalars, duck-typed arrays)."""
    return hasattr(obj, "shape") and hasattr(obj, "dtype") and not isinstance(obj, (int, float, bool))


def dtype_of(obj: Any, what: str = "argument") -> DataType:
    """The DataType of a tensor-like object's ``.dtype`` (or of a dtype object itself)."""
    dt = getattr(obj, "dtype", obj)
    if isinstance(dt, DataType):
        return dt
    name = str(getattr(dt, "name", None) or dt)
    name = name.removeprefix("torch.").removeprefix("dtype(").strip("'\")").lower()
    found = DataType.from_array_name(name)
    if found is None:
        known = ", ".join(d.array_name for d in DataType)
        raise TypeError(f"{what}: dtype {dt!r} has no PyPTO equivalent; expected one of {known}")
    return found


def shape_of(obj: Any, what: str = "argument") -> tuple[int, ...]:
    try:
        dims = tuple(int(d) for d in obj.shape)
    except (TypeError, ValueError):
        raise TypeError(f"{what}: .shape must be a sequence of ints, got {obj.shape!r}") from None
    if any(d < 0 for d in dims):
        raise TypeError(f"{what}: negative extent in shape {dims}")
    return dims


def scalar_of(value: Any, what: str = "argument") -> int | float | bool:
    """A Python scalar (numpy/torch 0-d values through ``.item()``)."""
    if isinstance(value, (bool, int, float)):
        return value
    item = getattr(value, "item", None)
    if callable(item) and getattr(value, "shape", ()) in ((), None):
        v = item()
        if isinstance(v, (bool, int, float)):
            return v
    raise TypeError(f"{what}: expected a Python int, float or bool scalar, got {type(value).__name__}")


# -- the cheap call key ------------------------------------------------------------------------
#
# Per argument: (type, shape, dtype, strides) of a numpy array or torch tensor (numpy's byte
# strides, torch's element strides), or (type, value) of a plain int/float/bool. The key is at
# least as fine as a specialisation key (tensors by shape and dtype, folded scalars by type and
# value, runtime scalars by dtype), so one call key names one specialisation; the strides let
# a layer above cache what a tensor's layout decides (descriptor strides, contiguity). Any
# other argument has no key, and the call takes the full binding path: other types, NaN
# (which the full binder reports), and 0-d arrays and tensors and numpy's scalars (a 0-d value
# passed for a scalar parameter is folded by its value, which such a key would not hold).

_SCALAR, _NUMPY, _TORCH, _OTHER = 0, 1, 2, 3
_kinds: dict[type, int] = {int: _SCALAR, float: _SCALAR, bool: _SCALAR}


def _kind(t: type) -> int:
    """What kind of argument type ``t`` is (never imports numpy or torch: an argument of theirs
    means they are imported already)."""
    kind = _OTHER
    numpy = sys.modules.get("numpy")
    torch = sys.modules.get("torch")
    if numpy is not None and issubclass(t, numpy.ndarray):
        kind = _NUMPY
    elif (
        torch is not None and isinstance(getattr(torch, "Tensor", None), type) and issubclass(t, torch.Tensor)
    ):
        kind = _TORCH
    _kinds[t] = kind  # a benign race: every thread computes the same value
    return kind


def arg_key(a: Any) -> tuple[Any, ...] | None:
    """The call key of one argument, or None when it has none (see above)."""
    t = type(a)
    kind = _kinds.get(t)
    if kind is None:
        kind = _kind(t)
    if kind == _NUMPY:
        shape = a.shape
        return (t, shape, a.dtype, a.strides) if shape else None
    if kind == _SCALAR:
        if t is float and math.isnan(a):
            return None
        return (t, a)
    if kind == _TORCH:
        shape = a.shape
        return (t, shape, a.dtype, a.stride()) if shape else None
    return None


def tensor_library(obj: Any) -> str | None:
    """``"numpy"`` for a numpy array, ``"torch"`` for a torch tensor, else None."""
    t = type(obj)
    kind = _kinds.get(t)
    if kind is None:
        kind = _kind(t)
    return "numpy" if kind == _NUMPY else "torch" if kind == _TORCH else None


def fast_key(args: tuple[Any, ...]) -> tuple[Any, ...] | None:
    """The call key of positional arguments: one :func:`arg_key` each, or None if one has none."""
    key = []
    for a in args:
        k = arg_key(a)
        if k is None:
            return None
        key.append(k)
    return tuple(key)
