"""What the subcommands share: exit codes, errors, consoles, progress and finding an artifact.

An ARTIFACT on the command line is a directory (one holding ``compiled_meta.json``, or a
multi-entry directory holding ``entries.json``) or a store key: the full hex digest or a
prefix of it that names exactly one entry of the user's store (or the shared read-only one).
"""

from __future__ import annotations

import contextlib
import json
import re
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console

from pypto.runtime._fs import read_regular
from pypto.runtime.errors import PyptoRuntimeError

__all__ = [
    "EXIT_FAILED",
    "EXIT_OK",
    "EXIT_USAGE",
    "CommandError",
    "Failed",
    "Located",
    "UsageError",
    "locate",
    "plain",
    "shape_text",
    "step",
    "toolchain_of",
]

EXIT_OK = 0
EXIT_FAILED = 1  # the artifact/inputs were accepted but loading, compiling or running failed
EXIT_USAGE = 2  # the command line cannot be satisfied: options, artifact, parameters, files

_HEX = re.compile(r"^[0-9a-fA-F]{1,128}$")
_CANDIDATES_SHOWN = 10


class CommandError(PyptoRuntimeError):
    """A subcommand gives up: ``main`` prints the message and exits with ``code``."""

    code = EXIT_FAILED


class UsageError(CommandError):
    """What the command line asks for does not exist or does not fit (exit status 2)."""

    code = EXIT_USAGE


class Failed(CommandError):
    """Loading, compiling or running failed (exit status 1)."""

    code = EXIT_FAILED


def stderr_console() -> Console:
    return Console(stderr=True, highlight=False)


def stdout_console() -> Console:
    """stdout; 140 columns when it is not a terminal, so that pipes and logs get whole rows."""
    tty = sys.stdout.isatty()
    return Console(width=None if tty else 140, highlight=False, soft_wrap=not tty)


@contextlib.contextmanager
def step(description: str, *, quiet: bool, spinner: bool = True) -> Iterator[None]:
    """A long step (compile, first load, run). On a terminal and unless ``quiet``: a transient
    rich spinner with the time so far (``spinner=False``: one line instead, for steps that show
    their own build progress bar), then one line with the time it took. Nothing elsewhere."""
    if quiet or not sys.stderr.isatty():
        yield
        return
    console = stderr_console()
    start = time.monotonic()
    if spinner:
        with console.status(f"{description}…"):
            yield
    else:
        console.print(f"[dim]{description}…[/dim]")
        yield
    console.print(f"[dim]{description}: {time.monotonic() - start:.2f} s[/dim]")


def plain(doc: str | None) -> str:
    """A module docstring as ``--help`` text: without reStructuredText's double backquotes."""
    return (doc or "").replace("``", "`").replace(":mod:", "")


def shape_text(shape: tuple[int, ...] | None) -> str:
    """``[64, 64]``; a dynamic extent is ``?``; a scalar is ``scalar``."""
    if shape is None:
        return "scalar"
    return "[" + ", ".join("?" if d < 0 else str(d) for d in shape) + "]"


