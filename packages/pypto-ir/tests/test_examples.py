"""Programs in the style of PyPTO's beginner and intermediate teaching examples: each one
specialises, lowers through the whole pipeline, compiles to files and the generated C++
compiles against simpler's headers."""

from __future__ import annotations

from pathlib import Path

import pytest
from pypto_ir_test_helpers import HostArray

from pypto.ir.compile import compile_to_files
from pypto.ir.metadata import read_metadata
from pypto_testing.programs import EXAMPLES, Example, dynamic_rows, scalar_param


def z(*shape: int) -> HostArray:
    return HostArray(shape, "float32")


def _args(ex: Example) -> tuple[object, ...]:
    inputs = tuple(z(*i) if isinstance(i, tuple) else i for i in ex.inputs)
    return inputs + tuple(z(*o) for o in ex.outputs)


# name -> (fn, arguments, kernel core types), from the programs shared with pypto-runtime's tests
CASES = {name: (ex.fn, _args(ex), list(ex.cores)) for name, ex in EXAMPLES.items()}


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    root = tmp_path_factory.mktemp("examples")
    out = {}
    for name, (fn, args, _) in CASES.items():
        out[name] = compile_to_files(
            fn.specialize(*args), root / name, contract="PROGRAM", platform="a2a3sim"
        )
    return out


@pytest.mark.parametrize("name", list(CASES))
def test_example_compiles_to_files(name: str, compiled: dict[str, object]) -> None:
    result = compiled[name]
    fn, _args, cores = CASES[name]
    meta = read_metadata(result.output_dir)  # type: ignore[attr-defined]
    assert meta == result.metadata  # type: ignore[attr-defined]
    assert [k.core_type for k in meta.kernels] == cores
    assert [k.func_id for k in meta.kernels] == list(range(len(cores)))
    assert [p.name for p in meta.params] == list(fn.param_names)
    for k in meta.kernels:
        assert (result.output_dir / k.source).is_file()  # type: ignore[attr-defined]
    assert (result.output_dir / meta.orchestration.source).is_file()  # type: ignore[attr-defined]
    assert meta.return_count == len(meta.return_aliases)


def test_generated_cpp_compiles(compiled: dict[str, object], cpp_check) -> None:  # type: ignore[no-untyped-def]
    files: list[Path] = []
    for result in compiled.values():
        files += [f for f in result.files if f.suffix == ".cpp"]  # type: ignore[attr-defined]
    cpp_check(files)


def test_generated_kernels_never_use_the_old_tile_library(compiled: dict[str, object]) -> None:
    kernels = [
        f
        for result in compiled.values()
        for f in result.files  # type: ignore[attr-defined]
        if f.suffix == ".cpp" and f.parent.name == "kernels"
    ]
    assert kernels
    for f in kernels:
        text = f.read_text()
        assert "#include <pto/pto-inst.hpp>" in text, f
        for old in ("pt::", "simpler::tile", "simpler/tile"):
            assert old not in text, f"{f.name} mentions {old}"


def test_dynamic_dims_share_one_specialisation() -> None:
    s1 = dynamic_rows.specialize(z(64, 32), z(64, 32))
    s2 = dynamic_rows.specialize(z(128, 32), z(128, 32))
    assert s1 is s2
    assert s1.params[0].shape == (-1, 32)


def test_scalar_values_specialise() -> None:
    s1 = scalar_param.specialize(z(16, 16), 0.5, z(16, 16))
    s2 = scalar_param.specialize(z(16, 16), 0.25, z(16, 16))
    assert s1 is not s2
    assert s1.key != s2.key
    assert s1.params[1].is_scalar
