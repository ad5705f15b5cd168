"""The platform table: every platform the stack compiles for, with its AICore's on-chip buffers.

One frozen :class:`Platform` record per platform name. The simulated platforms (``a2a3sim``,
``a5sim``) share the capacities of the hardware they simulate, so a kernel the simulator runs
is one the chip would accept.

Capacities (bytes per AICore) and start-address alignments, from the public Ascend
documentation:

- a2a3 (Atlas A2/A3 training and inference series): Unified Buffer 192 KiB, L1 512 KiB,
  L0A 64 KiB, L0B 64 KiB, L0C 128 KiB (as CANN's open-source libraries spell them out, e.g.
  catlass ``arch.hpp`` ``AtlasA2``). Alignment (Ascend C "General Restrictions"): UB and L1
  32 bytes, L0A/L0B 512 bytes, L0C 64 bytes.
- a5 (Ascend 950 family, ``Ascend910_95``, NPU arch 3101): L0C 256 KiB, L1 512 KiB, L0A and
  L0B 64 KiB as in CANN's open-source operator code for that architecture
  (ops-transformer ``gmm/common/groupedmatmul_act/utils/arch.h``). No public source found
  confirms its Unified Buffer size, so a5 uses the a2a3 figure (192 KiB) until one does.
  Alignments as a2a3.

A kernel's buffer use is counted by :func:`check_kernel_buffers`: every tile the generated
kernel declares, per memory space, each rounded up to its buffer's alignment. Live ranges are
not analysed (two tiles never alive at once are both counted), so the sum is a conservative
bound: a kernel that fits is one the hardware can hold; one that does not may still fit with
reuse, and the error says which tiles to shrink or reuse.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import TypedDict

from pypto.ir.dtypes import DataType
from pypto.ir.errors import KernelError, Span
from pypto.ir.types import MemorySpace

__all__ = [
    "BUFFER_NAMES",
    "DEFAULT_PLATFORM",
    "DEFAULT_RUNTIME",
    "HBG",
    "NPU_PLATFORMS",
    "PLATFORMS",
    "PLATFORM_TABLE",
    "RUNTIMES",
    "SIMULATOR_PLATFORMS",
    "TILE_SPACES",
    "TMR",
    "BackendType",
    "BufferCapacityError",
    "Platform",
    "TileAlloc",
    "backend_of",
    "buffer_usage",
    "check_backend",
    "check_kernel_buffers",
    "get_platform",
    "parse_backend",
    "simulator_of",
]

KIB = 1024

# The on-chip memory spaces a tile can live in, in report order, and the hardware buffer each is.
TILE_SPACES = (MemorySpace.Vec, MemorySpace.Mat, MemorySpace.Left, MemorySpace.Right, MemorySpace.Acc)
BUFFER_NAMES = {
    MemorySpace.Vec: "UB (Unified Buffer)",
    MemorySpace.Mat: "L1",
    MemorySpace.Left: "L0A",
    MemorySpace.Right: "L0B",
    MemorySpace.Acc: "L0C",
}


TMR = "tensormap_and_ringbuffer"
HBG = "host_build_graph"
RUNTIMES = (TMR, HBG)
"""Every chip runtime by name: TMR (dependencies from tensor overlap) and HBG (host-built graph)."""
DEFAULT_RUNTIME = TMR
"""The runtime used where none is given (every platform provides it)."""


@dataclass(frozen=True)
class Platform:
    """One platform: its name, the hardware it is (or simulates), the chip runtimes it provides,
    and that hardware's AICore buffers (capacity in bytes; start-address alignment in bytes)."""

    name: str
    hardware: str  # a2a3 or a5: the chip this platform is or simulates
    simulated: bool
    runtimes: tuple[str, ...]  # what this platform's chip runtime provides (the simulator: TMR only)
    ub_bytes: int
    l1_bytes: int
    l0a_bytes: int
    l0b_bytes: int
    l0c_bytes: int
    ub_align: int = 32
    l1_align: int = 32
    l0ab_align: int = 512
    l0c_align: int = 64
    # torch_npu tensors in fractal NZ storage are admitted as NZ inputs (pypto.torch) on a2a3 only
    nz_storage_inputs: bool = False

    def capacity(self, space: MemorySpace) -> int:
        """Bytes of the buffer that holds tiles of ``space``."""
        return {
            MemorySpace.Vec: self.ub_bytes,
            MemorySpace.Mat: self.l1_bytes,
            MemorySpace.Left: self.l0a_bytes,
            MemorySpace.Right: self.l0b_bytes,
            MemorySpace.Acc: self.l0c_bytes,
        }[space]

    def alignment(self, space: MemorySpace) -> int:
        """Start-address alignment of a tile in ``space`` (its size is rounded up to it)."""
        return {
            MemorySpace.Vec: self.ub_align,
            MemorySpace.Mat: self.l1_align,
            MemorySpace.Left: self.l0ab_align,
            MemorySpace.Right: self.l0ab_align,
            MemorySpace.Acc: self.l0c_align,
        }[space]


