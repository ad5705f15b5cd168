"""``pypto-runtime cache {stat,ls,verify,prune,clear}``: inspect and maintain the store.

A root that is not trusted (see :mod:`pypto.runtime.store`) is refused: the command prints
the path, the problem and the fix, and exits with status 2. Nothing reads an entry's file
through a symlink or blocks on a FIFO.

Example:
    $ pypto-runtime cache ls          # the same as: python -m pypto.runtime cache ls
"""

from __future__ import annotations

import argparse
import json
import math
import stat
import sys
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from pypto.runtime import settings
from pypto.runtime._fs import read_regular
from pypto.runtime.artifact_runtime import prune_private_roots
from pypto.runtime.cli._common import clip, plain
from pypto.runtime.manifest import InvalidEntry
from pypto.runtime.store import ArtifactStore, StoreLockTimeout, UnsafeStoreError

__all__ = ["add_parser", "command"]


def _size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"  # pragma: no cover


def _age(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f}s"
    if seconds < 7200:
        return f"{seconds / 60:.0f}m"
    if seconds < 172800:
        return f"{seconds / 3600:.0f}h"
    return f"{seconds / 86400:.0f}d"


def _stat(store: ArtifactStore, console: Console) -> int:
    entries = list(store.entries())
    table = Table(title="pypto artifact store", show_header=False)
    table.add_column("setting", style="bold")
    table.add_column("value")
    table.add_row("enabled (PYPTO_CACHE)", str(settings.cache_enabled()))
    table.add_row("read-only (PYPTO_CACHE_READONLY)", str(settings.cache_readonly()))
    table.add_row("shared read-only store (PYPTO_CACHE_SHARED_DIR)", str(settings.cache_shared_dir() or "-"))
    table.add_row("lock timeout (PYPTO_CACHE_LOCK_TIMEOUT)", f"{settings.lock_timeout():g} s")
    for state in ("READY", "GENERATED"):
        group = [e for e in entries if e.state == state]
        table.add_row(f"{state} entries", f"{len(group)} ({_size(sum(e.size for e in group))})")
    table.add_row("staging leftovers", str(len(store.staging_leftovers())))
    # The root on a line of its own, never wrapped or cut, so that it can be copied.
    console.print(f"root: {store.root}", soft_wrap=True, highlight=False)
    console.print(table)
    return 0


def _signature(params: Any) -> str:
    """``a:64x64 FP32, alpha:FP32*`` from compiled_meta's params (``*``: a runtime scalar,
    ``?``: a dynamic dim), '?' when they are not in the documented form."""
    if not isinstance(params, list):
        return "?"
    out = []
    for p in params:
        if not isinstance(p, dict):
            return "?"
        shape = p.get("shape")
        dims = (
            ""
            if shape is None
            else "x".join("?" if not isinstance(d, int) or d < 0 else str(d) for d in shape) + " "
        )
        runtime = "*" if p.get("runtime") else ""
        out.append(f"{p.get('name', '?')}:{dims}{p.get('dtype', '?')}{runtime}")
    return ", ".join(out)


def _describe(path: Path) -> tuple[str, str, str, str]:
    """(program name, platform, contract, signature) from an entry's compiled_meta.json, or for
    a distributed program's entry from its plan.json (contract ``distributed``, the signature
    followed by the rank count), '?' for what cannot be read."""
    try:
        meta = json.loads(read_regular(path / "compiled_meta.json"))
        return (
            str(meta.get("name", "?")),
            str(meta.get("platform", "?")),
            str(meta.get("contract", "?")),
            _signature(meta.get("params")),
        )
    except FileNotFoundError:
        return _describe_distributed(path)
    except (OSError, ValueError, AttributeError):
        return "?", "?", "?", "?"


def _describe_distributed(path: Path) -> tuple[str, str, str, str]:
    try:
        plan = json.loads(read_regular(path / "plan.json"))
        if plan.get("kind") != "distributed":
            return "?", "?", "?", "?"
        params = plan.get("params")
        if isinstance(params, list):  # the plan's params: a scalar's dtype is "" (compiled in)
            params = [
                {**p, "shape": None, "dtype": type(p.get("value")).__name__}
                if isinstance(p, dict) and p.get("kind") == "scalar"
                else p
                for p in params
            ]
        return (
            str(plan.get("name", "?")),
            str(plan.get("platform", "?")),
            "distributed",
            f"{_signature(params)} on {plan.get('world_size', '?')} ranks",
        )
    except (OSError, ValueError, AttributeError):
        return "?", "?", "?", "?"


def _count_files(path: Path) -> int:
    """Regular files under ``path`` (lstat: never follows a symlink)."""
    count, stack = 0, [path]
    while stack:
        folder = stack.pop()
        try:
            children = list(folder.iterdir())
        except OSError:
            continue
        for child in children:
            try:
                mode = child.lstat().st_mode
            except OSError:
                continue
            if stat.S_ISDIR(mode):
                stack.append(child)
            elif stat.S_ISREG(mode):
                count += 1
    return count


