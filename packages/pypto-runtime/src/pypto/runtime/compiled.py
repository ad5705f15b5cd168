"""Compiled products: CompiledArtifact (one single-chip directory) and CompiledProgram.

A :class:`CompiledArtifact` owns one artifact directory written by pypto-ir's
``compile_to_files``, the effective platform and the :class:`~pypto.ir.metadata.ArtifactMetadata`.
``from_dir`` reads metadata only; the native callable is assembled on first use:

- binaries come from ``prebuilt/`` when the directory holds binaries built by the same
  toolchain (a READY store entry);
- otherwise every source is compiled in memory with ``simpler.toolchain``.

Everything read from an artifact directory (metadata, ``entries.json``, toolchain.json,
sources, binaries) is opened relative to the directory without following any symlink below it
and without blocking on a FIFO, and must be a regular file (:func:`_read_file`); a directory
named by ``entries.json`` must be a plain name of a real subdirectory. What breaks this is
refused with :class:`UnsafeArtifactError`. What is read from a store entry is also checked
against the manifest validated when the entry was looked up (:meth:`CompiledArtifact._read`),
never against one re-read from disk: a file swapped after validation is refused.

A :class:`CompiledProgram` composes an artifact with the live IR (when compiled in this
process), path compatibility (``os.fspath(prog)`` is the directory) and the program runner.
Parameter names, output slots and return count all come from the metadata.
"""

from __future__ import annotations

import errno
import json
import os
import stat
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pypto.ir import (
    DECLINED,
    META_FILE,
    ArtifactMetadata,
    Contract,
    DeviceKind,
    KernelInfo,
    MetadataError,
    ParamInfo,
    binary_key,
    device_kind,
)
from pypto.language.interface import user_facing
from pypto.runtime import device_build, progress, settings
from pypto.runtime._fs import read_inside
from pypto.runtime.artifact_runtime import default_runtime
from pypto.runtime.errors import PyptoRuntimeError
from pypto.runtime.manifest import MANIFEST_NAME, InvalidEntry, Manifest, validate_entry
from pypto.runtime.settings import SettingsError
from pypto.runtime.store import check_key

if TYPE_CHECKING:
    from pypto.runtime.call_plan import CallPlan

__all__ = [
    "DEVICE_DIR",
    "PREBUILT_DIR",
    "CompiledArtifact",
    "CompiledProgram",
    "UnsafeArtifactError",
    "build_prebuilt",
    "entry_index",
    "toolchain_identity",
]

PREBUILT_DIR = "prebuilt"
DEVICE_DIR = "device"  # an NPU artifact's device sources (pypto.runtime.device_build)
ENTRIES_FILE = "entries.json"  # index of a multi-entry program's directory
_TOOLCHAIN_FILE = f"{PREBUILT_DIR}/toolchain.json"
_ORCH_BINARY = f"{PREBUILT_DIR}/orchestration.so"


class UnsafeArtifactError(PyptoRuntimeError):
    """A file or directory of an artifact directory that the loader will not read: a symlink,
    a FIFO, socket or device where a regular file or directory belongs, or an ``entries.json``
    entry that names a directory outside the artifact directory.

    Attributes: ``path`` (what was refused) and ``problem``.
    """

    def __init__(self, path: Path, problem: str) -> None:
        super().__init__(
            f"{path}: {problem}; refused (an artifact directory holds only regular files and real "
            "directories; copy the artifact without symlinks, or recompile it)"
        )
        self.path = path
        self.problem = problem


_REFUSED = {
    errno.ELOOP: "is a symlink",
    errno.ENOTDIR: "is not a directory",
    errno.EINVAL: "is not a regular file (a FIFO, socket or device)",
}


