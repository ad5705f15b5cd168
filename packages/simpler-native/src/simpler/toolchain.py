"""Compile kernel and orchestration C++ sources into shared-object bytes.

The host compiler builds position-independent shared objects against the headers at
:func:`simpler.get_include`. :func:`identity` is a content digest of everything that can change
the bytes produced: the compiler binary and its version, the flags, the digest of every
installed header and the target: the architecture, the host's CPU features when the flags tune
for the host (:data:`DEFAULT_FLAGS` has ``-march=native``), and the compiler's own expansion of
the flags into a CPU and its ``-m`` features (``g++ -###``). Callers put it into their cache
keys; it never contains mtimes or paths other than the compiler's.

Builds may reuse a precompiled header (``precompile=True``): the ``#include <...>`` lines a
source starts with are compiled once per toolchain identity into a cache directory
(``$SIMPLER_CACHE_DIR``, else ``$XDG_CACHE_HOME/simpler``, else ``~/.cache/simpler``) and
force-included, which gives the same binary as parsing them (the source's own includes are then
no-ops) without the parse; ``SIMPLER_PRECOMPILE=0`` turns it off. See docs/performance.md.

Kernel sources and orchestration sources are built by two toolchains. Orchestrations use
:func:`default_toolchain` (``$CXX`` or ``g++``, C++17). Kernels (PTO-ISA programs that include
``<pto/pto-inst.hpp>``) use :func:`kernel_toolchain`, whose PTO-ISA backend is chosen by the
environment:

- ``PTO_ISA_ROOT`` unset or empty: simpler's own CPU implementation of PTO-ISA. The host
  compiler (as for orchestrations) gets ``-I<simpler's PTO root>`` (:func:`pto_include_dir`)
  in addition to simpler's include directory.
- ``PTO_ISA_ROOT=<pto-isa checkout>``: the official headers' CPU backend. They need C++20 with
  P2593 (``static_assert(false)`` in templates), so the compiler is ``$PTO_ISA_CXX`` if set,
  else the first of :data:`PTO_ISA_COMPILERS` on ``PATH`` that is clang++ >= 17 or g++ >= 14;
  flags add ``-std=c++20 -D__CPU_SIM`` and ``-I$PTO_ISA_ROOT/include`` comes before simpler's
  include directory; simpler's PTO root is not on the include path. The root's path and a
  digest of every file under its ``include/`` are part of the kernel toolchain's identity.
  A root that does not exist or lacks ``include/pto/pto-inst.hpp``, or no usable compiler,
  raises :class:`ToolchainError` naming the setting, the path and what was expected.

Example::

    from simpler import toolchain
    so = toolchain.compile_shared({"o.cpp": source})      # bytes of a .so (orchestration)
    kso = toolchain.compile_kernel({"k.cpp": kernel})      # a kernel, per PTO_ISA_ROOT
    key = toolchain.identity()                             # hex digest for cache keys (both)
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import platform
import re
import shlex
import shutil
import stat
import subprocess
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

__all__ = [
    "DEFAULT_FLAGS",
    "PTO_ISA_COMPILERS",
    "TLS_DESCRIPTOR_FLAG",
    "CompileError",
    "Toolchain",
    "ToolchainError",
    "compile_kernel",
    "compile_shared",
    "default_toolchain",
    "host_flags",
    "identity",
    "kernel_identity",
    "kernel_toolchain",
    "pto_include_dir",
    "pto_isa_root",
]

# -O2 keeps cold compiles quick while letting the tile library vectorise; -march=native lets it
# use the host's widest vectors and FMA (kernels run on this machine's simulated chip; the
# identity records the CPU, so a binary never moves to a CPU it was not built for).
DEFAULT_FLAGS: tuple[str, ...] = (
    "-O2",
    "-march=native",
    "-fPIC",
    "-shared",
    "-std=c++17",
    "-fvisibility=hidden",
)

# TLS descriptors (AArch64's default), added to the default flags on x86-64 where the compiler
# has them (GCC; clang from 19): a kernel binary's small per-thread state (simpler::KernelThread)
# is then reached in ~3 instructions where glibc has room for it in the static TLS block,
# instead of a __tls_get_addr call (~18) on every access.
TLS_DESCRIPTOR_FLAG = "-mtls-dialect=gnu2"

# How binaries are built from sources beyond compiler, flags and headers; part of the identity,
# bumped when that changes (2: optional precompiled prelude of a source's leading includes).
_BUILD_SCHEME = "simpler-build/2"


# Compilers tried, in order, for the official PTO-ISA headers when PTO_ISA_CXX is not set; the
# first on PATH that is clang++ >= 17 or g++ >= 14 is used.
PTO_ISA_COMPILERS: tuple[str, ...] = (
    "clang++-21",
    "clang++-20",
    "clang++-19",
    "clang++-18",
    "clang++-17",
    "clang++",
    "g++-16",
    "g++-15",
    "g++-14",
    "g++",
)
_PTO_ISA_MIN_VERSION = {"clang": 17, "gcc": 14}
# The header whose presence marks a pto-isa checkout (relative to PTO_ISA_ROOT).
_PTO_ISA_MARKER = Path("include/pto/pto-inst.hpp")


class CompileError(RuntimeError):
    """The host compiler rejected a source; ``.stderr`` holds its diagnostics."""

    def __init__(self, message: str, stderr: str) -> None:
        super().__init__(message)
        self.stderr = stderr


class ToolchainError(RuntimeError):
    """The toolchain cannot be set up as configured: a setting (``PTO_ISA_ROOT``,
    ``PTO_ISA_CXX``) names a missing path, a directory that is not what it must be, or no
    usable compiler was found."""


def _include_dir() -> Path:
    return Path(__file__).with_name("include")


def pto_include_dir() -> Path | None:
    """Simpler's own PTO-ISA include root (the directory holding ``pto/pto-inst.hpp``), or
    None when this install has none."""
    import simpler

    getter = getattr(simpler, "get_pto_include", None)
    if getter is not None:
        return Path(getter())
    root = Path(__file__).with_name("include_pto")
    return root if root.is_dir() else None


def _tree_digest(root: Path) -> str:
    """Digest of every file under ``root``: relative path and content, sorted."""
    h = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        if path.is_file():
            h.update(path.relative_to(root).as_posix().encode() + b"\0")
            h.update(hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()


@functools.lru_cache(maxsize=1)
def _header_digest() -> str:
    return _tree_digest(_include_dir())


@functools.lru_cache(maxsize=16)
def _root_digest(root: Path) -> str:
    return _tree_digest(root)


def _root_label(root: Path) -> str:
    """How an include root appears in the identity: relative to simpler's package for its own
    roots (installs elsewhere share identities), the absolute path for any other."""
    package = Path(__file__).parent.resolve()
    resolved = root.resolve()
    if resolved.is_relative_to(package):
        return "simpler:" + resolved.relative_to(package).as_posix()
    return str(resolved)


@functools.lru_cache(maxsize=8)
def _compiler_version(compiler: str) -> str:
    out = subprocess.run([compiler, "--version"], capture_output=True, text=True, check=True)
    return out.stdout.strip()


@functools.lru_cache(maxsize=2)
def _target_features(host_cpu: bool) -> str:
    target = platform.machine()
    if not host_cpu:
        return target
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return target + ":unknown-cpu"
    flags = next(
        (
            line.split(":", 1)[1].split()
            for line in text.splitlines()
            if line.startswith(("flags", "Features"))
        ),
        [],
    )
    return target + ":" + " ".join(sorted(set(flags)))


def _host_tuned(flags: Sequence[str]) -> bool:
    return any(f.startswith(("-march=", "-mcpu=", "-mtune=")) and f.endswith("=native") for f in flags)


# Options of the compiler proper that fix the target: GCC's cc1plus gets -march=<cpu>, one -m
# option per feature and --param cache sizes; clang's -cc1 gets -target-cpu and -target-feature.
_TARGET_ARG_OPTIONS = ("--param", "-target-cpu", "-target-feature", "-tune-cpu", "-triple")


@functools.lru_cache(maxsize=8)
def _resolved_target(compiler: str, flags: tuple[str, ...]) -> str:
    """The compiler's expansion of ``flags`` into target options (``-march=native`` becomes the
    host CPU and every feature it enables), read from its driver's ``-###`` output; only
    target options are kept (no paths, no working directory)."""
    cmd = [compiler, "-###", *flags, "-x", "c++", "-S", "-o", os.devnull, os.devnull]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    kept: list[str] = []
    for line in proc.stderr.splitlines():
        if "cc1" not in line:
            continue
        try:
            tokens = shlex.split(line)
        except ValueError:
            tokens = line.split()
        take_next = False
        for tok in tokens[1:]:
            if take_next:
                kept.append(tok)
                take_next = False
            elif tok in _TARGET_ARG_OPTIONS:
                kept.append(tok)
                take_next = True
            elif tok.startswith("-m"):
                kept.append(tok)
    if not kept:  # unknown driver output: the whole of it (less stable, never wrong)
        return f"rc={proc.returncode}\n{proc.stderr}"
    return " ".join(kept)


_INCLUDE_LINE = re.compile(r"#\s*include\s*<[^<>\s]+>")


def _leading_includes(text: str) -> tuple[str, ...]:
    """The ``#include <...>`` lines ``text`` starts with (blank and ``//`` lines skipped)."""
    lines: list[str] = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("//"):
            continue
        if not _INCLUDE_LINE.fullmatch(line):
            break
        lines.append(line)
    return tuple(lines)


