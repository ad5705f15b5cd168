"""The process-group data path: ranks that do not share memory reach each other's windows
through torch.distributed (gloo).

On this path each rank's windows are private memory of its process. A kernel's cross-rank
operation is a request to its rank's host process (``simpler.comm.set_context(host=...)``,
``CommPath.Host``): this module's :meth:`GlooDataPath.handle`, called on the kernel's thread.
Kernels reach this rank's own window directly (a request naming this rank is applied here). A
request to peer ``p`` is carried to ``p`` over two gloo process groups of their own
(``requests``, ``replies``), separate from the control group the engine uses:

- each rank runs one service thread that receives request headers from any source on
  ``requests`` (tag 0: op, window, dtype, run count, bytes, value, and the byte run when there is
  only one), then, when there is one, that sender's payload (tag 1: the runs, then the bytes of a
  write), applies the request to its own window (``simpler.comm.apply_request``: each element of
  an atomic add and each notify is one atomic operation, the same this rank's own kernels use on
  that memory), and answers on ``replies`` with one message (status and length, then a read's
  bytes), followed by the error text when it failed. A notify or a one-run read is thus two messages, a write three;
- a requester holds its rank's request lock from sending the header until the reply is in, so
  the requests of one rank are carried one at a time, in the order its kernels make them: a put
  followed by a notify reaches the peer in that order (per-peer FIFO), and each returns only once
  the peer applied it.

``wait`` never comes here: it reads this rank's own cell, which the service thread updates when a
peer's notify arrives, and stays bounded by the comm context's timeout. This module and
``_engine`` are the only ones of pypto.runtime that import torch.
"""

from __future__ import annotations

import ctypes
import os
import sys
import threading
import traceback
from typing import Any

__all__ = ["GlooDataPath"]

# request header: op, window, dtype, run_count, nbytes, value, and the run when there is one
_HEADER = 8
_STOP = -1
_TAG_HEADER, _TAG_PAYLOAD = 0, 1


