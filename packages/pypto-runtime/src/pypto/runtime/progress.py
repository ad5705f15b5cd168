"""Progress display for long runs of builds (many kernels) and long waits: rich, on a
terminal only."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

__all__ = ["track", "waiting"]

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


@contextlib.contextmanager
def waiting(description: str, *, after: float = 1.0) -> Iterator[Callable[[float], None]]:
    """A wait that reports itself: yields ``tick(elapsed_seconds)``, to be called while
    waiting. On a terminal, once ``after`` seconds have passed, a transient spinner shows
    ``description`` and the time waited; elsewhere ``tick`` does nothing."""
    status: Any = None

    def tick(elapsed: float) -> None:
        nonlocal status
        if elapsed < after or not sys.stderr.isatty():
            return
        text = f"{description}: {elapsed:.0f} s"
        if status is None:
            from rich.console import Console

            status = Console(stderr=True).status(text)
            status.start()
        else:
            status.update(text)

    try:
        yield tick
    finally:
        if status is not None:
            status.stop()
