"""``compile_to_files``: passes + codegen + metadata into one artifact directory.

It returns the lowered IR and the build metadata and wraps nothing for execution: the runtime
builds the sources with ``simpler.toolchain`` and loads them. The steps of a compile are listed
in order in :mod:`pypto.ir.pipeline` (``COMPILE``); this module runs them and writes the
files. The directory layout and every metadata field are described in docs/pypto-ir.md.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pypto.ir import pipeline
from pypto.ir.analysis.host_access import check_host_access, host_tensor_access
from pypto.ir.analysis.signature import signature_of
from pypto.ir.build import Build
from pypto.ir.contract import Contract, parse_platform
from pypto.ir.files import atomic_write
from pypto.ir.metadata import META_FILE, ArtifactMetadata, write_metadata
from pypto.ir.nodes import Program
from pypto.ir.platforms import DEFAULT_RUNTIME, RUNTIMES
from pypto.ir.types import FunctionType

__all__ = ["CompileResult", "check_host_access", "compile_to_files", "host_tensor_access", "signature_of"]


@dataclass(frozen=True)
class CompileResult:
    """What ``compile_to_files`` produced."""

    program: Program  # the lowered IR
    metadata: ArtifactMetadata
    output_dir: Path
    files: tuple[Path, ...]  # every file written, compiled_meta.json last


def _write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, text)


def compile_to_files(
    program: Program | Any,
    output_dir: str | os.PathLike[str],
    *,
    contract: Contract | str,
    platform: str,
    runtime: str = DEFAULT_RUNTIME,
    supplied: tuple[bool, ...] | None = None,
    entry: str | None = None,
) -> CompileResult:
    """Lower ``program``, generate its C++ and write the artifact directory.

    The steps are ``pipeline.COMPILE``, in order; this function checks its arguments, runs them
    and writes the files.

    Args:
        program: An IR ``Program`` (or anything with a ``.program``, e.g. a Specialization).
        output_dir: Created if missing; must not already hold ``compiled_meta.json``.
        contract: ``Contract.PROGRAM`` or ``Contract.KERNEL`` (or their names).
        platform: ``a2a3sim``, ``a5sim``, ``a2a3`` or ``a5``.
        runtime: ``tensormap_and_ringbuffer`` or ``host_build_graph``.
        supplied: KERNEL only: per logical parameter, whether the caller supplies it.
        entry: The orchestration to compile, for a program with several (default: the
            program's entry). Only the kernels it calls are generated.

    Returns:
        The lowered IR, the metadata written and the files.
    """
    if not isinstance(program, Program):
        program = getattr(program, "program", program)
    if not isinstance(program, Program):
        raise TypeError(
            f"compile_to_files(program): expected a pypto.ir Program, got {type(program).__name__}"
        )
    contract = Contract.parse(contract)
    platform = parse_platform(platform)
    orchestrations = [f.name for f in program.funcs if f.func_type is FunctionType.Orchestration]
    if entry is not None:
        if entry not in orchestrations:
            raise ValueError(
                f"entry: expected one of the program's orchestrations {orchestrations}, got {entry!r}"
            )
        program = Program(program.name, program.funcs, entry)
        orchestrations = [entry]
    if runtime not in RUNTIMES:
        raise ValueError(f"runtime: expected one of {', '.join(RUNTIMES)}, got {runtime!r}")
    out = Path(output_dir)
    if (out / META_FILE).exists():
        raise FileExistsError(f"{out / META_FILE} already exists; compile into a fresh directory")

    b = pipeline.run_compile(Build(program, contract, platform, runtime, supplied, tuple(orchestrations)))
    assert b.meta is not None  # the metadata step ran
    files: list[Path] = []
    try:
        for rel, text in b.texts.items():
            _write_text(out / rel, text)
            files.append(out / rel)
        files.append(write_metadata(out, b.meta))  # last: its presence means the directory is complete
    except BaseException:
        for f in files:
            f.unlink(missing_ok=True)
        raise
    return CompileResult(b.lowered_program, b.meta, out, tuple(files))
