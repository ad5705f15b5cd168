"""Checks of a built ``pypto._torch_npu._native`` on a machine without CANN (``nox -s npu-compile``).

Usage: python check_build.py BUILDDIR

1. The module exports its Python entry point, needs libtorch_npu.so, and links no Simpler code
   (no symbol of simpler's namespace, no simpler library).
2. Staged beside the package's ``__init__.py`` (and ``pypto/_npu_advice.py``, which it imports), importing ``pypto._torch_npu`` fails with the
   targeted "CANN's environment is missing" error (torch_npu cannot load CANN's libraries here), with
   and without PYTHONOPTIMIZE.
Exits nonzero with a message on the first failed check.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
PACKAGE = HERE.parent / "src" / "pypto" / "_torch_npu"


def _fail(message: str) -> int:
    print(f"FAIL npu adapter: {message}")
    return 1


def _tool(*args: str) -> str:
    return subprocess.run(args, capture_output=True, text=True, check=True).stdout


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        return _fail(f"usage: check_build.py BUILDDIR, got {argv}")
    built = sorted(Path(argv[0]).glob("_native*.so"))
    if len(built) != 1:
        return _fail(f"expected one _native*.so in {argv[0]}, found {[p.name for p in built]}")
    module = built[0]
    dynamic = _tool("readelf", "-d", str(module))
    symbols = _tool("nm", "-D", "-C", str(module))
    if "PyInit__native" not in symbols:
        return _fail(f"{module.name} exports no PyInit__native")
    if "libtorch_npu.so" not in dynamic:
        return _fail(f"{module.name} does not need libtorch_npu.so:\n{dynamic}")
    if "simpler" in symbols or "simpler" in dynamic:
        return _fail(f"{module.name} references simpler (the adapter links no Simpler code)")
    print(f"{module.name}: exports PyInit__native, needs libtorch_npu.so, references no simpler code")

    with tempfile.TemporaryDirectory() as tmp:
        staged = Path(tmp) / "pypto" / "_torch_npu"
        staged.mkdir(parents=True)
        shutil.copy2(PACKAGE / "__init__.py", staged / "__init__.py")
        shutil.copy2(module, staged / module.name)
        shutil.copy2(PACKAGE.parent / "_npu_advice.py", staged.parent / "_npu_advice.py")  # its advice
        for optimize in ("", "2"):
            env = {**os.environ, "PYTHONPATH": tmp, "TORCH_DEVICE_BACKEND_AUTOLOAD": "0"}
            env.pop("PYTHONOPTIMIZE", None)
            if optimize:
                env["PYTHONOPTIMIZE"] = optimize
            r = subprocess.run(
                [sys.executable, "-c", "import pypto._torch_npu"],
                capture_output=True,
                text=True,
                env=env,
                check=False,
                timeout=300,
            )
            if r.returncode == 0:
                return _fail("importing pypto._torch_npu succeeded on a machine without CANN")
            if "AdapterUnavailable" not in r.stderr or "CANN's environment is missing" not in r.stderr:
                return _fail(f"import without CANN did not give the targeted error:\n{r.stderr[-2000:]}")
            last = r.stderr.strip().splitlines()[-1]
            print(f"import without CANN (PYTHONOPTIMIZE={optimize or 'unset'}): {last[:300]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