def _default_cache_dir() -> Path:
    env = os.environ.get("SIMPLER_CACHE_DIR")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "simpler"


_PCH_KEEP = 8  # prelude entries kept per cache directory (~30 MB each; least recently used go first)


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


class _PchLocks:
    """One lock per prelude entry, so threads of one process build each entry once."""

    def __init__(self) -> None:
        self.guard = threading.Lock()
        self.locks: dict[str, threading.Lock] = {}

    def get(self, key: str) -> threading.Lock:
        with self.guard:
            return self.locks.setdefault(key, threading.Lock())


_pch_locks = _PchLocks()


def _after_fork_in_child() -> None:
    # A lock may have been held by another parent thread at fork(): start over.
    global _pch_locks  # noqa: PLW0603
    _pch_locks = _PchLocks()


os.register_at_fork(after_in_child=_after_fork_in_child)


def _private_dir(path: Path) -> bool:
    """``path`` exists (created 0700 if missing), is a real directory, is ours and is not
    writable by group or others: a precompiled header is compiler state, trusted like code."""
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = path.lstat()
    except OSError:
        return False
    return (
        stat.S_ISDIR(st.st_mode)
        and st.st_uid == os.getuid()
        and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
    )


class Toolchain:
    """One host compiler with fixed flags and include roots.

    Args:
        compiler: compiler executable (default: ``$CXX`` if set, else ``g++``).
        flags: compile flags; default :data:`DEFAULT_FLAGS`, plus :data:`TLS_DESCRIPTOR_FLAG`
            where the compiler has it (:func:`host_flags`).
        cache_dir: where precompiled headers are kept (default: ``$SIMPLER_CACHE_DIR``, else
            ``$XDG_CACHE_HOME/simpler``, else ``~/.cache/simpler``); it must be a directory of
            this user that group and others cannot write, else builds parse every header.
        include_roots: header directories searched before simpler's include directory (e.g. a
            PTO-ISA implementation); the digest of every file under each is part of the
            identity, and so is each one's path (relative to simpler's package for its own).
        pto_backend: which PTO-ISA implementation ``include_roots`` provide, for reports:
            ``"simpler"``, ``"pto-isa"`` or None (no PTO-ISA headers: orchestrations).
    """

    def __init__(
        self,
        compiler: str | None = None,
        flags: Sequence[str] | None = None,
        *,
        cache_dir: str | os.PathLike[str] | None = None,
        include_roots: Sequence[str | os.PathLike[str]] = (),
        pto_backend: str | None = None,
    ) -> None:
        name = compiler or os.environ.get("CXX") or "g++"
        resolved = shutil.which(name)
        if resolved is None:
            raise FileNotFoundError(f"Toolchain(compiler={name!r}): no such compiler on PATH")
        # The path as found, not its symlink target: clang's driver picks its language from the
        # name it is run by (clang++-19 -> .../clang is the C driver, which links no libstdc++).
        self.compiler = os.path.abspath(resolved)
        self.flags: tuple[str, ...] = tuple(flags) if flags is not None else host_flags(self.compiler)
        self.include_roots: tuple[Path, ...] = tuple(Path(r) for r in include_roots)
        self.pto_backend = pto_backend
        self._cache_dir = None if cache_dir is None else Path(cache_dir)

    @property
    def cache_dir(self) -> Path:
        """Root of this toolchain's precompiled headers (``<cache_dir>/pch/<key>/``)."""
        return self._cache_dir if self._cache_dir is not None else _default_cache_dir()

    def identity(self) -> str:
        """Content digest of compiler path and version, flags, installed headers, the extra
        include roots (path label and content digest), target (the architecture; the host
        CPU's features and the compiler's expansion of the flags into a CPU and its features)
        and build scheme."""
        h = hashlib.sha256()
        for part in (
            self.compiler,
            os.path.realpath(self.compiler),
            _compiler_version(self.compiler),
            "\0".join(self.flags),
            _header_digest(),
            *(f"{_root_label(r)}={_root_digest(r)}" for r in self.include_roots),
            _target_features(_host_tuned(self.flags)),
            _resolved_target(self.compiler, self.flags),
            _BUILD_SCHEME,
        ):
            h.update(part.encode() + b"\x1f")
        return h.hexdigest()

    def _prelude(self, includes: tuple[str, ...], flags: Sequence[str]) -> Path | None:
        """The header holding ``includes``, with its precompiled form beside it (built now if
        missing), or None when no usable cache directory or the compiler cannot precompile it."""
        root = self.cache_dir / "pch"
        if not _private_dir(self.cache_dir) or not _private_dir(root):
            return None
        text = "// simpler.toolchain precompiled prelude\n" + "\n".join(includes) + "\n"
        key = hashlib.sha256("\x1f".join((self.identity(), "\0".join(flags), text)).encode()).hexdigest()[:32]
        entry = root / key
        header = entry / "prelude.hpp"
        with _pch_locks.get(str(entry)):
            if (entry / "prelude.hpp.gch").is_file() and header.is_file():
                with contextlib.suppress(OSError):
                    os.utime(entry)  # recently used: kept by _prune
                return header
            tmp = Path(tempfile.mkdtemp(prefix=".build-", dir=root))
            try:
                (tmp / "prelude.hpp").write_text(text)
                cmd = [
                    self.compiler,
                    *(f for f in flags if f != "-shared"),
                    "-x",
                    "c++-header",
                    str(tmp / "prelude.hpp"),
                    "-o",
                    str(tmp / "prelude.hpp.gch"),
                ]
                proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
                if proc.returncode != 0:
                    return None
                try:
                    os.rename(tmp, entry)
                except OSError:  # another process finished first: use its entry
                    if not (entry / "prelude.hpp.gch").is_file():
                        return None
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
            self._prune(root)
            return header

    @staticmethod
    def _prune(root: Path) -> None:
        try:
            entries = [p for p in root.iterdir() if not p.name.startswith(".")]
            stale = [p for p in root.iterdir() if p.name.startswith(".build-")]
        except OSError:
            return
        entries.sort(key=_mtime, reverse=True)
        for path in entries[_PCH_KEEP:]:
            shutil.rmtree(path, ignore_errors=True)
        now = time.time()
        for path in stale:  # builds abandoned by a killed process
            with contextlib.suppress(OSError):
                if now - path.stat().st_mtime > 3600:
                    shutil.rmtree(path, ignore_errors=True)

    def compile_shared(
        self,
        sources: Mapping[str, str],
        *,
        extra_flags: Sequence[str] = (),
        include_dirs: Sequence[str] = (),
        precompile: bool = False,
    ) -> bytes:
        """Compile ``{file name: C++ text}`` into one shared object and return its bytes.

        With ``precompile``, a single ``.cpp`` source's leading ``#include <...>`` lines are
        taken from a precompiled header (built once per toolchain identity, flags and lines,
        then cached); the binary is the same as without. ``SIMPLER_PRECOMPILE=0`` in the
        environment turns this off.

        Raises:
            ValueError: ``sources`` is empty or names a file outside the build directory.
            CompileError: the compiler failed; the message carries its first diagnostics.
        """
        if not sources:
            raise ValueError("compile_shared(sources): expected at least one source, got none")
        with tempfile.TemporaryDirectory(prefix="simpler-build-") as tmp:
            tmpdir = Path(tmp)
            paths: list[str] = []
            for name, text in sources.items():
                rel = Path(name)
                if rel.is_absolute() or ".." in rel.parts or not rel.name:
                    raise ValueError(
                        f"compile_shared(sources): file name must be relative and plain, got {name!r}"
                    )
                path = tmpdir / rel
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text)
                if rel.suffix in (".cpp", ".cc", ".cxx"):
                    paths.append(str(path))
            if not paths:
                raise ValueError("compile_shared(sources): expected a .cpp/.cc/.cxx source, got only headers")
            output = tmpdir / "out.so"
            flags = [
                *self.flags,
                *extra_flags,
                *(f"-I{r}" for r in self.include_roots),
                f"-I{_include_dir()}",
                *(f"-I{d}" for d in include_dirs),
            ]
            prelude = None
            if precompile and len(paths) == 1 and os.environ.get("SIMPLER_PRECOMPILE", "1") != "0":
                includes = _leading_includes(Path(paths[0]).read_text())
                if includes:
                    prelude = self._prelude(includes, flags)
            cmd = [self.compiler, *flags, *paths, "-o", str(output)]
            if prelude is not None:
                cmd[1:1] = ["-include", str(prelude)]
            proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
            if proc.returncode != 0 and prelude is not None and str(prelude.parent) in proc.stderr:
                # the precompiled header itself was refused: build as if there were none
                proc = subprocess.run(
                    [self.compiler, *flags, *paths, "-o", str(output)],
                    capture_output=True,
                    text=True,
                    check=False,
                )
            if proc.returncode != 0:
                head = "\n".join(proc.stderr.splitlines()[:20])
                raise CompileError(f"compile_shared: {Path(self.compiler).name} failed:\n{head}", proc.stderr)
            return output.read_bytes()


