"""Callables: what a Worker registers and runs.

A :class:`CoreCallable` is one kernel binary (entry ``kernel_entry(int64_t* args)``) that runs on
an AIC (cube) or AIV (vector) thread. A :class:`ChipCallable` is one orchestration binary plus
its child kernels by ``func_id``. Both are plain, immutable descriptions identified by content
(a sha256 over signature, names and binary bytes): registering the same content twice gives the
same :class:`CallableHandle`. Binaries are loaded and their symbols resolved at registration.
"""

from __future__ import annotations

import enum
import hashlib
from collections.abc import Iterable, Sequence
from typing import Any

from simpler._dtypes import arg_direction_code

__all__ = ["CallableHandle", "ChipCallable", "CoreCallable", "CoreType"]


class CoreType(enum.IntEnum):
    """Which AICore kind runs a kernel: AIV (vector) or AIC (cube)."""

    AIV = 0
    AIC = 1


def _core_type(value: Any) -> CoreType:
    if isinstance(value, CoreType):
        return value
    if isinstance(value, str) and value.upper() in CoreType.__members__:
        return CoreType[value.upper()]
    name = getattr(value, "name", None)
    if isinstance(name, str) and name.upper() in CoreType.__members__:
        return CoreType[name.upper()]
    if isinstance(value, int) and not isinstance(value, bool) and value in (0, 1):
        return CoreType(value)
    raise ValueError(f"CoreCallable.build(core_type): expected 'aiv' or 'aic' (or CoreType), got {value!r}")


def _signature(signature: Iterable[Any], what: str) -> tuple[int, ...]:
    codes = tuple(arg_direction_code(d, what=f"{what}(signature[{i}])") for i, d in enumerate(signature))
    seen_scalar = False
    for i, c in enumerate(codes):
        if c == 0:
            seen_scalar = True
        elif seen_scalar:
            raise ValueError(
                f"{what}(signature): entry {i} is a tensor after a scalar; all tensors must come first"
            )
    return codes


def _binary(binary: Any, what: str) -> bytes:
    if isinstance(binary, (bytes, bytearray, memoryview)):
        data = bytes(binary)
        if data:
            return data
    raise ValueError(
        f"{what}(binary): expected the non-empty bytes of a shared object, got {type(binary).__name__}"
    )


class CoreCallable:
    """One kernel binary. Build with :meth:`build`."""

    __slots__ = ("binary", "core_type", "digest", "entry", "name", "signature")

    def __init__(
        self, signature: tuple[int, ...], binary: bytes, core_type: CoreType, entry: str, name: str
    ) -> None:
        self.signature = signature
        self.binary = binary
        self.core_type = core_type
        self.entry = entry
        self.name = name
        h = hashlib.sha256(b"simpler.CoreCallable\0")
        h.update(bytes(signature) + b"\0" + entry.encode() + b"\0" + name.encode() + b"\0")
        h.update(bytes([int(core_type)]) + hashlib.sha256(binary).digest())
        self.digest = h.hexdigest()

    @classmethod
    def build(
        cls,
        signature: Sequence[Any],
        binary: bytes,
        core_type: Any,
        *,
        entry: str = "kernel_entry",
        name: str | None = None,
    ) -> CoreCallable:
        """Describe a kernel: ``signature`` lists an ArgDirection per argument (tensors first).

        Args:
            signature: ArgDirection per argument (In/Out/InOut tensors, then Scalar).
            binary: shared-object bytes (see :mod:`simpler.toolchain`).
            core_type: ``"aiv"``/``"aic"`` or :class:`CoreType`.
            entry: exported C entry symbol.
            name: name used in messages and traces (default: ``entry``).
        """
        if not isinstance(entry, str) or not entry.isidentifier():
            raise ValueError(f"CoreCallable.build(entry): expected a C identifier, got {entry!r}")
        return cls(
            _signature(signature, "CoreCallable.build"),
            _binary(binary, "CoreCallable.build"),
            _core_type(core_type),
            entry,
            name if name is not None else entry,
        )

    def __repr__(self) -> str:
        return (
            f"CoreCallable(name={self.name!r}, core_type={self.core_type.name}, args={len(self.signature)})"
        )


