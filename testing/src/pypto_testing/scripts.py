"""Running a Python file the way a user would: a fresh interpreter, its own working directory,
and a given artifact store (shared by the tests that run docs and tutorial programs); and the
text of a small program such scripts start from."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

__all__ = ["ADD_PROGRAM_SOURCE", "run_python", "run_python_file", "run_user_script", "traceback_frames"]

# The text of a script's ``add(a, b, out)`` (out = a + b, one kernel named ``add``), for the tests
# that write a user's program and run it in a fresh interpreter; it imports only pypto.language.
ADD_PROGRAM_SOURCE = """
import pypto.language as pl


@pl.jit
def add(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="add"):
        out[:] = pl.add(a, b)
    return out

"""


def run_python(
    args: Sequence[str],
    cache_dir: Path,
    *,
    cwd: Path | None = None,
    timeout: float = 300,
    env: Mapping[str, str] | None = None,
    cache_settings: bool = True,
) -> subprocess.CompletedProcess[str]:
    """``python ARGS`` with this interpreter (in ``cwd``), its store at ``cache_dir``, in this
    process's environment (without its other PYPTO_CACHE* settings unless ``cache_settings``)
    plus ``env``."""
    inherited = {k: v for k, v in os.environ.items() if cache_settings or not k.startswith("PYPTO_CACHE")}
    env = {**inherited, **(env or {}), "PYPTO_CACHE_DIR": str(cache_dir)}
    return subprocess.run(
        [sys.executable, *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def run_python_file(
    path: Path, workdir: Path, cache_dir: Path, timeout: float = 300, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``path`` with this interpreter in ``workdir``, its store at ``cache_dir``; ``env``
    adds to (or overrides) this process's environment."""
    return run_python([str(path)], cache_dir, cwd=workdir, timeout=timeout, env=env)


def run_user_script(
    script: Path, text: str, cache_dir: Path, full_traceback: str | None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """Write ``text`` to ``script`` and run it with this interpreter, its store at ``cache_dir``,
    ``PYPTO_FULL_TRACEBACK`` set to ``full_traceback`` (None: not set, whatever this process
    has): for the tests that read the traceback a user's mistake prints."""
    script.write_text(text)
    env = {k: v for k, v in os.environ.items() if k != "PYPTO_FULL_TRACEBACK"}
    if full_traceback is not None:
        env["PYPTO_FULL_TRACEBACK"] = full_traceback
    env["PYPTO_CACHE_DIR"] = str(cache_dir)
    return subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, env=env, check=False, timeout=timeout
    )


def traceback_frames(stderr: str) -> list[str]:
    """The ``File "..."`` lines of the tracebacks in ``stderr``, stripped, in order."""
    return [ln.strip() for ln in stderr.splitlines() if ln.strip().startswith('File "')]
