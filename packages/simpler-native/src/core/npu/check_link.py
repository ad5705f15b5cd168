"""Check the NPU backend's link (``nox -s npu-compile``): libsimpler_npu.so is linked with
undefined symbols allowed, since CANN's libraries are not on this machine, and this script checks
that every symbol it leaves open is a CANN entry point: an ``acl*`` function declared in the ACL
headers it was compiled against, or an ``rts*`` function declared in simpler/npu/cann_rts.hpp.
Anything else open (a function of simpler's own that was not linked in) fails the check, and
so does a library that does not export the factory a loader would look up.

Usage: python check_link.py BUILDDIR ACL_INCLUDE SIMPLER_INCLUDE
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

EXPORT = "simpler_npu_backend_create"  # the factory a loader finds with dlsym


def exported(library: Path) -> set[str]:
    """Defined dynamic symbols (what dlsym can find)."""
    out = subprocess.run(
        ["nm", "-D", "--defined-only", str(library)], text=True, capture_output=True, check=True
    ).stdout
    return {parts[-1] for parts in (line.split() for line in out.splitlines()) if len(parts) == 3}


def open_symbols(library: Path) -> list[str]:
    """Undefined dynamic symbols without a version (versioned ones are glibc's and libstdc++'s)."""
    out = subprocess.run(
        ["nm", "-D", "--undefined-only", str(library)], text=True, capture_output=True, check=True
    ).stdout
    names = []
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == "U" and "@" not in parts[1]:
            names.append(parts[1])
    return names


def declared(folder: Path, pattern: str) -> set[str]:
    """Function names matching ``pattern`` that the headers under ``folder`` declare."""
    names: set[str] = set()
    for header in folder.rglob("*.h*"):
        names.update(re.findall(pattern, header.read_text(errors="replace")))
    return names


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    builddir, acl_include, simpler_include = (Path(a) for a in argv)
    library = builddir / "src" / "core" / "npu" / "libsimpler_npu.so"
    if not library.is_file():
        print(f"FAIL npu backend: {library} was not built (configure with -Dnpu=enabled)")
        return 1
    acl = declared(acl_include / "acl", r"\b(acl[A-Za-z0-9_]+)\s*\(")
    rts = declared(simpler_include / "simpler" / "npu", r"\b(rts[A-Za-z0-9_]+)\s*\(")
    missing = open_symbols(library)
    stray = [s for s in missing if s not in acl and s not in rts]
    if stray:
        print(f"FAIL npu backend: {library.name} leaves symbols open that CANN does not provide: {stray}")
        return 1
    if not missing:
        print(f"FAIL npu backend: {library.name} calls no CANN entry point; the check would prove nothing")
        return 1
    if EXPORT not in exported(library):
        print(f"FAIL npu backend: {library.name} does not export {EXPORT}, so no loader could create it")
        return 1
    n_acl = sum(s in acl for s in missing)
    print(
        f"npu backend: {library.name} compiled and linked; its {len(missing)} open symbols are CANN's "
        f"({n_acl} ACL functions from {acl_include}, {len(missing) - n_acl} rts functions from "
        f"simpler/npu/cann_rts.hpp); it exports {EXPORT}. Not loaded or run: no CANN runtime or NPU here"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
