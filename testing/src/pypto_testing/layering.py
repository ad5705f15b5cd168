"""The layering rule of the monorepo, and a checker that walks every module's imports.

A package imports only packages below it::

    pypto-torch    -> pypto-runtime, pypto-ir, simpler-native, torch (torch_npu lazily, in one place)
    pypto-runtime  -> pypto-ir, simpler-native (torch lazily, in its distributed engine only: the
                      pypto-runtime[distributed] extra)
    pypto-ir       -> (no other project package)
    simpler-native -> (no other project package)

Imports are found in the AST: ``import``, ``from ... import`` (relative ones resolved) and
constant string arguments of ``importlib.import_module`` and ``__import__``, wherever they
appear (module level or inside functions).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

# Names that the rule governs; imports of anything else (stdlib, third-party helpers that a
# package declares) are not this checker's business.
GOVERNED = (
    "simpler",
    "pypto.backend",
    "pypto.ir",
    "pypto.language",
    "pypto.runtime",
    "pypto.torch",
    "pypto._torch_npu",
    "torch",
    "torch_npu",
)


@dataclass(frozen=True)
class Layer:
    """One wheel: where its sources are, what it may import, and narrow exceptions."""

    wheel: str
    src: str  # relative to the repository root
    allowed: tuple[str, ...]
    # module -> extra names that this one module may import (lazy optional backends)
    exceptions: tuple[tuple[str, tuple[str, ...]], ...] = ()


LAYERS: tuple[Layer, ...] = (
    Layer("simpler-native", "packages/simpler-native/src", ("simpler",)),
    Layer("pypto-ir", "packages/pypto-ir/src", ("pypto.ir", "pypto.language", "pypto.backend")),
    Layer(
        "pypto-runtime",
        "packages/pypto-runtime/src",
        ("pypto.runtime", "pypto.ir", "pypto.language", "simpler"),
        # The multi-chip runtime (pypto.runtime.distributed, torch declared by the
        # pypto-runtime[distributed] extra, loaded only when used): its rank engine (_engine,
        # and launched for ranks torchrun started) loads torch when a distributed program is
        # prepared; the process-group data path carries the ranks' cross-rank requests over gloo
        # (rank processes only); distributed_runner loads it only when a SubWorker callback asks
        # for a torch view of its argument (upstream's _tensor_from_continuous). Single-chip
        # programs import none of them (tests/test_imports.py checks sys.modules).
        exceptions=(
            ("pypto.runtime.distributed._engine", ("torch",)),
            ("pypto.runtime.distributed.launched", ("torch",)),
            ("pypto.runtime.distributed._gloo_path", ("torch",)),
            ("pypto.runtime.distributed_runner", ("torch",)),
        ),
    ),
    Layer(
        "pypto-torch",
        "packages/pypto-torch/src",
        ("pypto.torch", "pypto.runtime", "pypto.ir", "pypto.language", "simpler", "torch"),
        # The NPU platform module is the one place in pypto.torch that loads torch_npu and the
        # optional native adapter, on demand; the adapter's own package loads torch_npu and its
        # native module.
        exceptions=(
            ("pypto.torch._platform.npu", ("torch_npu", "pypto._torch_npu")),
            ("pypto._torch_npu", ("torch_npu", "pypto._torch_npu")),
        ),
    ),
)


@dataclass(frozen=True)
class Violation:
    wheel: str
    module: str
    path: Path
    line: int
    imported: str

    def __str__(self) -> str:
        return (
            f"{self.path}:{self.line}: {self.module} ({self.wheel}) imports {self.imported!r}, "
            "which is above or beside its layer"
        )


def _matches(name: str, prefixes: Iterable[str]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def _module_name(src_root: Path, path: Path) -> tuple[str, bool]:
    rel = path.relative_to(src_root).with_suffix("")
    parts = list(rel.parts)
    is_package = parts[-1] == "__init__"
    if is_package:
        parts = parts[:-1]
    return ".".join(parts), is_package


def _resolve_relative(module: str, is_package: bool, level: int, target: str | None) -> str:
    base = module.split(".") if is_package else module.split(".")[:-1]
    if level > 1:
        base = base[: len(base) - (level - 1)]
    return ".".join([*base, target] if target else base)


def imports_of(path: Path, module: str, is_package: bool) -> Iterator[tuple[int, str]]:
    """Yield (line, absolute module name) for every import the file makes."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            base = (
                _resolve_relative(module, is_package, node.level, node.module)
                if node.level
                else (node.module or "")
            )
            yield node.lineno, base
            for alias in node.names:  # `from pypto import torch` imports pypto.torch
                yield node.lineno, f"{base}.{alias.name}"
        elif isinstance(node, ast.Call) and node.args:
            func = node.func
            name = (
                func.attr
                if isinstance(func, ast.Attribute)
                else func.id
                if isinstance(func, ast.Name)
                else ""
            )
            first = node.args[0]
            if (
                name in ("import_module", "__import__")
                and isinstance(first, ast.Constant)
                and isinstance(first.value, str)
            ):
                yield node.lineno, first.value


def check_layers(root: Path, layers: Iterable[Layer] = LAYERS) -> list[Violation]:
    """Return every import in ``root``'s packages that breaks the layering rule."""
    violations: list[Violation] = []
    for layer in layers:
        src_root = root / layer.src
        if not src_root.is_dir():
            raise FileNotFoundError(f"layer {layer.wheel}: source folder {src_root} does not exist")
        exceptions = dict(layer.exceptions)
        for path in sorted(src_root.rglob("*.py")):
            module, is_package = _module_name(src_root, path)
            allowed = layer.allowed + exceptions.get(module, ())
            for line, imported in imports_of(path, module, is_package):
                if _matches(imported, GOVERNED) and not _matches(imported, allowed):
                    violations.append(Violation(layer.wheel, module, path, line, imported))
    return violations
