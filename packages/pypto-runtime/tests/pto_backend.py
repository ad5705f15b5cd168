"""Which PTO-ISA implementation the kernels of this test run compile against, and the checks
only simpler's own implementation performs.

With ``PTO_ISA_ROOT`` set, kernels compile against the official pto-isa headers' CPU backend
(docs/pto-isa-backends.md). Where that backend differs from simpler's, a test states the
difference here or in its own body and docs/pto-isa-backends.md lists it, with the ISA
reference page's position on it.
"""

from __future__ import annotations

import pytest

from simpler import toolchain


def official() -> bool:
    """Whether kernels compile against the official pto-isa headers (``PTO_ISA_ROOT``)."""
    return toolchain.kernel_toolchain().pto_backend == "pto-isa"


def simpler_check_only(what: str) -> None:
    """Skip the calling test on the official backend: ``what`` is a run-time check of simpler's
    implementation that the official CPU backend does not make (the ISA page leaves the case
    target-defined or unstated)."""
    if official():
        pytest.skip(f"official CPU backend: {what} is not checked there (docs/pto-isa-backends.md)")


def needs_bfloat16() -> None:
    """Skip the calling test on the official backend when its toolchain has no bfloat16: below
    C++23 <stdfloat> (libstdc++ 12 has none) the official headers' ``bfloat16_t`` is a
    ``_Float16`` placeholder, so a BF16 kernel reads and writes half-precision bits."""
    if official():
        pytest.skip(
            "official CPU backend: bfloat16_t is a _Float16 placeholder here (docs/pto-isa-backends.md)"
        )
