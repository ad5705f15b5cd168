"""The process mode gate: a process runs PROGRAM work or KERNEL work, never both.

PROGRAM mode is claimed right before the program runner executes, when a Worker is
initialised through pypto-runtime (``program_worker``, ``ChipWorker``), and by a distributed
program's one-shot call and ``prepare()`` before any host tensor is allocated or moved to shared
memory; KERNEL mode is claimed by kernel-session initialisation in the torch layer. A
``simpler.Worker`` created directly is below the gate: it claims nothing. Importing, compiling and loading metadata
never claim. Both claims take one lock, so of two competing claims exactly one wins and the
other raises :class:`ModeConflictError` before any native Worker exists.

Closing is terminal: after :func:`close` neither mode can be claimed in this process.

Fork: in the child, the gate is reset when the parent was unclaimed or in PROGRAM mode (a
PROGRAM child builds its own Worker). An inherited KERNEL claim is never reset, because the
parent's borrowed device context does not survive the fork; the child must use a freshly
spawned process instead. The lock is always replaced in the child, since another parent thread
may have held it at the moment of the fork.

Example:
    >>> from pypto.runtime import mode_gate
    >>> mode_gate.current() in (None, mode_gate.ProcessMode.PROGRAM, mode_gate.ProcessMode.KERNEL)
    True
"""

from __future__ import annotations

import enum
import os
import threading
from dataclasses import dataclass

from pypto.ir import Contract, clear_executor_plans
from pypto.runtime.errors import PyptoRuntimeError

__all__ = [
    "ModeConflictError",
    "ProcessMode",
    "claim",
    "claim_kernel",
    "claim_program",
    "close",
    "current",
    "state",
]


class ProcessMode(enum.Enum):
    """What this process runs: PROGRAM work on PROGRAM-contract artifacts, or KERNEL work on
    KERNEL-contract artifacts (:class:`pypto.ir.contract.Contract`, whose names these are). The
    value is simpler's spelling of the same choice, ``simpler.Worker(execution_mode=...)``."""

    PROGRAM = Contract.PROGRAM.value.lower()
    KERNEL = Contract.KERNEL.value.lower()

    @property
    def contract(self) -> Contract:
        """The calling contract of the artifacts this mode runs."""
        return Contract[self.name]


class ModeConflictError(PyptoRuntimeError, RuntimeError):
    """This process already holds the other mode (or its gate was closed)."""

    def __init__(self, message: str, *, held: ProcessMode | None, requested: ProcessMode) -> None:
        super().__init__(message)
        self.held = held
        self.requested = requested


@dataclass(frozen=True)
class GateState:
    """A snapshot of the gate: the held mode, who claimed it, closed, inherited over fork."""

    mode: ProcessMode | None
    claimed_by: str | None
    closed: bool
    inherited_from: int | None  # parent pid when the claim crossed a fork


class _Gate:
    """The gate's mutable state; one instance per process (replaced fields after fork)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.mode: ProcessMode | None = None
        self.claimed_by: str | None = None
        self.closed = False
        self.inherited_from: int | None = None  # parent pid when a KERNEL claim crossed a fork


_gate = _Gate()

_ADVICE = (
    "a process runs either program-mode work (pypto.runtime.run, calling a @pl.jit function, "
    "a Worker made through pypto-runtime, a distributed run) or kernel-mode work (pypto.torch.init), never both; run the "
    "other kind in a fresh process started with multiprocessing's 'spawn' start method"
)


def _advice(held: ProcessMode | None) -> str:
    if held is ProcessMode.KERNEL:
        return (
            "kernel mode runs PyPTO kernels as torch operators: call the kernel through the operator "
            "that pypto.torch.register(fn, 'ns::name') returns instead of calling the @pl.jit function "
            "directly, or run program-mode work in a fresh process started with multiprocessing's "
            "'spawn' start method"
        )
    return _ADVICE


def current() -> ProcessMode | None:
    """The mode this process holds, or None when unclaimed."""
    return _gate.mode


def state() -> GateState:
    g = _gate
    with g.lock:
        return GateState(g.mode, g.claimed_by, g.closed, g.inherited_from)


def claim(mode: ProcessMode, *, what: str) -> None:
    """Claim ``mode`` for this process; idempotent for the mode already held.

    Args:
        mode: The mode the caller is about to use.
        what: The operation claiming it, named in errors (e.g. ``"run(add)"``).

    Raises:
        ModeConflictError: the process holds the other mode, or the gate is closed.
    """
    if not isinstance(mode, ProcessMode):
        raise TypeError(f"claim(mode): expected a ProcessMode, got {mode!r}")
    g = _gate
    with g.lock:
        if g.closed:
            raise ModeConflictError(
                f"{what}: cannot claim {mode.value} mode: this process's "
                f"{g.mode.value if g.mode else 'unclaimed'} mode was closed and closing is terminal; "
                f"{_ADVICE}",
                held=g.mode,
                requested=mode,
            )
        if g.mode is None:
            g.mode, g.claimed_by = mode, what
            return
        if g.mode is mode:
            return
        origin = f" inherited from parent process {g.inherited_from}" if g.inherited_from is not None else ""
        raise ModeConflictError(
            f"{what}: cannot enter {mode.value} mode: this process is in {g.mode.value} mode"
            f"{origin} (claimed by {g.claimed_by}); {_advice(g.mode)}",
            held=g.mode,
            requested=mode,
        )


def program_held() -> bool:
    """Whether this process holds PROGRAM mode and the gate is open: a claim of it would pass
    without changing anything (read without the lock: a run that races close() is the
    caller's race either way)."""
    g = _gate
    return g.mode is ProcessMode.PROGRAM and not g.closed


def claim_program(what: str) -> None:
    """Claim PROGRAM mode (the program runner and direct Worker initialisation call this)."""
    claim(ProcessMode.PROGRAM, what=what)


def claim_kernel(what: str) -> None:
    """Claim KERNEL mode (kernel-session initialisation in pypto.torch calls this)."""
    claim(ProcessMode.KERNEL, what=what)


def close() -> None:
    """Close the gate for good: no mode can be claimed afterwards in this process."""
    with _gate.lock:
        _gate.closed = True
    clear_executor_plans()  # a repeat call must find the gate closed, as a first one does


def _reset_in_child() -> None:
    # Runs single-threaded in the child right after fork(): fresh lock, and the claim is
    # dropped unless it is KERNEL (never reset: the device context did not cross the fork).
    g = _gate
    g.lock = threading.Lock()
    if g.mode is ProcessMode.KERNEL:
        if g.inherited_from is None:
            g.inherited_from = os.getppid()
        return
    g.mode, g.claimed_by, g.closed, g.inherited_from = None, None, False, None


def _reset_for_tests() -> None:
    """Return the gate to unclaimed (tests only)."""
    g = _gate
    with g.lock:
        g.mode, g.claimed_by, g.closed, g.inherited_from = None, None, False, None
    clear_executor_plans()


os.register_at_fork(after_in_child=_reset_in_child)
