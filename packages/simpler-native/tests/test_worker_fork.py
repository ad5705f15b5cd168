"""A forked child abandons the parent's Workers instead of hanging on threads it does not have."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

CHILD = textwrap.dedent(
    """
    import os, sys, simpler
    w = simpler.Worker(); w.init()
    k = simpler.Worker(execution_mode="kernel"); k.init(borrowed_context_generation=77)
    pid = os.fork()
    if pid == 0:
        try:
            w.malloc(16)
        except simpler.WorkerClosedError as e:
            print("child:", e, flush=True)
        fresh = simpler.Worker(execution_mode="kernel")
        fresh.init(borrowed_context_generation=77)   # the parent's generation is not ours
        fresh.close()
        del w
        sys.exit(0)                                  # normal exit: no hang at teardown
    _, status = os.waitpid(pid, 0)
    print("parent: child exit", os.waitstatus_to_exitcode(status), flush=True)
    w.close(); k.close()
    """
)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_forked_child_does_not_hang() -> None:
    proc = subprocess.run(
        [sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert "child: Worker.malloc: the Worker is closed" in proc.stdout
    assert "parent: child exit 0" in proc.stdout
    assert "leaked" not in proc.stderr
