"""What the subcommands share: exit codes, errors, consoles, progress and finding an artifact.

An ARTIFACT on the command line is a directory (one holding ``compiled_meta.json``, or a
multi-entry directory holding ``entries.json``) or a store key: the full hex digest or a
prefix of it that names exactly one entry of the user's store (or the shared read-only one).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console

from pypto.runtime._fs import read_inside, read_regular
from pypto.runtime.errors import PyptoRuntimeError

__all__ = [
    "EXIT_FAILED",
    "EXIT_OK",
    "EXIT_USAGE",
    "CommandError",
    "Failed",
    "Located",
    "UsageError",
    "clip",
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


def clip(text: str, limit: int = 80) -> str:
    """``text`` for an error message: at most ``limit`` characters (a 5,000-character argument
    is named by its start and length, not echoed whole)."""
    if len(text) <= limit:
        return text
    return f"{text[: limit - 20]}… ({len(text)} characters)"


def plain(doc: str | None) -> str:
    """A module docstring as ``--help`` text: without reStructuredText's double backquotes."""
    return (doc or "").replace("``", "`").replace(":mod:", "")


def add_command(sub: Any, parent: argparse.ArgumentParser, name: str, summary: str, doc: str | None) -> Any:
    """The parser of subcommand ``name``: the shared options of ``parent``, ``summary`` in the
    command list and the module docstring ``doc`` as its ``--help`` text, laid out as written."""
    return sub.add_parser(
        name,
        parents=[parent],
        help=summary,
        description=plain(doc),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )


def shape_text(shape: tuple[int, ...] | None) -> str:
    """``[64, 64]``; a dynamic extent is ``?``; a scalar is ``scalar``."""
    if shape is None:
        return "scalar"
    return "[" + ", ".join("?" if d < 0 else str(d) for d in shape) + "]"


def toolchain_of(path: Path) -> dict[str, Any] | None:
    """The toolchain identity recorded with prebuilt binaries (``prebuilt/toolchain.json``),
    or None for a directory without binaries. Read without following symlinks."""
    try:
        data = json.loads(read_inside(path, "prebuilt/toolchain.json"))
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
    shown = clip(spec)
    if not spec or "\0" in spec:
        raise UsageError(f"ARTIFACT {shown!r}: expected a directory or a store key")
    try:
        exists = os.path.lexists(path) and path.exists()
        is_link = path.is_symlink()
    except OSError as exc:  # e.g. ENAMETOOLONG: a name longer than the filesystem allows
        raise UsageError(f"ARTIFACT {shown}: not a usable path ({exc.strerror})") from None
    if exists or is_link or not _HEX.match(spec):
        if not exists:
            raise UsageError(
                f"{shown}: no such directory, and not a store key (a hexadecimal key or prefix; "
                "`pypto-runtime cache ls` lists the store's entries)"
            )
        if not path.is_dir():
            raise UsageError(f"{shown}: not a directory (an artifact is a directory or a store key)")
        entries: tuple[str, ...] = ()
        target = path
        if not os.path.lexists(path / META_FILE) and os.path.lexists(path / "entries.json"):
            entries, default = _entries(path)
            name = entry or default
            if name not in entries:
                raise UsageError(f"{shown}: no entry {clip(name)!r}; entries are {', '.join(entries)}")
            target = path / name
        elif not os.path.lexists(path / META_FILE):
            raise UsageError(f"{shown}: not a compiled artifact (no {META_FILE} or entries.json in it)")
        artifact = _from_dir(target, platform=platform, key=None, manifest=None)
        if entry is not None and not entries and entry != artifact.metadata.entry:
            raise UsageError(
                f"{shown}: a single-entry artifact (entry {artifact.metadata.entry!r}), not {clip(entry)!r}"
            )
        return Located(artifact, "directory", artifact.key, entries)
    key, got = _lookup(spec.lower())
    if entry is not None and entry != _peek_entry(got.path):
        raise UsageError(
            f"store entry {key[:16]}…: a single-entry artifact, --entry {clip(entry)!r} does not apply"
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
    """The entries of a multi-entry directory; an index naming a directory outside it (or a
    symlinked or special file) is refused (exit 2)."""
    from pypto.runtime.compiled import UnsafeArtifactError, entry_index

    try:
        return entry_index(path)
    except UnsafeArtifactError as exc:
        raise UsageError(f"refused: {exc}") from None
    except (OSError, ValueError) as exc:
        raise Failed(f"{path / 'entries.json'}: unreadable ({exc})") from None


def _from_dir(path: Path, *, platform: str | None, key: str | None, manifest: Any) -> Any:
    from pypto.ir import MetadataError, parse_platform
    from pypto.runtime.compiled import CompiledArtifact, UnsafeArtifactError

    if platform is not None:
        try:
            platform = parse_platform(platform)
        except ValueError as exc:
            raise UsageError(f"--platform: {clip(str(exc), 300)}") from None
    if not (path / "compiled_meta.json").exists() and (path / "plan.json").is_file():
        raise Failed(
            f"{path}: the entry of a multi-chip program (plan.json), not a single-chip artifact; "
            "load it in Python with pypto.runtime.distributed.DistributedCompiledProgram.load(key)"
        )
    try:
        return CompiledArtifact.from_dir(path, platform=platform, key=key, manifest=manifest)
    except UnsafeArtifactError as exc:  # a symlinked or special file where the loader reads
        raise UsageError(f"refused: {exc}") from None
    except MetadataError as exc:
        raise Failed(str(exc)) from None
    # e.g. a manifest that does not validate (InvalidEntry is a PyptoRuntimeError)
    except (OSError, RuntimeError, ValueError, PyptoRuntimeError) as exc:
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