class _Capacities(TypedDict):
    ub_bytes: int
    l1_bytes: int
    l0a_bytes: int
    l0b_bytes: int
    l0c_bytes: int


_A2A3: _Capacities = {
    "ub_bytes": 192 * KIB,
    "l1_bytes": 512 * KIB,
    "l0a_bytes": 64 * KIB,
    "l0b_bytes": 64 * KIB,
    "l0c_bytes": 128 * KIB,
}
# a5: L0C from CANN's arch-3101 code; UB unconfirmed publicly, so the a2a3 figure (see above).
_A5: _Capacities = {**_A2A3, "l0c_bytes": 256 * KIB}

PLATFORM_TABLE: Mapping[str, Platform] = {
    p.name: p
    for p in (
        Platform("a2a3sim", "a2a3", True, (TMR,), **_A2A3),
        Platform("a5sim", "a5", True, (TMR,), **_A5),
        Platform("a2a3", "a2a3", False, RUNTIMES, **_A2A3, nz_storage_inputs=True),
        Platform("a5", "a5", False, RUNTIMES, **_A5),
    )
}
PLATFORMS = tuple(PLATFORM_TABLE)
SIMULATOR_PLATFORMS = tuple(name for name, p in PLATFORM_TABLE.items() if p.simulated)
NPU_PLATFORMS = tuple(name for name, p in PLATFORM_TABLE.items() if not p.simulated)
DEFAULT_PLATFORM = "a2a3sim"
"""The platform used where none is given: the simulated a2a3 chip (runs anywhere)."""


class BackendType(Enum):
    """The code-generation target named by the hardware it generates for: ``Ascend910B`` is
    the a2a3 chip (platforms ``a2a3``/``a2a3sim``), ``Ascend950`` the a5 chip (``a5``/``a5sim``).
    The platform already fixes it, so a compile or a RunConfig only checks that the two agree."""

    Ascend910B = "a2a3"
    Ascend950 = "a5"

    @property
    def hardware(self) -> str:
        """The chip this backend generates for (``Platform.hardware``)."""
        return self.value


def backend_of(platform: str) -> BackendType:
    """The BackendType of ``platform`` (its hardware): ``a2a3sim`` -> ``Ascend910B``."""
    return BackendType(get_platform(platform).hardware)


def parse_backend(backend_type: object) -> BackendType:
    """``backend_type`` (a BackendType or its name) as the enum; ValueError naming the argument."""
    if isinstance(backend_type, BackendType):
        return backend_type
    if isinstance(backend_type, str) and backend_type in BackendType.__members__:
        return BackendType[backend_type]
    names = ", ".join(f"BackendType.{n}" for n in BackendType.__members__)
    raise ValueError(f"backend_type: expected one of {names}, got {backend_type!r}")


def simulator_of(backend_type: BackendType) -> str:
    """The simulated platform of ``backend_type``'s chip (``Ascend910B`` -> ``a2a3sim``)."""
    return next(n for n, p in PLATFORM_TABLE.items() if p.simulated and p.hardware == backend_type.hardware)


