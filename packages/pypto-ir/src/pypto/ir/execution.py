"""The registration point through which a runtime executes ``@pl.jit`` calls.

pypto-ir cannot import the runtime (it sits below it), so calling a ``@pl.jit`` function goes
through an executor that the runtime installs, either explicitly with
``set_jit_executor(fn)`` or through the ``pypto.executors`` entry-point group (its first
entry, loaded on the first call when nothing was installed). An executor is called as
``executor(jit_function, args, kwargs)`` and returns what the call returns.

Repeat calls: the executor may keep a plan on a ``JITFunction`` (:func:`set_executor_plan`),
which the function's call then calls in its place, as ``plan(*args, **kwargs)``: the plan returns
what the call returns, and passes a call it does not take (keywords, arguments it was not made
for; nothing ran) to the function's ``general_call(*args, **kwargs)``, which goes to the
executor as any first call does. Installing another executor drops every function's plan, and
so does :func:`clear_executor_plans` (the runtime calls it when what its plans were made for
changes). While any thread traces a ``@pl.jit.host`` body (:func:`suspend_executor_plans`),
there are no plans: a launch inside the body must reach the trace through ``general_call``.

``JITFunction.compile(*args)`` goes through a second slot the same way: the compiler the runtime
installs with ``set_jit_compiler(fn)``, called as ``compiler(jit_function, args, kwargs)``, returns
the runtime's compiled program (the entry point above installs both when it loads the runtime).
"""

from __future__ import annotations

import contextlib
import os
import threading
import weakref
from collections.abc import Callable
from importlib import metadata
from typing import Any, Generic, TypeVar

__all__ = [
    "DECLINED",
    "ENTRY_POINT_GROUP",
    "HostCompiler",
    "JitCompiler",
    "JitExecutor",
    "NoExecutorError",
    "clear_executor_plans",
    "get_host_compiler",
    "get_jit_compiler",
    "get_jit_executor",
    "resume_executor_plans",
    "set_executor_plan",
    "set_host_compiler",
    "set_jit_compiler",
    "set_jit_executor",
    "suspend_executor_plans",
]

ENTRY_POINT_GROUP = "pypto.executors"

JitExecutor = Callable[[Any, tuple[Any, ...], dict[str, Any]], Any]
JitCompiler = Callable[[Any, tuple[Any, ...], dict[str, Any]], Any]

_lock = threading.Lock()
_executor: JitExecutor | None = None

DECLINED: Any = object()
"""What a native plan (the runtime's ``simpler.BoundCall``) returns for a call it does not take."""

# the JITFunctions that hold an executor plan (set_executor_plan)
_planned: weakref.WeakSet[Any] = weakref.WeakSet()
# how many threads are tracing a @pl.jit.host body (suspend_executor_plans): while not 0, no plans
_suspended = 0


class NoExecutorError(RuntimeError):
    """A ``@pl.jit`` function was called but no runtime is installed to execute it."""


def set_jit_executor(executor: JitExecutor | None) -> JitExecutor | None:
    """Install the executor for ``@pl.jit`` calls (None uninstalls); returns the previous one."""
    global _executor
    if executor is not None and not callable(executor):
        raise TypeError(f"set_jit_executor(executor): expected a callable or None, got {executor!r}")
    with _lock:
        previous, _executor = _executor, executor
    if previous is not executor:
        clear_executor_plans()
    return previous


def _drop_plans_in_child() -> None:
    # Runs single-threaded in a forked child: another parent thread may have held the lock,
    # and a plan is bound to the parent's runtime state (its Worker threads did not fork).
    global _lock  # noqa: PLW0603
    _lock = threading.Lock()
    for fn in list(_planned):
        fn.executor_plan = None
    _planned.clear()


os.register_at_fork(after_in_child=_drop_plans_in_child)


def set_executor_plan(fn: Any, plan: Callable[..., Any] | None) -> None:
    """Keep ``plan`` on ``fn`` (its ``executor_plan``) for its repeat calls (None drops it), to be
    dropped with every other by :func:`clear_executor_plans`. A ``@pl.jit`` function calls it as
    the module's docstring says; the runtime keeps its own objects' plans here too. While a
    host body is traced (:func:`suspend_executor_plans`) no plan is kept."""
    with _lock:
        if plan is not None and _suspended:
            return
        fn.executor_plan = plan
        if plan is not None:
            _planned.add(fn)


