"""Configure-time queries for the optional torch_npu adapter (run by meson.build).

Usage: python torch_npu_config.py {includes,libdirs,abi}

- ``includes`` / ``libdirs``: one directory per line, torch's then torch_npu's.
- ``abi``: prints torch's C++11 ABI flag (``0``/``1``) after checking that torch_npu's library
  was built with the same ABI; a mismatch exits nonzero with a message naming both.

torch is imported with ``TORCH_DEVICE_BACKEND_AUTOLOAD=0`` and torch_npu is located, never
imported, so this runs on a machine without CANN. The checks are explicit ``if`` statements,
not ``assert``, so they hold under ``PYTHONOPTIMIZE`` too.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path


def torch_npu_root() -> Path:
    spec = importlib.util.find_spec("torch_npu")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit(
            "torch_npu_config: torch_npu is not installed in this Python (pip install torch-npu)"
        )
    return Path(next(iter(spec.submodule_search_locations)))


def library_uses_cxx11_abi(library: Path) -> bool:
    """Whether a C++ shared library exports symbols of libstdc++'s C++11 ABI (``__cxx11``)."""
    return b"__cxx11" in library.read_bytes()


def check_abi(torch_abi: bool, library: Path) -> int:
    """The ABI flag to compile with; SystemExit when ``library`` was built with the other ABI."""
    if not library.is_file():
        raise SystemExit(f"torch_npu_config: {library} not found (is torch_npu installed completely?)")
    npu_abi = library_uses_cxx11_abi(library)
    if npu_abi != torch_abi:
        raise SystemExit(
            f"torch_npu_config: C++11 ABI mismatch: torch was built with _GLIBCXX_USE_CXX11_ABI={int(torch_abi)}, "
            f"{library} with _GLIBCXX_USE_CXX11_ABI={int(npu_abi)}; install a torch_npu build for this torch"
        )
    return int(torch_abi)


def main(argv: list[str]) -> int:
    if len(argv) != 1 or argv[0] not in ("includes", "libdirs", "abi"):
        raise SystemExit(f"usage: torch_npu_config.py {{includes,libdirs,abi}}, got {argv}")
    os.environ["TORCH_DEVICE_BACKEND_AUTOLOAD"] = "0"
    import torch
    from torch.utils import cpp_extension

    npu = torch_npu_root()
    if argv[0] == "includes":
        print("\n".join([*cpp_extension.include_paths(), str(npu / "include")]))
    elif argv[0] == "libdirs":
        print("\n".join([*cpp_extension.library_paths(), str(npu / "lib")]))
    else:
        print(check_abi(bool(torch.compiled_with_cxx11_abi()), npu / "lib" / "libtorch_npu.so"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
