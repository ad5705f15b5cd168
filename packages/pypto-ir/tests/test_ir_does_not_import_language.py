"""``pypto.ir`` (IR, passes, codegen, metadata) imports nothing from ``pypto.language``.

The frontend (parser, op builders, folding, JIT) lives in ``pypto.language`` and builds on
``pypto.ir``; the other direction would make the two packages import each other. Checked
statically on every module under ``pypto/ir``, lazy (function-level) imports included.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pypto.ir

IR_DIR = Path(pypto.ir.__file__).resolve().parent


def _language_imports(path: Path, text: str | None = None) -> list[str]:
    source = path.read_text(encoding="utf-8") if text is None else text
    tree = ast.parse(source, str(path))
    found = []
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against the module's package
                parts = ["pypto", *path.relative_to(IR_DIR.parent).with_suffix("").parts]
                base = parts[: len(parts) - node.level]
                names = [".".join([*base, node.module] if node.module else base)]
            else:
                names = [node.module or ""]
            names += [f"{names[0]}.{a.name}" for a in node.names]
        where = f"{path.relative_to(IR_DIR.parent)}:{getattr(node, 'lineno', 0)}"
        found.extend(
            f"{where}: imports {name}"
            for name in names
            if name == "pypto.language" or name.startswith("pypto.language.")
        )
    return found


def test_ir_modules_exist() -> None:
    files = sorted(IR_DIR.rglob("*.py"))
    assert IR_DIR / "pipeline.py" in files
    assert IR_DIR / "passes" / "ssa.py" in files


def test_pypto_ir_imports_nothing_from_pypto_language() -> None:
    bad = [hit for f in sorted(IR_DIR.rglob("*.py")) for hit in _language_imports(f)]
    assert not bad, "pypto.ir must not import pypto.language:\n" + "\n".join(bad)


def test_the_check_sees_an_import_of_pypto_language() -> None:
    probe = IR_DIR / "passes" / "probe.py"  # never written: the text is passed in
    for code in (
        "from pypto.language import typing as lt\n",
        "import pypto.language.dsl\n",
        "def f():\n    from pypto import language\n",
        "from ...language import parser\n",
    ):
        assert _language_imports(probe, code), code
    assert not _language_imports(probe, "from pypto.ir import nodes\nfrom .. import verifier\n")


def test_the_frontend_names_resolve_from_their_one_module() -> None:
    import importlib

    import pypto.language as pl
    from pypto.language import decorators, parser

    jit = importlib.import_module("pypto.language.jit")  # pl.jit, the attribute, is the decorator

    assert pl.jit is jit.jit
    assert jit.JITFunction is pl.JITFunction
    assert not hasattr(decorators, "JITFunction")  # no forward: one home per name
    assert callable(parser.parse_function)