@functools.lru_cache(maxsize=1)
def default_toolchain() -> Toolchain:
    """The process-wide default :class:`Toolchain`."""
    return Toolchain()


def host_flags(compiler: str, base: Sequence[str] = DEFAULT_FLAGS) -> tuple[str, ...]:
    """``base`` plus :data:`TLS_DESCRIPTOR_FLAG` when ``compiler`` has it for this host (x86-64
    GCC, or clang 19 and later; an older clang rejects the flag)."""
    return (*base, *_tls_flags(compiler))


@functools.lru_cache(maxsize=8)
def _tls_flags(compiler: str) -> tuple[str, ...]:
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return ()
    family = _compiler_family(compiler)
    if family is not None and (family[0] == "gcc" or family[1] >= 19):
        return (TLS_DESCRIPTOR_FLAG,)
    return ()


def _compiler_family(compiler: str) -> tuple[str, int] | None:
    """``("clang" | "gcc", major version)`` of a compiler, or None when it reports neither."""
    try:
        text = _compiler_version(compiler)
    except (OSError, subprocess.CalledProcessError):
        return None
    m = re.search(r"clang version (\d+)", text)
    if m:
        return "clang", int(m.group(1))
    first = text.splitlines()[0] if text else ""
    m = re.search(r"(\d+)\.\d+(?:\.\d+)?\s*$", first)
    if m and ("g++" in first or "GCC" in first or "Free Software Foundation" in text):
        return "gcc", int(m.group(1))
    return None


