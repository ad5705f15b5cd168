"""``pypto-runtime run ARTIFACT``: run a compiled program on ``.npy`` inputs, in program mode.

Parameters are bound by name from the metadata: ``--arg NAME=FILE.npy`` for a tensor,
``--arg NAME=VALUE`` for a scalar. Every In and InOut tensor and every scalar must be given;
an Out tensor may be omitted (it is allocated with the metadata's shape and dtype, zero-filled;
an Out with a dynamic extent must be given, its file's shape sets the extent). After the run,
every Out and InOut tensor is written: to ``--out NAME=FILE`` when given, else to
``NAME.npy`` in ``--out-dir`` (default: the current directory). ``--trace DIR`` writes the
simulated chip's swimlane trace (Chrome/Perfetto JSON, ``DIR/<program>_call<k>.swimlane.json``).

Example:
    $ pypto-runtime run 3f2a9c --arg a=a.npy --arg b=b.npy --arg alpha=0.5 --out out=sum.npy
"""

from __future__ import annotations

import argparse
import math
import os
import stat
import time
from pathlib import Path
from typing import Any

from rich.table import Table

from pypto.ir import SIMULATOR_PLATFORMS, Contract, atomic_write
from pypto.runtime.cli._common import (
    EXIT_OK,
    Failed,
    UsageError,
    add_command,
    clip,
    locate,
    shape_text,
    stdout_console,
    step,
    toolchain_of,
)

__all__ = ["add_parser", "command"]

_NPY_MAGIC = b"\x93NUMPY"
_MAX_DEVICE_ID = 2**31 - 1  # device ordinals are C ints