def _read_file(root: Path, rel: str, kind: str) -> bytes:
    """The bytes of ``rel`` in artifact directory ``root``: the one way files of an artifact
    directory are read (never through a symlink below ``root``, never blocking on a FIFO).
    FileNotFoundError when it is absent; :class:`UnsafeArtifactError` when it is not a
    regular file."""
    try:
        return read_inside(root, rel)
    except FileNotFoundError:
        raise
    except ValueError:
        raise UnsafeArtifactError(
            root / rel, f"the {kind} path {rel!r} does not stay inside the directory"
        ) from None
    except OSError as exc:
        problem = _REFUSED.get(exc.errno or 0)
        if problem is None:
            raise
        where = Path(exc.filename) if exc.filename else root / rel
        if where == root / rel:
            raise UnsafeArtifactError(where, f"the {kind} {problem}") from None
        raise UnsafeArtifactError(where, f"{problem}, on the way to the {kind} {rel}") from None


def _load_metadata(root: Path, require: Contract | None = None) -> ArtifactMetadata:
    """``compiled_meta.json`` of ``root``, read with :func:`_read_file` and validated."""
    path = root / META_FILE
    try:
        data = _read_file(root, META_FILE, "metadata")
    except FileNotFoundError:
        raise MetadataError(f"{path}: not found; the directory is not a compiled artifact") from None
    return _parse_metadata(path, data, require)


def _parse_metadata(path: Path, data: bytes, require: Contract | None) -> ArtifactMetadata:
    try:
        raw = json.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise MetadataError(f"{path}: not valid JSON ({exc})") from None
    try:
        return ArtifactMetadata.from_json(raw, require=require)
    except (ValueError, MetadataError) as exc:
        raise MetadataError(f"{path}: {exc}") from None


