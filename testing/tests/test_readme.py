"""The README's example runs as written, and computes what it says."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pypto.runtime", reason="the whole stack is installed only in the `tests` session")

README = Path(__file__).resolve().parents[2] / "README.md"


def test_readme_example_runs(tmp_path: Path) -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    assert blocks, "README.md has no python example"
    code = blocks[0] + "\nassert np.allclose(out, a + b), 'README example computed a wrong sum'\n"
    script = tmp_path / "readme_example.py"  # kernels are parsed from their source file
    script.write_text(code)
    env = {**os.environ, "PYPTO_CACHE_DIR": str(tmp_path / "cache")}
    proc = subprocess.run(
        [sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert proc.returncode == 0, proc.stderr
