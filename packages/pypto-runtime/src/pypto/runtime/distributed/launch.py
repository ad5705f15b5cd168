"""Run a distributed program's script under ``torchrun``: one process per rank, on any hosts.

``torchrun [--nnodes=N ...] --nproc-per-node=M -m pypto.runtime.distributed.launch script.py
[args]`` (or ``-m module [args]`` in place of the script) starts ``WORLD_SIZE`` processes with
torchrun's environment. The process with ``RANK`` 0 is the host orchestrator: it runs the script
as ``__main__``, and every ``DistributedWorker`` it prepares (``compiled(...)``,
``compiled.prepare()``) uses the other processes as its ranks instead of starting its own: RANK
``r`` is program rank ``r - 1``, so a program compiled for ``len(device_ids) == WORLD_SIZE - 1``
ranks. Those processes serve the host's workers one after another (one open at a time) and exit
when the script ends.

The store is the one of torchrun's environment (``MASTER_ADDR``/``MASTER_PORT``); the engine
(``launched``: ``LaunchContext``, ``LaunchedRankGroup``, ``serve_launched``) imports torch. With
every process on one host, the gloo groups listen on loopback (``GLOO_SOCKET_IFNAME=lo`` unless
set) and the control messages are MAC'd under a secret the host orchestrator writes to a 0600
file; across hosts, ``GLOO_SOCKET_IFNAME`` names the interface and ``PYPTO_DIST_SECRET_FILE`` a
shared secret file (docs/distributed.md, "Trust").
"""

from __future__ import annotations

import os
import runpy
import sys
from typing import Any

__all__ = ["current", "default_data_path", "main"]

_STATE: dict[str, Any] = {"context": None}  # the host orchestrator's LaunchContext

USAGE = "torchrun [options] -m pypto.runtime.distributed.launch (script.py | -m module) [args...]"


def current() -> Any:
    """The host orchestrator's ``LaunchContext`` when this process is torchrun's RANK 0 under
    this launcher, else None (workers start their own rank processes)."""
    return _STATE["context"]


def default_data_path() -> str:
    """The data path of a worker whose program and config name none: ``PYPTO_DIST_DATA_PATH``
    when set; else ``process_group`` under this launcher (ranks may be on other hosts), and
    the setting's default otherwise."""
    from pypto.runtime import settings

    if _STATE["context"] is not None and "PYPTO_DIST_DATA_PATH" not in os.environ:
        return "process_group"
    return str(settings.get("PYPTO_DIST_DATA_PATH"))


def _target(argv: list[str]) -> tuple[str, str, list[str]]:
    if argv[:1] == ["-m"] and len(argv) >= 2:
        return "module", argv[1], argv[2:]
    if argv and not argv[0].startswith("-"):
        return "script", argv[0], argv[1:]
    raise SystemExit(f"usage: {USAGE}\nexpected a script path or -m module, got {argv!r}")


def main(argv: list[str] | None = None) -> None:
    """The entry of every process torchrun starts (see the module's docstring)."""
    args = sys.argv[1:] if argv is None else argv
    kind, target, rest = _target(args)
    missing = [v for v in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT") if v not in os.environ]
    if missing:
        raise SystemExit(
            f"pypto.runtime.distributed.launch: expected torchrun's environment, but {', '.join(missing)} "
            f"is not set; start it as: {USAGE}"
        )
    if int(os.environ["WORLD_SIZE"]) < 2:
        raise SystemExit(
            "pypto.runtime.distributed.launch: expected WORLD_SIZE >= 2 (the host orchestrator and at "
            f"least one rank), got WORLD_SIZE={os.environ['WORLD_SIZE']}"
        )
    from pypto.runtime.distributed import launched
    from pypto.runtime.distributed.channel import loopback_interface

    lo = loopback_interface()
    if launched._all_local() and lo is not None:  # every process on this host: gloo listens on loopback
        os.environ.setdefault("GLOO_SOCKET_IFNAME", lo)
    if int(os.environ["RANK"]) != 0:
        launched.serve_launched()
        return
    context = _STATE["context"] = launched.LaunchContext()
    try:
        if kind == "module":
            sys.argv = [target, *rest]
            runpy.run_module(target, run_name="__main__", alter_sys=True)
        else:
            sys.argv = [target, *rest]
            sys.path.insert(0, os.path.dirname(os.path.abspath(target)))
            runpy.run_path(target, run_name="__main__")
    finally:
        import gc

        gc.collect()  # close workers the script dropped, so the ranks leave their last session
        context.finish()


if __name__ == "__main__":
    # run as a script (`-m`), this file is `__main__`: the workers look for the context in the
    # module they import, so the entry is that module's
    from pypto.runtime.distributed.launch import main as _main

    _main()
