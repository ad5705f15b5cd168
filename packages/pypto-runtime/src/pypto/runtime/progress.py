"""Progress display for long runs of builds (many kernels): rich, on a terminal only."""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from typing import TypeVar

__all__ = ["track"]

T = TypeVar("T")


def track(items: Sequence[T], description: str, *, min_items: int = 2) -> Iterator[T]:
    """Yield ``items``, showing a transient progress bar on a terminal when there are at
    least ``min_items`` of them; plain iteration otherwise (pipes, CI logs, tests)."""
    if len(items) < min_items or not sys.stderr.isatty():
        yield from items
        return
    from rich.console import Console
    from rich.progress import track as rich_track

    yield from rich_track(items, description=description, console=Console(stderr=True), transient=True)
