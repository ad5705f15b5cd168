"""Run code in a fresh interpreter with optional runtime modules blocked.

A package that must import without ``torch_npu``, ``simpler`` or a native launch extension
proves it by running its imports through :func:`run_without_optional_runtime`. A meta-path
finder, installed before the code runs, refuses every blocked module and records each
attempt in a report file, so an attempt is seen even when the caller catches the
ImportError, even when the module does not exist on this machine, and under ``-O``/``-OO``
(the finder uses no ``assert``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

DEFAULT_BLOCKED: tuple[str, ...] = (
    "torch_npu",
    "simpler_setup",
    "_task_interface",
    "pypto._torch_npu",
)
"""Modules that no package's import may need: the NPU stack and native launch extensions.

``simpler`` is added by tests of layers that must not depend on it (pypto-ir, and the
torch package's interop and registration modules).
"""

# Runs first in the child. It reads its settings from the environment so that the user
# code stays a plain string.
_BOOTSTRAP = r"""
import importlib.abc, json, os, sys

_blocked = tuple(json.loads(os.environ["PYPTO_TESTING_BLOCKED"]))
_report = os.environ["PYPTO_TESTING_REPORT"]


def _is_blocked(fullname):
    for name in _blocked:
        if fullname == name or fullname.startswith(name + "."):
            return name
    return None


class _BlockOptionalRuntime(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        name = _is_blocked(fullname)
        if name is None:
            return None
        with open(_report, "a", encoding="utf-8") as f:
            f.write(fullname + "\n")
        raise ModuleNotFoundError(
            f"{fullname!r} is blocked in this test: the code under test must not import it",
            name=fullname,
        )


for _name in list(sys.modules):
    if _is_blocked(_name):
        raise SystemExit(f"blocked module {_name!r} was imported before the test code ran")
sys.meta_path.insert(0, _BlockOptionalRuntime())
del _name
"""


@dataclass(frozen=True)
class IsolatedRun:
    """Outcome of one isolated run."""

    returncode: int
    stdout: str
    stderr: str
    attempted: tuple[str, ...]
    """Blocked modules the code tried to import, in order (caught ImportErrors included)."""

    def check(self) -> IsolatedRun:
        """Raise AssertionError if the code failed or attempted a blocked import."""
        if self.attempted:
            raise AssertionError(
                "blocked optional-runtime imports were attempted: "
                + ", ".join(self.attempted)
                + f"\nstderr:\n{self.stderr}"
            )
        if self.returncode != 0:
            raise AssertionError(
                f"isolated run exited with {self.returncode}\nstdout:\n{self.stdout}\nstderr:\n{self.stderr}"
            )
        return self


def run_without_optional_runtime(
    code: str,
    *,
    blocked: Iterable[str] = DEFAULT_BLOCKED,
    optimize: int = 0,
    env: Mapping[str, str] | None = None,
    timeout: float = 120.0,
) -> IsolatedRun:
    """Run ``code`` in a fresh interpreter where ``blocked`` modules cannot be imported.

    Args:
        code: Python source to run after the blocking finder is installed.
        blocked: Module names to block (a name blocks its submodules too).
        optimize: 0, 1 or 2: run with no flag, ``-O`` or ``-OO``.
        env: Extra environment variables for the child.
        timeout: Seconds before the child is killed.

    Returns:
        An :class:`IsolatedRun`; call ``.check()`` to require a clean run.

    The child runs with ``TORCH_DEVICE_BACKEND_AUTOLOAD=0`` so that PyTorch does not load
    device backends (such as torch_npu) by itself.

    Example:
        >>> run_without_optional_runtime("import json").check().returncode
        0
    """
    if optimize not in (0, 1, 2):
        raise ValueError(f"optimize: expected 0, 1 or 2, got {optimize!r}")
    blocked_names = tuple(blocked)
    if not blocked_names or not all(isinstance(n, str) and n for n in blocked_names):
        raise ValueError(f"blocked: expected non-empty module names, got {blocked_names!r}")
    with tempfile.TemporaryDirectory(prefix="pypto-isolated-") as tmp:
        report = Path(tmp) / "attempted.txt"
        report.touch()
        child_env = dict(os.environ)
        child_env.update(env or {})
        child_env.update(
            {
                "PYPTO_TESTING_BLOCKED": json.dumps(blocked_names),
                "PYPTO_TESTING_REPORT": str(report),
                "TORCH_DEVICE_BACKEND_AUTOLOAD": "0",
            }
        )
        child_env.pop("PYTHONOPTIMIZE", None)
        flags = ["-O"] * optimize
        program = _BOOTSTRAP + "\n" + code
        proc = subprocess.run(
            [sys.executable, *flags, "-c", program],
            env=child_env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        attempted = tuple(line for line in report.read_text().splitlines() if line)
    return IsolatedRun(proc.returncode, proc.stdout, proc.stderr, attempted)
