"""``pypto-runtime compile FILE.py::FN``: specialise a ``@pl.jit`` function, compile it into
the artifact store (PROGRAM contract) and print its key, so that an artifact built on one
machine runs on another (`pypto-runtime run KEY`, or copy the printed directory).

``--arg NAME=SPEC`` gives each parameter the call would get:

- a tensor: ``NAME=SHAPE:DTYPE``, e.g. ``a=64x64:FP32`` (``a=128:FP16`` for rank 1);
- a runtime scalar (one artifact for every value): ``NAME=RUNTIME`` or ``NAME=RUNTIME:FP32``;
- a scalar folded into the program as a constant: ``NAME=5``, ``NAME=0.5``, ``NAME=true``.

Parameters with a signature default may be left out. A ``@pl.program`` takes no ``--arg``.
The file is imported as a module (kernels need their source file); its directory is put
first on ``sys.path`` so that its own imports work.

For an NPU platform (``--platform a2a3`` or ``a5``), ``--emit-sources DIR`` writes the device
build's sources into DIR (a new or empty directory) and prints it: the PTO-ISA kernels and the
orchestration, simpler's headers, ``build.json`` and ``build.sh`` (CANN's bisheng against the
official PTO-ISA headers; see pypto.runtime.device_build). It needs no CANN. UNVERIFIED: nothing
of the device path has run on hardware.

Example:
    $ pypto-runtime compile kernels.py::scaled_add --arg a=64x64:FP32 --arg b=64x64:FP32 \\
          --arg alpha=RUNTIME:FP32 --arg out=64x64:FP32
    $ pypto-runtime compile kernels.py::scaled_add ... --platform a2a3 --emit-sources dev/
"""

from __future__ import annotations

import argparse
import errno
import importlib.util
import inspect
import json
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pypto.ir import DEFAULT_PLATFORM, DEFAULT_RUNTIME
from pypto.runtime.cli._common import (
    EXIT_OK,
    Failed,
    UsageError,
    add_command,
    clip,
    stdout_console,
    step,
)

__all__ = ["add_parser", "command"]

_SHAPE = re.compile(r"^[0-9]+(x[0-9]+)*$")

_SUMMARY = "compile a @pl.jit function into the store and print its key (needs pypto-ir)"  # its line in the command list


