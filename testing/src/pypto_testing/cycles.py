"""Function-level imports that dodge an import cycle, and the ones that are allowed.

A function-level import of a module of the same stack is a *cycle dodge* when importing that
module at the top would close a cycle: the imported module (through its own top-level imports,
``TYPE_CHECKING`` blocks left out) already imports the importing one. Such imports hide a
structure problem (two modules that need each other), so a new one fails ``nox -s lint``
(``testing/tests/test_layering.py``) unless it is listed in :data:`ALLOWED` with its reason.
Lazy loading of an optional or heavy part (the multi-chip runtime, a platform backend) is a
reason; "it would not import otherwise" is not: move the shared code to where both can reach it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

__all__ = ["ALLOWED", "SOURCES", "CycleDodge", "cycle_dodges"]

SOURCES = ("packages/pypto-ir/src", "packages/pypto-runtime/src", "packages/pypto-torch/src")

# (importing module, imported module) -> why the import stays inside a function
ALLOWED: dict[tuple[str, str], str] = {
    ("pypto.ir.nodes", "pypto.ir.python_printer"): "the printer is built on the nodes; str(node) uses it",
    ("pypto.language.decorators", "pypto.language.distributed"): (
        "pld is a surface of its own, loaded with the multi-chip language only when a program has "
        "a host orchestrator"
    ),
    ("pypto.language.decorators", "pypto.language.host_outline"): (
        "host outlining runs only for programs with a host orchestrator"
    ),
    ("pypto.language.parser.calls", "pypto.language"): (
        "the parser resolves pl.* names against the package that imports it"
    ),
    ("pypto.language.parser.control", "pypto.language"): (
        "the parser resolves pl.* markers against the package that imports it"
    ),
    ("pypto.language.parser.expressions", "pypto.language"): (
        "the parser resolves pl.* names against the package that imports it"
    ),
    ("pypto.language.parser.launches", "pypto.language"): (
        "the parser resolves pl.* names against the package that imports it"
    ),
    ("pypto.language.parser.launches", "pypto.language.parser.tuples"): (
        "tuples extends the parser's task mixin; launches and tasks build tuple values"
    ),
    ("pypto.language.parser.tasks", "pypto.language.parser.tuples"): (
        "tuples extends the parser's task mixin; launches and tasks build tuple values"
    ),
    ("pypto.language.text", "pypto.language"): "pl.parse evaluates program text against pl itself",
    ("pypto.language.text", "pypto.language.decorators"): "pl.parse evaluates program text against pl itself",
    ("pypto.torch._platform.simulator", "pypto.torch._kernel.context"): (
        "a simulator stream or event orders the launches of the process's kernel context, which is "
        "made from the platform (this module's); it acts on the context current when it is used"
    ),
    ("pypto.runtime", "pypto.runtime.distributed.program"): (
        "the multi-chip runtime loads only when used (the @pl.jit.host compiler's first call)"
    ),
    (
        "pypto.runtime.call_plan",
        "pypto.runtime",
    ): "the shared Workers: program mode only, at a plan's first call",
    (
        "pypto.runtime.call_plan",
        "pypto.runtime.worker",
    ): "the shared Workers: program mode only, at a plan's first call",
    ("pypto.runtime.compiled", "pypto.runtime.call_plan"): "a program call plan is made at the first call",
    ("pypto.runtime.distributed.program", "pypto.runtime.distributed.program_plan"): (
        "a @pl.program host orchestrator is planned only when one is compiled"
    ),
    ("pypto.runtime.distributed.sub_workers", "pypto.runtime.distributed.worker"): (
        "sub-worker processes import the worker's callbacks only in the child"
    ),
    ("pypto.runtime.distributed.sub_workers", "pypto.runtime.distributed_runner"): (
        "upstream's torch view of a callback argument, loaded only when a callback asks for it"
    ),
    (
        "pypto.runtime.distributed.worker",
        "pypto.runtime.distributed",
    ): "the rank engine loads only at prepare()",
    (
        "pypto.runtime.distributed.worker",
        "pypto.runtime.distributed.rank",
    ): "the rank engine loads only at prepare()",
    (
        "pypto.runtime.runner",
        "pypto.runtime",
    ): "settings and the shared Workers, read only on the general path",
    ("pypto.runtime.runner", "pypto.runtime.worker"): "the shared Workers, only on the general path",
    ("pypto.torch._platform", "pypto.torch._platform.npu"): "a platform backend loads only when selected",
    (
        "pypto.torch._platform",
        "pypto.torch._platform.simulator",
    ): "a platform backend loads only when selected",
}


@dataclass(frozen=True)
class CycleDodge:
    module: str
    imported: str
    path: Path
    line: int

    def __str__(self) -> str:
        return (
            f"{self.path}:{self.line}: {self.module} imports {self.imported} inside a function, and "
            f"{self.imported} already imports {self.module}: a cycle dodged. Move what both need to "
            "a module both can import at the top, or list the pair in pypto_testing.cycles.ALLOWED "
            "with its reason"
        )


def _modules(root: Path) -> dict[str, tuple[Path, bool]]:
    found: dict[str, tuple[Path, bool]] = {}
    for rel in SOURCES:
        src = root / rel
        for path in sorted(src.rglob("*.py")):
            parts = list(path.relative_to(src).with_suffix("").parts)
            is_package = parts[-1] == "__init__"
            found[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return found


def _imports(
    module: str, is_package: bool, tree: ast.AST, known: dict[str, tuple[Path, bool]]
) -> Iterator[tuple[bool, int, str]]:
    """(inside a function, line, imported module of the stack) for every import of ``tree``."""

    def resolve(name: str) -> str | None:
        while name and name not in known:
            name = name.rpartition(".")[0]
        return name or None

    def targets(node: ast.Import | ast.ImportFrom) -> list[str]:
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            base = node.module or ""
            if node.level:
                parts = module.split(".") if is_package else module.split(".")[:-1]
                parts = parts[: len(parts) - (node.level - 1)]
                base = ".".join([*parts, *([node.module] if node.module else [])])
            names = [base, *(f"{base}.{a.name}" for a in node.names)]
        return [t for t in (resolve(n) for n in names) if t and t != module]

    def walk(node: ast.AST, inside: bool) -> Iterator[tuple[bool, int, str]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                continue
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                for t in targets(child):
                    yield inside, child.lineno, t
            yield from walk(child, inside or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)))

    yield from walk(tree, False)


def cycle_dodges(root: Path, allowed: Iterable[tuple[str, str]] = ALLOWED) -> list[CycleDodge]:
    """Every function-level import under ``root``'s sources that dodges a cycle and is not allowed."""
    known = _modules(root)
    top: dict[str, set[str]] = {}
    inner: dict[str, list[tuple[int, str]]] = {}
    for module, (path, is_package) in known.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        top[module], inner[module] = set(), []
        for inside, line, target in _imports(module, is_package, tree, known):
            if inside:
                inner[module].append((line, target))
            else:
                top[module].add(target)

    def reaches(start: str, goal: str) -> bool:
        seen, stack = set(), [start]
        while stack:
            m = stack.pop()
            if m == goal:
                return True
            if m not in seen:
                seen.add(m)
                stack.extend(top.get(m, ()))
        return False

    allowed = set(allowed)
    found = []
    for module, imports in inner.items():
        for line, target in imports:
            if (module, target) not in allowed and reaches(target, module):
                found.append(CycleDodge(module, target, known[module][0], line))
    return found
