"""pypto.ir.compile(program, strategy=, backend_type=, dump_passes=), the pass-manager options
and pypto.backend: what each option does, and that a wrong value is refused naming it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import pypto.language as pl
from pypto import ir
from pypto.backend import BackendType
from pypto.backend.pto_backend import PartialCodegenError
from pypto.ir.pass_manager import OptimizationStrategy, PassDumpLevel


@pl.program
class Twice:
    @pl.function(type=pl.FunctionType.InCore)
    def twice(self, x: pl.Tensor[[16, 16], pl.FP32], y: pl.Out[pl.Tensor[[16, 16], pl.FP32]]):
        t = pl.load(x, [0, 0], [16, 16])
        return pl.store(pl.mul(t, 2.0), [0, 0], y)

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[16, 16], pl.FP32], y: pl.Out[pl.Tensor[[16, 16], pl.FP32]]):
        y = self.twice(x, y)
        return y


def test_compile_is_the_module_and_a_function(tmp_path: Path) -> None:
    import pypto.ir.compile as module

    assert ir.compile is module
    assert "compile" in ir.__all__
    got = ir.compile(Twice, tmp_path / "out", strategy=OptimizationStrategy.Default)
    assert os.fspath(got) == str(tmp_path / "out")
    assert str(got) == str(tmp_path / "out")
    assert (tmp_path / "out" / ir.META_FILE).is_file()
    assert got.metadata.platform == "a2a3sim"
    assert not (tmp_path / "out" / "passes").exists()  # no dump unless asked


def test_default_directory_is_under_build_output(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    first = ir.compile(Twice)
    second = ir.compile(Twice)
    assert Path(first).parent == Path("build_output")
    assert Path(first).name.startswith("Twice_")
    assert Path(first) != Path(second)  # a second compile in the same second gets its own directory
    walked = [f for _, _, files in os.walk(first) for f in files]
    assert ir.META_FILE in walked


def test_dump_passes_writes_each_stage(tmp_path: Path) -> None:
    from pypto.ir.pipeline import STAGES

    got = ir.compile(Twice, tmp_path / "d", dump_passes=True)
    names = sorted(p.name for p in (Path(got) / "passes").iterdir())
    assert names == ["00_parse.txt", *(f"{k:02d}_{s.name}.txt" for k, s in enumerate(STAGES, start=1))]
    assert "mul" in (Path(got) / "passes" / "00_parse.txt").read_text()


def test_backend_type_picks_the_simulator_of_its_chip(tmp_path: Path) -> None:
    assert ir.compile(Twice, tmp_path / "a5", backend_type=BackendType.Ascend950).metadata.platform == "a5sim"
    assert ir.compile(Twice, tmp_path / "b", backend_type="Ascend910B").metadata.platform == "a2a3sim"


@pytest.mark.parametrize(
    ("kwargs", "names"),
    [
        ({"strategy": "Fastest"}, ("strategy", "Fastest")),
        ({"dump_passes": "yes"}, ("dump_passes", "yes")),
        ({"backend_type": "Ascend310"}, ("backend_type", "Ascend310")),
        ({"backend_type": BackendType.Ascend950, "platform": "a2a3sim"}, ("backend_type", "a2a3sim")),
    ],
)
def test_a_wrong_option_is_refused_naming_it(tmp_path: Path, kwargs: dict, names: tuple[str, ...]) -> None:
    with pytest.raises(ValueError, match=names[0]) as err:
        ir.compile(Twice, tmp_path / "x", **kwargs)
    for n in names:
        assert n in str(err.value)
    assert not (tmp_path / "x").exists()  # refused before anything is written


def test_option_parsers() -> None:
    assert ir.check_dump_passes(True) is PassDumpLevel.CONCISE
    assert ir.check_dump_passes(False) is PassDumpLevel.NONE
    assert ir.check_strategy("Default") is OptimizationStrategy.Default
    assert ir.check_backend(None, "a5") is BackendType.Ascend950
    assert BackendType.Ascend910B.hardware == "a2a3"


def test_a_return_no_code_can_hand_back_is_a_partial_codegen_error(tmp_path: Path) -> None:
    @pl.jit
    def rebinds(x: pl.Tensor, result: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            result = pl.mul(x, 2.0)
            result = pl.add(x, 1.0)
        return result

    import numpy as np

    x = np.ones((16, 16), np.float32)
    spec = rebinds.specialize(x, np.zeros_like(x))
    with pytest.raises(PartialCodegenError) as err:
        ir.compile_to_files(spec, tmp_path / "bad", contract="PROGRAM", platform="a2a3sim")
    assert isinstance(err.value, ir.PyptoCompileError)
    assert isinstance(err.value, ir.CodegenError)
    assert err.value.files == {}
    assert "return value 0" in str(err.value)
    assert not (tmp_path / "bad" / ir.META_FILE).exists()
