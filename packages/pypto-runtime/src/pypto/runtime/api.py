"""Public compile/run entry points, cache-backed restore, and the ``@pl.jit`` executor.

``compile(program, *args)`` requests PROGRAM and returns a CompiledProgram;
``compile_artifact(program, *args, contract=KERNEL)`` returns a CompiledArtifact for one
single-chip entry (pypto-torch's operators use it). Both go through ``compile_to_files`` and the same ArtifactRuntime:
identical inputs give one ArtifactKey, one store entry, and one build across processes.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeAlias

from pypto.ir import (
    DEFAULT_PLATFORM,
    DEFAULT_RUNTIME,
    ArtifactKey,
    Contract,
    DeviceKind,
    FunctionType,
    ParamDirection,
    Program,
    ToolchainIdentity,
    atomic_write,
    compile_to_files,
    device_kind,
    parse_platform,
    program_key,
    program_material,
    set_executor_plan,
)
from pypto.language.interface import JITFunction, Specialization, user_facing
from pypto.runtime import device_build, settings
from pypto.runtime.artifact_runtime import Obtained, default_runtime
from pypto.runtime.call_plan import run_artifact
from pypto.runtime.compiled import (
    DEVICE_DIR,
    ENTRIES_FILE,
    CompiledArtifact,
    CompiledProgram,
    build_prebuilt,
    toolchain_identity,
)
from pypto.runtime.errors import DeviceBuildUnavailable
from pypto.runtime.host_tensors import allocate_like
from pypto.runtime.manifest import EntryState
from pypto.runtime.runner import RunConfig

__all__ = [
    "Compilable",
    "artifact_key",
    "compile",
    "compile_artifact",
    "jit_compiler",
    "jit_executor",
    "load_cached",
    "planned_program",
    "run",
]

# What compile() and compile_artifact() take: a @pl.jit function (with example arguments), one
# of its specialisations, or an IR Program (@pl.program).
Compilable: TypeAlias = JITFunction | Specialization | Program


def _specialize(
    program: Compilable, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[Specialization | Program, dict[str, Any]]:
    """(IR program or Specialization, key material) for what the caller passed."""
    if isinstance(program, JITFunction):  # specialise on the example arguments
        spec = program.specialize(*args, **kwargs)
        return spec, dict(spec.key_material)
    if args or kwargs:
        raise TypeError(
            f"compile(program, *args): example arguments only apply to a @pl.jit function, got {type(program).__name__}"
        )
    if isinstance(program, Specialization):
        return program, dict(program.key_material)
    if not isinstance(program, Program):
        raise TypeError(
            "compile(program): expected a @pl.jit function, a Specialization or a pypto.ir Program, "
            f"got {type(program).__name__}"
        )
    return program, program_material(program, kind="ir", entry=program.entry)


def _orchestrations(program: Compilable) -> list[str]:
    if not isinstance(program, Program):
        return []
    return [f.name for f in program.funcs if f.func_type is FunctionType.Orchestration]


def artifact_key(material: dict[str, Any], *, contract: Contract, platform: str, runtime: str) -> ArtifactKey:
    """The ArtifactKey of a specialisation: toolchain + source + specialisation + contract."""
    return program_key(
        material,
        toolchain=ToolchainIdentity.default().extended(**toolchain_identity(platform)),
        contract=contract,
        platform=platform,
        runtime=runtime,
        settings=settings.invalidating_snapshot(),
    )


def _obtain(
    program: Compilable,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    *,
    contract: Contract,
    platform: str,
    runtime: str,
) -> tuple[Obtained, Specialization | Program]:
    spec, material = _specialize(program, args, kwargs)
    key = artifact_key(material, contract=contract, platform=platform, runtime=runtime)
    return _obtain_key(key, spec, contract=contract, platform=platform, runtime=runtime), spec


def _obtain_key(
    key: ArtifactKey, spec: Specialization | Program, *, contract: Contract, platform: str, runtime: str
) -> Obtained:
    def generate(path: Path) -> None:
        compile_to_files(spec, path, contract=contract, platform=platform, runtime=runtime)

    return default_runtime().obtain(key, generate=generate, build=build_prebuilt)


def planned_program(
    program: Specialization | Program, *, platform: str, runtime: str
) -> tuple[str, Callable[[], Path]]:
    """The ArtifactKey of ``program`` for the PROGRAM contract (nothing is compiled), and a thunk
    that restores its store entry, or compiles it into the store, and returns the directory: what
    a multi-chip plan names its per-device programs by."""
    platform = parse_platform(platform)
    spec, material = _specialize(program, (), {})
    key = artifact_key(material, contract=Contract.PROGRAM, platform=platform, runtime=runtime)

    def obtain() -> Path:
        got = _obtain_key(key, spec, contract=Contract.PROGRAM, platform=platform, runtime=runtime)
        CompiledArtifact.from_dir(got.path, require=Contract.PROGRAM, key=got.key, manifest=got.manifest)
        return got.path

    return key.hexdigest(), obtain


@user_facing
def compile(
    program: Compilable,
    *args: Any,
    platform: str = DEFAULT_PLATFORM,
    runtime: str = DEFAULT_RUNTIME,
    output_dir: str | os.PathLike[str] | None = None,
    **kwargs: Any,
) -> CompiledProgram:
    """Compile ``program`` for the PROGRAM contract.

    Args:
        program: A ``@pl.jit`` function (with example ``args`` to specialise on), a
            Specialization, or an IR Program (``@pl.program``). A scalar passed as
            ``pl.RUNTIME`` (or whose default is ``pl.RUNTIME``) is not folded: the program
            takes its value at every call, one artifact for all values.
        platform: Target platform (default ``"a2a3sim"``).
        runtime: Chip runtime.
        output_dir: Compile into this fresh directory instead of the artifact store.

    Example:
        >>> prog = pypto.runtime.compile(add, a, b, c)       # doctest: +SKIP
        >>> prog(a, b, c); os.fspath(prog)                   # doctest: +SKIP
        >>> prog = pypto.runtime.compile(scale, a, pl.RUNTIME, c)  # doctest: +SKIP
        >>> prog(a, 1.5, c); prog(a, 3.0, c)                 # doctest: +SKIP
    """
    platform = parse_platform(platform)
    entries = _orchestrations(program)
    if len(entries) > 1 and isinstance(program, Program):
        if args or kwargs:
            raise TypeError("compile(program, *args): example arguments only apply to a @pl.jit function")
        return _compile_multi(program, entries, platform=platform, runtime=runtime, output_dir=output_dir)
    return _compile_single(program, args, kwargs, platform=platform, runtime=runtime, output_dir=output_dir)


def _compile_single(
    program: Compilable,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    *,
    platform: str,
    runtime: str,
    output_dir: str | os.PathLike[str] | None,
) -> CompiledProgram:
    if output_dir is not None:
        spec, _ = _specialize(program, args, kwargs)
        result = compile_to_files(
            spec, output_dir, contract=Contract.PROGRAM, platform=platform, runtime=runtime
        )
        if device_kind(platform) is DeviceKind.ONBOARD:
            out = Path(result.output_dir)
            device_build.write_sources(out, result.metadata, out / DEVICE_DIR)
        return CompiledProgram(CompiledArtifact(result.output_dir, result.metadata), program=result.program)
    got, spec = _obtain(program, args, kwargs, contract=Contract.PROGRAM, platform=platform, runtime=runtime)
    _check_device_build(got, platform)
    artifact = CompiledArtifact.from_dir(got.path, require=Contract.PROGRAM, key=got.key)
    return CompiledProgram(artifact, program=spec.program if isinstance(spec, Specialization) else spec)


def _check_device_build(got: Obtained, platform: str) -> None:
    """An NPU platform's entry without binaries: raise DeviceBuildUnavailable, naming what is
    missing and the entry's device sources (pypto.runtime.device_build)."""
    if device_kind(platform) is not DeviceKind.ONBOARD or got.state == EntryState.READY:
        return
    found = device_build.find_compiler()
    missing = found if isinstance(found, str) else "the device build did not complete"
    sources = got.path / DEVICE_DIR
    raise DeviceBuildUnavailable(
        f"platform {platform!r}: the sources were written but no device binaries built: {missing}. "
        f"The sources and their build commands are in {sources}"
        + (
            " (removed when this process exits; compile with output_dir= to keep them)"
            if got.origin == "private"
            else ""
        ),
        missing=missing,
        sources=sources,
    )


