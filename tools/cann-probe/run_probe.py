"""Build and run tools/cann-probe against the installed simpler headers (``nox -s probe``).

Variant: ``cann`` when ASCEND_HOME_PATH is set (UNVERIFIED, see README.md), else ``sim``. Runs
the probe, which must print one PASS line and exit 0, then the lost-gate control, which must
print a FAIL line and exit nonzero within its timeout (a lost gate fails, it never hangs).

With ``--cann-compile-only ACL_INCLUDE`` it instead configures the ``cann`` variant against the
ACL headers in that folder (e.g. the ``torch_npu/include`` of the torch_npu wheel) and compiles
the host part and the device part without linking or running them: what a machine without
CANN can check.

Usage: python tools/cann-probe/run_probe.py [--builddir DIR] [--cann-compile-only ACL_INCLUDE]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


def _run(cmd: list[str], timeout: float | None = None) -> subprocess.CompletedProcess[str]:
    print("+", " ".join(cmd), flush=True)
    return subprocess.run(cmd, text=True, capture_output=True, timeout=timeout, check=False)


def _compile_cann(builddir: Path, acl_include: Path) -> int:
    import simpler

    setup = ["meson", "setup", str(builddir), str(HERE), f"-Dsimpler_include={simpler.get_include()}"]
    setup += ["-Dvariant=cann", f"-Dacl_include={acl_include}", "--wipe" if builddir.exists() else ""]
    for cmd in ([c for c in setup if c], ["meson", "compile", "-C", str(builddir)]):
        r = _run(cmd)
        if r.returncode != 0:
            print(r.stdout, r.stderr, sep="\n")
            print(f"FAIL cann-probe: {' '.join(cmd[:2])} of the cann variant failed")
            return 1
    print(
        f"cann variant: host and device parts compiled against {acl_include} (not linked, not run: no CANN here)"
    )
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--builddir", type=Path, default=ROOT / "build" / "cann-probe")
    parser.add_argument("--cann-compile-only", metavar="ACL_INCLUDE", type=Path, default=None)
    args = parser.parse_args()
    if args.cann_compile_only is not None:
        return _compile_cann(args.builddir / "cann-compile", args.cann_compile_only)

    import simpler  # the installed package whose headers the probe compiles against

    include = simpler.get_include()
    ascend = os.environ.get("ASCEND_HOME_PATH", "")
    variant = "cann" if ascend else "sim"
    builddir: Path = args.builddir / variant
    setup = [
        "meson",
        "setup",
        str(builddir),
        str(HERE),
        f"-Dsimpler_include={include}",
        f"-Dvariant={variant}",
    ]
    if ascend:
        setup.append(f"-Dascend_home={ascend}")
    if (builddir / "build.ninja").exists():
        setup.insert(2, "--reconfigure")
    for cmd in (setup, ["meson", "compile", "-C", str(builddir)]):
        r = _run(cmd)
        if r.returncode != 0:
            print(r.stdout, r.stderr, sep="\n")
            print(f"FAIL cann-probe: {' '.join(cmd[:2])} failed (variant {variant})")
            return 1

    exe = str(builddir / "cann_probe")
    run = _run([exe], timeout=120)
    print(run.stdout, end="")
    print(run.stderr, end="", file=sys.stderr)
    if run.returncode != 0 or not any(line.startswith("PASS ") for line in run.stdout.splitlines()):
        print(f"FAIL cann-probe: the probe exited {run.returncode} without a PASS line")
        return 1

    lost = _run([exe, "--lose-gate", "--gate-timeout-ms", "500"], timeout=60)
    if lost.returncode == 0 or "gate timed out" not in lost.stdout:
        print(lost.stdout, lost.stderr, sep="\n")
        print("FAIL cann-probe: the lost-gate control did not fail as it must")
        return 1
    print(f"lost-gate control: failed as expected ({lost.stdout.strip()})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
