"""Operator calls of daemon threads at interpreter exit.

CPython before 3.14 ends a daemon thread that wants the GIL back during finalization with
``pthread_exit``, whose unwinding through a C++ destructor calls ``std::terminate``: torch's
dispatcher releases the GIL around an operator call and takes it back in destructors (its
argument references, its GIL guards), and native bindings do the same. So at exit, before
shutdown, the exit hook closes the gate: a daemon thread that enters an operator call, or
leaves one, from then on waits there forever (it never asks for the GIL again; the process
ends around it), and the hook waits until no daemon thread is between the two, so
finalization never finds one inside an operator call. The main thread and non-daemon threads
never wait at the gate.

The bracket is opened where a call enters torch's dispatcher when that is Python code we own
(an operator object's ``__call__``), so the dispatcher's own GIL release and re-take lie
inside it; the kernel the dispatcher calls opens it otherwise (``torch.ops`` called directly,
compiled graphs), which leaves the dispatcher's frames around the kernel outside it.
"""

from __future__ import annotations

import threading
import time
from threading import get_ident

__all__ = ["ExitGate", "exit_gate"]


class ExitGate:
    """:meth:`enter` and :meth:`leave` bracket an operator call (a set add and discard: no
    lock); :meth:`close` (at exit) makes daemon threads wait forever at either point, and
    :meth:`drain` waits until none is between them."""

    def __init__(self) -> None:
        self.closed = False
        self.inside: set[int] = set()
        self._never = threading.Event()

    def enter(self) -> bool:
        """Open this thread's bracket; False (nothing to leave) when an outer one is open.

        The thread is counted inside before the gate is read: a :meth:`close` and
        :meth:`drain` that run between the two then wait for it, and one before it stops it."""
        ident = get_ident()
        inside = self.inside
        if ident in inside:
            return False
        inside.add(ident)
        if self.closed:
            self._stop(ident)
        return True

    def leave(self) -> None:
        """Close this thread's bracket (call only after an :meth:`enter` that returned True)."""
        ident = get_ident()
        self.inside.discard(ident)
        if self.closed:
            self._stop(ident)

    def _stop(self, ident: int) -> None:
        thread = threading.current_thread()
        if thread.daemon and thread is not threading.main_thread():
            self.inside.discard(ident)
            self._never.wait()  # until the process ends; the lock wait never asks for the GIL

    def close(self) -> None:
        self.closed = True

    def drain(self, timeout: float) -> bool:
        """Wait until no daemon thread is inside an operator call; False on timeout."""
        me = get_ident()
        end = time.monotonic() + timeout
        while True:
            daemons = {t.ident for t in threading.enumerate() if t.daemon}
            if not (self.inside - {me}) & daemons:
                return True
            if time.monotonic() > end:
                return False
            time.sleep(0.005)


exit_gate = ExitGate()
