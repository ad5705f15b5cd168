"""Compile kernel and orchestration C++ sources into shared-object bytes.

The host compiler builds position-independent shared objects against the headers at
:func:`simpler.get_include`. :func:`identity` is a content digest of everything that can change
the bytes produced: the compiler binary and its version, the flags, the digest of every
installed header and the target (architecture, plus CPU features for host-tuned flags). Callers put it into their cache keys; it never contains mtimes or paths
other than the compiler's.

Example::

    from simpler import toolchain
    so = toolchain.compile_shared({"k.cpp": source})      # bytes of a .so
    key = toolchain.identity()                             # hex digest for cache keys
"""

from __future__ import annotations

import functools
import hashlib
import os
import platform
import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

__all__ = ["DEFAULT_FLAGS", "CompileError", "Toolchain", "compile_shared", "default_toolchain", "identity"]

# -O2 keeps cold compiles quick while letting the tile library vectorise.
DEFAULT_FLAGS: tuple[str, ...] = ("-O2", "-fPIC", "-shared", "-std=c++17", "-fvisibility=hidden")


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


class Toolchain:
    """One host compiler with fixed flags.

    Args:
        compiler: compiler executable (default: ``$CXX`` if set, else ``g++``).
        flags: compile flags; default :data:`DEFAULT_FLAGS`.
    """

    def __init__(self, compiler: str | None = None, flags: Sequence[str] = DEFAULT_FLAGS) -> None:
        name = compiler or os.environ.get("CXX") or "g++"
        resolved = shutil.which(name)
        if resolved is None:
            raise FileNotFoundError(f"Toolchain(compiler={name!r}): no such compiler on PATH")
        self.compiler = os.path.realpath(resolved)
        self.flags: tuple[str, ...] = tuple(flags)

    def identity(self) -> str:
        """Content digest of compiler path, compiler version, flags and installed headers."""
        h = hashlib.sha256()
        for part in (
            self.compiler,
            _compiler_version(self.compiler),
            "\0".join(self.flags),
            _header_digest(),
        ):
            h.update(part.encode() + b"\x1f")
        return h.hexdigest()

    def compile_shared(
        self, sources: Mapping[str, str], *, extra_flags: Sequence[str] = (), include_dirs: Sequence[str] = ()
    ) -> bytes:
        """Compile ``{file name: C++ text}`` into one shared object and return its bytes.

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
            cmd = [
                self.compiler,
                *self.flags,
                *extra_flags,
                f"-I{_include_dir()}",
                *(f"-I{d}" for d in include_dirs),
                *paths,
                "-o",
                str(output),
            ]
            proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
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


def compile_shared(sources: Mapping[str, str], *, extra_flags: Sequence[str] = ()) -> bytes:
    """Compile with the default toolchain (see :meth:`Toolchain.compile_shared`)."""
    return default_toolchain().compile_shared(sources, extra_flags=extra_flags)