def toolchain_of(path: Path) -> dict[str, Any] | None:
    """The toolchain identity recorded with prebuilt binaries (``prebuilt/toolchain.json``),
    or None for a directory without binaries. Read without following symlinks."""
    try:
        data = json.loads(read_regular(path / "prebuilt" / "toolchain.json"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


@dataclass(frozen=True)
class Located:
    """An artifact found from the command line's ARTIFACT argument."""

    artifact: Any  # CompiledArtifact
    where: str  # "directory", "store (READY)", "shared store (GENERATED)", ...
    key: str | None  # the store key, when found in a store
    entries: tuple[str, ...]  # entry names of a multi-entry directory, else ()


def locate(spec: str, *, platform: str | None = None, entry: str | None = None) -> Located:
    """Find ARTIFACT: an existing directory, else a store key or unique key prefix."""
    from pypto.ir import META_FILE, MetadataError

    path = Path(spec)
    if path.exists() or path.is_symlink() or not _HEX.match(spec):
        if not path.exists():
            raise UsageError(
                f"{spec}: no such directory, and not a store key (a hexadecimal key or prefix; "
                "`pypto-runtime cache ls` lists the store's entries)"
            )
        if not path.is_dir():
            raise UsageError(f"{spec}: not a directory (an artifact is a directory or a store key)")
        entries: tuple[str, ...] = ()
        target = path
        if not (path / META_FILE).exists() and (path / "entries.json").is_file():
            entries, default = _entries(path)
            name = entry or default
            if name not in entries:
                raise UsageError(f"{spec}: no entry {name!r}; entries are {', '.join(entries)}")
            target = path / name
        elif not (path / META_FILE).exists():
            raise UsageError(f"{spec}: not a compiled artifact (no {META_FILE} or entries.json in it)")
        artifact = _from_dir(target, platform=platform, key=None, manifest=None)
        if entry is not None and not entries and entry != artifact.metadata.entry:
            raise UsageError(
                f"{spec}: a single-entry artifact (entry {artifact.metadata.entry!r}), not {entry!r}"
            )
        return Located(artifact, "directory", artifact.key, entries)
    key, got = _lookup(spec.lower())
    if entry is not None and entry != _peek_entry(got.path):
        raise UsageError(
            f"store entry {key[:16]}…: a single-entry artifact, --entry {entry!r} does not apply"
        )
    try:
        artifact = _from_dir(got.path, platform=platform, key=got.key, manifest=got.manifest)
    except MetadataError as exc:
        raise Failed(f"store entry {key}: {exc}") from None
    where = f"{'shared store' if got.origin == 'shared' else 'store'} ({got.state})"
    return Located(artifact, where, key, ())


def _peek(path: Path) -> dict[str, Any] | None:
    """The raw ``compiled_meta.json`` of ``path`` (for messages only), None if unreadable."""
    try:
        data = json.loads(read_regular(path / "compiled_meta.json"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _peek_entry(path: Path) -> str | None:
    meta = _peek(path)
    return None if meta is None else str(meta.get("entry"))


def _entries(path: Path) -> tuple[tuple[str, ...], str]:
    index = path / "entries.json"
    try:
        data = json.loads(read_regular(index))
        names, default = data.get("entries"), data.get("default")
    except (OSError, ValueError, AttributeError) as exc:
        raise Failed(f"{index}: unreadable ({exc})") from None
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names) or default not in names:
        raise Failed(f"{index}: expected {{'entries': [...], 'default': <one of them>}}")
    return tuple(names), str(default)


def _from_dir(path: Path, *, platform: str | None, key: str | None, manifest: Any) -> Any:
    from pypto.ir import MetadataError, parse_platform
    from pypto.runtime.compiled import CompiledArtifact

    if platform is not None:
        try:
            platform = parse_platform(platform)
        except ValueError as exc:
            raise UsageError(f"--platform: {exc}") from None
    if not (path / "compiled_meta.json").exists() and (path / "plan.json").is_file():
        raise Failed(
            f"{path}: the entry of a multi-chip program (plan.json), not a single-chip artifact; "
            "load it in Python with pypto.runtime.distributed.DistributedCompiledProgram.load(key)"
        )
    try:
        return CompiledArtifact.from_dir(path, platform=platform, key=key, manifest=manifest)
    except MetadataError as exc:
        raise Failed(str(exc)) from None
    except (OSError, RuntimeError, ValueError) as exc:  # e.g. a manifest that does not validate
        raise Failed(f"{path}: {exc}") from None


def _lookup(prefix: str) -> tuple[str, Any]:
    """(key, Obtained) of the one valid store entry whose key starts with ``prefix``."""
    from pypto.runtime.artifact_runtime import default_runtime
    from pypto.runtime.store import UnsafeStoreError

    rt = default_runtime()
    if not rt.enabled:
        raise UsageError(
            f"{prefix}: the artifact store is disabled (PYPTO_CACHE=0); pass a directory instead"
        )
    stores = [s for s in (rt.store, rt.shared) if s is not None]
    found: dict[str, list[str]] = {}
    try:
        for store in stores:
            for e in store.entries():
                if e.key.startswith(prefix):
                    found.setdefault(e.key, []).append(f"{'shared ' if store.shared else ''}{e.state}")
    except UnsafeStoreError as exc:
        raise UsageError(f"refused: {exc}") from None
    roots = " and ".join(str(s.root) for s in stores)
    if not found:
        raise UsageError(
            f"{prefix}: no directory of that name and no store entry whose key starts with it "
            f"(store: {roots}; `pypto-runtime cache ls` lists the entries)"
        )
    if len(found) > 1:
        shown = sorted(found)[:_CANDIDATES_SHOWN]
        more = len(found) - len(shown)
        lines = "".join(f"\n  {k}  {'/'.join(found[k])}  {_describe(k, stores)}" for k in shown) + (
            f"\n  … and {more} more" if more else ""
        )
        raise UsageError(f"{prefix}: {len(found)} store entries match; give more of the key:{lines}")
    (key,) = found
    try:
        got = rt.lookup(key) or rt.lookup(key, "GENERATED")
    except UnsafeStoreError as exc:
        raise UsageError(f"refused: {exc}") from None
    if got is None:
        why = rt.last_invalid.get(key, "it changed or was removed while being read")
        raise Failed(
            f"store entry {key}: invalid ({why}); `pypto-runtime cache verify --fix` removes it, "
            "a new compile rebuilds it"
        )
    return key, got


def _describe(key: str, stores: list[Any]) -> str:
    """``name (platform)`` of a candidate entry, for the ambiguity message."""
    for store in stores:
        for state in ("READY", "GENERATED"):
            meta = _peek(store.entry_dir(key, state))
            if meta is not None:
                return f"{meta.get('name', '?')} ({meta.get('platform', '?')})"
    return "?"