def entry_index(root: Path) -> tuple[tuple[str, ...], str]:
    """(entry names, default entry) of the multi-entry program directory ``root``, from its
    ``entries.json``. Each entry must be a plain name (no ``/``, not ``.`` or ``..``) of a real
    subdirectory of ``root`` (not a symlink): :class:`UnsafeArtifactError` otherwise, so that
    an index cannot make the loader read a directory outside ``root``. ValueError when the
    index is not ``{"entries": [...], "default": <one of them>}``."""
    index = root / ENTRIES_FILE
    try:
        data = json.loads(_read_file(root, ENTRIES_FILE, "entries index"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise ValueError(f"{index}: not valid JSON ({exc})") from None
    names = data.get("entries") if isinstance(data, dict) else None
    default = data.get("default") if isinstance(data, dict) else None
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names) or default not in names:
        raise ValueError(f"{index}: expected {{'entries': [...], 'default': <one of them>}}")
    for name in names:
        shown = name if len(name) <= 80 else name[:77] + "..."
        if not name or name in (".", "..") or "/" in name or "\\" in name or "\0" in name or len(name) > 255:
            raise UnsafeArtifactError(
                index,
                f"entry {shown!r} is not the plain name of a subdirectory (it could lead outside {root})",
            )
        try:
            st = os.lstat(root / name)
        except FileNotFoundError:
            raise ValueError(f"{index}: entry {shown!r} has no directory {root / name}") from None
        if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
            kind = "a symlink" if stat.S_ISLNK(st.st_mode) else "not a directory"
            raise UnsafeArtifactError(root / name, f"the directory of entry {shown!r} is {kind}")
    return tuple(names), str(default)


def _kernel_binary(k: KernelInfo) -> str:
    return f"{PREBUILT_DIR}/kernels/{k.name}.so"


def toolchain_identity(platform: str) -> dict[str, str]:
    """What builds binaries for ``platform`` here: simpler's host toolchains for SIM platforms
    (orchestrations, and kernels against the PTO-ISA backend ``PTO_ISA_ROOT`` selects).

    Raises:
        SettingsError: PTO_ISA_ROOT or PTO_ISA_CXX is set but unusable.
    """
    if device_kind(platform) is DeviceKind.ONBOARD:
        return device_build.toolchain_identity()
    kernels = _kernel_toolchain()
    from simpler import toolchain

    out = {
        "backend": "host_cpp",
        "simpler_toolchain": toolchain.identity(),
        "pto_backend": str(kernels.pto_backend),
    }
    if kernels.pto_backend == "pto-isa":
        out["pto_isa_root"] = str(settings.get("PTO_ISA_ROOT"))
    return out


def _kernel_toolchain() -> Any:
    """simpler's toolchain for kernel sources, its configuration errors as SettingsError."""
    settings.get("PTO_ISA_ROOT")  # the registry's own check (an absolute path) comes first
    settings.get("PTO_ISA_CXX")
    from simpler import toolchain

    try:
        return toolchain.kernel_toolchain()
    except toolchain.ToolchainError as exc:
        raise SettingsError(str(exc)) from exc


def _read_sources(
    path: Path, meta: ArtifactMetadata, rel: str, read: Callable[[str], bytes]
) -> dict[str, str]:
    return {Path(rel).name: read(rel).decode("utf-8")}


def _compile_all(
    path: Path, meta: ArtifactMetadata, platform: str, read: Callable[[str], bytes] | None = None
) -> dict[str, bytes]:
    """Compile the orchestration and every kernel for ``platform`` (the effective one):
    relative prebuilt path -> bytes. ``read(rel)`` reads a source (default: from ``path``).

    Distinct sources are built once each (identical ones share a binary, also across
    artifacts through the process's memo), in parallel on up to one compiler process per CPU
    this process may run on, each taking its leading includes from a precompiled header
    (``simpler.toolchain``, ``precompile=True``)."""
    if read is None:

        def read(rel: str) -> bytes:
            return _read_file(path, rel, "source")

    if device_kind(platform) is DeviceKind.ONBOARD:
        device = device_build.build(path, meta, sources_dir=path / DEVICE_DIR, read=read)
        orch = {"orchestration.so": _ORCH_BINARY}
        return {orch.get(rel, f"{PREBUILT_DIR}/{rel}"): data for rel, data in device.items()}
    from simpler import toolchain

    # Orchestrations build with simpler's default toolchain; kernels with its kernel toolchain
    # (simpler's PTO-ISA implementation, or the official headers under PTO_ISA_ROOT).
    orch_tc = toolchain.default_toolchain()
    kernel_tc = _kernel_toolchain()
    jobs = [(_ORCH_BINARY, meta.orchestration.source, orch_tc)] + [
        (_kernel_binary(k), k.source, kernel_tc) for k in meta.kernels
    ]
    # target -> memo key; memo key -> (toolchain, sources) still to build (first target's order)
    memo_of: dict[str, tuple[str, str]] = {}
    todo: dict[tuple[str, str], tuple[Any, dict[str, str]]] = {}
    out: dict[str, bytes] = {}
    for target, source, tc in jobs:
        sources = _read_sources(path, meta, source, read)
        memo = (tc.identity(), binary_key(tc.identity(), sources))
        memo_of[target] = memo
        with _binary_memo_lock.lock:
            data = _binary_memo.get(memo)
        if data is not None:
            out[target] = data
        elif memo not in todo:
            todo[memo] = (tc, sources)

    def build(tc: Any, sources: dict[str, str]) -> bytes:
        data: bytes = tc.compile_shared(sources, precompile=True)
        return data

    built: dict[tuple[str, str], bytes] = {}
    if todo:
        workers = min(len(todo), _build_jobs())
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="pypto-build") as pool:
            futures = [(memo, pool.submit(build, tc, sources)) for memo, (tc, sources) in todo.items()]
            try:
                for memo, future in progress.track(futures, f"building {meta.name} ({len(jobs)} binaries)"):
                    built[memo] = future.result()
            finally:
                for _, future in futures:
                    future.cancel()
        with _binary_memo_lock.lock:
            _binary_memo.update(built)
            while len(_binary_memo) > _BINARY_MEMO_SIZE:
                _binary_memo.pop(next(iter(_binary_memo)))
    for target, _, _ in jobs:
        if target not in out:
            out[target] = built[memo_of[target]]
    return {target: out[target] for target, _, _ in jobs}


