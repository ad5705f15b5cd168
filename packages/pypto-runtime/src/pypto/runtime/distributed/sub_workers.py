"""Sub-worker processes: where the SubWorker calls of a ``@pl.program`` host orchestrator run.

A prepared worker whose programs call SubWorkers starts ``max(num_sub_workers, number of
SubWorkers its programs declare)`` processes: a ``concurrent.futures.ProcessPoolExecutor`` with
the ``spawn`` start method. Each process receives every SubWorker implementation once, when it
starts (a ``prepare(callbacks=)`` callable, else the SubWorker's Python body); a call then names
the SubWorker and its arguments. A tensor argument travels as the name of the shared-memory
segment that holds it (the worker's I/O segment or a resident tensor's), its byte offset,
shape, strides and dtype: the process maps the segment (``shm.attach``, without taking
ownership) and the call reads and writes the dispatch's memory in place. Memory in no segment
(host tensors under torchrun's launcher, which are private arrays) is copied into a scratch
segment of the pool around the calls.

A runtime-bound callback is called as ``fn(args)`` (a :class:`ContinuousTensor` per tensor, the
value per scalar); a SubWorker's Python body is called with its parameters (a torch tensor
viewing the memory per tensor, through ``_tensor_from_continuous``, the value per scalar).

Functions that a fresh interpreter can import by name are sent by reference; others (a
``__main__`` or local function, a closure, a SubWorker body inside a ``@pl.program`` class) are
sent by value: their code object (``marshal``), their defaults and closure cells, and the
globals their code names (a module by its name, anything else pickled). Values are pickled by
``multiprocessing``'s pickler, so a torch tensor in shared memory (``share_memory_()``) reaches
the process as the same memory.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import marshal
import multiprocessing
import multiprocessing.connection
import os
import pickle
import signal
import sys
import threading
import time
import types
import weakref
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from pypto.ir import DataType, ParamDirection
from pypto.runtime.distributed import shm
from pypto.runtime.distributed.errors import DistributedTimeoutError, SubWorkerError
from pypto.runtime.distributed.plan import DistributedPlan, PlannedCallback

__all__ = ["SubWorkerPool", "bind_sub_workers", "call_groups", "callback_writes"]


# -- sending functions to a process ----------------------------------------------------------


def _importable(module: str) -> bool:
    """Whether a fresh interpreter with this ``sys.path`` finds ``module`` under the same file."""
    mod = sys.modules.get(module)
    target = getattr(mod, "__file__", None)
    if module == "__main__" or target is None:
        return False
    path: Any = None
    spec = None
    parts = module.split(".")
    for i in range(len(parts)):
        name = ".".join(parts[: i + 1])
        spec = None
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            if find is None:
                continue
            with contextlib.suppress(Exception):
                spec = find(name, path)
            if spec is not None:
                break
        if spec is None:
            return False
        path = spec.submodule_search_locations
    if spec is None or spec.origin is None:
        return False
    try:
        return os.path.samefile(spec.origin, target)
    except OSError:  # an origin that is no file
        return False


def _by_reference(fn: Callable[..., Any]) -> bool:
    qualname = getattr(fn, "__qualname__", "")
    module = getattr(fn, "__module__", None)
    if not module or "<locals>" in qualname or not _importable(module):
        return False
    obj: Any = sys.modules[module]
    for part in qualname.split("."):
        obj = getattr(obj, part, None)
    return obj is fn


class _ModuleRef:
    """A module, sent by name."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __reduce__(self) -> tuple[Any, ...]:
        return (importlib.import_module, (self.name,))


def _code_names(code: types.CodeType) -> set[str]:
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _code_names(const)
    return names


def _portable_value(value: Any) -> Any:
    if isinstance(value, types.ModuleType):
        return _ModuleRef(value.__name__)
    if isinstance(value, types.FunctionType) and not _by_reference(value):
        return _PortableFunction(value)
    return value


def _rebuild_function(state: dict[str, Any]) -> types.FunctionType:
    namespace = {"__builtins__": __builtins__, "__name__": state["module"], **state["globals"]}
    cells = state["cells"]
    closure = tuple(types.CellType(v) for v in cells) if cells is not None else None
    fn = types.FunctionType(
        marshal.loads(state["code"]), namespace, state["name"], state["defaults"], closure
    )
    fn.__kwdefaults__ = state["kwdefaults"]
    fn.__qualname__ = state["qualname"]
    return fn


