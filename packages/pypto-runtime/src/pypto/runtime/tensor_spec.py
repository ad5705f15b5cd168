"""``TensorSpec``: one tensor of a program's call described by name, shape, dtype and how its
values are made, so that a script can build every argument of a call from a list of specs.

Tensors are made with the library the dtype belongs to: a torch dtype (torch is then already
imported by the caller, and is not imported here) or anything numpy takes as a dtype.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["TensorSpec"]


def _torch_of(dtype: object) -> Any:
    """The torch module when ``dtype`` is a torch dtype (torch imported by the caller), else None."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(dtype, torch.dtype):
        return torch
    return None


@dataclass
class TensorSpec:
    """One tensor of a call.

    Args:
        name: The parameter it is passed as.
        shape: Its extents.
        dtype: A torch dtype (``torch.bfloat16``) or a numpy dtype (``"float32"``).
        init_value: How its values are made: None (zeros), an int or float (every element), a
            tensor of that shape (converted to ``dtype``), a factory the library calls as
            ``factory(shape, dtype=dtype)`` (``torch.randn``, ``torch.rand``, ``torch.zeros``,
            ``torch.ones``), or any other callable taking no argument that returns the values.
        is_output: An output of the call (a program allocates it when it is left out).
    """

    name: str
    shape: Sequence[int]
    dtype: Any
    init_value: int | float | Callable[..., Any] | Any | None = field(default=None)
    is_output: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.isidentifier():
            raise ValueError(f"TensorSpec(name): expected a parameter name, got {self.name!r}")
        if isinstance(self.shape, (str, bytes)) or not all(
            isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in self.shape
        ):
            raise ValueError(
                f"TensorSpec {self.name!r} (shape): expected a sequence of ints >= 0, got {self.shape!r}"
            )
        self.shape = list(self.shape)

    def create_tensor(self) -> Any:
        """A new tensor made as ``init_value`` says."""
        torch = _torch_of(self.dtype)
        if torch is not None:
            return self._create_torch(torch)
        import numpy

        return self._create_numpy(numpy)

    def _create_torch(self, torch: Any) -> Any:
        shape, dtype, init = tuple(self.shape), self.dtype, self.init_value
        if init is None:
            return torch.zeros(shape, dtype=dtype)
        if isinstance(init, (bool, int, float)):
            return torch.full(shape, init, dtype=dtype)
        if isinstance(init, torch.Tensor):
            return self._checked(init.to(dtype=dtype), tuple(init.shape))
        if init in (torch.randn, torch.rand, torch.zeros, torch.ones):
            return init(shape, dtype=dtype)
        if callable(init):
            made = torch.as_tensor(init(), dtype=dtype)
            return self._checked(made, tuple(made.shape))
        raise TypeError(
            f"TensorSpec {self.name!r} (init_value): expected None, a number, a tensor or a callable, "
            f"got {type(init).__name__}"
        )

    def _create_numpy(self, numpy: Any) -> Any:
        shape, dtype, init = tuple(self.shape), numpy.dtype(self.dtype), self.init_value
        if init is None:
            return numpy.zeros(shape, dtype=dtype)
        if isinstance(init, (bool, int, float)):
            return numpy.full(shape, init, dtype=dtype)
        if isinstance(init, numpy.ndarray):
            return self._checked(init.astype(dtype), init.shape)
        if callable(init):
            made = numpy.asarray(init(), dtype=dtype)
            return self._checked(made, made.shape)
        raise TypeError(
            f"TensorSpec {self.name!r} (init_value): expected None, a number, an array or a callable, "
            f"got {type(init).__name__}"
        )

    def _checked(self, made: Any, shape: tuple[int, ...]) -> Any:
        if list(shape) != self.shape:
            raise ValueError(
                f"TensorSpec {self.name!r} (init_value): expected shape {self.shape}, got {list(shape)}"
            )
        return made
