"""Shared fixtures of the simpler tests: hand-written kernels and orchestrations compiled once."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import simpler
from simpler import ArgDirection as D
from simpler import toolchain

CSRC = Path(__file__).with_name("csrc")

# func_id -> (entry, signature, core type); the orchestrations in csrc/ use these ids.
KERNELS: dict[int, tuple[str, list[Any], str]] = {
    0: ("vadd", [D.In, D.In, D.Out], "aiv"),
    1: ("scale", [D.In, D.Out, D.Scalar], "aiv"),
    2: ("muladd", [D.InOut, D.Scalar, D.Scalar], "aiv"),
    3: ("copy_i64", [D.In, D.Out], "aiv"),
    4: ("matmul", [D.In, D.In, D.Out], "aic"),
    5: ("inc", [D.InOut], "aiv"),
    6: ("empty", [D.In], "aiv"),
    7: ("stamp", [D.Out, D.Scalar, D.Scalar], "aiv"),
    8: ("fails", [D.In], "aiv"),
    9: ("throws", [D.In], "aiv"),
}

ORCHESTRATIONS: dict[str, list[Any]] = {
    "vadd_tiles": [D.In, D.In, D.Out, D.Scalar],
    "vadd_scaled": [D.In, D.In, D.Out, D.Scalar, D.Scalar],
    "matmul_tiles": [D.In, D.In, D.Out, D.Scalar],
    "stages": [D.InOut, D.Out, D.Scalar],
    "many_incs": [D.InOut, D.Scalar, D.Scalar],
    "empties": [D.In, D.Scalar],
    "explicit_dep": [D.Out, D.Scalar, D.Scalar],
    "failures": [D.In, D.Scalar],
    "interpret": [D.InOut, D.In],
    "gated": [D.In, D.Scalar],
}


@pytest.fixture(scope="session")
def kernel_binary() -> bytes:
    return toolchain.compile_shared({"test_kernels.cpp": (CSRC / "test_kernels.cpp").read_text()})


@pytest.fixture(scope="session")
def orchestration_binary() -> bytes:
    return toolchain.compile_shared(
        {"test_orchestrations.cpp": (CSRC / "test_orchestrations.cpp").read_text()}
    )


@pytest.fixture(scope="session")
def build_callable(
    kernel_binary: bytes, orchestration_binary: bytes
) -> Callable[[str], simpler.ChipCallable]:
    children = [
        (fid, simpler.CoreCallable.build(sig, kernel_binary, core, entry=entry))
        for fid, (entry, sig, core) in KERNELS.items()
    ]

    def build(name: str) -> simpler.ChipCallable:
        return simpler.ChipCallable.build(ORCHESTRATIONS[name], name, orchestration_binary, children=children)

    return build


@pytest.fixture
def worker() -> Iterator[simpler.Worker]:
    w = simpler.Worker(platform="a2a3sim", aic_threads=1, aiv_threads=1)
    w.init()
    yield w
    w.close()


@pytest.fixture
def register(
    worker: simpler.Worker, build_callable: Callable[[str], simpler.ChipCallable]
) -> Callable[[str], Any]:
    return lambda name: worker.register(build_callable(name))