class _PortableFunction:
    """A Python function sent by value (see the module docstring)."""

    def __init__(self, fn: types.FunctionType) -> None:
        self.fn = fn

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)

    def __reduce__(self) -> tuple[Any, ...]:
        fn = self.fn
        code = fn.__code__
        names = _code_names(code)
        globals_ = {k: _portable_value(v) for k, v in fn.__globals__.items() if k in names}
        cells = (
            tuple(_portable_value(c.cell_contents) for c in fn.__closure__)
            if fn.__closure__ is not None
            else None
        )
        state = {
            "code": marshal.dumps(code),
            "name": fn.__name__,
            "qualname": fn.__qualname__,
            "module": fn.__module__,
            "globals": globals_,
            "defaults": tuple(_portable_value(d) for d in fn.__defaults__) if fn.__defaults__ else None,
            "kwdefaults": (
                {k: _portable_value(v) for k, v in fn.__kwdefaults__.items()} if fn.__kwdefaults__ else None
            ),
            "cells": cells,
        }
        return (_rebuild_function, (state,))


def _portable(fn: Callable[..., Any]) -> Any:
    if isinstance(fn, functools.partial):
        return functools.partial(_portable(fn.func), *fn.args, **fn.keywords)
    if isinstance(fn, types.FunctionType) and not _by_reference(fn):
        return _PortableFunction(fn)
    return fn


# -- the sub-worker process side -------------------------------------------------------------

_FUNCTIONS: dict[str, tuple[Callable[..., Any], bool]] = {}  # name -> (function, is a body)
_MAPPED: dict[str, Any] = {}  # segment name -> mmap
# this process's cells of the pool's status segment: [pid, token of the call it runs (0: none)]
_STATUS: list[Any] = []


def _orphaned(parent: Any) -> None:
    multiprocessing.connection.wait([parent.sentinel])
    os._exit(70)  # the host process is gone (killed): nobody will stop this one


def _init(functions: dict[str, tuple[Any, bool]], status: str, slots: Any) -> None:
    # a Ctrl-C in the terminal reaches the whole process group: the host process handles it
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    parent = multiprocessing.parent_process()
    if parent is not None:
        threading.Thread(target=_orphaned, args=(parent,), name="pypto-subworker-parent", daemon=True).start()
    _FUNCTIONS.update(functions)
    slot = slots.get()
    cells = memoryview(shm.attach(status)).cast("q")[2 * slot : 2 * slot + 2]
    cells[0] = os.getpid()
    _STATUS[:] = [cells]


def _pid() -> int:
    return os.getpid()


def _segment_view(segment: str, offset: int, nbytes: int, keep: set[str]) -> memoryview:
    mapping = _MAPPED.get(segment)
    if mapping is None:
        for name in [n for n in _MAPPED if n not in keep]:  # segments of earlier dispatches
            with contextlib.suppress(BufferError):  # a view a callback kept holds it mapped
                _MAPPED.pop(name).close()
        mapping = _MAPPED[segment] = shm.attach(segment)
    return memoryview(mapping)[offset : offset + nbytes]


def _call(name: str, args: list[tuple[Any, ...]], token: int) -> None:
    cells = _STATUS[0]
    cells[1] = token  # read by the host process if this process dies during the call
    try:
        _run(name, args)
    finally:
        cells[1] = 0


def _run(name: str, args: list[tuple[Any, ...]]) -> None:
    from pypto.runtime.distributed.worker import ContinuousTensor

    fn, is_body = _FUNCTIONS[name]
    keep = {a[1] for a in args if a[0] == "tensor"}
    values: list[Any] = []
    for a in args:
        if a[0] == "tensor":
            _, segment, offset, nbytes, shape, strides, dtype = a
            view = _segment_view(segment, offset, nbytes, keep)
            values.append(ContinuousTensor(view, tuple(shape), tuple(strides), DataType(dtype)))
        else:
            values.append(a[1])
    if not is_body:
        fn(values)
        return
    from pypto.runtime.distributed_runner import _tensor_from_continuous

    fn(*(_tensor_from_continuous(v) if isinstance(v, ContinuousTensor) else v for v in values))


# -- the host side ---------------------------------------------------------------------------


_RELOADED = object()  # a SubWorker a reloaded program (from_dir) calls: its body is not held


