"""CallConfig: per-run settings of the TMR runtime and its diagnostics."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from simpler import _native

__all__ = ["RING_COUNT", "CallConfig"]

# Bound from core/chip/chip.hpp: one ring per scope depth; deeper scopes share the last.
RING_COUNT: int = _native.RING_COUNT
_MAX_AICPU_THREADS: int = _native.MAX_AICPU_THREADS
_MAX_I31 = (1 << 31) - 1


def _rings(value: Any, name: str) -> tuple[int, ...]:
    """A scalar broadcasts to all four rings; a sequence gives one value per ring."""
    vals = (value,) * RING_COUNT if isinstance(value, int) or not hasattr(value, "__iter__") else tuple(value)
    if len(vals) != RING_COUNT:
        raise ValueError(
            f"CallConfig.{name}: expected one value or {RING_COUNT} (one per ring), got {len(vals)}"
        )
    for i, v in enumerate(vals):
        if isinstance(v, bool) or not isinstance(v, int):
            raise ValueError(f"CallConfig.{name}[{i}]: expected an int, got {v!r}")
    return vals


@dataclass
class CallConfig:
    """Settings of one run. Call :meth:`validate` (Worker.submit does) before anything runs.

    Args:
        aicpu_thread_num: AICPU threads of the run, 1..4: one orchestrator plus
            ``aicpu_thread_num - 1`` scheduler threads that dispatch its ready tasks and resolve
            its task completions (with 1, the orchestrator dispatches and the AICore threads
            resolve completions). Scheduler threads start on first use and spin briefly, then park.
        orchestrate_on_caller: where a run submitted while the Worker is idle (nothing queued,
            orchestrating or in flight) is orchestrated. True: on the calling thread, inside the
            call that submits it: one thread handoff fewer per run; the call returns once the
            orchestration has returned, including any wait of it on its own tasks (a full task
            window, heap or dependency pool). False: on the AICPU orchestrator thread;
            ``submit`` only queues the run. None (default): True for the calls that wait for the
            run anyway (:meth:`Worker.run`, a :class:`CallPlan` run), False for
            :meth:`Worker.submit`, which returns at once. The host_build_graph runtime always
            builds its graph on the calling thread.
        swimlane: write a Chrome trace-event JSON per run under ``output_prefix``.
        dep_graph: write the task dependency graph (JSON) per run under ``output_prefix``.
        output_prefix: directory for diagnostics; required when either switch is on.
        task_window: tasks in flight per ring (power of two in [4, 2^31-1]); int or 4 values.
        heap: bytes of intermediate-tensor heap per ring (>= 1024); int or 4 values.
        dep_pool: dependency entries per ring ([4, 2^31-1]); int or 4 values.
        workspace_budget_bytes: cap on intermediate tensors of a run (>= 1024; None = no cap);
            borrowed storage is not counted.

    Example::

        cfg = CallConfig(task_window=16, heap=1 << 20, dep_pool=64)
        cfg.validate()
    """

    aicpu_thread_num: int = 1
    orchestrate_on_caller: bool | None = None
    swimlane: bool = False
    dep_graph: bool = False
    output_prefix: str | None = None
    task_window: Any = 256
    heap: Any = 16 << 20
    dep_pool: Any = 1024
    workspace_budget_bytes: int | None = None

    def rings(self) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
        """(task_window, heap, dep_pool), each with one value per ring."""
        return (
            _rings(self.task_window, "task_window"),
            _rings(self.heap, "heap"),
            _rings(self.dep_pool, "dep_pool"),
        )

    def validate(self) -> CallConfig:
        """Raise ValueError naming the first invalid field, its allowed range and its value."""
        n = self.aicpu_thread_num
        if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= _MAX_AICPU_THREADS:
            raise ValueError(
                f"CallConfig.aicpu_thread_num: expected an int in [1, {_MAX_AICPU_THREADS}], got {n!r}"
            )
        windows, heaps, pools = self.rings()
        for i, w in enumerate(windows):
            if not 4 <= w <= _MAX_I31 or w & (w - 1):
                raise ValueError(
                    f"CallConfig.task_window[{i}]: expected a power of two in [4, 2^31-1], got {w}"
                )
        for i, h in enumerate(heaps):
            if h < 1024 or h >= 1 << 64:
                raise ValueError(f"CallConfig.heap[{i}]: expected at least 1024 bytes, got {h}")
        for i, p in enumerate(pools):
            if not 4 <= p <= _MAX_I31:
                raise ValueError(f"CallConfig.dep_pool[{i}]: expected a value in [4, 2^31-1], got {p}")
        b = self.workspace_budget_bytes
        if b is not None and (isinstance(b, bool) or not isinstance(b, int) or not 1024 <= b < 1 << 64):
            raise ValueError(f"CallConfig.workspace_budget_bytes: expected None or an int >= 1024, got {b!r}")
        o = self.orchestrate_on_caller
        if o is not None and not isinstance(o, bool):
            raise ValueError(f"CallConfig.orchestrate_on_caller: expected None or a bool, got {o!r}")
        for name in ("swimlane", "dep_graph"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"CallConfig.{name}: expected a bool, got {getattr(self, name)!r}")
        if (self.swimlane or self.dep_graph) and not self.output_prefix:
            on = "swimlane" if self.swimlane else "dep_graph"
            raise ValueError(
                f"CallConfig.output_prefix: {on} output needs an output_prefix, got {self.output_prefix!r}"
            )
        return self
