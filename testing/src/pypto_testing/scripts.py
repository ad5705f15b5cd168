"""Running a Python file the way a user would: a fresh interpreter, its own working directory,
and a given artifact store (shared by the tests that run docs and tutorial programs)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

__all__ = ["run_python_file"]


def run_python_file(
    path: Path, workdir: Path, cache_dir: Path, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """Run ``path`` with this interpreter in ``workdir``, its store at ``cache_dir``."""
    env = {**os.environ, "PYPTO_CACHE_DIR": str(cache_dir)}
    return subprocess.run(
        [sys.executable, str(path)],
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