def check_backend(backend_type: object, platform: str) -> BackendType:
    """``backend_type`` (a BackendType, its name, or None for the platform's own) checked
    against ``platform``; ValueError naming the argument when it is not a backend or generates
    for another chip than the platform is or simulates."""
    expected = backend_of(platform)
    if backend_type is None:
        return expected
    found = parse_backend(backend_type)
    if found is not expected:
        raise ValueError(
            f"backend_type: BackendType.{found.name} generates for the {found.hardware} chip, but platform "
            f"{platform!r} is (or simulates) {expected.hardware}; pass BackendType.{expected.name} or a "
            f"{found.hardware} platform"
        )
    return found


def get_platform(name: object) -> Platform:
    """The record of platform ``name``; ValueError naming the known platforms otherwise."""
    p = PLATFORM_TABLE.get(name) if isinstance(name, str) else None
    if p is None:
        raise ValueError(f"platform: expected one of {', '.join(PLATFORMS)}, got {name!r}")
    return p


@dataclass(frozen=True)
class TileAlloc:
    """One tile a generated kernel declares (its storage for the whole invocation)."""

    name: str
    space: MemorySpace
    dtype: DataType
    shape: tuple[int, int]
    span: Span | None = None

    @property
    def nbytes(self) -> int:
        """Bytes of its elements (packed sub-byte types rounded up to a whole byte)."""
        numel = self.shape[0] * self.shape[1]
        return (numel * self.dtype.bits + 7) // 8

    def describe(self) -> str:
        where = f" at {self.span}" if self.span is not None else ""
        return (
            f"{self.name} [{self.shape[0]}, {self.shape[1]}] {self.dtype.value} ({_size(self.nbytes)}){where}"
        )


class BufferCapacityError(KernelError):
    """A kernel whose tiles do not fit its platform's on-chip buffers."""


def _aligned(n: int, align: int) -> int:
    return -(-n // align) * align


def _size(n: int) -> str:
    if n >= KIB and n % KIB == 0:
        return f"{n // KIB} KiB"
    if n >= KIB:
        return f"{n} bytes ({n / KIB:.2f} KiB)"
    return f"{n} bytes"


def buffer_usage(platform: Platform, tiles: Iterable[TileAlloc]) -> dict[MemorySpace, int]:
    """Bytes per on-chip memory space: every tile, each rounded up to its buffer's alignment."""
    used = dict.fromkeys(TILE_SPACES, 0)
    for t in tiles:
        used[t.space] += _aligned(t.nbytes, platform.alignment(t.space))
    return used


def check_kernel_buffers(
    kernel: str,
    platform: str | Platform,
    tiles: Iterable[TileAlloc],
    *,
    span: Span | None = None,
    show: int = 3,
) -> dict[MemorySpace, int]:
    """Per-space buffer use of ``kernel``'s tiles; raises :class:`BufferCapacityError` when a
    space exceeds its buffer on ``platform``, naming the kernel, the space, the bytes used and
    the capacity, and its ``show`` largest tiles (the error points at the largest)."""
    plat = platform if isinstance(platform, Platform) else get_platform(platform)
    tiles = tuple(tiles)
    used = buffer_usage(plat, tiles)
    problems: list[str] = []
    first: Span | None = None
    for space in TILE_SPACES:
        cap = plat.capacity(space)
        if used[space] <= cap:
            continue
        mine = sorted((t for t in tiles if t.space is space), key=lambda t: -t.nbytes)
        if first is None:
            first = mine[0].span
        largest = "; ".join(t.describe() for t in mine[:show])
        more = f" (and {len(mine) - show} more)" if len(mine) > show else ""
        problems.append(
            f"{space.value} tiles need {_size(used[space])} but the {BUFFER_NAMES[space]} of {plat.name} holds "
            f"{_size(cap)}; {len(mine)} tiles, largest: {largest}{more}"
        )
    if problems:
        raise BufferCapacityError(
            f"kernel {kernel!r} does not fit the on-chip buffers of {plat.name}: "
            + " | ".join(problems)
            + ". Every tile the kernel declares is counted (live ranges are not analysed): use smaller tiles, "
            "loop over the data in chunks, or reuse a tile.",
            first or span,
        )
    return used
