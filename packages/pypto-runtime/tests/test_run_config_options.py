"""RunConfig's compile and diagnostic options (enable_chip_swimlane, strategy, backend_type,
dump_passes, rtol/atol), TensorSpec, and run() of an IR program returning what it compiled."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import pypto.language as pl
from pypto.ir import BackendType, OptimizationStrategy, PassDumpLevel
from pypto.runtime import CompiledProgram, RunConfig, TensorSpec, run


@pl.program
class AddOne:
    @pl.function(type=pl.FunctionType.InCore)
    def add_one(self, x: pl.Tensor[[16, 32], pl.FP32], y: pl.Out[pl.Tensor[[16, 32], pl.FP32]]):
        t = pl.load(x, [0, 0], [16, 32])
        return pl.store(pl.add(t, 1.0), [0, 0], y)


def test_accepted_options_and_their_values() -> None:
    c = RunConfig(
        strategy=OptimizationStrategy.Default,
        backend_type=BackendType.Ascend910B,
        dump_passes=PassDumpLevel.EXPLICIT,
        rtol=2e-2,
        atol=0,
        compile_profiling=True,
    )
    assert c.effective_call_config is None  # no swimlane: the Worker's defaults
    assert RunConfig(platform="a5sim", backend_type="Ascend950").backend_type == "Ascend950"


@pytest.mark.parametrize(
    ("kwargs", "names"),
    [
        ({"enable_chip_swimlane": 5}, ("enable_chip_swimlane", "5")),
        ({"enable_chip_swimlane": "on"}, ("enable_chip_swimlane", "'on'")),
        ({"swimlane_dir": "t"}, ("swimlane_dir", "enable_chip_swimlane")),
        ({"strategy": "Aggressive"}, ("strategy", "Aggressive")),
        ({"backend_type": BackendType.Ascend950}, ("backend_type", "a2a3sim")),
        ({"backend_type": 3}, ("backend_type", "3")),
        ({"dump_passes": 1}, ("dump_passes", "1")),
        ({"rtol": -1.0}, ("rtol", "-1.0")),
        ({"atol": "small"}, ("atol", "small")),
        ({"compile_profiling": "yes"}, ("compile_profiling", "yes")),
    ],
)
def test_a_wrong_option_is_refused_naming_it(kwargs: dict, names: tuple[str, ...]) -> None:
    with pytest.raises(ValueError, match=names[0]) as err:
        RunConfig(**kwargs)
    for n in names:
        assert n in str(err.value)


def test_swimlane_writes_a_trace_of_the_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    x = np.arange(16 * 32, dtype=np.float32).reshape(16, 32)
    y = np.zeros_like(x)
    compiled = run(AddOne, x, y, config=RunConfig(enable_chip_swimlane=True))
    np.testing.assert_array_equal(y, x + 1)
    assert isinstance(compiled, CompiledProgram)
    traces = list((tmp_path / "build_output" / "swimlane").glob("*.swimlane.json"))
    assert len(traces) == 1
    events = json.loads(traces[0].read_text())
    assert events  # Chrome trace events of the run
    # an explicit directory, and level 0 writes nothing
    run(AddOne, x, y, config=RunConfig(enable_chip_swimlane=2, swimlane_dir=str(tmp_path / "t")))
    assert list((tmp_path / "t").glob("*.swimlane.json"))
    before = set((tmp_path / "build_output" / "swimlane").iterdir())
    run(AddOne, x, y, config=RunConfig(enable_chip_swimlane=0))
    assert set((tmp_path / "build_output" / "swimlane").iterdir()) == before


def test_run_of_a_program_alone_compiles_it() -> None:
    compiled = run(AddOne)
    assert isinstance(compiled, CompiledProgram)
    x = np.full((16, 32), 2.5, np.float32)
    out = compiled(x)  # the omitted Out is allocated
    np.testing.assert_array_equal(out, np.full((16, 32), 3.5, np.float32))


def test_tensor_spec_makes_each_kind_of_value() -> None:
    torch = pytest.importorskip("torch")
    assert torch.equal(TensorSpec("a", [2, 3], torch.float32).create_tensor(), torch.zeros(2, 3))
    assert torch.equal(
        TensorSpec("a", [2], torch.int32, init_value=7).create_tensor(),
        torch.tensor([7, 7], dtype=torch.int32),
    )
    r = TensorSpec("q", [4, 8], torch.bfloat16, init_value=torch.randn).create_tensor()
    assert r.dtype is torch.bfloat16
    assert tuple(r.shape) == (4, 8)
    made = TensorSpec("c", [3], torch.int64, init_value=lambda: [1, 2, 3]).create_tensor()
    assert made.tolist() == [1, 2, 3]
    assert made.dtype is torch.int64
    given = TensorSpec(
        "g", [2], torch.float32, init_value=torch.tensor([1, 2], dtype=torch.int32)
    ).create_tensor()
    assert given.dtype is torch.float32
    assert given.tolist() == [1.0, 2.0]
    with pytest.raises(ValueError, match=r"TensorSpec 'c' \(init_value\): expected shape \[4\], got \[3\]"):
        TensorSpec("c", [4], torch.int64, init_value=lambda: [1, 2, 3]).create_tensor()
    assert TensorSpec("o", [1], torch.float32, is_output=True).is_output


def test_tensor_spec_with_a_numpy_dtype() -> None:
    a = TensorSpec("a", [2, 2], "float32", init_value=1.5).create_tensor()
    assert isinstance(a, np.ndarray)
    assert a.dtype == np.float32
    assert (a == 1.5).all()
    with pytest.raises(ValueError, match="TensorSpec 'a' \\(shape\\)"):
        TensorSpec("a", [2, -1], "float32")


def test_simulate_npu_runs_a_device_config_on_its_simulator(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYPTO_SIMULATE_NPU", "1")
    c = RunConfig(platform="a2a3", device_id=11, backend_type=BackendType.Ascend910B)
    assert (c.platform, c.device_id) == ("a2a3sim", 0)
    assert RunConfig(platform="a5").platform == "a5sim"
    x = np.ones((16, 32), np.float32)
    y = np.zeros_like(x)
    run(AddOne, x, y, config=c)
    np.testing.assert_array_equal(y, x + 1)
    monkeypatch.delenv("PYPTO_SIMULATE_NPU")
    assert RunConfig(platform="a2a3", device_id=11).platform == "a2a3"
