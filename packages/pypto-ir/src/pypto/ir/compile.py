"""``compile_to_files``: passes + codegen + metadata into one artifact directory; and the
module is itself callable, ``pypto.ir.compile(program, ...)`` (:func:`compile_program`), the
one-call form that picks the directory and takes the pass-manager options.

It returns the lowered IR and the build metadata and wraps nothing for execution: the runtime
builds the sources with ``simpler.toolchain`` and loads them. The steps of a compile are listed
in order in :mod:`pypto.ir.pipeline` (``COMPILE``); this module runs them and writes the
files. The directory layout and every metadata field are described in docs/pypto-ir.md.
"""

from __future__ import annotations

import os
import sys
import time
import types
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
from pypto.ir.pass_manager import OptimizationStrategy, PassDumpLevel, check_dump_passes, check_strategy
from pypto.ir.pipeline import lower
from pypto.ir.platforms import (
    DEFAULT_PLATFORM,
    DEFAULT_RUNTIME,
    RUNTIMES,
    BackendType,
    check_backend,
    parse_backend,
    simulator_of,
)
from pypto.ir.types import FunctionType, Role

__all__ = [
    "CompileResult",
    "check_host_access",
    "compile_program",
    "compile_to_files",
    "host_tensor_access",
    "signature_of",
]


@dataclass(frozen=True)
class CompileResult:
    """What ``compile_to_files`` produced."""

    program: Program  # the lowered IR
    metadata: ArtifactMetadata
    output_dir: Path
    files: tuple[Path, ...]  # every file written, compiled_meta.json last

    def __fspath__(self) -> str:
        """The artifact directory, so a result is used where a path is (``os.walk(result)``)."""
        return os.fspath(self.output_dir)

    def __str__(self) -> str:
        return os.fspath(self.output_dir)


def _write_text(path: Path, text: str, made: set[Path] | None = None) -> None:
    """Write ``path`` atomically, creating its directory first (once per directory in ``made``)."""
    if made is None or path.parent not in made:
        path.parent.mkdir(parents=True, exist_ok=True)
        if made is not None:
            made.add(path.parent)
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
    if not orchestrations:
        kinds = ", ".join(f"{f.name} ({f.func_type.value})" for f in program.funcs)
        raise ValueError(
            f"program: {program.name!r} has no orchestration function to enter (it has {kinds}); "
            "add a @pl.function(type=pl.FunctionType.Orchestration) that calls its kernels"
        )
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
        out.mkdir(parents=True, exist_ok=True)
        made = {out}
        for rel, text in b.texts.items():
            _write_text(out / rel, text, made)
            files.append(out / rel)
        files.append(write_metadata(out, b.meta))  # last: its presence means the directory is complete
    except BaseException:
        for f in files:
            f.unlink(missing_ok=True)
        raise
    return CompileResult(b.lowered_program, b.meta, out, tuple(files))


PASSES_DIR = "passes"
"""Where ``compile_program(dump_passes=...)`` writes each lowering stage's IR, in the artifact."""