def _accepts_pto_isa(compiler: str) -> bool:
    family = _compiler_family(compiler)
    return family is not None and family[1] >= _PTO_ISA_MIN_VERSION[family[0]]


def _describe(compiler: str) -> str:
    family = _compiler_family(compiler)
    return f"{compiler} ({family[0]} {family[1]})" if family else f"{compiler} (version not recognised)"


def _pto_isa_compiler(root: Path) -> str:
    """The compiler for the official headers: ``$PTO_ISA_CXX``, else the first acceptable one
    of :data:`PTO_ISA_COMPILERS` on PATH."""
    want = "clang++ >= 17 or g++ >= 14 (the headers need C++20 with P2593)"
    named = os.environ.get("PTO_ISA_CXX", "").strip()
    if named:
        resolved = shutil.which(named)
        if resolved is None:
            raise ToolchainError(
                f"PTO_ISA_CXX={named!r}: no such compiler on PATH; expected {want} for the PTO-ISA "
                f"headers at PTO_ISA_ROOT={str(root)!r}"
            )
        if not _accepts_pto_isa(resolved):
            raise ToolchainError(
                f"PTO_ISA_CXX={named!r}: found {_describe(resolved)}; expected {want} for the "
                f"PTO-ISA headers at PTO_ISA_ROOT={str(root)!r}"
            )
        return resolved
    seen: list[str] = []
    for name in PTO_ISA_COMPILERS:
        resolved = shutil.which(name)
        if resolved is None:
            continue
        if _accepts_pto_isa(resolved):
            return resolved
        seen.append(_describe(resolved))
    found = "; found only " + ", ".join(seen) if seen else "; found none of them"
    raise ToolchainError(
        f"PTO_ISA_ROOT={str(root)!r} needs {want}: none of {', '.join(PTO_ISA_COMPILERS)} on PATH "
        f"qualifies{found}. Install one (e.g. Debian's clang-19) or name it with PTO_ISA_CXX."
    )