def _compile_multi(
    program: Program,
    entries: list[str],
    *,
    platform: str,
    runtime: str,
    output_dir: str | os.PathLike[str] | None,
) -> CompiledProgram:
    """A program with several orchestrations: one artifact per entry; the parent selects."""
    children: dict[str, CompiledProgram] = {}
    for name in entries:
        sub = Program(program.name, program.funcs, name)
        where = None if output_dir is None else Path(output_dir) / name
        children[name] = _compile_single(sub, (), {}, platform=platform, runtime=runtime, output_dir=where)
    if output_dir is not None:
        index = Path(output_dir) / ENTRIES_FILE
        atomic_write(index, json.dumps({"entries": entries, "default": program.entry}, indent=1), mode=None)
    return CompiledProgram(children[program.entry].artifact, program=program, entries=children)


@user_facing
def compile_artifact(
    program: Compilable,
    *args: Any,
    contract: Contract | str = Contract.KERNEL,
    platform: str = DEFAULT_PLATFORM,
    runtime: str = DEFAULT_RUNTIME,
    **kwargs: Any,
) -> CompiledArtifact:
    """Compile one single-chip entry and return the CompiledArtifact itself (no program-mode
    wrapper): what kernel mode (pypto-torch) registers on its Worker.

    Args:
        program: As for :func:`compile` (example ``args``/``kwargs`` for a ``@pl.jit`` function).
        contract: ``KERNEL`` (default) or ``PROGRAM``; the artifact is checked against it.
        platform: Target platform (default ``"a2a3sim"``).
        runtime: Chip runtime.
    """
    c = Contract.parse(contract)
    platform = parse_platform(platform)
    got, _ = _obtain(program, args, kwargs, contract=c, platform=platform, runtime=runtime)
    _check_device_build(got, platform)
    return CompiledArtifact.from_dir(got.path, require=c, key=got.key)