def compile_program(
    program: Program | Any,
    output_dir: str | os.PathLike[str] | None = None,
    *,
    strategy: OptimizationStrategy | str = OptimizationStrategy.Default,
    dump_passes: bool | PassDumpLevel = False,
    backend_type: BackendType | str | None = None,
    platform: str | None = None,
    contract: Contract | str = Contract.PROGRAM,
    runtime: str = DEFAULT_RUNTIME,
    distributed_config: Any = None,
) -> Any:
    """Compile ``program`` into a directory: ``pypto.ir.compile(program, ...)``.

    Args:
        program: An IR Program (``@pl.program``) or a Specialization of a ``@pl.jit`` function.
        output_dir: A fresh directory; None: ``build_output/<program>_<YYYYmmdd_HHMMSS>`` under
            the current directory (a numeric suffix when that exists).
        strategy: ``OptimizationStrategy.Default``, the one pipeline (checked, no other effect).
        dump_passes: True (or a PassDumpLevel other than NONE) also writes the IR after each
            lowering stage to ``<output_dir>/passes/<k>_<stage>.txt`` (the parsed IR as
            ``00_parse.txt``).
        backend_type: Must agree with the platform (``Ascend910B``: a2a3, ``Ascend950``: a5);
            None: the platform's.
        platform: Default: the simulator of ``backend_type``'s chip, else ``a2a3sim``.
        contract: ``PROGRAM`` (default) or ``KERNEL``.
        runtime: The chip runtime.
        distributed_config: A ``DistributedConfig``: compile a ``@pl.program`` with a host
            orchestrator (``@pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)``) for
            these devices; the runtime compiles it (``output_dir``, ``dump_passes`` and
            ``contract`` do not apply).

    Returns:
        The CompileResult; it is path-like (``os.fspath(result)`` is the directory). With
        ``distributed_config``: the runtime's ``DistributedCompiledProgram``.
    """
    check_strategy(strategy)
    level = check_dump_passes(dump_passes)
    if platform is None:
        platform = DEFAULT_PLATFORM if backend_type is None else simulator_of(parse_backend(backend_type))
    platform = parse_platform(platform)
    check_backend(backend_type, platform)
    ir_program = program if isinstance(program, Program) else getattr(program, "program", program)
    host_orch = isinstance(ir_program, Program) and any(
        f.role is Role.Orchestrator for f in ir_program.host_funcs
    )
    if distributed_config is not None or host_orch:
        return _compile_distributed(ir_program, platform, runtime, distributed_config, host_orch)
    if output_dir is None:
        output_dir = _fresh_build_dir(getattr(ir_program, "name", "program"))
    result = compile_to_files(program, output_dir, contract=contract, platform=platform, runtime=runtime)
    if level is not PassDumpLevel.NONE and isinstance(ir_program, Program):
        where = result.output_dir / PASSES_DIR
        _write_text(where / "00_parse.txt", str(ir_program))
        for k, (stage, after) in enumerate(lower(ir_program).trace, start=1):
            _write_text(where / f"{k:02d}_{stage}.txt", str(after))
    return result


def _compile_distributed(program: Any, platform: str, runtime: str, config: Any, host_orch: bool) -> Any:
    from pypto.ir.distributed_compiled_program import DistributedConfig
    from pypto.ir.execution import get_host_compiler

    name = getattr(program, "name", type(program).__name__)
    if not host_orch:
        raise ValueError(
            f"compile(program, distributed_config=...): {name} has no host orchestrator; a multi-chip "
            "@pl.program has a @pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)"
        )
    if config is None:
        raise ValueError(
            f"compile({name}): a program with a host orchestrator runs on devices; pass "
            "distributed_config=DistributedConfig(device_ids=[...])"
        )
    if not isinstance(config, DistributedConfig):
        raise TypeError(
            f"compile(distributed_config=...): expected a pypto.ir.DistributedConfig, got {type(config).__name__}"
        )
    settings = types.SimpleNamespace(platform=platform, runtime=runtime, distributed_config=config)
    return get_host_compiler()(program, (), {}, settings)


def _fresh_build_dir(name: str) -> Path:
    base = Path("build_output") / f"{name}_{time.strftime('%Y%m%d_%H%M%S')}"
    out, k = base, 1
    while out.exists():
        out, k = base.with_name(f"{base.name}_{k}"), k + 1
    return out


class _CallableModule(types.ModuleType):
    """This module's type: calling the module calls :func:`compile_program`, so that
    ``pypto.ir.compile`` is both the module and the function (the name cannot be both
    otherwise: importing a submodule sets the package attribute of the same name)."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """A ``CompileResult``, or the runtime's compiled multi-chip program for a
        ``@pl.program`` with a host orchestrator (``distributed_config=``)."""
        return compile_program(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
compile = sys.modules[__name__]  # the face's pypto.ir.compile: this module, callable
