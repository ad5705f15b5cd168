"""The device path: an artifact for an NPU platform (``a2a3``, ``a5``) as sources for CANN.

A compile for an NPU platform generates the same kernel sources as for its simulator (PTO-ISA
programs) and the orchestration. :func:`write_sources` puts them into a directory with what a
device build needs besides the official PTO-ISA headers and CANN: a copy of simpler's headers
(``include/``), ``build.json`` (the platform, and per source its core type and the compiler
arguments) and ``build.sh`` (the same commands, for ``$ASCEND_HOME_PATH`` and ``$PTO_ISA_ROOT``).
The kernels are compiled without ``__CPU_SIM``: the official headers then take their device
backend, selected by the compiler's ``--cce-aicore-arch`` (``dav-c220-vec``/``dav-c220-cube``
for a2a3, ``dav-c310-vec``/``dav-c310-cube`` for a5).

:func:`build` runs those commands with CANN's ``bisheng`` when ``ASCEND_HOME_PATH`` provides one
(``bin/bisheng`` or ``compiler/ccec_compiler/bin/bisheng`` under it) and ``PTO_ISA_ROOT`` names
the official headers; otherwise it raises :class:`~pypto.runtime.errors.DeviceBuildUnavailable`
naming what is missing and where the sources are.

UNVERIFIED: nothing of this has run on hardware or against an installed CANN toolkit. The
flags follow the public pto-isa build scripts for device kernels; the orchestration's flags
(host C++ through bisheng) are a placeholder: simpler has no device runtime that would load
either binary yet.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pypto.ir import tree_digest
from pypto.runtime import settings
from pypto.runtime.errors import DeviceBuildUnavailable

__all__ = [
    "COMPILER_PATHS",
    "DeviceCompiler",
    "aicore_arch",
    "build",
    "find_compiler",
    "toolchain_identity",
    "write_sources",
]

# Where CANN installs its compiler, relative to ASCEND_HOME_PATH, in the order tried.
COMPILER_PATHS: tuple[str, ...] = ("bin/bisheng", "compiler/ccec_compiler/bin/bisheng")

_CORE_SUFFIX = {"AIV": "vec", "AIC": "cube"}  # --cce-aicore-arch=<family>-<suffix>
_KERNEL_FLAGS = ("-xcce", "-O2", "-std=c++17", "-fPIC", "-shared")
_ORCH_FLAGS = ("-xc++", "-O2", "-std=c++17", "-fPIC", "-shared")


def aicore_arch(platform: str, core_type: str) -> str:
    """The ``--cce-aicore-arch`` of a kernel: the platform's hardware and the kernel's core."""
    from pypto.ir import get_platform

    arch = get_platform(platform).cce_arch
    try:
        return f"{arch}-{_CORE_SUFFIX[core_type]}"
    except KeyError:
        raise ValueError(f"aicore_arch({platform!r}, {core_type!r}): expected core type AIV or AIC") from None


@dataclass(frozen=True)
class DeviceCompiler:
    """CANN's compiler found under ASCEND_HOME_PATH, and the official headers it builds against."""

    path: Path
    pto_isa_include: Path


def _missing_compiler() -> str | None:
    home = settings.get("ASCEND_HOME_PATH")
    if home is None:
        return "ASCEND_HOME_PATH is not set (the CANN toolkit whose bisheng builds device binaries)"
    if not home.is_dir():
        return f"ASCEND_HOME_PATH={str(home)!r} is not a directory"
    if not any(os.access(home / rel, os.X_OK) and (home / rel).is_file() for rel in COMPILER_PATHS):
        tried = ", ".join(str(home / rel) for rel in COMPILER_PATHS)
        return f"ASCEND_HOME_PATH={str(home)!r} holds no CANN compiler (looked for an executable {tried})"
    return None


def _missing_headers() -> str | None:
    root = settings.get("PTO_ISA_ROOT")
    if root is None:
        return (
            "PTO_ISA_ROOT is not set (the official pto-isa headers hold the device backend; simpler's "
            "own PTO-ISA implementation is for the CPU only)"
        )
    if not (root / "include/pto/pto-inst.hpp").is_file():
        return f"PTO_ISA_ROOT={str(root)!r} lacks include/pto/pto-inst.hpp (expected a pto-isa checkout)"
    return None


def find_compiler() -> DeviceCompiler | str:
    """CANN's compiler and the official headers, or a sentence naming what is missing."""
    missing = [m for m in (_missing_compiler(), _missing_headers()) if m is not None]
    if missing:
        return "; ".join(missing)
    home: Path = settings.get("ASCEND_HOME_PATH")
    root: Path = settings.get("PTO_ISA_ROOT")
    path = next(
        home / rel for rel in COMPILER_PATHS if os.access(home / rel, os.X_OK) and (home / rel).is_file()
    )
    return DeviceCompiler(path, root / "include")


def toolchain_identity() -> dict[str, str]:
    """What builds an NPU platform's binaries here: CANN's compiler (path and ``--version``) and
    the official headers (path and content digest), or ``unavailable``."""
    found = find_compiler()
    if isinstance(found, str):
        return {"backend": "cann", "toolchain": "unavailable"}
    proc = subprocess.run([str(found.path), "--version"], capture_output=True, text=True, check=False)
    return {
        "backend": "cann",
        "compiler": str(found.path),
        "compiler_version": proc.stdout.strip(),
        "pto_isa_include": f"{found.pto_isa_include}={tree_digest(found.pto_isa_include)}",
    }