def pto_isa_root() -> Path | None:
    """The official PTO-ISA checkout named by ``PTO_ISA_ROOT`` (checked), or None when unset.

    Raises:
        ToolchainError: the path is not absolute, does not exist, or lacks
            ``include/pto/pto-inst.hpp``.
    """
    raw = os.environ.get("PTO_ISA_ROOT", "").strip()
    if not raw:
        return None
    root = Path(raw).expanduser()
    if not root.is_absolute():
        raise ToolchainError(f"PTO_ISA_ROOT={raw!r}: expected an absolute path to a pto-isa checkout")
    if not root.is_dir():
        raise ToolchainError(
            f"PTO_ISA_ROOT={raw!r}: no such directory; expected a pto-isa checkout (a directory "
            f"holding {_PTO_ISA_MARKER})"
        )
    if not (root / _PTO_ISA_MARKER).is_file():
        raise ToolchainError(
            f"PTO_ISA_ROOT={raw!r}: {root / _PTO_ISA_MARKER} not found; expected a pto-isa checkout "
            f"(a directory holding {_PTO_ISA_MARKER})"
        )
    return root


def _official_flags(flags: Sequence[str]) -> tuple[str, ...]:
    """``flags`` with the language standard the official headers need and their CPU backend."""
    out = [f for f in flags if not f.startswith("-std=")]
    return (*out, "-std=c++20", "-D__CPU_SIM")


