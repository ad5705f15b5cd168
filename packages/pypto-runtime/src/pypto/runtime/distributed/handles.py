"""What a ``DistributedWorker`` hands back for a dispatch in flight (:class:`DistributedRunHandle`,
from ``submit``) and for a registered program (:class:`DistributedRegistrationHandle`, from
``register``)."""

from __future__ import annotations

from concurrent.futures import Future
from typing import Any

from pypto.runtime.chip_worker import ProgramRegistration

__all__ = ["DistributedRegistrationHandle", "DistributedRunHandle"]


class DistributedRunHandle:
    """What :meth:`DistributedWorker.submit` returns: ``wait()``/``result()`` until the
    dispatch ends (raising its error, if any); ``done`` says whether it has ended."""

    def __init__(self, future: Future[None]) -> None:
        self._future = future

    @property
    def done(self) -> bool:
        return self._future.done()

    def result(self, timeout: float | None = None) -> None:
        """Wait (at most ``timeout`` seconds; None: until the end) and raise the dispatch's error.

        Raises:
            TimeoutError: the dispatch has not ended within ``timeout``.
        """
        if timeout is not None and (isinstance(timeout, bool) or not timeout >= 0):
            raise ValueError(
                f"DistributedRunHandle.result(timeout): expected seconds >= 0 or None, got {timeout!r}"
            )
        self._future.result(timeout)

    def wait(self, timeout: float | None = None) -> None:
        """The same as :meth:`result`."""
        self.result(timeout)


class DistributedRegistrationHandle(ProgramRegistration[Any]):
    """What :meth:`DistributedWorker.register` returns: ``handle(*args, config=None)`` is
    ``worker.run(compiled, *args, config=config)``; :meth:`unregister` refuses further calls."""

    def _program_name(self) -> str:
        return str(self._compiled.plan.name)

    def __call__(self, *args: Any, config: Any = None, **kwargs: Any) -> None:
        if self.closed:
            raise RuntimeError(
                f"{self._compiled.plan.name}(): this DistributedRegistrationHandle is closed (unregistered, "
                "or its DistributedWorker was closed); register the program on an open worker"
            )
        self._worker.run(self._compiled, *args, config=config, **kwargs)