def load_cached(
    key: Any, *, consumer: Contract | str = Contract.PROGRAM, platform: str | None = None
) -> CompiledProgram | CompiledArtifact | None:
    """Restore a READY/GENERATED store entry: a CompiledArtifact is created first, then
    wrapped for a PROGRAM consumer; a KERNEL consumer receives the artifact itself."""
    rt = default_runtime()
    got = rt.lookup(key) or rt.lookup(key, "GENERATED")
    if got is None:
        return None
    c = Contract.parse(consumer)
    artifact = CompiledArtifact.from_dir(got.path, platform=platform, require=c, key=got.key)
    return CompiledProgram(artifact) if c is Contract.PROGRAM else artifact


def run(
    program: JITFunction | CompiledProgram | Program,
    *args: Any,
    config: RunConfig | None = None,
    **kwargs: Any,
) -> Any:
    """Compile (cached) and run ``program`` on ``args`` in program mode.

    A ``@pl.jit`` function or a CompiledProgram returns what the call returns (a CompiledProgram
    with no ``config`` runs on its own platform and runtime). An IR Program (``@pl.program``) is
    compiled for ``config.platform`` and run when arguments are given; ``run`` then returns the
    CompiledProgram, to call again (``run(prog)`` alone compiles).
    """
    if isinstance(program, Program):
        config = config or RunConfig()
        compiled = compile(program, platform=config.platform, runtime=config.runtime)
        if args or kwargs:
            compiled(*args, config=config, **kwargs)
        return compiled
    if isinstance(program, CompiledProgram):
        return program(*args, config=config, **kwargs)
    return _executor_call(program, args, kwargs, config or RunConfig())


# -- @pl.jit executor ---------------------------------------------------------------------

_programs_lock = threading.Lock()
_DEFAULT_CONFIG = RunConfig()
_NO_KWARGS: dict[str, Any] = {}


