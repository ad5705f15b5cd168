"""The lifecycle owner thread: one thread per kernel context runs Worker init, callable
registration and Worker close, each after binding the borrowed device context.

Launches do not go through it (they run on the caller's thread, ordered on the caller's
stream); only lifecycle operations, which are rare, pay the thread handoff. An operation's
exception is re-raised in the caller with its own type.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["LifecycleOwner"]

T = TypeVar("T")


class _Job:
    __slots__ = ("done", "error", "fn", "result")

    def __init__(self, fn: Callable[[], Any]) -> None:
        self.fn = fn
        self.done = threading.Event()
        self.result: Any = None
        self.error: BaseException | None = None


class LifecycleOwner:
    """A daemon thread that runs lifecycle operations in the bound device context.

    Args:
        bind: Called once on the thread before its first operation (binds the context).
        name: The thread's name.
    """

    def __init__(self, bind: Callable[[], None], *, name: str = "pypto-kernel-owner") -> None:
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._bind = bind
        self._bound = False
        self._stopped = False
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self._thread.start()

    @property
    def ident(self) -> int | None:
        return self._thread.ident

    def on_owner_thread(self) -> bool:
        return threading.get_ident() == self._thread.ident

    def call(self, fn: Callable[[], T]) -> T:
        """Run ``fn`` on the owner thread and return its result (or raise its exception)."""
        if self.on_owner_thread():
            raise RuntimeError(
                "pypto.torch: a lifecycle operation was started from the lifecycle owner thread "
                "itself (recursive init, registration or shutdown)"
            )
        if self._stopped:
            raise RuntimeError("pypto.torch: the kernel-mode lifecycle owner thread has stopped")
        job = _Job(fn)
        self._jobs.put(job)
        job.done.wait()
        if job.error is not None:
            raise job.error
        result: T = job.result
        return result

    def stop(self) -> None:
        """Finish the queued operations and end the thread (idempotent)."""
        if self._stopped:
            return
        self._stopped = True
        self._jobs.put(None)
        if not self.on_owner_thread():
            self._thread.join()

    def _loop(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            try:
                if not self._bound:
                    self._bind()
                    self._bound = True
                job.result = job.fn()
            except BaseException as exc:  # handed to the caller, which re-raises it
                job.error = exc
            finally:
                job.done.set()
