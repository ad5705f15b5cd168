"""The main job of the stack: compile a PyPTO kernel, run it on the simulated chip, show it.

Until the compiler and the simulated chip land, this does the most real thing the stack can
do and says so: it imports every layer and reports what each one provides.
"""

from __future__ import annotations

import importlib


def main() -> None:
    for name in ("simpler", "pypto.ir", "pypto.runtime", "pypto.torch"):
        module = importlib.import_module(name)
        print(f"{name:15s} {getattr(module, '__version__', '?')}")
    print("demo: the compiler and simulated chip are not built yet; only the package skeleton runs")


if __name__ == "__main__":
    main()
