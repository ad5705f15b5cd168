"""The platform table: every platform the stack compiles for, with its AICore's on-chip buffers.

One frozen :class:`Platform` record per platform name. The simulated platforms (``a2a3sim``,
``a5sim``) share the capacities of the hardware they simulate, so a kernel the simulator runs
is one the chip would accept.

Capacities (bytes per AICore) and start-address alignments, from the public Ascend
documentation:

- a2a3 (Atlas A2/A3 training and inference series): Unified Buffer 192 KiB, L1 512 KiB,
  L0A 64 KiB, L0B 64 KiB, L0C 128 KiB (as CANN's open-source libraries spell them out, e.g.
  catlass ``arch.hpp`` ``AtlasA2``). Alignment (Ascend C "General Restrictions"): UB and L1
  32 bytes, L0A/L0B 512 bytes, L0C 64 bytes. The bias table (BT, Bias tiles) 1 KiB, 32-byte
  aligned (pto-isa ``buffer_limits.hpp``).
- a5 (Ascend 950 family, ``Ascend910_95``, NPU arch 3101): L0C 256 KiB, L1 512 KiB, L0A and
  L0B 64 KiB as in CANN's open-source operator code for that architecture
  (ops-transformer ``gmm/common/groupedmatmul_act/utils/arch.h``). No public source found
  confirms its Unified Buffer size, so a5 uses the a2a3 figure (192 KiB) until one does.
  BT 4 KiB (pto-isa ``buffer_limits.hpp``). Alignments as a2a3.

A kernel's buffer use is counted by :func:`check_kernel_buffers` as the peak, per memory space,
of the tiles live at the same time (pypto.ir.analysis.tile_liveness gives each tile its live
range), each rounded up to its buffer's alignment: the hardware's memory planning reuses a
tile's buffer once the tile is dead, so the tiles live together are what must fit. A tile
with no live range counts as live for the whole kernel.

The simulator keeps every tile a kernel declares on its AICore thread's stack for the whole
invocation, so on a simulated platform the sum of the declared tiles is bounded too
(:data:`SIM_DECLARED_TILE_BYTES`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import TypedDict

from pypto.ir.dtypes import DataType
from pypto.ir.errors import KernelError, Span
from pypto.ir.types import MemorySpace, enum_member

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
    "SIM_DECLARED_TILE_BYTES",
    "TILE_SPACES",
    "TMR",
    "BackendType",
    "BufferCapacityError",
    "BufferPeak",
    "Platform",
    "TileAlloc",
    "backend_of",
    "buffer_peaks",
    "buffer_usage",
    "check_backend",
    "check_kernel_buffers",
    "get_platform",
    "parse_backend",
    "simulator_of",
]

KIB = 1024

SIM_DECLARED_TILE_BYTES = 8 * KIB * KIB
"""The most bytes of tile storage a kernel may declare to run on a simulated platform (half the
16 MiB of an AICore thread's stack, simpler's ``kCoreThreadStackBytes``): a bound kept from the
tile library, whose tiles lived on that stack; PTO-ISA tiles live in the simulated buffers and
the capacity check is the binding one."""

# The on-chip memory spaces a tile can live in, in report order, and the hardware buffer each is.
TILE_SPACES = (
    MemorySpace.Vec,
    MemorySpace.Mat,
    MemorySpace.Left,
    MemorySpace.Right,
    MemorySpace.Acc,
    MemorySpace.Bias,
)
BUFFER_NAMES = {
    MemorySpace.Vec: "UB (Unified Buffer)",
    MemorySpace.Mat: "L1",
    MemorySpace.Left: "L0A",
    MemorySpace.Right: "L0B",
    MemorySpace.Acc: "L0C",
    MemorySpace.Bias: "BT (bias table)",
}


TMR = "tensormap_and_ringbuffer"
HBG = "host_build_graph"
RUNTIMES = (TMR, HBG)
"""Every chip runtime by name: TMR (dependencies from tensor overlap) and HBG (host-built graph)."""
DEFAULT_RUNTIME = TMR
"""The runtime used where none is given (every platform provides it)."""


# the Platform fields of each on-chip buffer's capacity and alignment
_CAPACITY_FIELD = {
    MemorySpace.Vec: "ub_bytes",
    MemorySpace.Mat: "l1_bytes",
    MemorySpace.Left: "l0a_bytes",
    MemorySpace.Right: "l0b_bytes",
    MemorySpace.Acc: "l0c_bytes",
    MemorySpace.Bias: "bt_bytes",
}
_ALIGN_FIELD = {
    MemorySpace.Vec: "ub_align",
    MemorySpace.Mat: "l1_align",
    MemorySpace.Left: "l0ab_align",
    MemorySpace.Right: "l0ab_align",
    MemorySpace.Acc: "l0c_align",
    MemorySpace.Bias: "bt_align",
}


@dataclass(frozen=True)
class Platform:
    """One platform: its name, the hardware it is (or simulates), the chip runtimes it provides,
    and that hardware's AICore buffers (capacity in bytes; start-address alignment in bytes)."""

    name: str
    hardware: str  # a2a3 or a5: the chip this platform is or simulates
    simulated: bool
    runtimes: tuple[str, ...]  # the chip runtimes this platform provides (every platform: TMR and HBG)
    ub_bytes: int
    l1_bytes: int
    l0a_bytes: int
    l0b_bytes: int
    l0c_bytes: int
    bt_bytes: int
    ub_align: int = 32
    l1_align: int = 32
    l0ab_align: int = 512
    l0c_align: int = 64
    bt_align: int = 32
    # torch_npu tensors in fractal NZ storage are admitted as NZ inputs (pypto.torch) on a2a3 only
    nz_storage_inputs: bool = False
    # CANN's AICore architecture family of the hardware (``--cce-aicore-arch=<family>-vec`` or
    # ``-cube`` by the kernel's core type), for device builds
    cce_arch: str = ""

    def capacity(self, space: MemorySpace) -> int:
        """Bytes of the buffer that holds tiles of ``space``."""
        return getattr(self, _CAPACITY_FIELD[space])  # type: ignore[no-any-return]

    def alignment(self, space: MemorySpace) -> int:
        """Start-address alignment of a tile in ``space`` (its size is rounded up to it)."""
        return getattr(self, _ALIGN_FIELD[space])  # type: ignore[no-any-return]