class GlooDataPath:
    """Rank ``rank``'s side of the process-group data path over ``windows`` (this rank's own
    window of each window buffer, as writable buffers)."""

    def __init__(self, rank: int, world_size: int, windows: list[Any]) -> None:
        import torch.distributed as dist

        self.rank = rank
        self.world_size = world_size
        self._window_lock = threading.Lock()  # this rank's windows: the service and local requests
        self._windows: list[Any] = []
        self.use_windows(windows)
        self._request_lock = threading.Lock()  # one outstanding request of this rank at a time
        # every rank creates both groups, in the same order (torch.distributed's contract)
        self._requests = dist.new_group(backend="gloo")
        self._replies = dist.new_group(backend="gloo")
        self._service: threading.Thread | None = None
        if world_size > 1:
            self._service = threading.Thread(target=self._serve, name=f"pypto-rank{rank}-gloo", daemon=True)
            self._service.start()

    def use_windows(self, windows: list[Any]) -> None:
        """Serve ``windows`` from now on (a worker's programs each have their own window buffers;
        every rank switches before a dispatch's kernels start, behind the control barrier)."""
        import torch

        views = [
            torch.frombuffer(w, dtype=torch.uint8) if len(w) else torch.empty(0, dtype=torch.uint8)
            for w in windows
        ]
        with self._window_lock:
            self._windows = views

    # ---- applying a request to this rank's windows ---------------------------------------------

    def _apply(self, op: int, window: int, dtype: int, runs: Any, data: Any, value: int) -> None:  # noqa: PLR0917
        """Apply one request to this rank's ``window``: ``runs`` an ``(n, 2)`` int64 array of byte
        ranges, ``data`` their bytes (filled by a read). The atomics are the ones this rank's own
        kernels use on the same memory (``simpler.comm.apply_request``)."""
        from simpler.comm import HostOp, apply_request

        if not 0 <= window < len(self._windows):
            raise ValueError(
                f"window {window} outside rank {self.rank}'s {len(self._windows)} window buffers"
            )
        try:
            with self._window_lock:  # the window stays this dispatch's while the request runs
                apply_request(HostOp(op), self._windows[window], runs, data, dtype=dtype, value=value)
        except ValueError as exc:
            raise ValueError(f"rank {self.rank}'s window {window}: {exc}") from None

    # ---- the kernel's side ---------------------------------------------------------------------

    def handle(  # noqa: PLR0917 - simpler.comm calls it with the request's fields positionally
        self,
        op: int,
        peer: int,
        window: int,
        dtype: int,
        runs_address: int,
        run_count: int,
        data_address: int,
        nbytes: int,
        value: int,
    ) -> None:
        """``simpler.comm`` host handler: apply one kernel request at ``peer`` and return."""
        import numpy
        import torch

        from simpler.comm import HostOp

        pairs = (
            numpy.ctypeslib.as_array((ctypes.c_uint64 * (2 * run_count)).from_address(runs_address))
            if run_count
            else numpy.zeros(0, dtype=numpy.uint64)
        )
        data = (
            torch.frombuffer((ctypes.c_uint8 * nbytes).from_address(data_address), dtype=torch.uint8)
            if nbytes
            else torch.empty(0, dtype=torch.uint8)
        )
        if peer == self.rank:
            self._apply(op, window, dtype, pairs.view(numpy.int64).reshape(run_count, 2), data, value)
            return
        import torch.distributed as dist

        sends_data = op in (HostOp.Write, HostOp.AtomicAdd)
        first = (int(pairs[0]), int(pairs[1])) if run_count == 1 else (0, 0)
        header = torch.tensor([op, window, dtype, run_count, nbytes, value, *first], dtype=torch.int64)
        parts = [] if run_count == 1 else [torch.from_numpy(pairs.view(numpy.uint8).copy())]
        if sends_data:
            parts.append(data)
        reply = torch.empty(16 + (nbytes if op == HostOp.Read else 0), dtype=torch.uint8)
        with self._request_lock:
            dist.send(header, dst=peer, group=self._requests, tag=_TAG_HEADER)
            if parts:
                dist.send(torch.cat(parts), dst=peer, group=self._requests, tag=_TAG_PAYLOAD)
            dist.recv(reply, src=peer, group=self._replies, tag=_TAG_HEADER)
            status, length = reply[:16].view(torch.int64).tolist()
            if status != 0:
                text = torch.empty(length, dtype=torch.uint8)
                dist.recv(text, src=peer, group=self._replies, tag=_TAG_PAYLOAD)
                raise RuntimeError(f"rank {peer}: {bytes(text.numpy()).decode(errors='replace')}")
        if op == HostOp.Read:
            data.copy_(reply[16:])

    # ---- the service thread --------------------------------------------------------------------

    def _serve(self) -> None:
        import torch
        import torch.distributed as dist

        from simpler.comm import HostOp

        try:
            while True:
                header = torch.zeros(_HEADER, dtype=torch.int64)
                src = dist.recv(header, group=self._requests, tag=_TAG_HEADER)
                op, window, dtype, run_count, nbytes, value, off0, len0 = header.tolist()
                if op == _STOP:
                    return
                sends_data = op in (HostOp.Write, HostOp.AtomicAdd)
                run_bytes = 0 if run_count == 1 else 16 * run_count
                size = run_bytes + (nbytes if sends_data else 0)
                payload = torch.empty(size, dtype=torch.uint8)
                if size:
                    dist.recv(payload, src=src, group=self._requests, tag=_TAG_PAYLOAD)
                runs = (
                    torch.tensor([[off0, len0]], dtype=torch.int64)
                    if run_count == 1
                    else payload[:run_bytes].view(torch.int64).reshape(run_count, 2)
                )
                reply = torch.zeros(16 + (nbytes if op == HostOp.Read else 0), dtype=torch.uint8)
                text = None
                try:
                    # a read fills the reply's tail, a write or an add reads the payload's
                    data = reply[16:] if op == HostOp.Read else payload[run_bytes:]
                    self._apply(op, window, dtype, runs, data, value)
                except Exception as exc:  # the requester's kernel fails with this message
                    text = torch.frombuffer(bytearray(str(exc).encode() or b"?"), dtype=torch.uint8)
                    reply[:16].view(torch.int64).copy_(torch.tensor([1, text.numel()]))
                dist.send(reply, dst=src, group=self._replies, tag=_TAG_HEADER)
                if text is not None:
                    dist.send(text, dst=src, group=self._replies, tag=_TAG_PAYLOAD)
        except BaseException:
            # the process group broke (a peer died) or the service failed: this rank cannot serve
            # its peers any more, so it exits, and the parent fails the dispatch naming it
            traceback.print_exc()
            sys.stderr.flush()
            os._exit(70)

    def close(self) -> None:
        """Stop the service threads: each rank tells the next one (its own requests to that rank
        are all answered, so the stop is the last thing that rank receives from it)."""
        import torch
        import torch.distributed as dist

        if self._service is None:
            return
        stop = torch.full((_HEADER,), _STOP, dtype=torch.int64)
        dist.send(stop, dst=(self.rank + 1) % self.world_size, group=self._requests, tag=_TAG_HEADER)
        self._service.join()
        self._service = None