def _plan(meta: Any) -> list[dict[str, Any]]:
    """Per source: its path in the artifact, core type, output and compiler flags (without the
    compiler and the include directories, which differ per machine)."""
    jobs: list[dict[str, Any]] = [
        {
            "source": k.source,
            "core_type": k.core_type,
            "output": f"kernels/{k.name}.so",
            "flags": [*_KERNEL_FLAGS, f"--cce-aicore-arch={aicore_arch(meta.platform, k.core_type)}"],
        }
        for k in meta.kernels
    ]
    jobs.append(
        {
            "source": meta.orchestration.source,
            "core_type": "orchestration",
            "output": "orchestration.so",
            "flags": list(_ORCH_FLAGS),
        }
    )
    return jobs


def write_sources(artifact: Path, meta: Any, dest: Path) -> Path:
    """Write the device build's sources of the artifact at ``artifact`` (metadata ``meta``)
    into the new or empty directory ``dest``: the kernels and the orchestration at their
    artifact paths, ``include/`` (simpler's headers), ``build.json`` and ``build.sh``.
    Written in a temporary sibling and renamed into place. Returns ``dest``.

    Raises:
        FileExistsError: ``dest`` exists and is not an empty directory.
    """
    import simpler

    dest = Path(dest)
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise FileExistsError(f"{dest}: expected a new or empty directory for the device sources")
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}-", dir=dest.parent))
    try:
        jobs = _plan(meta)
        for job in jobs:
            target = tmp / job["source"]
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes((artifact / job["source"]).read_bytes())
        shutil.copytree(simpler.get_include(), tmp / "include")
        manifest = {
            "platform": meta.platform,
            "note": "UNVERIFIED: generated for CANN's bisheng; never built or run on hardware here",
            "include_dirs": ["$PTO_ISA_ROOT/include", "include"],
            "jobs": jobs,
        }
        (tmp / "build.json").write_text(json.dumps(manifest, indent=2) + "\n")
        lines = [
            "#!/bin/sh",
            f"# Device build of {meta.name} for {meta.platform}: CANN's bisheng against the official",
            "# PTO-ISA headers. UNVERIFIED: generated here, never run on hardware.",
            "set -eu",
            'cd "$(dirname "$0")"',
            ': "${ASCEND_HOME_PATH:?set ASCEND_HOME_PATH to the CANN toolkit}"',
            ': "${PTO_ISA_ROOT:?set PTO_ISA_ROOT to a pto-isa checkout}"',
            'CXX="${BISHENG:-$ASCEND_HOME_PATH/bin/bisheng}"',
            '[ -x "$CXX" ] || CXX="$ASCEND_HOME_PATH/compiler/ccec_compiler/bin/bisheng"',
            "mkdir -p out/kernels",
        ]
        for job in jobs:
            flags = " ".join(shlex.quote(f) for f in job["flags"])
            lines.append(
                f'"$CXX" {flags} -I"$PTO_ISA_ROOT/include" -Iinclude {shlex.quote(job["source"])} '
                f"-o {shlex.quote('out/' + job['output'])}"
            )
        (tmp / "build.sh").write_text("\n".join(lines) + "\n")
        (tmp / "build.sh").chmod(0o755)
        if dest.exists():
            dest.rmdir()
        os.rename(tmp, dest)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return dest


def build(
    artifact: Path,
    meta: Any,
    *,
    sources_dir: Path | None = None,
    read: Callable[[str], bytes] | None = None,
) -> dict[str, bytes]:
    """Build the device binaries of an NPU artifact with CANN's compiler: relative prebuilt
    path (``kernels/<k>.so``, ``orchestration.so``) -> bytes. ``read(rel)`` reads a source of
    the artifact (default: the file under ``artifact``); the sources are compiled from a
    private copy.

    Raises:
        DeviceBuildUnavailable: no CANN compiler (ASCEND_HOME_PATH unset, or none under it) or
            no official headers (PTO_ISA_ROOT); the message names what is missing and
            ``sources_dir`` (default ``artifact``), where the sources are.
        RuntimeError: the compiler failed (its first diagnostics).
    """
    import simpler

    found = find_compiler()
    where = sources_dir if sources_dir is not None else artifact
    if isinstance(found, str):
        raise DeviceBuildUnavailable(
            f"platform {meta.platform!r}: cannot build device binaries here: {found}. The sources "
            f"are in {where}",
            missing=found,
            sources=where,
        )
    if read is None:

        def read(rel: str) -> bytes:
            return (artifact / rel).read_bytes()

    out: dict[str, bytes] = {}
    with tempfile.TemporaryDirectory(prefix="pypto-device-") as tmp:
        for job in _plan(meta):
            source = Path(tmp) / "src" / job["source"]
            source.parent.mkdir(parents=True, exist_ok=True)
            source.write_bytes(read(job["source"]))
            target = Path(tmp) / "out" / job["output"]
            target.parent.mkdir(parents=True, exist_ok=True)
            cmd = [
                str(found.path),
                *job["flags"],
                f"-I{found.pto_isa_include}",
                f"-I{simpler.get_include()}",
                str(source),
                "-o",
                str(target),
            ]
            proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
            if proc.returncode != 0 or not target.is_file():
                head = "\n".join(proc.stderr.splitlines()[:20])
                raise RuntimeError(
                    f"{found.path.name} failed on {job['source']} (exit {proc.returncode}):\n{head}"
                )
            out[job["output"]] = target.read_bytes()
    return out
