"""Facts that two packages pin independently (they never import each other) must agree, and the
shared vocabulary above simpler is defined once (``pypto_testing.vocabulary`` names the homes).

Runs where the whole stack is installed (the `tests` session); skipped, saying why, where a
package is absent.
"""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path

import pytest

from pypto_testing import vocabulary

ir_dtypes = pytest.importorskip("pypto.ir.dtypes", reason="pypto-ir is not installed in this session")
kernel = pytest.importorskip("simpler.kernel", reason="simpler-native is not installed in this session")

import simpler  # noqa: E402
import simpler.toolchain  # noqa: E402
import simpler.worker  # noqa: E402
from pypto.ir import errors as ir_errors  # noqa: E402
from pypto.ir import param_info, platforms  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
PACKAGE_SOURCES = (
    "packages/simpler-native/src",
    "packages/pypto-ir/src",
    "packages/pypto-runtime/src",
    "packages/pypto-torch/src",
)


# -- pypto.ir's tables agree with simpler's ----------------------------------------------------


def test_dtype_wire_codes_and_names_agree() -> None:
    native = {name: member.value for name, member in kernel.DataType.__members__.items()}
    ours = {dt.wire_name: dt.wire_code for dt in ir_dtypes.DataType}
    assert ours == native


def test_platform_and_runtime_names_agree() -> None:
    assert set(platforms.SIMULATOR_PLATFORMS) == set(simpler.worker.SIM_PLATFORMS)
    assert set(platforms.NPU_PLATFORMS) == set(simpler.worker.DEVICE_PLATFORMS)
    assert set(platforms.RUNTIMES) == set(simpler.worker.RUNTIMES)


def test_defaults_agree_with_simplers_worker() -> None:
    params = inspect.signature(simpler.Worker).parameters
    assert params["platform"].default == platforms.DEFAULT_PLATFORM
    assert params["runtime"].default == platforms.DEFAULT_RUNTIME
    assert platforms.DEFAULT_RUNTIME in platforms.get_platform(platforms.DEFAULT_PLATFORM).runtimes


def test_process_modes_are_simplers_execution_modes() -> None:
    mode_gate = pytest.importorskip("pypto.runtime.mode_gate", reason="pypto-runtime is not installed")
    assert {m.value for m in mode_gate.ProcessMode} == set(simpler.worker.EXECUTION_MODES)
    for m in mode_gate.ProcessMode:
        assert m.contract.name == m.name


def _header_int(text: str, name: str) -> int:
    found = re.findall(rf"\b{name}\s*=\s*(\d+)\s*;", text)
    assert len(found) == 1, f"{name}: expected one definition in kernel_args.hpp, found {found}"
    return int(found[0])


def test_nz_block_geometry_agrees_with_the_kernels_nz_view() -> None:
    header = Path(simpler.__file__).with_name("include") / "simpler" / "kernel_args.hpp"
    text = header.read_text(encoding="utf-8")
    assert _header_int(text, "kNzBlockRows") == param_info.NZ_BLOCK_ROWS
    assert _header_int(text, "kNzBlockBytes") == param_info.NZ_BLOCK_BYTES


# -- errors are told apart by name ------------------------------------------------------------


def test_the_two_compile_errors_are_distinguishable() -> None:
    ours, host = ir_errors.PyptoCompileError, simpler.toolchain.CompileError
    assert ours.__name__ != host.__name__
    assert not issubclass(ours, host)
    assert not issubclass(host, ours)
    assert not hasattr(ir_errors, "CompileError")  # one name: no alias to confuse with simpler's


def _error_classes(root: Path) -> dict[str, list[str]]:
    """Exception-looking class names (``...Error``) -> where each is defined."""
    out: dict[str, list[str]] = {}
    for rel in PACKAGE_SOURCES:
        for path in sorted((root / rel).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ClassDef) and node.name.endswith("Error"):
                    out.setdefault(node.name, []).append(f"{path.relative_to(root)}:{node.lineno}")
    return out


def test_error_class_names_are_unique_across_packages() -> None:
    shared = {name: where for name, where in _error_classes(REPO).items() if len(where) > 1}
    assert not shared, f"one name, different errors: {shared}"


