"""Shared fixtures of the simpler tests: hand-written kernels and orchestrations compiled once,
and the random task graphs of the `interpret` orchestration with their sequential reference."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import strategies as st

import simpler
from simpler import ArgDirection as D
from simpler import toolchain

HERE = Path(__file__).resolve().parent
CSRC = HERE / "csrc"

# with --import-mode=importlib this folder is not on sys.path, so conftest (loaded before any
# test module) puts it there for the shared helpers (worker_failure_cases.py)
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

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


@pytest.fixture(params=simpler.RUNTIMES)
def runtime_worker(request: pytest.FixtureRequest) -> Iterator[simpler.Worker]:
    """A program-mode Worker on each chip runtime (TMR, HBG) in turn."""
    w = simpler.Worker(platform="a2a3sim", runtime=request.param, aic_threads=1, aiv_threads=1)
    w.init()
    yield w
    w.close()


@pytest.fixture
def register(
    worker: simpler.Worker, build_callable: Callable[[str], simpler.ChipCallable]
) -> Callable[[str], Any]:
    return lambda name: worker.register(build_callable(name))


# -- random task graphs ----------------------------------------------------------------------
# The `interpret` orchestration (csrc/test_orchestrations.cpp) submits one task per row of an
# int64 table (kind, a, b, length, k) over an int64 vector x: kind 0 is a muladd,
# x[a:a+length] = x[a:a+length] * 2 + k (InOut); kind 1 copies x[a:a+length] to the
# non-overlapping x[b:b+length] (In, Out). Any such graph must compute what running its rows in
# order computes; the chip derives every dependency from the overlaps.

Op = tuple[int, int, int, int, int]


def sequential_reference(x: np.ndarray, ops: list[Op]) -> np.ndarray:
    """What running the rows one after another computes (x is not modified)."""
    x = x.copy()
    for kind, a, b, length, k in ops:
        if kind == 0:
            x[a : a + length] = x[a : a + length] * 2 + k
        else:
            x[b : b + length] = x[a : a + length]
    return x


def seeded_task_graph(x0: np.ndarray, seed: int, count: int) -> list[Op]:
    """``count`` rows over ``x0`` from numpy's generator ``seed``: overlapping muladds and copies
    between non-overlapping ranges. A muladd that would take a value past 2**40 is skipped (the
    kernel's int64 arithmetic must not overflow)."""
    n = len(x0)
    rng = np.random.default_rng(seed)
    x = [int(v) for v in x0]
    ops: list[Op] = []
    while len(ops) < count:
        length = int(rng.integers(1, 9))
        a = int(rng.integers(0, n - length + 1))
        if rng.integers(0, 2) == 0:
            k = int(rng.integers(-3, 4))
            if all(abs(v * 2 + k) < 1 << 40 for v in x[a : a + length]):
                ops.append((0, a, 0, length, k))
                x[a : a + length] = [v * 2 + k for v in x[a : a + length]]
            continue
        b = int(rng.integers(0, n - length + 1))
        if b + length <= a or b >= a + length:
            ops.append((1, a, b, length, 0))
            x[b : b + length] = x[a : a + length]
    return ops


def task_graph_strategy(n: int) -> st.SearchStrategy[list[Op]]:
    """Hypothesis: 1..30 rows over a vector of ``n`` elements (copies whose source leaves no
    non-overlapping destination are dropped)."""

    @st.composite
    def programs(draw: st.DrawFn) -> list[Op]:
        ops: list[Op] = []
        for _ in range(draw(st.integers(1, 30))):
            length = draw(st.integers(1, 8))
            if draw(st.booleans()):
                a = draw(st.integers(0, n - length))
                ops.append((0, a, 0, length, draw(st.integers(-3, 3))))
            else:
                a = draw(st.integers(0, n - length))
                # a destination range that does not overlap the source
                choices = [b for b in range(n - length + 1) if b + length <= a or b >= a + length]
                if not choices:
                    continue
                ops.append((1, a, draw(st.sampled_from(choices)), length, 0))
        return ops

    return programs()


class TaskGraphs:
    """The `interpret` orchestration's random task graphs and their sequential reference."""

    sequential = staticmethod(sequential_reference)
    seeded = staticmethod(seeded_task_graph)
    strategy = staticmethod(task_graph_strategy)


@pytest.fixture(scope="session")
def task_graphs() -> type[TaskGraphs]:
    """``task_graphs.sequential(x, ops)``, ``task_graphs.seeded(x0, seed, count)`` and, under
    ``st.data()``, ``data.draw(task_graphs.strategy(n))``."""
    return TaskGraphs
