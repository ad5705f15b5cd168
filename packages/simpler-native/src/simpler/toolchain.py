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

Example::

    from simpler import toolchain
    so = toolchain.compile_shared({"k.cpp": source})      # bytes of a .so
    key = toolchain.identity()                             # hex digest for cache keys
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

__all__ = ["DEFAULT_FLAGS", "CompileError", "Toolchain", "compile_shared", "default_toolchain", "identity"]

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

# How binaries are built from sources beyond compiler, flags and headers; part of the identity,
# bumped when that changes (2: optional precompiled prelude of a source's leading includes).
_BUILD_SCHEME = "simpler-build/2"


class CompileError(RuntimeError):
    """The host compiler rejected a source; ``.stderr`` holds its diagnostics."""

    def __init__(self, message: str, stderr: str) -> None:
        super().__init__(message)
        self.stderr = stderr


def _include_dir() -> Path:
    return Path(__file__).with_name("include")


@functools.lru_cache(maxsize=1)
def _header_digest() -> str:
    h = hashlib.sha256()
    root = _include_dir()
    for path in sorted(root.rglob("*")):
        if path.is_file():
            h.update(path.relative_to(root).as_posix().encode() + b"\0")
            h.update(hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()


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
    """One host compiler with fixed flags.

    Args:
        compiler: compiler executable (default: ``$CXX`` if set, else ``g++``).
        flags: compile flags; default :data:`DEFAULT_FLAGS`.
        cache_dir: where precompiled headers are kept (default: ``$SIMPLER_CACHE_DIR``, else
            ``$XDG_CACHE_HOME/simpler``, else ``~/.cache/simpler``); it must be a directory of
            this user that group and others cannot write, else builds parse every header.
    """

    def __init__(
        self,
        compiler: str | None = None,
        flags: Sequence[str] = DEFAULT_FLAGS,
        *,
        cache_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        name = compiler or os.environ.get("CXX") or "g++"
        resolved = shutil.which(name)
        if resolved is None:
            raise FileNotFoundError(f"Toolchain(compiler={name!r}): no such compiler on PATH")
        self.compiler = os.path.realpath(resolved)
        self.flags: tuple[str, ...] = tuple(flags)
        self._cache_dir = None if cache_dir is None else Path(cache_dir)

    @property
    def cache_dir(self) -> Path:
        """Root of this toolchain's precompiled headers (``<cache_dir>/pch/<key>/``)."""
        return self._cache_dir if self._cache_dir is not None else _default_cache_dir()

    def identity(self) -> str:
        """Content digest of compiler path and version, flags, installed headers, target (the
        architecture; the host CPU's features and the compiler's expansion of the flags into a
        CPU and its features) and build scheme."""
        h = hashlib.sha256()
        for part in (
            self.compiler,
            _compiler_version(self.compiler),
            "\0".join(self.flags),
            _header_digest(),
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
            flags = [*self.flags, *extra_flags, f"-I{_include_dir()}", *(f"-I{d}" for d in include_dirs)]
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


def identity() -> str:
    """Identity digest of the default toolchain (see :meth:`Toolchain.identity`)."""
    return default_toolchain().identity()


def compile_shared(
    sources: Mapping[str, str], *, extra_flags: Sequence[str] = (), precompile: bool = False
) -> bytes:
    """Compile with the default toolchain (see :meth:`Toolchain.compile_shared`)."""
    return default_toolchain().compile_shared(sources, extra_flags=extra_flags, precompile=precompile)
