"""What a failed ``import torch_npu`` (or torch's autoload of it) means, and the fix to print.

Shared by pypto.torch's NPU platform and the optional adapter :mod:`pypto._torch_npu`; it needs
nothing but the standard library, so the adapter can explain its own import failure where
pypto.torch is not importable (its build check stages the adapter alone).
"""

from __future__ import annotations

import os
import re

__all__ = ["AUTOLOAD_FIX", "CANN_FIX", "explain_torch_import_failure", "explain_torch_npu_failure"]

# A shared library that the dynamic loader could not find or load: CANN's runtime libraries
# (libascendcl.so, libhccl.so, ...) are not part of the torch_npu wheel.
_MISSING_LIBRARY = re.compile(r"(lib[\w.+-]+\.so[\w.]*): cannot open shared object file")
_CANN_ENV = ("ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME")
CANN_FIX = "install the CANN toolkit and `source <CANN root>/set_env.sh` (it sets ASCEND_HOME_PATH) before starting Python"
"""What to do when CANN's environment is missing."""
AUTOLOAD_FIX = "TORCH_DEVICE_BACKEND_AUTOLOAD=0"
"""The environment setting that stops torch from importing torch_npu (its backend autoload)."""


def explain_torch_npu_failure(exc: BaseException, *, installed: bool | None = None) -> str:
    """What a failed ``import torch_npu`` means: torch_npu is not installed (install the
    ``[npu]`` extra), or it is installed but CANN's environment is missing (a CANN library it
    could not load, or no ``ASCEND_HOME_PATH``), or it is installed and failed otherwise."""
    text = str(exc)
    if installed is None:  # the import found no torch_npu at all, or found one that failed
        installed = not (isinstance(exc, ModuleNotFoundError) and exc.name == "torch_npu")
    if not installed:
        return f"torch_npu is not installed ({text}); install it with `pip install 'pypto-torch[npu]'`"
    missing = _MISSING_LIBRARY.search(text)
    if missing is not None:
        return f"torch_npu is installed, but CANN's environment is missing: it could not load {missing.group(1)} ({text}); {CANN_FIX}"
    if not any(os.environ.get(name) for name in _CANN_ENV):
        return (
            f"torch_npu is installed, but CANN's environment is missing (ASCEND_HOME_PATH is not set) and "
            f"importing torch_npu failed ({text}); {CANN_FIX}"
        )
    return f"torch_npu is installed but could not be imported ({text})"


def explain_torch_import_failure(exc: BaseException) -> str | None:
    """The advice for an ``import torch`` that failed in torch's backend autoload (torch imports
    every installed device backend, torch_npu among them, unless ``TORCH_DEVICE_BACKEND_AUTOLOAD=0``),
    or None for another failure."""
    if "Failed to load the backend extension" not in str(exc):
        return None
    cause = exc.__cause__ if exc.__cause__ is not None else exc
    return (
        f"import torch failed while it autoloaded an installed device backend ({exc}): "
        f"{explain_torch_npu_failure(cause)}. To use torch (and pypto.torch's simulator platforms) without "
        f"it, set {AUTOLOAD_FIX} in the environment; to use the NPU, {CANN_FIX}"
    )