class ChipCallable:
    """An orchestration binary and its child kernels. Build with :meth:`build`."""

    __slots__ = ("binary", "children", "digest", "func_name", "scalar_count", "signature", "tensor_count")

    def __init__(
        self,
        signature: tuple[int, ...],
        func_name: str,
        binary: bytes,
        children: tuple[tuple[int, CoreCallable], ...],
    ) -> None:
        self.signature = signature
        self.func_name = func_name
        self.binary = binary
        self.children = children
        self.scalar_count = sum(1 for c in signature if c == 0)
        self.tensor_count = len(signature) - self.scalar_count
        h = hashlib.sha256(b"simpler.ChipCallable\0")
        h.update(bytes(signature) + b"\0" + func_name.encode() + b"\0" + hashlib.sha256(binary).digest())
        for func_id, child in children:
            h.update(func_id.to_bytes(4, "little") + bytes.fromhex(child.digest))
        self.digest = h.hexdigest()

    @classmethod
    def build(
        cls,
        signature: Sequence[Any],
        func_name: str,
        binary: bytes,
        children: Iterable[tuple[int, CoreCallable]] = (),
    ) -> ChipCallable:
        """Describe an orchestration.

        Args:
            signature: ArgDirection per orchestration argument (tensors first, then scalars).
            func_name: the exported orchestration entry (``<func_name>_needs`` must exist too).
            binary: shared-object bytes of the orchestration.
            children: ``(func_id, CoreCallable)`` pairs; ``func_id`` is what the orchestration submits.
        """
        if not isinstance(func_name, str) or not func_name.isidentifier():
            raise ValueError(f"ChipCallable.build(func_name): expected a C identifier, got {func_name!r}")
        kids: list[tuple[int, CoreCallable]] = []
        seen: set[int] = set()
        for i, pair in enumerate(children):
            try:
                func_id, child = pair
            except (TypeError, ValueError):
                raise ValueError(
                    f"ChipCallable.build(children[{i}]): expected (func_id, CoreCallable), got {pair!r}"
                ) from None
            if isinstance(func_id, bool) or not isinstance(func_id, int) or not 0 <= func_id < 1 << 31:
                raise ValueError(
                    f"ChipCallable.build(children[{i}]): func_id must be an int >= 0, got {func_id!r}"
                )
            if not isinstance(child, CoreCallable):
                raise ValueError(
                    f"ChipCallable.build(children[{i}]): expected a CoreCallable, got {type(child).__name__}"
                )
            if func_id in seen:
                raise ValueError(f"ChipCallable.build(children): func_id {func_id} appears twice")
            seen.add(func_id)
            kids.append((func_id, child))
        kids.sort(key=lambda p: p[0])
        return cls(
            _signature(signature, "ChipCallable.build"),
            func_name,
            _binary(binary, "ChipCallable.build"),
            tuple(kids),
        )

    def __repr__(self) -> str:
        return f"ChipCallable(func_name={self.func_name!r}, args={len(self.signature)}, children={len(self.children)})"


class CallableHandle:
    """Opaque handle of a callable registered on one Worker (content-identified)."""

    __slots__ = ("_checked", "_native", "_worker_id", "callable", "digest", "slot")

    def __init__(self, worker_id: int, slot: int, digest: str, callable_: Any, native: Any) -> None:
        self._checked: Any = None  # the last ChipStorageTaskArgs that matched it (frozen: still does)
        self._worker_id = worker_id
        self.slot = slot
        self.digest = digest
        self.callable = callable_
        self._native = native

    def __repr__(self) -> str:
        return f"CallableHandle(slot={self.slot}, digest={self.digest[:12]})"
