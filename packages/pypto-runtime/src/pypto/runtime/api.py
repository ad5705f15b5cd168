"""Public compile/run entry points, cache-backed restore, and the ``@pl.jit`` executor.

``compile(program, *args)`` requests PROGRAM and returns a CompiledProgram;
``_compile_artifact(program, *args, contract=KERNEL)`` returns a CompiledArtifact for one
single-chip entry. Both go through ``_compile_to_files`` and the same ArtifactRuntime:
identical inputs give one ArtifactKey, one store entry, and one build across processes.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import threading
from pathlib import Path
from typing import Any

from pypto.ir.artifact_key import ArtifactKey, ToolchainIdentity
from pypto.ir.atomic_write import atomic_write
from pypto.ir.compile import _compile_to_files
from pypto.ir.contract import Contract, parse_platform
from pypto.ir.nodes import Program
from pypto.ir.platforms import DEFAULT_PLATFORM, DEFAULT_RUNTIME
from pypto.ir.types import FunctionType
from pypto.language.typing import is_runtime
from pypto.runtime import settings
from pypto.runtime.artifact_runtime import Obtained, default_runtime
from pypto.runtime.compiled import (
    ENTRIES_FILE,
    CompiledArtifact,
    CompiledProgram,
    build_prebuilt,
    toolchain_identity,
)
from pypto.runtime.runner import RunConfig, run_artifact

__all__ = ["_compile_artifact", "artifact_key", "compile", "jit_executor", "load_cached", "run"]


def _specialize(program: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """(IR program or Specialization, key material) for what the caller passed."""
    specialize = getattr(program, "specialize", None)
    if callable(specialize):  # a @pl.jit function: specialise on the example arguments
        spec = specialize(*args, **kwargs)
        return spec, dict(spec.key_material)
    if args or kwargs:
        raise TypeError(
            f"compile(program, *args): example arguments only apply to a @pl.jit function, got {type(program).__name__}"
        )
    material = getattr(program, "key_material", None)
    if isinstance(material, dict):  # a Specialization
        return program, dict(material)
    ir = getattr(program, "program", program)
    text = str(ir)
    return program, {
        "kind": "ir",
        "entry": getattr(ir, "entry", None),
        "ir_sha256": hashlib.sha256(text.encode()).hexdigest(),
    }


def _orchestrations(program: Any) -> list[str]:
    funcs = getattr(program, "funcs", None)
    if not isinstance(program, Program) or funcs is None:
        return []
    return [f.name for f in funcs if f.func_type is FunctionType.Orchestration]


def artifact_key(material: dict[str, Any], *, contract: Contract, platform: str, runtime: str) -> ArtifactKey:
    """The ArtifactKey of a specialisation: toolchain + source + specialisation + contract."""
    toolchain = ToolchainIdentity.default().extended(**toolchain_identity(platform))
    return ArtifactKey.compute(
        toolchain=toolchain,
        source=material.get("sources", {}),
        specialization=material,
        contract=contract,
        platform=platform,
        extra={"runtime": runtime, **settings.invalidating_snapshot()},
    )


def _obtain(
    program: Any,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    *,
    contract: Contract,
    platform: str,
    runtime: str,
) -> tuple[Obtained, Any]:
    spec, material = _specialize(program, args, kwargs)
    key = artifact_key(material, contract=contract, platform=platform, runtime=runtime)

    def generate(path: Path) -> None:
        _compile_to_files(spec, path, contract=contract, platform=platform, runtime=runtime)

    got = default_runtime().obtain(key, generate=generate, build=build_prebuilt)
    return got, spec


def compile(
    program: Any,
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
    if len(entries) > 1:
        if args or kwargs:
            raise TypeError("compile(program, *args): example arguments only apply to a @pl.jit function")
        return _compile_multi(program, entries, platform=platform, runtime=runtime, output_dir=output_dir)
    return _compile_single(program, args, kwargs, platform=platform, runtime=runtime, output_dir=output_dir)


def _compile_single(
    program: Any,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    *,
    platform: str,
    runtime: str,
    output_dir: str | os.PathLike[str] | None,
) -> CompiledProgram:
    if output_dir is not None:
        spec, _ = _specialize(program, args, kwargs)
        result = _compile_to_files(
            spec, output_dir, contract=Contract.PROGRAM, platform=platform, runtime=runtime
        )
        return CompiledProgram(CompiledArtifact(result.output_dir, result.metadata), program=result.program)
    got, spec = _obtain(program, args, kwargs, contract=Contract.PROGRAM, platform=platform, runtime=runtime)
    artifact = CompiledArtifact.from_dir(got.path, require=Contract.PROGRAM, key=got.key)
    return CompiledProgram(artifact, program=getattr(spec, "program", spec))


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


def _compile_artifact(
    program: Any,
    *args: Any,
    contract: Contract | str = Contract.KERNEL,
    platform: str = DEFAULT_PLATFORM,
    runtime: str = DEFAULT_RUNTIME,
    **kwargs: Any,
) -> CompiledArtifact:
    """Internal: compile one single-chip entry and return the CompiledArtifact itself."""
    c = Contract.parse(contract)
    got, _ = _obtain(program, args, kwargs, contract=c, platform=parse_platform(platform), runtime=runtime)
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


def run(program: Any, *args: Any, config: RunConfig | None = None, **kwargs: Any) -> Any:
    """Compile (cached) and run ``program`` on ``args`` in program mode."""
    config = config or RunConfig()
    if isinstance(program, CompiledProgram):
        return program(*args, config=config, **kwargs)
    return _executor_call(program, args, kwargs, config)


# -- @pl.jit executor ---------------------------------------------------------------------

_programs: dict[tuple[Any, ...], CompiledProgram] = {}
_programs_lock = threading.Lock()
_DEFAULT_CONFIG = RunConfig()
_NO_KWARGS: dict[str, Any] = {}


# The executor's cheapest level: per (function, platform, runtime), a call key -> (the
# specialisation, its CompiledProgram). A call key is, per positional argument, (type, shape,
# dtype) of a numpy array or torch tensor, or (type, value) of a plain int/float/bool: at least
# as fine as the jit's specialisation key (tensors by shape and dtype, folded scalars by type
# and value, runtime scalars by dtype only), so one call key names one specialisation and a
# hit skips binding and specialising. Keys are stored only after a call with every parameter
# passed positionally succeeded. Calls it does not cover (keywords, defaults left out, other
# argument types, NaN) take the specialising path.
class _Calls:
    __slots__ = ("fn", "nparams", "programs")

    def __init__(self, fn: Any) -> None:
        self.fn = fn
        self.nparams = len(fn.param_names)
        self.programs: dict[tuple[Any, ...], tuple[Any, CompiledProgram]] = {}


_calls: dict[tuple[int, str, str], _Calls] = {}
_CALL_KEY_SCALARS = frozenset((int, float, bool))
_MAX_CALL_KEYS = 256  # per function (a function called with ever new scalar values stops adding)


def _call_key(args: tuple[Any, ...], nparams: int) -> tuple[Any, ...] | None:
    if len(args) != nparams:
        return None
    key: list[Any] = []
    for a in args:
        t = type(a)
        if t in _CALL_KEY_SCALARS:
            if t is float and math.isnan(a):  # the specialising path reports it
                return None
            key.append((t, a))
            continue
        module = t.__module__
        if not (module == "numpy" or module.startswith("torch")):
            return None
        shape = getattr(a, "shape", None)
        dtype = getattr(a, "dtype", None)
        if shape is None or dtype is None:
            return None
        key.append((t, tuple(shape), dtype))
    return tuple(key)


def _remember_call(
    fn: Any, args: tuple[Any, ...], config: RunConfig, spec: Any, prog: CompiledProgram
) -> None:
    slot = (id(fn), config.platform, config.runtime)
    with _programs_lock:
        entry = _calls.get(slot)
        if entry is None or entry.fn is not fn:
            entry = _calls[slot] = _Calls(fn)
        key = _call_key(args, entry.nparams)
        if key is not None and len(entry.programs) < _MAX_CALL_KEYS:
            entry.programs[key] = (spec, prog)


def _executor_call(fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any], config: RunConfig) -> Any:
    if not kwargs:
        entry = _calls.get((id(fn), config.platform, config.runtime))
        if entry is not None and entry.fn is fn:
            key = _call_key(args, entry.nparams)
            hit = entry.programs.get(key) if key is not None else None
            if hit is not None:
                spec, prog = hit
                spec.check_captured()  # as specialize() does on its cache hit
                return run_artifact(prog.artifact, args, _NO_KWARGS, config)
    return _executor_call_slow(fn, args, kwargs, config)


def _executor_call_slow(fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any], config: RunConfig) -> Any:
    bound = fn.bind(*args, **kwargs)
    for name, value in zip(fn.param_names, bound, strict=True):
        if is_runtime(value):
            raise TypeError(
                f"{fn.__name__}(): parameter {name!r} is a runtime scalar (pl.RUNTIME); a call runs the "
                "program, so pass its value"
            )
    spec = fn.specialize(*args, **kwargs)
    # spec.key holds no value for a runtime scalar (pl.RUNTIME default): one program for all values
    memo = (id(fn), spec.key, config.platform, config.runtime)  # cheap in-memory level
    with _programs_lock:
        prog = _programs.get(memo)
    if prog is None:
        prog = compile(spec, platform=config.platform, runtime=config.runtime)
        with _programs_lock:
            prog = _programs.setdefault(memo, prog)
    result = prog(*bound, config=config)  # signature defaults filled in, in parameter order
    if not kwargs:
        _remember_call(fn, args, config, spec, prog)
    return result


def jit_executor(fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Executes a ``@pl.jit`` call in program mode: ``fn(a, b, c, config=RunConfig())``."""
    kwargs = dict(kwargs)
    config = kwargs.pop("config", None) or _DEFAULT_CONFIG
    if not isinstance(config, RunConfig):
        raise TypeError(
            f"{getattr(fn, '__name__', fn)}(config=...): expected a RunConfig, got {type(config).__name__}"
        )
    return _executor_call(fn, args, kwargs, config)