def _program_of(spec: Specialization, config: RunConfig) -> CompiledProgram:
    """The CompiledProgram of a specialisation for a platform and chip runtime, compiled (or
    restored from the store) at its first call and kept on the specialisation."""
    slot = (config.platform, config.runtime)
    with _programs_lock:
        prog: CompiledProgram | None = spec.attached.get(slot)
    if prog is None:
        prog = compile(spec, platform=config.platform, runtime=config.runtime)
        with _programs_lock:
            prog = spec.attached.setdefault(slot, prog)
    return prog


def _executor_call(fn: JITFunction, args: tuple[Any, ...], kwargs: dict[str, Any], config: RunConfig) -> Any:
    # One binding per call: the jit function's binder gives the specialisation, the arguments
    # in parameter order and their call key (a repeat call: found by that key alone), and the
    # artifact's call plan takes those positionally, keyed by the same call key. A specialisation's key holds no value for
    # a runtime scalar (pl.RUNTIME default), so one program serves all its values.
    if len(args) + len(kwargs) < len(fn.param_names):
        kwargs = _allocate_omitted_outputs(fn, args, kwargs)
    spec, bound, key = fn.bind_call(args, kwargs, run=True)
    prog = spec.attached.get((config.platform, config.runtime))
    if prog is None:
        prog = _program_of(spec, config)
    artifact = prog.artifact
    result = run_artifact(artifact, bound, _NO_KWARGS, config, key)
    if key is not None and config is _DEFAULT_CONFIG:
        plan = artifact._call_plan
        native = plan.exact_plan(key) if plan is not None else None
        hot = plan.bound_call(native, config) if plan is not None and native is not None else None
        if hot is not None:
            import simpler

            direct = simpler.DirectCall(hot, fn.general_call)
            set_executor_plan(fn, _CapturedCheck(spec, direct) if spec.captured else direct)
    return result


class _CapturedCheck:
    """The executor plan of a specialisation that captured module constants: the binder's
    check that they are unchanged, then the bound call (a ``simpler.DirectCall``). A plan of a
    specialisation without captured constants is the ``DirectCall`` itself: the function's call
    reaches the chip with no Python frame (pypto.ir.execution)."""

    __slots__ = ("direct", "spec")

    def __init__(self, spec: Specialization, direct: Any) -> None:
        self.spec, self.direct = spec, direct

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.spec.check_captured()  # as the binder's lookup does
        return self.direct(*args, **kwargs)


def _allocate_omitted_outputs(
    fn: JITFunction, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> dict[str, Any]:
    """An omitted Out parameter is allocated, as a compiled program does, when its shape and
    dtype are known before the call: its annotation fixes both (``pl.Out[pl.Tensor[[16, 16],
    pl.FP32]]``). A bare ``pl.Out[pl.Tensor]`` takes its shape from the argument, so it must be
    passed; the binder's error names it."""
    given = set(fn.param_names[: len(args)]) | set(kwargs)
    filled = dict(kwargs)
    tensors = [*args, *kwargs.values()]
    for p in fn.declared_params():
        if p.name in given or p.direction is not ParamDirection.OUT or p.kind != "tensor":
            continue
        if p.dtype is None or p.shape is None or any(d < 0 for d in p.shape):
            continue
        filled[p.name] = allocate_like(p.shape, p.dtype, tensors)
    return filled


def jit_executor(fn: JITFunction, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Executes a ``@pl.jit`` call in program mode: ``fn(a, b, c, config=RunConfig())``."""
    config = _DEFAULT_CONFIG
    if kwargs:
        kwargs = dict(kwargs)
        config = kwargs.pop("config", None) or _DEFAULT_CONFIG
        if not isinstance(config, RunConfig):
            raise TypeError(f"{fn.__name__}(config=...): expected a RunConfig, got {type(config).__name__}")
    return _executor_call(fn, args, kwargs, config)


def jit_compiler(fn: JITFunction, args: tuple[Any, ...], kwargs: dict[str, Any]) -> CompiledProgram:
    """``fn.compile(*args, **kwargs)``: :func:`compile` of the specialisation of ``args``."""
    return compile(fn, *args, **kwargs)
