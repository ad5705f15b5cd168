"""The layers above pypto-ir use its faces: ``from pypto.ir import <name in pypto.ir.__all__>``,
and of pypto.language only ``pypto.language`` (pl), ``pypto.language.distributed`` (pld) and
``pypto.language.interface`` (what runtimes use), each by the names its ``__all__`` lists.

pypto-runtime, pypto-torch and pypto-testing import no pypto-ir submodule and no name that
``pypto.ir.__all__`` does not list; pypto-runtime and pypto-testing import no other
pypto.language submodule (pypto-torch's ``library.py`` still imports ``pypto.language.jit`` and
``binding``: it is being reworked, and moves to ``pypto.language.interface`` with it). The
checkers also catch planted violations.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ir = pytest.importorskip("pypto.ir", reason="pypto-ir is not installed in this session")

REPO = Path(__file__).resolve().parents[2]
UPPER = ("packages/pypto-runtime/src", "packages/pypto-torch/src", "testing/src")


def face_violations(root: Path, public: set[str]) -> list[str]:
    """Every import under ``root``'s upper-layer sources that goes past pypto.ir's face."""
    found = []
    for rel in UPPER:
        for path in sorted((root / rel).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
            for node in ast.walk(tree):
                where = f"{path.relative_to(root)}:{getattr(node, 'lineno', 0)}"
                if isinstance(node, ast.Import):
                    found += [
                        f"{where}: import {a.name}" for a in node.names if a.name.startswith("pypto.ir.")
                    ]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    if node.module.startswith("pypto.ir."):
                        found.append(f"{where}: from {node.module} import ...")
                    elif node.module == "pypto.ir":
                        found += [
                            f"{where}: from pypto.ir import {a.name} (not in pypto.ir.__all__)"
                            for a in node.names
                            if a.name not in public
                        ]
    return found


LANGUAGE_UPPER = ("packages/pypto-runtime/src", "testing/src")
LANGUAGE_FACES = ("pypto.language", "pypto.language.distributed", "pypto.language.interface")


def language_face_violations(root: Path, public: dict[str, set[str]]) -> list[str]:
    """Every import under ``root``'s upper-layer sources past pypto.language's faces (``public``:
    face module -> the names its ``__all__`` lists)."""
    found = []
    for rel in LANGUAGE_UPPER:
        for path in sorted((root / rel).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
            for node in ast.walk(tree):
                where = f"{path.relative_to(root)}:{getattr(node, 'lineno', 0)}"
                if isinstance(node, ast.Import):
                    found += [
                        f"{where}: import {a.name}"
                        for a in node.names
                        if a.name.startswith("pypto.language.") and a.name not in public
                    ]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    module = node.module
                    if module.startswith("pypto.language.") and module not in public:
                        found.append(f"{where}: from {module} import ...")
                    elif module in public:
                        found += [
                            f"{where}: from {module} import {a.name} (not in {module}.__all__)"
                            for a in node.names
                            if a.name not in public[module]
                        ]
    return found


def _language_faces() -> dict[str, set[str]]:
    import importlib

    return {name: set(importlib.import_module(name).__all__) for name in LANGUAGE_FACES}


def test_upper_layers_import_only_pypto_language_faces() -> None:
    violations = language_face_violations(REPO, _language_faces())
    assert not violations, "import it from pypto.language.interface (add it there if missing):\n" + "\n".join(
        violations
    )


@pytest.mark.parametrize(
    "source",
    [
        "from pypto.language.binding import is_tensor\n",
        "def f():\n    from pypto.language.jit import JITFunction\n",
        "import pypto.language.parser\n",
        "from pypto.language.interface import parse_function\n",
        "from pypto.language import _marker\n",
    ],
)
def test_a_planted_import_past_a_language_face_is_caught(tmp_path: Path, source: str) -> None:
    for rel in LANGUAGE_UPPER:
        (tmp_path / rel).mkdir(parents=True)
    (tmp_path / LANGUAGE_UPPER[0] / "planted.py").write_text(source)
    assert len(language_face_violations(tmp_path, _language_faces())) == 1


def test_every_language_interface_name_resolves() -> None:
    from pypto.language import interface

    for name in interface.__all__:
        assert getattr(interface, name) is not None, name
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        interface.nope  # noqa: B018


def test_upper_layers_import_only_the_face() -> None:
    violations = face_violations(REPO, set(ir.__all__))
    assert not violations, "add the name to pypto.ir's face or import it from there:\n" + "\n".join(
        violations
    )


@pytest.mark.parametrize(
    "source",
    [
        "from pypto.ir.dtypes import DataType\n",
        "def f():\n    from pypto.ir.compile import compile_to_files\n",
        "import pypto.ir.metadata\n",
        "from pypto.ir import _FACE\n",
        "from pypto.ir import signature_of\n",
    ],
)
def test_a_planted_import_past_the_face_is_caught(tmp_path: Path, source: str) -> None:
    for rel in UPPER:
        (tmp_path / rel).mkdir(parents=True)
    (tmp_path / UPPER[0] / "planted.py").write_text(source)
    assert len(face_violations(tmp_path, set(ir.__all__))) == 1


def test_every_face_name_resolves() -> None:
    assert set(ir.__all__) == set(ir._FACE) | {"__version__"}
    for name in ir.__all__:
        assert getattr(ir, name) is not None, name
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        ir.nope  # noqa: B018


def test_importing_one_module_does_not_load_the_compiler() -> None:
    code = "import sys, pypto.ir.dtypes; print('pypto.ir.compile' in sys.modules, 'pypto.ir.codegen' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_pypto_torch_exports_its_face() -> None:
    torch_face = pytest.importorskip("pypto.torch", reason="pypto-torch is not installed in this session")
    from pypto.torch.interop import CallFrame, CallSignature
    from pypto.torch.registration import RegistrationSignature

    missing = [n for n in torch_face.__all__ if not hasattr(torch_face, n)]
    assert not missing
    assert (torch_face.CallSignature, torch_face.CallFrame) == (CallSignature, CallFrame)
    assert torch_face.RegistrationSignature is RegistrationSignature