def suspend_executor_plans() -> None:
    """Drop every plan and keep none until the matching :func:`resume_executor_plans`: a thread
    tracing a ``@pl.jit.host`` body suspends them, so that every ``@pl.jit`` call takes its
    general path, which records a launch of the body being traced."""
    global _suspended  # noqa: PLW0603
    with _lock:
        _suspended += 1
        for fn in list(_planned):
            fn.executor_plan = None
        _planned.clear()


def resume_executor_plans() -> None:
    """End one :func:`suspend_executor_plans`; plans are kept again when none is left."""
    global _suspended  # noqa: PLW0603
    with _lock:
        if _suspended == 0:
            raise RuntimeError("resume_executor_plans(): no suspend_executor_plans() to end")
        _suspended -= 1


def clear_executor_plans() -> None:
    """Drop every function's executor plan: their next calls go to the executor."""
    with _lock:
        for fn in list(_planned):
            fn.executor_plan = None
        _planned.clear()


def get_jit_executor() -> JitExecutor:
    """The installed executor, loading the ``pypto.executors`` entry point on first use."""
    global _executor  # noqa: PLW0603  (the one registration slot of this module)
    executor = _executor  # installed: read without the lock (a reference read is atomic)
    if executor is not None:
        return executor
    with _lock:
        if _executor is not None:
            return _executor
        eps = sorted(metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda ep: ep.name)
    for ep in eps:
        loaded = ep.load()
        if callable(loaded):
            with _lock:
                if _executor is None:
                    _executor = loaded
                return _executor
    raise NoExecutorError(
        "calling a @pl.jit function runs it on a device, which needs a runtime: install pypto-runtime "
        "(pip install pypto-runtime) and import pypto.runtime, or register an executor with "
        "pypto.ir.execution.set_jit_executor(fn). To only compile, use fn.lower(*args) or fn.specialize(*args)."
    )


_Fn = TypeVar("_Fn")


class _Installed(Generic[_Fn]):
    """One callable the runtime installs (a compiler), read and replaced under the module lock."""

    def __init__(self, setter: str) -> None:
        self.setter = setter
        self.value: _Fn | None = None

    def set(self, fn: _Fn | None) -> _Fn | None:
        if fn is not None and not callable(fn):
            raise TypeError(f"{self.setter}(compiler): expected a callable or None, got {fn!r}")
        with _lock:
            previous, self.value = self.value, fn
        return previous

    def get(self) -> _Fn | None:
        """The installed callable; when none is, the runtime is loaded through the executor entry
        point (loading it installs its compilers) and asked again: None if it still is not."""
        with _lock:
            if self.value is not None:
                return self.value
        with contextlib.suppress(NoExecutorError):
            get_jit_executor()
        with _lock:
            return self.value


_compiler: _Installed[JitCompiler] = _Installed("set_jit_compiler")


def set_jit_compiler(compiler: JitCompiler | None) -> JitCompiler | None:
    """Install the compiler behind ``JITFunction.compile`` (None uninstalls); returns the previous one."""
    return _compiler.set(compiler)


def get_jit_compiler() -> JitCompiler:
    """The installed compiler; when none is, the runtime is loaded through the executor entry
    point (loading it installs its compiler)."""
    compiler = _compiler.get()
    if compiler is not None:
        return compiler
    raise NoExecutorError(
        "JITFunction.compile produces a runtime's compiled program, which needs a runtime: install "
        "pypto-runtime and import pypto.runtime, or register one with "
        "pypto.ir.execution.set_jit_compiler(fn). To only build the IR, use fn.lower(*args) or fn.specialize(*args)."
    )


# -- @pl.jit.host --------------------------------------------------------------------------

HostCompiler = Callable[[Any, tuple[Any, ...], dict[str, Any], Any], Any]
_host_compiler: _Installed[HostCompiler] = _Installed("set_host_compiler")


def set_host_compiler(compiler: HostCompiler | None) -> HostCompiler | None:
    """Install what compiles a ``@pl.jit.host`` function (None uninstalls); returns the previous one.

    It is called as ``compiler(host_function, args, kwargs, config)`` and returns the compiled
    distributed program; ``host_function`` is a ``@pl.jit.host`` function, or a ``Program`` with a
    host orchestrator (``args``/``kwargs`` empty, ``config`` with ``platform``, ``runtime`` and
    ``distributed_config``).
    """
    return _host_compiler.set(compiler)


def get_host_compiler() -> HostCompiler:
    """The installed host compiler (pypto.runtime installs one when imported); when none is,
    the runtime is loaded through the executor entry point (loading it installs its compiler)."""
    installed = _host_compiler.get()
    if installed is not None:
        return installed
    raise NoExecutorError(
        "compiling a @pl.jit.host function needs a runtime: import pypto.runtime (pip install pypto-runtime)"
    )