def _ls(store: ArtifactStore, console: Console) -> int:
    # Entries of one program differ in their signature (shapes, dtypes), platform or contract:
    # the table shows all three, sorted so that a program's entries sit together.
    table = Table(title=f"entries in {store.root}")
    for col in ("key", "state", "program", "signature", "platform", "contract", "size", "age", "files"):
        table.add_column(col, justify="right" if col in ("size", "age", "files") else "left", overflow="fold")
    now = time.time()
    rows = []
    for e in store.entries():
        name, platform, contract, signature = _describe(e.path)
        rows.append((name, signature, platform, contract, e))
    for name, signature, platform, contract, e in sorted(rows, key=lambda r: r[:4]):
        table.add_row(
            e.key[:24],
            e.state,
            name,
            signature,
            platform,
            contract,
            _size(e.size),
            _age(now - e.mtime),
            str(_count_files(e.path)),
        )
    console.print(table)
    return 0


def _problem(store: ArtifactStore, key: str, state: str) -> str | None:
    try:
        store.lookup(key, state)
    except (InvalidEntry, UnsafeStoreError) as exc:
        return str(exc)
    return None


def _verify(store: ArtifactStore, console: Console, fix: bool) -> int:
    table = Table(title="verify")
    table.add_column("key")
    table.add_column("state")
    table.add_column("result")
    bad = 0
    for e in list(store.entries()):
        problem = _problem(store, e.key, e.state)
        if problem is None:
            table.add_row(e.key[:24], e.state, "[green]ok[/green]")
            continue
        bad += 1
        action = ""
        if fix:
            with store.lock(e.key):
                store.discard(e.key, e.state)
            action = " (removed)"
        table.add_row(e.key[:24], e.state, f"[red]invalid[/red]: {problem}{action}")
    console.print(table)
    console.print(f"{bad} invalid entr{'y' if bad == 1 else 'ies'}")
    return 1 if bad and not fix else 0


def _prune(store: ArtifactStore, console: Console, older_than_days: float | None) -> int:
    older = None if older_than_days is None else older_than_days * 86400
    # What each entry was must be read before prune removes its files.
    before = {(e.key, e.state): _describe(e.path) for e in store.entries()}
    removed = store.prune(older_than=older)
    removed["private build roots of dead processes"] = prune_private_roots()
    after = {(e.key, e.state) for e in store.entries()}
    gone = sorted(k for k in before if k not in after)
    if gone:
        entries = Table(title="entries removed")
        for col in ("key", "state", "program", "signature"):
            entries.add_column(col, overflow="fold")
        for key, state in gone:
            name, _, _, signature = before[(key, state)]
            entries.add_row(key[:24], state, name, signature)
        console.print(entries)
    table = Table(title="prune")
    table.add_column("removed")
    table.add_column("count", justify="right")
    for what, count in removed.items():
        table.add_row(what, str(count))
    console.print(table)
    console.print(f"{len(gone)} entr{'y' if len(gone) == 1 else 'ies'} removed")
    return 0


def _clear(store: ArtifactStore, console: Console) -> int:
    console.print(f"removed {store.clear()} entries from {store.root}")
    return 0


def _days(text: str) -> float:
    """``--older-than``: a finite number of days >= 0 (a negative one would remove every
    entry, nan none: both refused)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of days, got {clip(text)!r}") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"expected a finite number of days >= 0, got {clip(text)!r}")
    return value


def add_parser(sub: Any) -> None:
    """Add ``cache`` and its subcommands to the top-level subparsers ``sub``."""
    cache = sub.add_parser(
        "cache", help="inspect and maintain the artifact store", description=plain(__doc__)
    )
    cache.add_argument("--root", help="store root (default: PYPTO_CACHE_DIR or the user cache dir)")
    csub = cache.add_subparsers(dest="command", required=True)
    csub.add_parser("stat", help="settings, entry counts and sizes")
    csub.add_parser("ls", help="one row per entry")
    verify = csub.add_parser("verify", help="validate every entry against its manifest")
    verify.add_argument("--fix", action="store_true", help="remove invalid entries")
    prune = csub.add_parser("prune", help="remove staging leftovers, trash and invalid entries")
    prune.add_argument(
        "--older-than", type=_days, metavar="DAYS", help="also remove entries older than DAYS (>= 0)"
    )
    csub.add_parser("clear", help="remove every entry")
    cache.set_defaults(handler=command)


def command(args: argparse.Namespace) -> int:
    """Run one ``cache`` subcommand; 2 when the store is refused (untrusted, locked)."""
    store = ArtifactStore(args.root)
    console = Console(width=140)
    try:
        try:
            present = store.root.exists() or store.root.is_symlink()
        except (OSError, ValueError) as exc:  # e.g. a name longer than the filesystem allows
            reason = getattr(exc, "strerror", None) or str(exc)
            print(
                f"pypto cache {args.command}: --root {clip(str(store.root))}: not a usable path ({reason})",
                file=sys.stderr,
            )
            return 2
        if present:
            store.check()
        return _run(args.command, args, store, console)
    except (UnsafeStoreError, StoreLockTimeout) as exc:
        print(f"pypto cache {args.command}: refused: {exc}", file=sys.stderr)
        return 2
    except NotADirectoryError as exc:
        print(f"pypto cache {args.command}: {exc.filename}: not a directory", file=sys.stderr)
        return 2


def _run(command: str, args: argparse.Namespace, store: ArtifactStore, console: Console) -> int:
    if command == "stat":
        return _stat(store, console)
    if command == "ls":
        return _ls(store, console)
    if command == "verify":
        return _verify(store, console, args.fix)
    if command == "prune":
        return _prune(store, console, args.older_than)
    return _clear(store, console)
