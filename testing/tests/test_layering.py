"""The layering rule holds for the repository, and the checker catches planted violations."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pypto_testing.layering import LAYERS, check_layers

REPO = Path(__file__).resolve().parents[2]


def test_repository_respects_layers() -> None:
    violations = check_layers(REPO)
    assert not violations, "\n".join(map(str, violations))


def _copy_tree(tmp_path: Path) -> Path:
    for layer in LAYERS:
        shutil.copytree(
            REPO / layer.src, tmp_path / layer.src, ignore=shutil.ignore_patterns("*.so", "include")
        )
    return tmp_path


@pytest.mark.parametrize(
    ("relpath", "source", "imported"),
    [
        ("packages/pypto-ir/src/pypto/ir/_planted.py", "import simpler\n", "simpler"),
        (
            "packages/pypto-ir/src/pypto/ir/_planted.py",
            "def f():\n    from pypto.runtime import x\n",
            "pypto.runtime",
        ),
        ("packages/pypto-ir/src/pypto/ir/_planted.py", "from pypto import torch\n", "pypto.torch"),
        (
            "packages/pypto-ir/src/pypto/ir/_planted.py",
            "import importlib\nimportlib.import_module('simpler.kernel')\n",
            "simpler.kernel",
        ),
        ("packages/pypto-ir/src/pypto/ir/_planted.py", "__import__('torch')\n", "torch"),
        ("packages/pypto-ir/src/pypto/ir/_planted.py", "from ..runtime import store\n", "pypto.runtime"),
        ("packages/simpler-native/src/simpler/_planted.py", "import pypto.ir\n", "pypto.ir"),
        (
            "packages/pypto-runtime/src/pypto/runtime/_planted.py",
            "import pypto.torch.interop\n",
            "pypto.torch.interop",
        ),
        (
            "packages/pypto-runtime/src/pypto/runtime/_planted.py",
            "from importlib import import_module\nimport_module('torch_npu')\n",
            "torch_npu",
        ),
        ("packages/pypto-torch/src/pypto/torch/_planted.py", "import torch_npu\n", "torch_npu"),
    ],
)
def test_planted_violation_is_caught(tmp_path: Path, relpath: str, source: str, imported: str) -> None:
    root = _copy_tree(tmp_path)
    (root / relpath).write_text(source)
    violations = check_layers(root)
    planted = [v for v in violations if v.path == root / relpath]
    assert planted, violations
    assert planted[0].imported.startswith(imported)
    assert len(violations) == len(planted), "the planted file is the only violation"

    assert "above or beside its layer" in str(violations[0])


def test_allowed_downward_import_passes(tmp_path: Path) -> None:
    root = _copy_tree(tmp_path)
    (root / "packages/pypto-torch/src/pypto/torch/_planted.py").write_text(
        "import simpler\nimport pypto.runtime\nfrom pypto.ir import param_info\nimport torch\n"
    )
    assert check_layers(root) == []


def test_missing_layer_folder_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="simpler-native"):
        check_layers(tmp_path)


def test_no_new_function_level_import_dodges_a_cycle() -> None:
    from pypto_testing.cycles import cycle_dodges

    dodges = cycle_dodges(REPO)
    assert not dodges, "\n".join(map(str, dodges))


def test_the_cycle_allowlist_names_only_dodges_that_exist() -> None:
    from pypto_testing.cycles import ALLOWED, cycle_dodges

    stale = set(ALLOWED) - {(d.module, d.imported) for d in cycle_dodges(REPO, ())}
    assert not stale, f"no longer needed, remove from ALLOWED: {sorted(stale)}"


def test_a_planted_cycle_dodge_is_caught(tmp_path: Path) -> None:
    from pypto_testing.cycles import SOURCES, cycle_dodges

    for rel in SOURCES:
        (tmp_path / rel).mkdir(parents=True)
    pkg = tmp_path / SOURCES[0] / "pypto" / "ir"
    pkg.mkdir(parents=True)
    (pkg / "a.py").write_text("from pypto.ir import b\n")
    (pkg / "b.py").write_text("def f():\n    from pypto.ir import a\n")
    (pkg / "c.py").write_text("def g():\n    from pypto.ir import a\n")  # lazy, no cycle: fine
    found = cycle_dodges(tmp_path, ())
    assert [(d.module, d.imported) for d in found] == [("pypto.ir.b", "pypto.ir.a")]
