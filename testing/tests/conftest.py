"""The cross-package tests: this folder on sys.path for helpers they import by name."""

from __future__ import annotations

import os
import sys
from pathlib import Path

# pypto.torch.init would load (or first build) the native describe_call path on a background
# thread; the suites test that path through explicit build_native() calls and the start itself
# with a stand-in, so their many init() calls do not start it (tests may set it back).
os.environ.setdefault("PYPTO_NATIVE_DESCRIBE", "0")

HERE = Path(__file__).resolve().parent

# Test modules import shared helpers by name (``from module import name``); with
# --import-mode=importlib this folder is not on sys.path, so conftest (loaded before any test
# module) puts it there.
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))
