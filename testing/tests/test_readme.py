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


CHECKS = (
    "\nassert np.allclose(out, a + b), 'README example computed a wrong sum'\n",
    "\ntorch.testing.assert_close(out, x + 2.0 * y)\n",
)


@pytest.mark.parametrize("index", range(len(CHECKS)))
def test_readme_example_runs(tmp_path: Path, index: int) -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    assert len(blocks) == len(CHECKS), "README.md's python examples and their checks differ in number"
    code = blocks[index] + CHECKS[index]
    script = tmp_path / "readme_example.py"  # kernels are parsed from their source file
    script.write_text(code)
    env = {**os.environ, "PYPTO_CACHE_DIR": str(tmp_path / "cache")}
    proc = subprocess.run(
        [sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert proc.returncode == 0, proc.stderr
