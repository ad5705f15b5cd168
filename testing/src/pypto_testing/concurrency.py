"""Calls on several threads while another thread keeps changing what they call (the races a
native call target must survive: its last reference dropped while a caller is inside it)."""

from __future__ import annotations

import threading
from collections.abc import Callable

__all__ = ["run_while_changing"]


def run_while_changing(change: Callable[[], None], call: Callable[[int], None], threads: int = 2) -> None:
    """Run ``call(i)`` on ``threads`` threads (``i`` = 0, 1, ...) while one more thread calls
    ``change()`` again and again until they have all returned; then re-raise the first exception
    a caller raised (an assertion in ``call`` fails the test that called this)."""
    stop = threading.Event()
    errors: list[BaseException] = []

    def changer() -> None:
        while not stop.is_set():
            change()

    def caller(i: int) -> None:
        try:
            call(i)
        except BaseException as exc:  # re-raised on the calling thread
            errors.append(exc)

    change_thread = threading.Thread(target=changer)
    callers = [threading.Thread(target=caller, args=(i,)) for i in range(threads)]
    change_thread.start()
    try:
        for t in callers:
            t.start()
        for t in callers:
            t.join()
    finally:
        stop.set()
        change_thread.join()
    if errors:
        raise errors[0]
