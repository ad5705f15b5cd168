"""The shared vocabulary of the stack has one home per word, and a checker for copies.

Above simpler (which keeps its own platform, dtype and mode vocabulary as the bottom layer;
``testing/tests/test_cross_package.py`` compares the two), each of these is defined in one
module and imported everywhere else:

====================================================  ===================================
what                                                  home
====================================================  ===================================
platform names, hardware names, runtime names,        ``pypto/ir/platforms.py``
``DEFAULT_PLATFORM``, ``DEFAULT_RUNTIME``
contract names ``PROGRAM``/``KERNEL``, device kinds   ``pypto/ir/contract.py``
``SIM``/``ONBOARD``
NZ block geometry (``NZ_BLOCK_ROWS``/``_BYTES``)      ``pypto/ir/param_info.py``
the dtype table (wire codes and names, C++ types,     ``pypto/ir/dtypes.py``
numpy codes, array names)
atomic file writes (temp file, fsync, rename)         ``pypto/ir/files.py``
====================================================  ===================================

The checker reads the sources of pypto-ir, pypto-runtime and pypto-torch (AST, nothing is
imported) and reports, outside the homes:

- a string constant that is exactly one of the words (docstrings and other bare string
  statements may mention them as text; longer strings such as messages are not words);
- an assignment to a name that is an NZ geometry constant (``NZ_BLOCK_ROWS``, ``_NZ_BLOCK_BYTES``);
- a dict literal with five or more ``DataType`` members as keys or as values (a per-dtype
  table, or its inverse), except the tables in :data:`DTYPE_TABLE_EXCEPTIONS`;
- a call of ``os.replace``, ``os.fsync`` or ``tempfile.mkstemp``/``NamedTemporaryFile``
  (``os.fsync`` is also allowed in the store's filesystem module, which fsyncs the files it
  copies and the directories it fills).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

SCANNED = ("packages/pypto-ir/src", "packages/pypto-runtime/src", "packages/pypto-torch/src")

PLATFORMS_HOME = "pypto/ir/platforms.py"
CONTRACT_HOME = "pypto/ir/contract.py"
NZ_HOME = "pypto/ir/param_info.py"
DTYPES_HOME = "pypto/ir/dtypes.py"
ATOMIC_WRITE_HOME = "pypto/ir/files.py"
STORE_FS = "pypto/runtime/_fs.py"

# module -> names of per-dtype tables that state a fact of that module's own domain, not a
# column of the dtype table: torch's operator-schema type of a scalar parameter.
DTYPE_TABLE_EXCEPTIONS: Mapping[str, frozenset[str]] = {
    "pypto/torch/registration.py": frozenset({"_SCALAR_TYPES"}),
}

# call (module attribute) -> modules allowed to make it
_CALL_HOMES: Mapping[tuple[str, str], frozenset[str]] = {
    ("os", "replace"): frozenset({ATOMIC_WRITE_HOME}),
    ("os", "fsync"): frozenset({ATOMIC_WRITE_HOME, STORE_FS}),
    ("tempfile", "mkstemp"): frozenset({ATOMIC_WRITE_HOME}),
    ("tempfile", "NamedTemporaryFile"): frozenset({ATOMIC_WRITE_HOME}),
}
_NZ_NAMES = frozenset({"NZ_BLOCK_ROWS", "NZ_BLOCK_BYTES"})
_MIN_DTYPE_KEYS = 5


@dataclass(frozen=True)
class Copy:
    """One piece of the vocabulary defined outside its home."""

    path: Path
    line: int
    what: str
    home: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.what} belongs in {self.home}; import it from there"


def words() -> dict[str, str]:
    """Every vocabulary word -> its home module, read from the homes themselves (so a new
    platform or runtime is guarded from the day it is added)."""
    from pypto.ir import PLATFORM_TABLE, RUNTIMES, Contract, DeviceKind

    out: dict[str, str] = {}
    for p in PLATFORM_TABLE.values():
        out[p.name] = out[p.hardware] = PLATFORMS_HOME
    for r in RUNTIMES:
        out[r] = PLATFORMS_HOME
    for enum_ in (Contract, DeviceKind):
        for member in enum_:
            out[member.value] = CONTRACT_HOME
    return out


def module_name(path: Path, src: Path) -> str:
    """``pypto/ir/platforms.py`` for ``<src>/pypto/ir/platforms.py``."""
    return path.relative_to(src).as_posix()


def find_copies(root: Path, vocabulary: Mapping[str, str] | None = None) -> list[Copy]:
    """Every copy in the scanned sources under the repository ``root``."""
    vocabulary = words() if vocabulary is None else vocabulary
    found: list[Copy] = []
    for rel in SCANNED:
        src = root / rel
        if not src.is_dir():
            raise FileNotFoundError(f"{src}: the sources of a scanned package are missing")
        for path in sorted(src.rglob("*.py")):
            found.extend(check_module(path, module_name(path, src), vocabulary))
    return found


def _bare_strings(tree: ast.AST) -> set[int]:
    """ids of string constants that are whole statements (docstrings and their like)."""
    return {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    }


def _targets(node: ast.AST) -> Iterator[str]:
    targets: Iterable[ast.AST] = ()
    if isinstance(node, ast.Assign):
        targets = node.targets
    elif isinstance(node, ast.AnnAssign | ast.AugAssign):
        targets = (node.target,)
    for t in targets:
        if isinstance(t, ast.Name):
            yield t.id
        elif isinstance(t, ast.Tuple):
            yield from (e.id for e in t.elts if isinstance(e, ast.Name))


def check_module(path: Path, module: str, vocabulary: Mapping[str, str]) -> Iterator[Copy]:
    """The copies in one source file, ``module`` being its path below its ``src`` folder."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    bare = _bare_strings(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in bare:
            home = vocabulary.get(node.value)
            if home is not None and home != module:
                yield Copy(path, node.lineno, f"the literal {node.value!r}", home)
        elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            for name in _targets(node):
                if module != NZ_HOME and name.lstrip("_") in _NZ_NAMES:
                    yield Copy(path, node.lineno, f"NZ block geometry {name!r}", NZ_HOME)
                if (
                    module != DTYPES_HOME
                    and isinstance(node.value, ast.Dict)
                    and _dtype_members(node.value) >= _MIN_DTYPE_KEYS
                    and name not in DTYPE_TABLE_EXCEPTIONS.get(module, frozenset())
                ):
                    yield Copy(path, node.lineno, f"the per-dtype table {name!r}", DTYPES_HOME)
        elif isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name):
                homes = _CALL_HOMES.get((f.value.id, f.attr))
                if homes is not None and module not in homes:
                    yield Copy(
                        path,
                        node.lineno,
                        f"a call of {f.value.id}.{f.attr} (an atomic write)",
                        ATOMIC_WRITE_HOME,
                    )


def _dtype_members(d: ast.Dict) -> int:
    """How many ``DataType.X`` the dict has as keys, or as values if more."""

    def count(nodes: Iterable[ast.expr | None]) -> int:
        return sum(
            1
            for n in nodes
            if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "DataType"
        )

    return max(count(d.keys), count(d.values))
