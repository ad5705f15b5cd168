"""The child process that compiles the native describe_call extension (run as a script).

``pypto.torch._native_describe`` starts it with ``python -c`` (so nothing of pypto is imported
here) and the arguments: the parent's pid, the build lock's fd, the private build directory,
the extension name, the C++ source, and ``1`` for verbose output. It compiles with torch's
extension builder (``ninja`` and the C++ compiler) into the build directory and imports the
result once to prove it loads; the parent publishes the directory by renaming it.

Nothing it starts outlives it, and it does not outlive its parent:

- ``PR_SET_PDEATHSIG`` sends it SIGTERM when the parent dies (also by SIGKILL); if the parent
  died before that was set, it exits at once.
- It is a child subreaper (``PR_SET_CHILD_SUBREAPER``): a compiler whose ``ninja`` died is
  re-parented to it, not to init, so it can always find every descendant.
- On SIGTERM, SIGINT or SIGHUP, and before it exits normally, it kills every descendant
  (found through ``/proc``) until none is left, removes the build directory unless the build
  succeeded, and exits.

It inherits the lock's fd, so the lock is held until both this process and the parent are gone.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import sys
import time

_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36


def _descendants(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        # pid (comm) state ppid ...: comm may hold spaces and parentheses; split after the last ')'
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) > 1:
            children.setdefault(int(fields[1]), []).append(int(entry))
    found: list[int] = []
    todo = [root]
    while todo:
        for pid in children.get(todo.pop(), ()):
            found.append(pid)
            todo.append(pid)
    return found


def _reap() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def kill_descendants(deadline: float = 10.0) -> None:
    """SIGKILL every descendant of this process (repeatedly: a dying ninja may have started
    another compiler) and reap the ones re-parented here, until none is left."""
    end = time.monotonic() + deadline
    me = os.getpid()
    while True:
        found = _descendants(me)
        for pid in found:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        _reap()
        if not found or time.monotonic() > end:
            return
        time.sleep(0.01)


def main(argv: list[str]) -> int:
    parent, lock_fd, directory, name, source, verbose = argv
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    if os.getppid() != int(parent):  # the parent died before the death signal was armed
        shutil.rmtree(directory, ignore_errors=True)
        return 1
    del lock_fd  # held open (inherited) only so that the lock outlives the parent with us

    def stop(signum: int, _frame: object) -> None:
        kill_descendants()
        shutil.rmtree(directory, ignore_errors=True)
        os._exit(128 + signum)

    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, stop)

    try:
        from torch.utils.cpp_extension import load

        load(
            name=name,
            sources=[source],
            extra_cflags=["-O2"],
            build_directory=directory,
            verbose=verbose == "1",
        )
    except BaseException:
        kill_descendants()
        shutil.rmtree(directory, ignore_errors=True)
        raise
    kill_descendants()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