def add_parser(sub: Any, parent: argparse.ArgumentParser) -> None:
    p = add_command(sub, parent, "compile", _SUMMARY, __doc__)
    p.add_argument("target", metavar="FILE.py::FN", help="a Python file and the @pl.jit function in it")
    p.add_argument(
        "--arg",
        action="append",
        default=[],
        metavar="NAME=SPEC",
        help="SHAPE:DTYPE for a tensor (64x64:FP32), RUNTIME[:DTYPE] for a runtime scalar, or a constant",
    )
    p.add_argument(
        "--platform",
        default=DEFAULT_PLATFORM,
        help=f"target platform (default {DEFAULT_PLATFORM})",
    )
    p.add_argument("--runtime", default=DEFAULT_RUNTIME, help=f"chip runtime (default {DEFAULT_RUNTIME})")
    p.add_argument(
        "-o",
        "--output-dir",
        help="compile into this new directory (sources only; binaries are built at its first run) "
        "instead of the store",
    )
    p.add_argument(
        "--emit-sources",
        metavar="DIR",
        help="NPU platforms (a2a3, a5): write the device build's sources (kernels, orchestration, "
        "headers, build.sh) into this new or empty directory and print it; needs no CANN",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object: key, path, name, platform")
    p.set_defaults(handler=command)


@dataclass(frozen=True)
class _Placeholder:
    """A tensor for specialisation only: a shape and a dtype, no storage (specialisation
    duck-types tensors by ``.shape`` and ``.dtype``)."""

    shape: tuple[int, ...]
    dtype: Any  # pypto.ir.dtypes.DataType


def _dtype(text: str, what: str) -> Any:
    from pypto.ir import DataType

    found = DataType.from_array_name(text)
    if found is not None:
        return found
    try:
        return DataType.parse(text, what=what)
    except ValueError as exc:
        raise UsageError(clip(str(exc), 300)) from None


def _value(name: str, spec: str, pl: Any) -> tuple[Any, Any]:
    """(argument, runtime dtype or None) of ``--arg NAME=SPEC``."""
    what = f"--arg {clip(name)}={clip(spec)}"
    head, sep, tail = spec.partition(":")
    if head.strip().upper() == "RUNTIME":
        return pl.RUNTIME, (_dtype(tail.strip(), what) if sep else None)
    if sep:
        shape = head.strip().lower()
        if not _SHAPE.match(shape):
            raise UsageError(f"{what}: expected SHAPE:DTYPE with SHAPE like 64x64, got {clip(head)!r}")
        return _Placeholder(tuple(int(d) for d in shape.split("x")), _dtype(tail.strip(), what)), None
    text = spec.strip()
    if text.lower() in ("true", "false"):
        return text.lower() == "true", None
    if re.fullmatch(r"[+-]?[0-9]+", text):
        return int(text), None
    try:
        return float(text), None
    except ValueError:
        pass
    raise UsageError(
        f"{what}: expected SHAPE:DTYPE (a tensor), RUNTIME[:DTYPE] (a runtime scalar) or a number/true/false"
    )


def _import(target: str) -> Any:
    file, sep, qualname = target.rpartition("::")
    if not sep or not file or not qualname:
        raise UsageError(f"{clip(target)}: expected FILE.py::FUNCTION")
    path = Path(file)
    try:
        found_file = path.is_file()
    except (OSError, ValueError) as exc:  # e.g. a name longer than the filesystem allows
        raise UsageError(
            f"{clip(file)}: not a usable path ({getattr(exc, 'strerror', None) or exc})"
        ) from None
    if not found_file:
        raise UsageError(f"{clip(file)}: no such file")
    stem = path.stem if path.stem.isidentifier() else "kernels"
    module_name = stem if stem not in sys.modules else f"_pypto_compile_{stem}"
    spec = importlib.util.spec_from_file_location(module_name, path.resolve())
    if spec is None or spec.loader is None:
        raise UsageError(f"{file}: cannot be imported as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    sys.path.insert(0, str(path.resolve().parent))
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        raise Failed(f"{file}: importing it failed: {type(exc).__name__}: {exc}") from None
    obj: Any = module
    for part in qualname.split("."):
        if not hasattr(obj, part):
            from pypto.language.interface import JITFunction

            found = [n for n, v in vars(module).items() if isinstance(v, JITFunction)]
            hint = f"; @pl.jit functions in it: {', '.join(found)}" if found else ""
            raise UsageError(f"{clip(file)}: no {clip(qualname)!r}{hint}")
        obj = getattr(obj, part)
    return obj


def _required(fn: Any) -> list[str]:
    """Parameters of the wrapped function without a signature default."""
    try:
        sig = inspect.signature(getattr(fn, "__wrapped__", fn))
    except (TypeError, ValueError):
        return []
    return [n for n, p in sig.parameters.items() if p.default is inspect.Parameter.empty]


def command(args: argparse.Namespace) -> int:
    try:
        import pypto.language as pl
        from pypto.ir import PyptoCompileError
        from pypto.runtime.api import compile as compile_program
    except ImportError as exc:
        raise Failed(
            f"`compile` needs pypto-ir (the compiler), which cannot be imported ({exc}); "
            "pip install pypto-ir, or compile on a machine that has it and `run` the key or directory here"
        ) from None
    from pypto.ir import RUNTIMES, parse_platform
    from pypto.runtime.errors import DeviceBuildUnavailable

    try:
        platform = parse_platform(args.platform)
    except ValueError as exc:
        raise UsageError(f"--platform: {exc}") from None
    if args.runtime not in RUNTIMES:
        raise UsageError(f"--runtime: expected one of {', '.join(RUNTIMES)}, got {args.runtime!r}")
    from pypto.runtime import settings

    emit = getattr(args, "emit_sources", None)
    if emit is not None:
        from pypto.ir import DeviceKind, device_kind

        if device_kind(platform) is not DeviceKind.ONBOARD:
            raise UsageError(
                f"--emit-sources: writes the device build's sources of an NPU platform (a2a3, a5), got "
                f"--platform {platform}; use --output-dir DIR for a simulated platform's sources"
            )
        if args.output_dir is not None:
            raise UsageError("--emit-sources and --output-dir: give one of them")
        dest = Path(emit)
        if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
            raise UsageError(f"--emit-sources: {dest} exists and is not an empty directory")
    if emit is None and args.output_dir is None and not settings.cache_enabled():
        raise UsageError("the artifact store is disabled (PYPTO_CACHE=0): pass --output-dir DIR")
    fn = _import(args.target)
    given: dict[str, Any] = {}
    runtime_dtypes: dict[str, Any] = {}
    for item in args.arg:
        name, sep, spec = item.partition("=")
        name = name.strip()
        if not sep or not name or not spec:
            raise UsageError(f"--arg {clip(item)}: expected NAME=SPEC")
        if name in given:
            raise UsageError(f"--arg {name}: given twice")
        given[name], dtype = _value(name, spec, pl)
        if dtype is not None:
            runtime_dtypes[name] = dtype
    from pypto.language.interface import JITFunction

    name = getattr(fn, "__name__", None) or getattr(fn, "name", "program")
    if isinstance(fn, JITFunction):
        names = fn.param_names
        unknown = [n for n in given if n not in names]
        if unknown:
            raise UsageError(f"{name}: no parameter {clip(unknown[0])!r}; parameters are {', '.join(names)}")
        missing = [n for n in _required(fn) if n not in given]
        if missing:
            raise UsageError(
                f"{name}: missing --arg for {', '.join(missing)} (NAME=SHAPE:DTYPE for a tensor, "
                "NAME=RUNTIME[:DTYPE] for a runtime scalar, NAME=VALUE for a constant)"
            )
        try:
            program = fn.specialize(**given)
        except (TypeError, ValueError) as exc:  # arguments that do not fit the signature
            raise UsageError(str(exc)) from None
        except PyptoCompileError as exc:
            raise Failed(str(exc)) from None
    elif given:
        raise UsageError(f"{args.target}: not a @pl.jit function, so it takes no --arg")
    else:
        program = fn
    if emit is not None:
        return _emit_sources(
            args,
            program,
            name=str(name),
            platform=platform,
            dest=Path(emit),
            compile_program=compile_program,
            compile_error=PyptoCompileError,
        )
    start = time.monotonic()
    try:
        with step(f"compiling {name} for {platform}", quiet=args.quiet, spinner=False):
            prog = compile_program(
                program, platform=platform, runtime=args.runtime, output_dir=args.output_dir
            )
    except PyptoCompileError as exc:
        raise Failed(str(exc)) from None
    except FileExistsError as exc:
        raise UsageError(f"--output-dir: {exc}") from None
    except DeviceBuildUnavailable as exc:
        raise Failed(f"{exc}. `--emit-sources DIR` writes them into a directory of your choice") from None
    except OSError as exc:
        if exc.errno != errno.ENAMETOOLONG:
            raise Failed(f"compiling {name} failed: {type(exc).__name__}: {clip(str(exc), 300)}") from None
        raise UsageError(
            f"--output-dir {clip(str(args.output_dir))}: not a usable path ({exc.strerror})"
        ) from None
    except Exception as exc:
        raise Failed(f"compiling {name} failed: {type(exc).__name__}: {exc}") from None
    for pname, dtype in runtime_dtypes.items():
        p = next(p for p in prog.params if p.name == pname)
        if p.dtype is not dtype:
            raise UsageError(f"--arg {pname}=RUNTIME:{dtype.value}: the parameter is {p.dtype.value}")
    return _report(args, prog, time.monotonic() - start)


def _emit_sources(
    args: argparse.Namespace,
    program: Any,
    *,
    name: str,
    platform: str,
    dest: Path,
    compile_program: Any,
    compile_error: type[Exception],
) -> int:
    """Compile into a scratch directory and write the device sources of each entry into
    ``dest`` (``dest/<entry>`` for a program with several)."""
    import tempfile

    from pypto.runtime import device_build

    try:
        with tempfile.TemporaryDirectory(prefix="pypto-emit-") as tmp:
            with step(f"compiling {name} for {platform}", quiet=args.quiet, spinner=False):
                prog = compile_program(
                    program, platform=platform, runtime=args.runtime, output_dir=Path(tmp) / "artifact"
                )
            names = list(prog.entry_names)
            for entry in names:
                art = prog.entry(entry).artifact
                where = dest if len(names) == 1 else dest / entry
                device_build.write_sources(art.path, art.metadata, where)
    except compile_error as exc:
        raise Failed(str(exc)) from None
    except FileExistsError as exc:
        raise UsageError(f"--emit-sources: {exc}") from None
    if args.json:
        print(json.dumps({"sources": str(dest), "name": name, "platform": platform}, indent=2))
    elif args.quiet:
        print(dest)
    else:
        stdout_console().print(
            f"device sources of {name} for {platform}: {dest} (build with {dest / 'build.sh'}; "
            "UNVERIFIED: never run on hardware)",
            soft_wrap=True,
        )
    return EXIT_OK


def _report(args: argparse.Namespace, prog: Any, seconds: float) -> int:
    from pypto.runtime.artifact_runtime import default_runtime

    art = prog.artifact
    key = art.key
    rt = default_runtime()
    if (
        args.output_dir is None
        and key is not None
        and rt.lookup(key) is None
        and rt.lookup(key, "GENERATED") is None
    ):
        raise Failed(
            f"{art.name}: compiled, but not into the store (disabled, read-only or not writable: "
            "see `pypto-runtime cache stat`); it is removed when this process exits. Pass --output-dir DIR"
        )
    entries = {n: prog.entry(n).artifact for n in prog.entry_names}
    data = {
        "key": key,
        "path": str(art.path),
        "name": art.name,
        "platform": art.platform,
        "entries": {n: {"key": a.key, "path": str(a.path)} for n, a in entries.items()},
        "seconds": round(seconds, 3),
    }
    if args.json:
        print(json.dumps(data, indent=2))
        return EXIT_OK
    if args.quiet:  # one line per entry, the default first: what a script captures
        for a in sorted(entries.values(), key=lambda a: a is not art):
            print(a.key if a.key is not None and args.output_dir is None else a.path)
        return EXIT_OK
    console = stdout_console()
    for n, a in entries.items():
        label = f" ({n})" if len(entries) > 1 else ""
        if a.key is not None and args.output_dir is None:
            console.print(f"key{label}: {a.key}", soft_wrap=True)
        console.print(f"path{label}: {a.path}", soft_wrap=True)
    console.print(f"compiled {art.name} for {art.platform} in {seconds:.1f} s", soft_wrap=True)
    return EXIT_OK
