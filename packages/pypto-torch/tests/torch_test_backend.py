"""Which PTO-ISA backend the kernels of pypto-torch's tests compile against, for the tests whose
checks differ there. The test modules import this by name; conftest.py puts this folder on
sys.path."""

from __future__ import annotations

import pytest

from simpler import toolchain


def skip_bf16_on_the_official_backend() -> None:
    """Skip the BF16 half of a test where kernels compile against the official pto-isa headers:
    their ``bfloat16_t`` is a ``_Float16`` placeholder below C++23 (docs/pto-isa-backends.md)."""
    if toolchain.kernel_toolchain().pto_backend == "pto-isa":
        pytest.skip("official CPU backend: bfloat16_t is a _Float16 placeholder here; FP32 checked")