def bind_sub_workers(
    plans: Sequence[DistributedPlan], compiled: Sequence[Any], callbacks: dict[str, Any] | None
) -> tuple[dict[str, tuple[Callable[..., Any], bool]], int]:
    """The SubWorker implementations of a worker's programs (``"<program index>/<name>"`` ->
    (function, whether it is a Python body)) and how many sub-worker processes to start (0: no
    program calls a SubWorker).

    ``callbacks`` (``prepare(callbacks=)``) binds every runtime-bound SubWorker and may replace
    a Python body, by name in every program that declares it; each is called as ``fn(args)``.
    """
    import inspect

    given = dict(callbacks or {})
    declared: list[dict[str, Any]] = []  # per program: name -> HostLevelFunction, None (`...`)
    for plan, item in zip(plans, compiled, strict=True):
        subs: dict[str, Any] = dict.fromkeys((c.name for c in plan.callbacks), _RELOADED)
        subs.update(dict.fromkeys(plan.required_callbacks))
        for name, fn in getattr(item, "sub_workers", {}).items():
            subs[name] = None if fn.requires_runtime_binding else fn
        declared.append(subs)
    names = sorted(set().union(*declared))
    for name, fn in given.items():
        if name not in names:
            raise ValueError(
                f"prepare(callbacks=...): {name!r} is not a SubWorker of these programs (theirs: "
                f"{', '.join(names) or 'none'}); callbacks bind SubWorkers by name, and names that are "
                "not sub-workers are refused"
            )
        if not callable(fn):
            raise TypeError(f"prepare(callbacks=...): {name!r}: expected a callable, got {type(fn).__name__}")
        try:
            sig = inspect.signature(fn)
        except (TypeError, ValueError):  # a callable without a signature: called as it is
            continue
        try:
            sig.bind(None)
        except TypeError:
            raise TypeError(
                f"prepare(callbacks=...): {name!r}: expected a callable taking one argument, "
                f"fn(args); got the signature {sig}"
            ) from None
    for plan, subs in zip(plans, declared, strict=True):
        missing = sorted(n for n, body in subs.items() if body is None and n not in given)
        if missing:
            raise ValueError(
                f"prepare(callbacks=...): the SubWorker(s) {', '.join(map(repr, missing))} of program "
                f"{plan.name!r} have a `...` body and are bound at runtime; pass "
                f"callbacks={{{missing[0]!r}: fn, ...}} (fn(args) receives the call's arguments)"
            )
    functions: dict[str, tuple[Callable[..., Any], bool]] = {}
    for k, (plan, subs) in enumerate(zip(plans, declared, strict=True)):
        for cb in plan.callbacks:
            key = f"{k}/{cb.name}"
            if cb.name in given:
                functions[key] = (given[cb.name], False)
                continue
            body = subs[cb.name]
            if body is _RELOADED:
                raise ValueError(
                    f"prepare(callbacks=...): program {plan.name!r} calls SubWorker {cb.name!r}, whose "
                    "Python body this compiled program does not hold (reloaded from its output_dir); "
                    f"compile the @pl.program again or pass callbacks={{{cb.name!r}: fn}}"
                )
            functions[key] = (functools.partial(body.fn, None) if body.is_method else body.fn, True)
    if not functions:
        return functions, 0
    wanted = max(getattr(getattr(c, "distributed_config", None), "num_sub_workers", 0) for c in compiled)
    return functions, max(wanted, *(len(subs) for subs in declared))


def callback_writes(fn: Any) -> tuple[bool, ...]:
    """Per parameter of a host-level SubWorker (``HostLevelFunction``): whether it is annotated
    ``pl.Out``/``pl.InOut`` (the call writes it)."""
    import inspect

    from pypto.language.interface import typing as lt

    params = list(inspect.signature(fn.fn).parameters.values())[1 if fn.is_method else 0 :]
    writes = []
    for p in params:
        annotation = p.annotation
        if isinstance(annotation, str):
            try:
                annotation = eval(annotation, getattr(fn.fn, "__globals__", {}))
            except Exception:  # an annotation this module cannot evaluate: the call may write
                writes.append(True)
                continue
        writes.append(
            isinstance(annotation, lt.DirectionAnnotation) and ParamDirection(annotation.direction).writes
        )
    return tuple(writes)


def call_groups(plan: DistributedPlan) -> list[tuple[int, list[int]]]:
    """``(phase, callbacks)`` in order: the launches of ``phase`` run, then these callbacks (the
    calls with no launch between them, which may run at the same time)."""
    groups: list[tuple[int, list[int]]] = []
    phases = {d.phase for d in plan.dispatches}
    for phase in range(len(plan.callbacks) + 1):
        calls = [phase] if phase < len(plan.callbacks) else []
        if groups and phase not in phases:
            groups[-1][1].extend(calls)
        else:
            groups.append((phase, calls))
    return groups


