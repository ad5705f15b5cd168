"""Simpler: the chip runtime of the PyPTO stack.

The native core lives in the private extension ``simpler._native``; this package owns the
public names.
"""

from __future__ import annotations

from pathlib import Path

from simpler._native import SANITIZED, __version__

__all__ = ["SANITIZED", "__version__", "get_include"]


def get_include() -> str:
    """Return the directory of the C++ headers that simpler installs.

    Generated kernels and orchestrations, and standalone tools such as the CANN probe,
    compile against these headers (``-I$(python -c 'import simpler; print(simpler.get_include())')``).
    """
    return str(Path(__file__).with_name("include"))
