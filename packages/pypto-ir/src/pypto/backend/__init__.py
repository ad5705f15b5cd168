"""Upstream compatibility (``pypto.ir.upstream``): the code-generation backends, named by the
chip they generate for.

``BackendType`` lives with the platform table (``pypto.ir.platforms``), since a platform fixes
its backend; this package is where programs written for other PyPTO front ends import it from.
"""

from __future__ import annotations

from pypto.ir.platforms import BackendType, backend_of

__all__ = ["BackendType", "backend_of"]