def _address(array: Any) -> int:
    return int(array.__array_interface__["data"][0])


def _span(view: Any) -> int:
    """Bytes from ``view``'s first element to the end of its last."""
    if not view.size:
        return 0
    item = int(view.itemsize)
    return item * (
        1 + sum((int(d) - 1) * (int(s) // item) for d, s in zip(view.shape, view.strides, strict=True))
    )


class SubWorkerPool:
    """The sub-worker processes of one :class:`DistributedWorker` (see the module docstring)."""

    def __init__(self, functions: dict[str, tuple[Callable[..., Any], bool]], count: int) -> None:
        """``functions``: as :func:`bind_sub_workers` returns them (``"<program>/<name>"`` ->
        (function, whether it is a Python body))."""
        self._functions = {name: (_portable(fn), body) for name, (fn, body) in functions.items()}
        self.count = count
        self._executor: ProcessPoolExecutor | None = None
        self._processes: list[Any] = []
        self._scratch: list[shm.Segment] = []  # at most one: private memory passes through it
        self._status: list[shm.Segment] = []  # one while the processes run: see _STATUS
        self._tokens: dict[int, str] = {}  # token -> SubWorker of a call of the current run
        self._finalizer = weakref.finalize(self, _stop, None, self._processes, self._scratch, self._status)

    @property
    def pids(self) -> tuple[int, ...]:
        """The process ids of the running sub-worker processes."""
        return tuple(p.pid for p in self._processes)

    def start(self, timeout: float) -> None:
        """Start the processes (again, after a failure stopped them) and wait until each is up."""
        if self._executor is not None:
            return
        context = multiprocessing.get_context("spawn")
        self._status[:] = [shm.create(16 * self.count)]
        self._status[0].buf[:] = bytes(16 * self.count)
        slots = context.SimpleQueue()
        for slot in range(self.count):
            slots.put(slot)
        executor = ProcessPoolExecutor(
            max_workers=self.count,
            mp_context=context,
            initializer=_init,
            initargs=(self._functions, self._status[0].name, slots),
        )
        self._executor = executor
        self._finalizer.detach()
        self._finalizer = weakref.finalize(
            self, _stop, executor, self._processes, self._scratch, self._status
        )
        try:
            try:
                pings = [executor.submit(_pid) for _ in range(self.count)]
            finally:
                # the engine's own record of its processes: kept to name one that dies and to stop them
                self._processes[:] = list(getattr(executor, "_processes", {}).values())
            deadline = time.monotonic() + timeout
            for f in pings:
                f.result(max(0.0, deadline - time.monotonic()))
        except (pickle.PicklingError, TypeError, AttributeError) as e:  # sending the functions
            self.close()
            raise self._unsendable(e) from e
        except BrokenProcessPool as e:
            self.close()
            raise SubWorkerError(
                "the sub-worker processes failed to start: a SubWorker implementation could not be "
                f"loaded there ({e.__cause__ or e}; their stderr says why). Each of them imports the "
                "host script again, as a `spawn` process does: a script prepares its programs under "
                '`if __name__ == "__main__":`',
                None,
            ) from e
        except TimeoutError:
            self.close()
            raise DistributedTimeoutError(
                f"the {self.count} sub-worker processes did not start within {timeout} s"
            ) from None
        except BaseException:
            self.close()
            raise

    def _unsendable(self, error: BaseException) -> BaseException:
        """The error of a SubWorker implementation that cannot be pickled (``error``, raised
        while the processes started, when none can be named)."""
        for key, (fn, _) in self._functions.items():
            problem = _pickling_error(fn)
            if problem is not None:
                return TypeError(
                    f"prepare(): SubWorker {key.split('/', 1)[-1]!r}: its implementation cannot be sent to a sub-worker "
                    f"process ({type(problem).__name__}: {problem}); a function goes by value with its "
                    "closure cells and the globals it names, each of which must pickle"
                )
        return error

    def close(self) -> None:
        """Stop the processes (SIGTERM, then SIGKILL) and remove the scratch segment."""
        self._executor = None
        self._finalizer()
        self._finalizer = weakref.finalize(self, _stop, None, self._processes, self._scratch, self._status)

    def run(
        self,
        plan: DistributedPlan,
        indices: Sequence[int],
        views: dict[int, Any],
        *,
        program: int = 0,
        segments: Sequence[shm.Segment],
        what: str,
        timeout: float,
    ) -> None:
        """Run the callbacks ``indices`` of ``plan``: in order, except that a call whose tensors
        overlap no earlier pending call's where either writes starts without waiting for it."""
        import numpy

        self.start(timeout)
        self._tokens.clear()
        executor = self._executor
        assert executor is not None
        bases = []
        for s in segments:
            whole = numpy.frombuffer(s.buf, dtype=numpy.uint8)
            bases.append((s.name, _address(whole), s.size))
            del whole
        # host tensors in no segment (parameter -> array), copied through the scratch segment
        private: dict[int, Any] = {}
        calls = [self._arguments(plan, plan.callbacks[i], views, bases, private) for i in indices]
        scratch = self._copy_in(private) if private else None
        pending: list[tuple[PlannedCallback, list[tuple[str, int, int, bool]], Future[None]]] = []
        deadline = time.monotonic() + timeout
        first_error: BaseException | None = None
        try:
            for i, (args, footprint) in zip(indices, calls, strict=True):
                cb = plan.callbacks[i]
                wire = (
                    [
                        ("tensor", scratch[0], scratch[1][a[1]] + a[2], *a[3:]) if a[0] == "private" else a
                        for a in args
                    ]
                    if scratch is not None
                    else args
                )
                for other, other_fp, future in pending:
                    if _conflict(footprint, other_fp):
                        self._wait(other, future, what, deadline, timeout)
                token = len(self._tokens) + 1
                self._tokens[token] = cb.name
                pending.append((cb, footprint, executor.submit(_call, f"{program}/{cb.name}", wire, token)))
            for cb, _, future in pending:
                # a call's error waits until the other calls end, before the dispatch does
                first_error = first_error or self._failure(cb, future, what, deadline, timeout)
        except BaseException as e:
            first_error = first_error or e
        if scratch is not None and self._scratch:
            for i, array in private.items():
                numpy.copyto(array, self._view_of(array, scratch[1][i]))
        if first_error is not None:
            raise first_error

    def _view_of(self, like: Any, offset: int) -> Any:
        import numpy

        return numpy.ndarray(like.shape, dtype=like.dtype, buffer=self._scratch[0].buf, offset=offset)

    def _copy_in(self, private: dict[int, Any]) -> tuple[str, dict[int, int]]:
        """Copy ``private`` into the scratch segment (grown as needed): its name and the offset
        of each array there."""
        import numpy

        offsets, size = {}, 0
        for i, array in private.items():
            offsets[i] = size
            size += -(-array.nbytes // 64) * 64
        if not self._scratch or self._scratch[0].size < size:
            for s in self._scratch:
                s.release()
            self._scratch[:] = [shm.create(size)]
        for i, array in private.items():
            numpy.copyto(self._view_of(array, offsets[i]), array)
        return self._scratch[0].name, offsets

    def _failure(
        self, cb: PlannedCallback, future: Future[None], what: str, deadline: float, timeout: float
    ) -> SubWorkerError | None:
        try:
            self._wait(cb, future, what, deadline, timeout)
        except SubWorkerError as e:
            return e
        return None

    def _wait(
        self, cb: PlannedCallback, future: Future[None], what: str, deadline: float, timeout: float
    ) -> None:
        try:
            future.result(max(0.0, deadline - time.monotonic()))
        except BrokenProcessPool:
            name, died = self._casualty(cb.name)
            self.close()
            raise SubWorkerError(
                f"{what}: SubWorker {name!r}: its sub-worker process died while it ran ({died}); the "
                "sub-worker processes start again at the next dispatch",
                name,
            ) from None
        except TimeoutError:
            self.close()
            raise DistributedTimeoutError(
                f"{what}: SubWorker {cb.name!r} did not finish within {timeout} s; the sub-worker "
                "processes were stopped (they start again at the next dispatch)"
            ) from None
        except Exception as e:
            raise SubWorkerError(
                f"{what}: SubWorker {cb.name!r} raised {type(e).__name__}: {e}", cb.name
            ) from e

    def _casualty(self, waited: str) -> tuple[str, str]:
        """The SubWorker whose process died (``waited``, the call waited for, if none is
        recorded) and how that process ended."""
        # the engine reaps the processes on its own thread: wait until it has (or one other
        # than those it terminates has ended)
        deadline = time.monotonic() + 5.0
        while time.monotonic() < deadline and not any(
            p.exitcode not in (None, -signal.SIGTERM) for p in self._processes
        ):
            if all(p.exitcode is not None for p in self._processes):
                break
            time.sleep(0.01)
        ended = [p for p in self._processes if p.exitcode is not None and self._status]
        # the engine terminates (SIGTERM) the other processes once one died: that one first
        for p in sorted(ended, key=lambda p: p.exitcode == -signal.SIGTERM):
            cells = self._status[0].buf.cast("q")
            try:
                for slot in range(self.count):
                    if cells[2 * slot] == p.pid and cells[2 * slot + 1] in self._tokens:
                        return self._tokens[cells[2 * slot + 1]], _exit_of(p)
            finally:
                cells.release()
            return waited, _exit_of(p)
        return waited, "no exit status"

    @staticmethod
    def _arguments(
        plan: DistributedPlan,
        cb: PlannedCallback,
        views: dict[int, Any],
        bases: list[tuple[str, int, int]],
        private: dict[int, Any],
    ) -> tuple[list[tuple[Any, ...]], list[tuple[str, int, int, bool]]]:
        """The call's arguments as sent (a tensor in a segment: ``("tensor", segment, offset,
        nbytes, shape, strides, dtype)``; one in a private C-contiguous array, added to
        ``private``: ``("private", parameter, offset in the array, ...)``) and its footprint
        (memory, start, end, whether it writes)."""
        args: list[tuple[Any, ...]] = []
        footprint: list[tuple[str, int, int, bool]] = []
        writes = cb.writes or (True,) * len(cb.args)
        for a, w in zip(cb.args, writes, strict=True):
            if a[0] != "host":
                args.append(("scalar", a[1]))
                continue
            view = views[a[1]]
            for index in a[2]:
                view = view[index]
            dtype = plan.params[a[1]].dtype
            # a byte array (host_bytes): its last axis is one element's bytes
            item = int(view.shape[-1])
            shape = tuple(int(d) for d in view.shape[:-1])
            start, nbytes = _address(view), _span(view)
            home = next(
                ((n, start - b) for n, b, size in bases if b <= start and start + nbytes <= b + size), None
            )
            strides = tuple(int(s) // item for s in view.strides[:-1])
            if home is None:
                array = views[a[1]]
                if not array.flags.c_contiguous:
                    raise RuntimeError(
                        f"SubWorker {cb.name}(): host tensor {plan.params[a[1]].name!r} lies in no "
                        "shared-memory segment and is not C-contiguous; it cannot pass through the "
                        "scratch segment"
                    )
                private[a[1]] = array
                args.append(("private", a[1], start - _address(array), nbytes, shape, strides, dtype))
                footprint.append(("private", start, start + nbytes, bool(w)))
            else:
                args.append(("tensor", home[0], home[1], nbytes, shape, strides, dtype))
                footprint.append((home[0], home[1], home[1] + nbytes, bool(w)))
        return args, footprint


def _pickling_error(obj: Any) -> Exception | None:
    try:
        pickle.dumps(obj)
    except Exception as e:  # any failure: the caller names what could not be sent
        return e
    return None


def _conflict(a: list[tuple[str, int, int, bool]], b: list[tuple[str, int, int, bool]]) -> bool:
    return any(
        sa == sb and s0 < e1 and s1 < e0 and (wa or wb) for sa, s0, e0, wa in a for sb, s1, e1, wb in b
    )


def _exit_of(process: Any) -> str:
    code = process.exitcode
    if code is not None and code < 0:
        with contextlib.suppress(ValueError):
            return f"pid {process.pid}: signal {signal.Signals(-code).name}"
    return f"pid {process.pid}: exit code {code}"


def _stop(executor: ProcessPoolExecutor | None, processes: list[Any], *owned: list[shm.Segment]) -> None:
    if executor is not None:
        _stop_processes(executor, processes)
    for segments in owned:
        for s in segments:
            s.release()
        segments.clear()


def _stop_processes(executor: ProcessPoolExecutor, processes: list[Any]) -> None:
    for p in processes:
        with contextlib.suppress(Exception):
            p.terminate()
    deadline = time.monotonic() + 5.0
    for p in processes:
        with contextlib.suppress(Exception):
            p.join(max(0.0, deadline - time.monotonic()))
            if p.exitcode is None:
                p.kill()
                p.join(5.0)
    processes.clear()
    executor.shutdown(wait=True, cancel_futures=True)