@functools.lru_cache(maxsize=8)
def _kernel_toolchain(root: str, pto_cxx: str, cxx: str, path: str) -> Toolchain:
    del pto_cxx, cxx, path  # cache key only: the environment they came from is read below
    if root:
        checked = pto_isa_root()
        if checked is None:  # pragma: no cover - root is non-empty, so pto_isa_root returns one
            raise ToolchainError("PTO_ISA_ROOT: set but empty")
        compiler = _pto_isa_compiler(checked)
        return Toolchain(
            compiler,
            host_flags(compiler, _official_flags(DEFAULT_FLAGS)),
            include_roots=(checked / "include",),
            pto_backend="pto-isa",
        )
    ours = pto_include_dir()
    return Toolchain(include_roots=() if ours is None else (ours,), pto_backend="simpler")


def kernel_toolchain() -> Toolchain:
    """The :class:`Toolchain` for kernel sources under the current environment: the official
    PTO-ISA headers when ``PTO_ISA_ROOT`` is set, else simpler's own (see the module doc).

    Raises:
        ToolchainError: PTO_ISA_ROOT or PTO_ISA_CXX is set but unusable (the message names
            the setting, the path and what was expected).
    """
    return _kernel_toolchain(
        os.environ.get("PTO_ISA_ROOT", "").strip(),
        os.environ.get("PTO_ISA_CXX", "").strip(),
        os.environ.get("CXX", ""),
        os.environ.get("PATH", ""),
    )


def kernel_identity() -> str:
    """Identity digest of :func:`kernel_toolchain` (see :meth:`Toolchain.identity`)."""
    return kernel_toolchain().identity()


def identity() -> str:
    """Identity digest of everything that builds a program's binaries: the default toolchain
    (orchestrations) and :func:`kernel_toolchain` (kernels) under the current environment."""
    h = hashlib.sha256()
    for part in (default_toolchain().identity(), kernel_identity()):
        h.update(part.encode() + b"\x1f")
    return h.hexdigest()


def compile_shared(
    sources: Mapping[str, str], *, extra_flags: Sequence[str] = (), precompile: bool = False
) -> bytes:
    """Compile with the default toolchain (see :meth:`Toolchain.compile_shared`): for
    orchestrations and any source that does not use PTO-ISA."""
    return default_toolchain().compile_shared(sources, extra_flags=extra_flags, precompile=precompile)


def compile_kernel(
    sources: Mapping[str, str], *, extra_flags: Sequence[str] = (), precompile: bool = False
) -> bytes:
    """Compile a kernel with :func:`kernel_toolchain` (see :meth:`Toolchain.compile_shared`).

    Raises:
        ToolchainError: PTO_ISA_ROOT or PTO_ISA_CXX is set but unusable.
        CompileError: the compiler failed.
    """
    return kernel_toolchain().compile_shared(sources, extra_flags=extra_flags, precompile=precompile)
