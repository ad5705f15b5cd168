"""pypto.language's face to the layers above (pypto-runtime, pypto-torch, tools) for running
programs: the binder, the ``@pl.jit`` function types, the host-orchestrator trace.

Users write programs with ``pypto.language`` (``pl``) and ``pypto.language.distributed``
(``pld``); the layers above import those two and this module only, never another
``pypto.language`` submodule (``testing/tests/test_faces.py`` checks it). Names load on first
use, so importing this module loads nothing else (but ``pypto.ir``'s lazy face and
:mod:`pypto.ir.lazy_face`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pypto.ir.lazy_face import lazy_getattr

if TYPE_CHECKING:  # the same names, for type checkers and IDEs
    from pypto.language import typing
    from pypto.language.binding import arg_key, dtype_of, is_tensor, shape_of, tensor_library
    from pypto.language.distributed import is_distributed_annotation
    from pypto.language.host import HostFunction
    from pypto.language.host_trace import HostTensorRef, HostTrace, WindowView
    from pypto.language.jit import DeclaredParam, JITFunction, Specialization
    from pypto.language.tracebacks import marks_user_errors, user_facing
    from pypto.language.typing import is_runtime

# name -> (module, attribute; "" for the module itself)
_FACE: dict[str, tuple[str, str]] = {
    "DeclaredParam": ("pypto.language.jit", "DeclaredParam"),
    "HostFunction": ("pypto.language.host", "HostFunction"),
    "HostTensorRef": ("pypto.language.host_trace", "HostTensorRef"),
    "HostTrace": ("pypto.language.host_trace", "HostTrace"),
    "JITFunction": ("pypto.language.jit", "JITFunction"),
    "Specialization": ("pypto.language.jit", "Specialization"),
    "WindowView": ("pypto.language.host_trace", "WindowView"),
    "arg_key": ("pypto.language.binding", "arg_key"),
    "dtype_of": ("pypto.language.binding", "dtype_of"),
    "is_distributed_annotation": ("pypto.language.distributed", "is_distributed_annotation"),
    "is_runtime": ("pypto.language.typing", "is_runtime"),
    "is_tensor": ("pypto.language.binding", "is_tensor"),
    "marks_user_errors": ("pypto.language.tracebacks", "marks_user_errors"),
    "shape_of": ("pypto.language.binding", "shape_of"),
    "tensor_library": ("pypto.language.binding", "tensor_library"),
    "typing": ("pypto.language.typing", ""),
    "user_facing": ("pypto.language.tracebacks", "user_facing"),
}

__all__ = [
    "DeclaredParam",
    "HostFunction",
    "HostTensorRef",
    "HostTrace",
    "JITFunction",
    "Specialization",
    "WindowView",
    "arg_key",
    "dtype_of",
    "is_distributed_annotation",
    "is_runtime",
    "is_tensor",
    "marks_user_errors",
    "shape_of",
    "tensor_library",
    "typing",
    "user_facing",
]


__getattr__ = lazy_getattr(__name__, _FACE, globals())