# -- one home per word ------------------------------------------------------------------------


def test_vocabulary_is_defined_once() -> None:
    copies = vocabulary.find_copies(REPO)
    assert not copies, "\n".join(map(str, copies))


def test_words_come_from_the_homes() -> None:
    words = vocabulary.words()
    for name in platforms.PLATFORMS + platforms.RUNTIMES:
        assert words[name] == vocabulary.PLATFORMS_HOME
    assert words["PROGRAM"] == words["KERNEL"] == words["SIM"] == vocabulary.CONTRACT_HOME


@pytest.mark.parametrize(
    ("module", "source", "what"),
    [
        ("pypto/runtime/x.py", "PLATFORM = 'a2a3sim'\n", "the literal 'a2a3sim'"),
        (
            "pypto/torch/x.py",
            "def f(runtime='host_build_graph'):\n    pass\n",
            "the literal 'host_build_graph'",
        ),
        ("pypto/ir/x.py", "ok = 'KERNEL' in caps\n", "the literal 'KERNEL'"),
        ("pypto/ir/platforms_copy.py", "x = {'a5': 1}\n", "the literal 'a5'"),
        ("pypto/torch/x.py", "_NZ_BLOCK_ROWS = 16\n", "NZ block geometry '_NZ_BLOCK_ROWS'"),
        (
            "pypto/runtime/x.py",
            "T = {DataType.FP32: 'f', DataType.FP16: 'h', DataType.INT8: 'b', DataType.INT16: 'i', DataType.BOOL: '?'}\n",
            "the per-dtype table 'T'",
        ),
        (
            "pypto/runtime/x.py",
            "C = {'f4': DataType.FP32, 'f2': DataType.FP16, 'i1': DataType.INT8, 'i2': DataType.INT16, "
            "'b1': DataType.BOOL}\n",
            "the per-dtype table 'C'",
        ),
        ("pypto/runtime/x.py", "import os\nos.replace(a, b)\n", "a call of os.replace (an atomic write)"),
        (
            "pypto/ir/x.py",
            "import tempfile\ntempfile.mkstemp()\n",
            "a call of tempfile.mkstemp (an atomic write)",
        ),
    ],
)
def test_planted_copy_is_caught(tmp_path: Path, module: str, source: str, what: str) -> None:
    path = tmp_path / "planted.py"
    path.write_text(source)
    found = list(vocabulary.check_module(path, module, vocabulary.words()))
    assert [c.what for c in found] == [what]
    assert "import it from there" in str(found[0])


@pytest.mark.parametrize(
    ("module", "source"),
    [
        (vocabulary.PLATFORMS_HOME, "DEFAULT_PLATFORM = 'a2a3sim'\n"),
        (vocabulary.CONTRACT_HOME, "PROGRAM = 'PROGRAM'\n"),
        (vocabulary.NZ_HOME, "NZ_BLOCK_ROWS = 16\n"),
        (vocabulary.ATOMIC_WRITE_HOME, "import os\nos.replace(a, b)\nos.fsync(fd)\n"),
        (vocabulary.STORE_FS, "import os\nos.fsync(fd)\n"),
        ("pypto/runtime/x.py", '"""Runs on ``a2a3sim`` by default."""\n'),
        ("pypto/runtime/x.py", "def f():\n    'a2a3sim'\n"),
        ("pypto/runtime/x.py", "msg = f'platform a2a3sim: {x}'\nhelp = 'the KERNEL contract'\n"),
        (
            "pypto/runtime/x.py",
            "T = {DataType.FP32: 1, DataType.FP16: 2, DataType.INT8: 3, DataType.BOOL: 4}\n",
        ),
        (
            "pypto/torch/registration.py",
            "_SCALAR_TYPES = {" + ", ".join(f"DataType.T{i}: 'x'" for i in range(6)) + "}\n",
        ),
    ],
)
def test_homes_and_text_are_not_copies(tmp_path: Path, module: str, source: str) -> None:
    path = tmp_path / "planted.py"
    path.write_text(source)
    assert list(vocabulary.check_module(path, module, vocabulary.words())) == []


def test_missing_package_sources_are_an_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="pypto-ir"):
        vocabulary.find_copies(tmp_path)
