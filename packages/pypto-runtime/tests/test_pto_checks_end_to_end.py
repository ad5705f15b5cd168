"""What simpler's PTO-ISA implementation checks, on generated kernels run by the simulated chip.

A generated kernel orders its pipes with ``set_flag``/``wait_flag`` (pypto-ir's sync-insertion
pass) and places its tiles with ``TASSIGN`` (the memory-allocation pass). The simulator is
where a kernel is proven before it runs on a device, whose pipes really run concurrently: these
tests edit a generated kernel's source the way a codegen bug would (a wait removed, a tile
placed over a live one) and check that running it fails naming the instruction, the tiles and
the missing event, while the unedited kernel runs and matches numpy.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pto_backend
import pytest

import pypto.language as pl
import pypto.runtime as rt
import simpler
from pypto.runtime.compiled import CompiledProgram


@pl.jit
def exp_kernel(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="exp_kernel"):
        out[:] = pl.exp(a)
    return out


X = np.linspace(-1, 1, 32 * 64, dtype=np.float32).reshape(32, 64)


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = tmp_path_factory.mktemp("pto") / "exp"
    rt.compile(exp_kernel, X, np.zeros_like(X), output_dir=where)
    return where


def _kernel_source(where: Path) -> Path:
    (source,) = (where / "kernels").glob("*.cpp")
    return source


def _edited(generated: Path, tmp_path: Path, edit: Callable[[str], str]) -> CompiledProgram:
    where = tmp_path / "edited"
    shutil.copytree(generated, where)
    source = _kernel_source(where)
    text = source.read_text()
    changed = edit(text)
    assert changed != text, "the edit found nothing to change in the generated kernel"
    source.write_text(changed)
    return CompiledProgram.from_dir(where)


def test_the_generated_kernel_is_synchronised_and_runs(generated: Path) -> None:
    text = _kernel_source(generated).read_text()
    assert "wait_flag(PIPE_MTE2, PIPE_V, EVENT_ID0);" in text
    assert "wait_flag(PIPE_V, PIPE_MTE3, EVENT_ID0);" in text
    out = CompiledProgram.from_dir(generated)(X)
    np.testing.assert_allclose(out, np.exp(X), rtol=1e-6)


@pytest.mark.parametrize(
    ("pair", "message"),
    [
        (
            "PIPE_MTE2, PIPE_V",
            r"TEXP reads tile Vec FLOAT32 \[32, 64\] at UB\+0x[0-9a-f]+ \(bytes at UB\+0x[0-9a-f]+\) written by TLOAD "
            r"on PIPE_MTE2 without set_flag/wait_flag\(PIPE_MTE2, PIPE_V\)",
        ),
        (
            "PIPE_V, PIPE_MTE3",
            r"TSTORE reads tile Vec FLOAT32 \[32, 64\] at UB\+0x[0-9a-f]+ \(bytes at UB\+0x[0-9a-f]+\) written by TEXP "
            r"on PIPE_V without set_flag/wait_flag\(PIPE_V, PIPE_MTE3\)",
        ),
    ],
)
def test_a_removed_wait_flag_is_reported_naming_instruction_tile_and_event(
    generated: Path, tmp_path: Path, pair: str, message: str
) -> None:
    pto_backend.simpler_check_only("a missing wait_flag (its set_flag/wait_flag are no-ops on the CPU)")
    prog = _edited(generated, tmp_path, lambda s: s.replace(f"wait_flag({pair}, EVENT_ID0);", "", 1))
    with pytest.raises(simpler.DeviceError, match=message):
        prog(X)


def test_a_tile_placed_over_its_live_source_is_reported(generated: Path, tmp_path: Path) -> None:
    pto_backend.simpler_check_only("a tile placed over a live tile")
    text = _kernel_source(generated).read_text()
    load, result = re.findall(r"TASSIGN\((\w+), (0x[0-9a-f]+)\);", text)
    assert int(load[1], 16) == 0
    assert int(result[1], 16) == 0  # over the loaded [32, 64] FP32 tile, which the exp reads last

    def overlap(s: str) -> str:  # the result starts halfway into the loaded tile
        return s.replace(f"TASSIGN({result[0]}, {result[1]});", f"TASSIGN({result[0]}, 0x1000);")

    prog = _edited(generated, tmp_path, overlap)
    with pytest.raises(
        simpler.DeviceError,
        match=r"TEXP writes tile Vec FLOAT32 \[32, 64\] at UB\+0x1000 over bytes at UB\+0x1000 of its source tile "
        r"Vec FLOAT32 \[32, 64\] at UB\+0x0: the two tiles overlap",
    ):
        prog(X)


def test_a_tile_past_its_buffer_is_reported(generated: Path, tmp_path: Path) -> None:
    pto_backend.simpler_check_only("a tile placed past its buffer")
    text = _kernel_source(generated).read_text()
    (_, result) = re.findall(r"TASSIGN\((\w+), (0x[0-9a-f]+)\);", text)
    prog = _edited(
        generated,
        tmp_path,
        lambda s: s.replace(f"TASSIGN({result[0]}, {result[1]});", f"TASSIGN({result[0]}, 0x2f000);"),
    )
    with pytest.raises(simpler.DeviceError, match=r"UB holds 196608 bytes"):
        prog(X)
