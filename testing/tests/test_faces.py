"""The layers above pypto-ir use its faces: ``from pypto.ir import <name in pypto.ir.__all__>``,
and of pypto.language only ``pypto.language`` (pl), ``pypto.language.distributed`` (pld) and
``pypto.language.interface`` (what runtimes use), each by the names its ``__all__`` lists.

pypto-runtime, pypto-torch and pypto-testing import no pypto-ir submodule, no other
pypto.language submodule, and no name that the face's ``__all__`` does not list. The checkers
also catch planted violations.
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


LANGUAGE_UPPER = ("packages/pypto-runtime/src", "packages/pypto-torch/src", "testing/src")
LANGUAGE_FACES = ("pypto.language", "pypto.language.distributed", "pypto.language.interface")


def past_faces(root: Path, folders: tuple[str, ...], package: str, public: dict[str, set[str]]) -> list[str]:
    """Every import under ``root``'s ``folders`` of a ``package`` module that is not one of its
    faces, or of a name a face's ``__all__`` does not list (``public``: face -> its names)."""
    found = []
    for rel in folders:
        for path in sorted((root / rel).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
            for node in ast.walk(tree):
                where = f"{path.relative_to(root)}:{getattr(node, 'lineno', 0)}"
                if isinstance(node, ast.Import):
                    found += [
                        f"{where}: import {a.name}"
                        for a in node.names
                        if a.name.startswith(package + ".") and a.name not in public
                    ]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    module = node.module
                    if module.startswith(package + ".") and module not in public:
                        found.append(f"{where}: from {module} import ...")
                    elif module in public:
                        found += [
                            f"{where}: from {module} import {a.name} (not in {module}.__all__)"
                            for a in node.names
                            if a.name not in public[module]
                        ]
    return found


def _faces(package: str) -> tuple[tuple[str, ...], dict[str, set[str]]]:
    """(the folders checked, face -> its names) of ``package``."""
    import importlib

    if package == "pypto.ir":
        return UPPER, {"pypto.ir": set(ir.__all__)}
    return LANGUAGE_UPPER, {name: set(importlib.import_module(name).__all__) for name in LANGUAGE_FACES}


@pytest.mark.parametrize(
    ("package", "advice"),
    [
        ("pypto.ir", "add the name to pypto.ir's face or import it from there"),
        ("pypto.language", "import it from pypto.language.interface (add it there if missing)"),
    ],
)
def test_upper_layers_import_only_the_faces(package: str, advice: str) -> None:
    folders, public = _faces(package)
    violations = past_faces(REPO, folders, package, public)
    assert not violations, advice + ":\n" + "\n".join(violations)


@pytest.mark.parametrize(
    ("package", "source"),
    [
        ("pypto.ir", "from pypto.ir.dtypes import DataType\n"),
        ("pypto.ir", "def f():\n    from pypto.ir.compile import compile_to_files\n"),
        ("pypto.ir", "import pypto.ir.metadata\n"),
        ("pypto.ir", "from pypto.ir import _FACE\n"),
        ("pypto.ir", "from pypto.ir import signature_of\n"),
        ("pypto.language", "from pypto.language.binding import is_tensor\n"),
        ("pypto.language", "def f():\n    from pypto.language.jit import JITFunction\n"),
        ("pypto.language", "import pypto.language.parser\n"),
        ("pypto.language", "from pypto.language.interface import parse_function\n"),
        ("pypto.language", "from pypto.language import _marker\n"),
    ],
)
def test_a_planted_import_past_a_face_is_caught(tmp_path: Path, package: str, source: str) -> None:
    folders, public = _faces(package)
    for rel in folders:
        (tmp_path / rel).mkdir(parents=True)
    (tmp_path / folders[0] / "planted.py").write_text(source)
    assert len(past_faces(tmp_path, folders, package, public)) == 1


def test_every_face_name_resolves() -> None:
    from pypto.language import interface

    assert set(ir.__all__) == set(ir._FACE) | {"__version__"}
    for face in (ir, interface):
        for name in face.__all__:
            assert getattr(face, name) is not None, name
        with pytest.raises(AttributeError, match="no attribute 'nope'"):
            face.nope  # noqa: B018


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