def _seconds(text: str) -> float:
    """``--timeout``: a finite number of seconds > 0 (a negative, zero, nan or inf limit
    would mean no limit or an immediate timeout: refused)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {clip(text)!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(
            f"expected a finite number of seconds > 0 (omit --timeout for no limit), got {clip(text)!r}"
        )
    return value


def _device_id(text: str) -> int:
    """``--device-id``: an int in [0, 2**31 - 1]."""
    try:
        value = int(text, 10)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a device ordinal (an int >= 0), got {clip(text)!r}"
        ) from None
    if not 0 <= value <= _MAX_DEVICE_ID:
        raise argparse.ArgumentTypeError(f"expected an int in [0, {_MAX_DEVICE_ID}], got {clip(text)!r}")
    return value


_SUMMARY = "run a compiled program on .npy inputs and write its outputs"  # its line in the command list


def add_parser(sub: Any, parent: argparse.ArgumentParser) -> None:
    p = add_command(sub, parent, "run", _SUMMARY, __doc__)
    p.add_argument("artifact", metavar="ARTIFACT", help="artifact directory, or store key (or unique prefix)")
    p.add_argument(
        "--arg",
        action="append",
        default=[],
        metavar="NAME=FILE.npy|VALUE",
        help="a tensor parameter from a .npy file, or a scalar's value (repeat per parameter)",
    )
    p.add_argument(
        "--out",
        action="append",
        default=[],
        metavar="NAME=FILE",
        help="where to write Out/InOut parameter NAME (.npy format; default: OUT_DIR/NAME.npy)",
    )
    p.add_argument("--out-dir", default=".", help="directory of outputs without --out (default: .)")
    p.add_argument("--entry", help="entry of a multi-entry program directory (default: its default entry)")
    p.add_argument(
        "--platform",
        help=f"run on this simulator instead of the compiled platform ({', '.join(SIMULATOR_PLATFORMS)})",
    )
    p.add_argument("--runtime", help="chip runtime (default: the artifact's)")
    p.add_argument("--device-id", type=_device_id, default=0, help="device ordinal (default 0)")
    p.add_argument("--timeout", type=_seconds, help="seconds to wait for the run, > 0 (default: no limit)")
    p.add_argument("--trace", metavar="DIR", help="write the swimlane trace (Chrome/Perfetto JSON) into DIR")
    p.set_defaults(handler=command)


def _pairs(items: list[str], option: str, names: tuple[str, ...]) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items:
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep or not name or not value:
            raise UsageError(f"{option} {clip(item)}: expected NAME=VALUE")
        if name not in names:
            raise UsageError(
                f"{option} {clip(item)}: no parameter {clip(name)!r}; parameters are {', '.join(names)}"
            )
        if name in out:
            raise UsageError(f"{option} {name}: given twice")
        out[name] = value
    return out


def _want(p: Any) -> str:
    return f"{p.dtype.value} ({p.dtype.array_name}) of shape {shape_text(p.shape)}"


def _load_npy(np: Any, p: Any, file: str) -> Any:
    """The array of ``file`` for tensor parameter ``p``: a regular .npy file whose header's
    dtype and shape match the metadata (a dynamic extent matches any) and whose size holds
    the data the header declares. The header is checked before any data is read, so a header
    declaring a huge shape is refused without allocating it."""
    what = f"--arg {p.name}={clip(file)}"
    try:
        fd = os.open(file, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except (OSError, ValueError) as exc:  # ValueError: a NUL in the name
        raise UsageError(f"{what}: cannot read the file ({getattr(exc, 'strerror', None) or exc})") from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise UsageError(f"{what}: not a regular file (a .npy file is expected)")
    os.set_blocking(fd, True)
    with os.fdopen(fd, "rb") as f:
        try:
            magic = f.read(len(_NPY_MAGIC))
        except OSError as exc:
            raise UsageError(f"{what}: cannot read the file ({exc.strerror})") from None
        if magic != _NPY_MAGIC:
            raise UsageError(
                f"{what}: not a .npy file (no .npy header); parameter {p.name!r} expects {_want(p)} "
                "saved with numpy.save"
            )
        fmt = np.lib.format
        try:
            f.seek(0)
            version = fmt.read_magic(f)
            if version == (1, 0):
                shape, _fortran, dtype = fmt.read_array_header_1_0(f)
            elif version == (2, 0):
                shape, _fortran, dtype = fmt.read_array_header_2_0(f)
            else:
                raise ValueError(f".npy format version {version[0]}.{version[1]} is not supported (1.0, 2.0)")
        except (OSError, ValueError, EOFError, SyntaxError, TypeError) as exc:
            raise UsageError(f"{what}: not a readable .npy file ({clip(str(exc), 200)})") from None
        _check_header(p, file, shape, dtype)
        data_size = math.prod(shape) * dtype.itemsize
        held = st.st_size - f.tell()
        if held != data_size:
            raise UsageError(
                f"{what}: the header declares {dtype.name} of shape {list(shape)} ({data_size} bytes of "
                f"data), but the file holds {held} bytes after the header"
            )
        try:
            f.seek(0)  # read_array reads the header again
            arr = fmt.read_array(f, allow_pickle=False)
        except MemoryError:
            raise UsageError(f"{what}: {data_size} bytes of data do not fit in memory") from None
        except (OSError, ValueError, EOFError) as exc:
            raise UsageError(f"{what}: not a readable .npy file ({clip(str(exc), 200)})") from None
    if not arr.dtype.isnative:  # big-endian data: the same values in the machine's byte order
        arr = arr.astype(arr.dtype.newbyteorder("="))
    return np.ascontiguousarray(arr)


def _check_header(p: Any, file: str, shape: tuple[int, ...], dtype: Any) -> None:
    """The dtype and shape a .npy header declares must be those of parameter ``p``."""
    from pypto.ir import DataType

    got = DataType.from_array_name(dtype.name) if dtype.kind in "biuf" else None
    dims_ok = (
        len(shape) == len(p.shape)
        and all(g >= 0 for g in shape)
        and all(w < 0 or w == g for w, g in zip(p.shape, shape, strict=False))
    )
    if got is not p.dtype or not dims_ok:
        dims = ", ".join(str(d) for d in shape)
        raise UsageError(
            f"--arg {p.name}={clip(file)}: parameter {p.name!r} ({p.direction.value}) expects {_want(p)}; "
            f"{clip(file)} holds {dtype.name} of shape {clip('[' + dims + ']', 120)}"
        )


def _scalar(p: Any, text: str) -> int | float | bool:
    what = f"--arg {p.name}={clip(text)}: parameter {p.name!r} ({p.dtype.value} scalar)"
    t = text.strip()
    if p.dtype.value == "BOOL":
        if t.lower() in ("1", "true", "yes", "on"):
            return True
        if t.lower() in ("0", "false", "no", "off"):
            return False
        raise UsageError(f"{what}: expected true or false")
    try:
        if p.dtype.is_float:
            return float(t)
        value = int(t, 0)
    except ValueError:
        kind = "a number" if p.dtype.is_float else "an integer"
        raise UsageError(f"{what}: {clip(text)!r} is not {kind}") from None
    bits = p.dtype.bits
    low, high = (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) if not p.dtype.is_unsigned_int else (0, 2**bits - 1)
    if not low <= value <= high:
        raise UsageError(f"{what}: {clip(text)} is outside the range of {p.dtype.value}, [{low}, {high}]")
    return value


def _bind(np: Any, params: Any, given: dict[str, str]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    missing = []
    for p in params:
        text = given.get(p.name)
        if p.is_scalar:
            if text is None:
                missing.append(f"{p.name} ({p.dtype.value} scalar)")
            else:
                values[p.name] = _scalar(p, text)
            continue
        if p.layout.value != "ND":
            raise UsageError(
                f"parameter {p.name!r} has {p.layout.value} layout; the command runs ND tensors only"
            )
        if text is not None:
            values[p.name] = _load_npy(np, p, text)
        elif p.direction.value != "Out":
            missing.append(f"{p.name} ({p.direction.value} {_want(p)})")
        elif p.is_dynamic:
            raise UsageError(
                f"Out parameter {p.name!r} has a dynamic shape {shape_text(p.shape)}; pass it with "
                f"--arg {p.name}=FILE.npy (its shape sets the extents)"
            )
        else:
            try:
                values[p.name] = np.zeros(p.shape, dtype=p.dtype.array_name)
            except TypeError:
                raise UsageError(
                    f"Out parameter {p.name!r} is {p.dtype.value}, which numpy cannot hold"
                ) from None
    if missing:
        raise UsageError("missing --arg for " + "; ".join(missing))
    return values


def _save(np: Any, array: Any, target: Path, name: str) -> None:
    """Write ``array`` to exactly ``target`` in .npy format (no suffix added), atomically and
    durably, with the permissions a plain file creation gives."""
    try:
        atomic_write(target, lambda f: np.save(f, array, allow_pickle=False), mode=None)
    except OSError as exc:
        raise Failed(f"output {name!r}: cannot write {target} ({exc.strerror})") from None


def _outputs(params: Any, given: dict[str, str], out_dir: str) -> dict[str, Path]:
    targets: dict[str, Path] = {}
    for p in params:
        if p.is_tensor and p.direction.value in ("Out", "InOut"):
            targets[p.name] = Path(given[p.name]) if p.name in given else Path(out_dir) / f"{p.name}.npy"
    for name in given:
        if name not in targets:
            raise UsageError(f"--out {name}: parameter {name!r} is not an Out or InOut tensor")
    for name, path in targets.items():
        option = f"--out {name}" if name in given else "--out-dir"
        try:
            usable = path.parent.is_dir()
        except (OSError, ValueError) as exc:  # e.g. a name longer than the filesystem allows
            reason = getattr(exc, "strerror", None) or str(exc)
            raise UsageError(f"{option}: {clip(str(path))} is not a usable path ({reason})") from None
        if not usable:
            raise UsageError(f"output {name!r} ({option}): directory {clip(str(path.parent))} does not exist")
    return targets


# What RunConfig names in its ValueError -> the option that set it.
_OPTION_OF = {
    "output_prefix": "--trace",
    "RunConfig(runtime)": "--runtime",
    "RunConfig(device_id)": "--device-id",
    "RunConfig(timeout)": "--timeout",
}


def _config(args: argparse.Namespace, artifact: Any) -> Any:
    from pypto.runtime.runner import RunConfig

    call_config = None
    if args.trace:
        import simpler

        call_config = simpler.CallConfig(swimlane=True, output_prefix=str(Path(args.trace).resolve()))
    try:
        config = RunConfig(
            platform=artifact.platform,
            runtime=args.runtime or artifact.runtime,
            device_id=args.device_id,
            call_config=call_config,
            timeout=args.timeout,
        )
    except ValueError as exc:
        text = clip(str(exc), 300)
        option = next((o for f, o in _OPTION_OF.items() if f in text), None)
        raise UsageError(f"{option}: {text}" if option else text) from None
    if args.trace:  # only once RunConfig has refused a directory inside the store
        try:
            Path(args.trace).mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UsageError(
                f"--trace {clip(args.trace)}: cannot create the directory ({exc.strerror})"
            ) from None
    return config


def _builds_on_load(artifact: Any) -> bool:
    """True when the first load compiles sources (no prebuilt binaries of this toolchain)."""
    from pypto.runtime.compiled import toolchain_identity

    return toolchain_of(artifact.path) != toolchain_identity(artifact.platform)


def _load(artifact: Any) -> None:
    from pypto.runtime.compiled import UnsafeArtifactError

    try:
        artifact.chip_callable()
    except UnsafeArtifactError as exc:  # a symlinked or special file among sources/binaries
        raise UsageError(f"refused: {exc}") from None
    except Exception as exc:
        raise Failed(f"{artifact.name}: loading failed: {type(exc).__name__}: {exc}") from None


def command(args: argparse.Namespace) -> int:
    try:
        import numpy as np
    except ImportError:  # pragma: no cover - numpy is a dependency of pypto-runtime
        raise Failed("`run` reads and writes .npy files with numpy; pip install numpy") from None
    from pypto.runtime.compiled import CompiledProgram
    from pypto.runtime.host_tensors import TensorBindingError

    found = locate(args.artifact, platform=args.platform, entry=args.entry)
    artifact = found.artifact
    name = artifact.name
    if Contract.PROGRAM.value not in artifact.capabilities:
        raise UsageError(
            f"{name}: compiled for the {', '.join(artifact.capabilities)} contract only (an operator of "
            "pypto.torch); `run` needs a PROGRAM artifact (`pypto-runtime compile`, pypto.runtime.compile)"
        )
    params = artifact.params
    names = tuple(p.name for p in params)
    values = _bind(np, params, _pairs(args.arg, "--arg", names))
    targets = _outputs(params, _pairs(args.out, "--out", names), args.out_dir)
    config = _config(args, artifact)
    trace_dir = Path(args.trace) if args.trace else None
    before = set(trace_dir.glob("*.swimlane.json")) if trace_dir else set()

    with step(f"loading {name}", quiet=args.quiet):
        builds = _builds_on_load(artifact)
        if not builds:
            _load(artifact)
    if builds:  # the build shows its own progress bar: a plain line here, no spinner
        binaries = len(artifact.metadata.kernels) + 1
        with step(f"building {name} ({binaries} binaries)", quiet=args.quiet, spinner=False):
            _load(artifact)
    start = time.monotonic()
    with step(f"running {name} on {config.platform}", quiet=args.quiet):
        try:
            CompiledProgram(artifact)(*(values[p.name] for p in params), config=config)
        except TensorBindingError as exc:
            raise UsageError(str(exc)) from None
        except Exception as exc:
            raise Failed(f"{name}: the run failed: {type(exc).__name__}: {exc}") from None
    seconds = time.monotonic() - start
    for pname, target in targets.items():
        _save(np, values[pname], target, pname)
    if args.quiet:
        return EXIT_OK
    console = stdout_console()
    console.print(f"ran {name} on {config.platform} in {seconds * 1e3:.1f} ms", soft_wrap=True)
    table = Table(title="outputs", title_justify="left")
    for col in ("parameter", "direction", "dtype", "shape", "file"):
        table.add_column(col)
    by_name = {p.name: p for p in params}
    for pname, target in targets.items():
        arr = values[pname]
        table.add_row(
            pname,
            by_name[pname].direction.value,
            by_name[pname].dtype.value,
            str(list(arr.shape)),
            str(target),
        )
    if targets:
        console.print(table)
    if trace_dir is not None:
        for trace in sorted(set(trace_dir.glob("*.swimlane.json")) - before):
            console.print(f"trace: {trace}", soft_wrap=True)
    return EXIT_OK