def _build_jobs() -> int:
    """Compiler processes one build runs at once: the CPUs this process may run on (its
    affinity mask; ``taskset -c 0`` gives one build at a time)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


# Identical sources built by the same toolchain give identical binaries: entries of one
# multi-entry program (and programs sharing a kernel) build each distinct source once.
_BINARY_MEMO_SIZE = 64
_binary_memo: dict[tuple[str, str], bytes] = {}


class _MemoLock:
    def __init__(self) -> None:
        self.lock = threading.Lock()


_binary_memo_lock = _MemoLock()


def _after_fork_in_child() -> None:
    # The memo's lock may have been held by another parent thread at fork(): start over.
    _binary_memo.clear()
    _binary_memo_lock.lock = threading.Lock()


os.register_at_fork(after_in_child=_after_fork_in_child)


def build_prebuilt(path: Path) -> None:
    """ArtifactRuntime build step: add ``prebuilt/`` binaries to a generated directory. For an
    NPU platform the device sources are written to ``device/`` first (kept when the build is
    unavailable: :class:`~pypto.runtime.errors.DeviceBuildUnavailable` leaves the entry
    GENERATED)."""
    meta = _load_metadata(path)
    if device_kind(meta.platform) is DeviceKind.ONBOARD:
        device_build.write_sources(path, meta, path / DEVICE_DIR)
    binaries = _compile_all(path, meta, meta.platform)
    for rel, data in binaries.items():
        target = path / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    (path / _TOOLCHAIN_FILE).write_text(json.dumps(toolchain_identity(meta.platform), sort_keys=True))


def _direction(p: ParamInfo) -> Any:
    import simpler

    return simpler.ArgDirection.Scalar if p.is_scalar else getattr(simpler.ArgDirection, p.direction.value)


def _signature(params: tuple[ParamInfo, ...]) -> list[Any]:
    tensors = [p for p in params if p.is_tensor]
    scalars = [p for p in params if p.is_scalar]
    return [_direction(p) for p in tensors + scalars]


class CompiledArtifact:
    """One single-chip artifact directory, its platform and metadata; native code loads lazily.

    Args:
        path: The artifact directory (holds ``compiled_meta.json``).
        metadata: Its parsed metadata.
        platform: Explicit platform override (reload on another simulator); default: the
            metadata's platform.
        key: The ArtifactKey digest when the directory came from the store.
        manifest: The manifest validated for the directory (``Obtained.manifest``); every
            file read to assemble the callable must match it.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        metadata: ArtifactMetadata,
        *,
        platform: str | None = None,
        key: str | None = None,
        manifest: Manifest | None = None,
    ) -> None:
        if not isinstance(metadata, ArtifactMetadata):
            raise TypeError(
                f"CompiledArtifact(metadata): expected ArtifactMetadata, got {type(metadata).__name__}"
            )
        self.path = Path(path)
        self.metadata = metadata
        self._platform = platform
        self.key = None if key is None else check_key(key)
        self.manifest = manifest
        self._lock = threading.Lock()
        self._callable: Any = None
        self._call_plan: CallPlan | None = None  # pypto.runtime.call_plan: made at the first program call

    @classmethod
    def from_dir(
        cls,
        path: str | os.PathLike[str],
        *,
        platform: str | None = None,
        require: Contract | str | None = None,
        key: str | None = None,
        manifest: Manifest | None = None,
    ) -> CompiledArtifact:
        """Read the metadata of ``path`` (no native code is loaded).

        With ``key`` (a store entry or a private build of this process), the directory is
        tied to the manifest validated for it: ``manifest`` (``Obtained.manifest``), else the
        one the default ArtifactRuntime validated (an entry not seen yet is validated now).
        A directory of its own with a ``manifest.json`` is validated against it."""
        req = None if require is None else Contract.parse(require)
        root = Path(path)
        if manifest is None and key is not None:
            manifest = default_runtime().validated(key, root)
        elif manifest is None and os.path.lexists(root / MANIFEST_NAME):
            own = Manifest.loads(_read_file(root, MANIFEST_NAME, "manifest"))
            manifest = validate_entry(root, key=own.key)
        if manifest is None:
            return cls(path, _load_metadata(root, req), platform=platform, key=key)
        data = _read_checked(root, manifest, META_FILE, "metadata")
        meta = _parse_metadata(root / META_FILE, data, req)
        return cls(path, meta, platform=platform, key=key, manifest=manifest)

    # -- metadata accessors ---------------------------------------------------------------
    @property
    def platform(self) -> str:
        """The effective platform: the explicit override, else the compiled one."""
        return self._platform or self.metadata.platform

    @property
    def device_kind(self) -> str:
        """``SIM`` or ``ONBOARD``: the device kind of the effective platform."""
        return device_kind(self.platform).value

    @property
    def runtime(self) -> str:
        return self.metadata.runtime

    @property
    def name(self) -> str:
        return self.metadata.name

    @property
    def params(self) -> tuple[ParamInfo, ...]:
        return self.metadata.params

    @property
    def lowered_params(self) -> tuple[ParamInfo, ...]:
        return self.metadata.lowered_params

    @property
    def capabilities(self) -> tuple[str, ...]:
        return tuple(self.metadata.capabilities)

    def __fspath__(self) -> str:
        return str(self.path)

    def __repr__(self) -> str:
        return f"CompiledArtifact({self.name!r}, path={str(self.path)!r}, platform={self.platform!r})"

    # -- native loading -------------------------------------------------------------------
    @property
    def loaded(self) -> bool:
        return self._callable is not None

    def chip_callable(self) -> Any:
        """The ``simpler.ChipCallable`` of this artifact, assembled once (thread-safe)."""
        if self._callable is not None:
            return self._callable
        with self._lock:
            if self._callable is None:
                if self.key is not None:
                    self._callable = default_runtime().load(self.key, self._assemble)
                else:
                    self._callable = self._assemble()
        return self._callable

    def _read(self, rel: str, kind: str = "binary") -> bytes:
        """The bytes of ``rel``: the one place where files of the directory are read for
        loading. Never through a symlink; checked against the validated manifest if any."""
        if self.manifest is None:
            return _read_file(self.path, rel, kind)
        return _read_checked(self.path, self.manifest, rel, kind)

    def _has(self, rel: str) -> bool:
        if self.manifest is not None:
            return self.manifest.sha256_of(rel) is not None
        return os.path.lexists(self.path / rel)  # then read (and refused if not a regular file)

    def _binaries(self) -> dict[str, bytes]:
        meta = self.metadata
        if self._has(_TOOLCHAIN_FILE):
            identity = json.loads(self._read(_TOOLCHAIN_FILE, "toolchain identity"))
            if identity == toolchain_identity(self.platform):
                wanted = [_ORCH_BINARY] + [_kernel_binary(k) for k in meta.kernels]
                return {rel: self._read(rel, "binary") for rel in wanted}
        return _compile_all(self.path, meta, self.platform, read=lambda rel: self._read(rel, "source"))

    def _assemble(self) -> Any:
        import simpler

        meta = self.metadata
        binaries = self._binaries()
        children = [
            (
                k.func_id,
                simpler.CoreCallable.build(
                    _signature(k.params), binaries[_kernel_binary(k)], k.core_type, entry=k.entry, name=k.name
                ),
            )
            for k in meta.kernels
        ]
        return simpler.ChipCallable.build(
            _signature(meta.lowered_params), meta.orchestration.func_name, binaries[_ORCH_BINARY], children
        )