class _Capacities(TypedDict):
    ub_bytes: int
    l1_bytes: int
    l0a_bytes: int
    l0b_bytes: int
    l0c_bytes: int
    bt_bytes: int


_A2A3: _Capacities = {
    "ub_bytes": 192 * KIB,
    "l1_bytes": 512 * KIB,
    "l0a_bytes": 64 * KIB,
    "l0b_bytes": 64 * KIB,
    "l0c_bytes": 128 * KIB,
    "bt_bytes": 1 * KIB,
}
# a5: L0C from CANN's arch-3101 code; UB unconfirmed publicly, so the a2a3 figure (see above).
_A5: _Capacities = {**_A2A3, "l0c_bytes": 256 * KIB, "bt_bytes": 4 * KIB}

PLATFORM_TABLE: Mapping[str, Platform] = {
    p.name: p
    for p in (
        Platform("a2a3sim", "a2a3", True, RUNTIMES, **_A2A3, cce_arch="dav-c220"),
        Platform("a5sim", "a5", True, RUNTIMES, **_A5, cce_arch="dav-c310"),
        Platform("a2a3", "a2a3", False, RUNTIMES, **_A2A3, nz_storage_inputs=True, cce_arch="dav-c220"),
        Platform("a5", "a5", False, RUNTIMES, **_A5, cce_arch="dav-c310"),
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
    return enum_member(BackendType, backend_type, "backend_type")


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
    """One tile a generated kernel declares: its storage, and when it holds a value.

    ``live`` is the (first, last) program point, inclusive, between which the tile is live
    (pypto.ir.analysis.tile_liveness numbers the points); None means live for the whole kernel.
    """

    name: str
    space: MemorySpace
    dtype: DataType
    shape: tuple[int, int]
    span: Span | None = None
    live: tuple[int, int] | None = None

    @property
    def nbytes(self) -> int:
        """Bytes of its elements (packed sub-byte types rounded up to a whole byte)."""
        numel = self.shape[0] * self.shape[1]
        return (numel * self.dtype.bits + 7) // 8

    def live_at(self, point: int) -> bool:
        return self.live is None or self.live[0] <= point <= self.live[1]

    def describe(self) -> str:
        where = f" at {self.span}" if self.span is not None else ""
        return (
            f"{self.name} [{self.shape[0]}, {self.shape[1]}] {self.dtype.value} ({_size(self.nbytes)}){where}"
        )


@dataclass(frozen=True)
class BufferPeak:
    """The most bytes of one memory space's tiles live at the same time, and those tiles (in
    definition order); ``point`` is the first program point where they are (None when every
    tile there is live for the whole kernel)."""

    nbytes: int
    live: tuple[TileAlloc, ...]
    point: int | None


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


def buffer_peaks(platform: Platform, tiles: Iterable[TileAlloc]) -> dict[MemorySpace, BufferPeak]:
    """Per on-chip memory space, the peak of the tiles live at once, each tile rounded up to its
    buffer's alignment. The peak is reached where a tile becomes live, so only those points
    are tried; with no live ranges at all it is the sum of every tile."""
    by_space: dict[MemorySpace, list[TileAlloc]] = {}
    for t in tiles:
        by_space.setdefault(t.space, []).append(t)
    peaks: dict[MemorySpace, BufferPeak] = {}
    for space in TILE_SPACES:
        best = BufferPeak(0, (), None)
        mine = by_space.get(space)
        if mine:
            align = platform.alignment(space)
            mine.sort(key=lambda t: -1 if t.live is None else t.live[0])
            sized = [(t, t.live, _aligned(t.nbytes, align)) for t in mine]
            starts = sorted({t.live[0] for t in mine if t.live is not None})
            points: list[int | None] = [*starts] if starts else [None]
            for q in points:
                live = [(t, n) for t, r, n in sized if q is None or r is None or r[0] <= q <= r[1]]
                total = sum(n for _, n in live)
                if total > best.nbytes:
                    best = BufferPeak(total, tuple(t for t, _ in live), q)
        peaks[space] = best
    return peaks


def buffer_usage(platform: Platform, tiles: Iterable[TileAlloc]) -> dict[MemorySpace, int]:
    """Bytes per on-chip memory space at its peak (:func:`buffer_peaks`)."""
    return {space: peak.nbytes for space, peak in buffer_peaks(platform, tiles).items()}


def _peak_problem(plat: Platform, space: MemorySpace, peak: BufferPeak, show: int) -> str:
    live = peak.live
    at = ""
    if peak.point is not None:
        last = next((t for t in reversed(live) if t.live is not None and t.live[0] == peak.point), None)
        if last is not None:
            where = f" ({last.span})" if last.span is not None else ""
            at = f", where {last.name} is defined{where},"
    listed = "; ".join(t.describe() for t in live[:show])
    more = f" (and {len(live) - show} more)" if len(live) > show else ""
    together = f"{len(live)} tiles are live together" if len(live) > 1 else "1 tile is live"
    return (
        f"{space.value} tiles need {_size(peak.nbytes)} but the {BUFFER_NAMES[space]} of {plat.name} holds "
        f"{_size(plat.capacity(space))}; at the peak{at} {together}: {listed}{more}"
    )


def check_kernel_buffers(
    kernel: str,
    platform: str | Platform,
    tiles: Iterable[TileAlloc],
    *,
    span: Span | None = None,
    show: int = 8,
) -> dict[MemorySpace, int]:
    """Per-space peak buffer use of ``kernel``'s tiles (:func:`buffer_peaks`); raises
    :class:`BufferCapacityError` when a space's peak exceeds its buffer on ``platform``, naming
    the kernel, the space, the bytes and the capacity, where the peak is and the tiles live
    there (up to ``show`` of them; the error points at the largest), or, on a simulated
    platform, when the kernel declares more than :data:`SIM_DECLARED_TILE_BYTES` of tiles."""
    plat = platform if isinstance(platform, Platform) else get_platform(platform)
    tiles = tuple(tiles)
    peaks = buffer_peaks(plat, tiles)
    problems: list[str] = []
    first: Span | None = None
    for space in TILE_SPACES:
        peak = peaks[space]
        if peak.nbytes <= plat.capacity(space):
            continue
        if first is None:
            first = max(peak.live, key=lambda t: t.nbytes).span  # the first of the largest
        problems.append(_peak_problem(plat, space, peak, show))
    if problems:
        raise BufferCapacityError(
            f"kernel {kernel!r} does not fit the on-chip buffers of {plat.name}: "
            + " | ".join(problems)
            + ". A tile is live from its definition to its last use (to the end of a loop that uses it "
            "when defined before the loop; a loop-carried tile across its whole loop), and the tiles "
            "live at the same time must fit together: use smaller tiles, loop over the data in chunks, "
            "or finish with a tile before the next ones are made.",
            first or span,
        )
    if plat.simulated:
        declared = sum(t.nbytes for t in tiles)
        if declared > SIM_DECLARED_TILE_BYTES:
            largest = max(tiles, key=lambda t: t.nbytes)
            raise BufferCapacityError(
                f"kernel {kernel!r} declares {_size(declared)} of tiles in {len(tiles)} tiles (largest: "
                f"{largest.describe()}), more than the {_size(SIM_DECLARED_TILE_BYTES)} the {plat.name} "
                "simulator can hold: it keeps every tile a kernel declares on its AICore stack for the "
                "whole call; split the kernel or loop over the data in chunks.",
                largest.span or span,
            )
    return {space: peak.nbytes for space, peak in peaks.items()}