def _read_checked(root: Path, manifest: Manifest, rel: str, kind: str) -> bytes:
    """Read ``root/rel`` (no symlink, regular file) and require it to match ``manifest``."""
    path = root / rel
    fix = "run `python -m pypto.runtime cache verify --fix` and retry"
    try:
        data = read_inside(root, rel)
    except ValueError as exc:  # a path the validated manifest cannot list
        raise RuntimeError(f"{path}: {kind} is not in the validated entry ({exc}); {fix}") from None
    except OSError as exc:
        if exc.errno not in (errno.ELOOP, errno.EINVAL, errno.ENOENT, errno.ENOTDIR):
            raise
        raise RuntimeError(
            f"{path}: {kind} changed after the entry was validated (now {exc.strerror}); {fix}"
        ) from None
    try:
        manifest.check(rel, data)
    except InvalidEntry as exc:
        raise RuntimeError(f"{path}: {kind} changed after the entry was validated ({exc}); {fix}") from None
    return data


class CompiledProgram:
    """A compiled program: an artifact, the live IR, and the program runner.

    ``os.fspath(prog)`` is the artifact directory. Call it like the original function:
    ``prog(a, b)`` allocates omitted Out parameters and returns what the signature returns.
    """

    def __init__(
        self,
        artifact: CompiledArtifact,
        *,
        program: Any = None,
        entries: Mapping[str, CompiledProgram] | None = None,
    ) -> None:
        if not isinstance(artifact, CompiledArtifact):
            raise TypeError(
                f"CompiledProgram(artifact): expected CompiledArtifact, got {type(artifact).__name__}"
            )
        self.artifact = artifact
        self.program = program  # live IR when compiled in this process; None after a reload
        self._entries: dict[str, CompiledProgram] = dict(entries or {})

    @classmethod
    def from_dir(cls, path: str | os.PathLike[str], *, platform: str | None = None) -> CompiledProgram:
        """Reload a compiled program directory (metadata only; PROGRAM capability required).

        A multi-entry directory (``entries.json`` and one artifact per entry) reloads as a
        parent whose call runs the default entry; ``entry(name)`` selects a child.
        """
        root = Path(path)
        if not os.path.lexists(root / META_FILE) and os.path.lexists(root / ENTRIES_FILE):
            names, default = entry_index(root)
            children = {n: cls.from_dir(root / n, platform=platform) for n in names}
            return cls(children[default].artifact, entries=children)
        return cls(CompiledArtifact.from_dir(path, platform=platform, require=Contract.PROGRAM))

    @property
    def entry_names(self) -> tuple[str, ...]:
        """The orchestration entries this program offers (one unless multi-entry)."""
        return tuple(self._entries) or (self.artifact.metadata.entry,)

    def entry(self, name: str) -> CompiledProgram:
        """The child program of entry ``name`` (the same product type, its own artifact)."""
        if not self._entries and name == self.artifact.metadata.entry:
            return self
        try:
            return self._entries[name]
        except KeyError:
            raise KeyError(
                f"{self.artifact.name}: no entry {name!r}; entries are {list(self.entry_names)}"
            ) from None

    @property
    def path(self) -> Path:
        """The artifact directory (of the default entry for a multi-entry program)."""
        return self.artifact.path

    @property
    def metadata(self) -> ArtifactMetadata:
        return self.artifact.metadata

    @property
    def platform(self) -> str:
        return self.artifact.platform

    @property
    def params(self) -> tuple[ParamInfo, ...]:
        return self.artifact.params

    @property
    def param_names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.artifact.params)

    @property
    def return_count(self) -> int:
        return self.artifact.metadata.return_count

    def __fspath__(self) -> str:
        return str(self.artifact.path)

    def __repr__(self) -> str:
        return f"CompiledProgram({self.artifact.name!r}, path={str(self.path)!r}, platform={self.platform!r})"

    @user_facing
    def __call__(self, *args: Any, config: Any = None, **kwargs: Any) -> Any:
        if config is None and not kwargs:
            plan = self.artifact._call_plan
            bound = plan.executor_plan if plan is not None else None
            if bound is not None:  # a repeat call: the call plan's bound native call
                done = bound(args)
                if done is not DECLINED:
                    return done
        from pypto.runtime.call_plan import run_artifact

        return run_artifact(self.artifact, args, kwargs, config)
