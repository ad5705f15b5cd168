"""Kernel codegen, part 1: the pieces every emitter shares.

What a kernel is made of before its statements are emitted: the PTO-ISA ``Tile`` type of an IR
tile, the pipe of a copy between tile spaces, the kernel's ABI parameter order and core type,
and ``_GenBase``: the plan being built (pypto.ir.codegen.plan) and the tile declarations
(``Tile`` + ``TASSIGN`` at the memory-allocation pass's offset). pypto.ir.codegen.kernel_emit
adds the instruction emitters, pypto.ir.codegen.kernel assembles the kernel.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from pypto.ir.codegen.cpp import (
    COMM_NS,
    ident,
    kernel_cpp_type,
    scalar_cpp_type,
    scalar_expr,
)
from pypto.ir.codegen.plan import Inst, Item, Pipe
from pypto.ir.errors import PyptoCompileError
from pypto.ir.nodes import (
    Assign,
    Break,
    Call,
    Continue,
    Expr,
    For,
    Function,
    If,
    Param,
    Stmt,
    Var,
    While,
    Yield,
    stmt_exprs,
    walk_stmts,
)
from pypto.ir.ops import OPS, Cpp
from pypto.ir.passes.memory_alloc import KernelMemory
from pypto.ir.platforms import BackendType, TileAlloc
from pypto.ir.pto_layout import pto_tile
from pypto.ir.types import (
    AtomicType,
    CoreType,
    MemorySpace,
    PadValue,
    ReduceOp,
    ScalarType,
    TensorType,
    TileType,
)

ENTRY = "kernel_entry"

# PTO-ISA PadValue of a fillpad's pad attribute (the destination tile's pad value)
_PAD = {PadValue.zero: "PadValue::Zero", PadValue.min: "PadValue::Min", PadValue.max: "PadValue::Max"}

# Tile ops the emitter writes itself rather than as their table's one instruction: load/store
# (a GM view, ND or NZ), a scratch tile (a declaration), a filled tile (TEXPANDS), random words
# (TRANDOM's key and counter arrays), a valid-shape
# change, a tile element read, a multi-list merge sort (its executed counts), a print.
BESPOKE = frozenset(
    {
        "tile.load",
        "tile.store",
        "tile.create",
        "tile.full",
        "tile.tri",
        "tile.random",
        "tile.ci",
        "tile.expands",
        "tile.set_validshape",
        "tile.read",
        "tile.mrgsort_lists",
        "tile.print",
        "tile.fillpad",
        "tile.fillpad_expand",
    }
)
PRINT_OPS = frozenset({"tile.print", "scalar.print"})
# Cross-rank operations with an effect on ChipTensors: PTO-ISA communication instructions
# (TNOTIFY, TWAIT, TPUT, TGET) or a collective's schedule of them (simpler/kernel_collectives.hpp);
# as a value each names the window it acts on.
COMM_EFFECTS = {
    "comm.notify": 0,
    "comm.wait": 0,
    "comm.barrier": 0,
    "comm.put": 0,
    "comm.get": 0,
    "comm.allreduce": 0,
    "comm.broadcast": 0,
    "comm.allgather": 1,
    "comm.reduce_scatter": 0,
    "comm.all_to_all": 1,
    "comm.all_to_all_v": 1,
    "comm.defer_wait": 0,
}
DEFERRED = "deferred_waits_"
_ATOMIC = {AtomicType.None_: "AtomicType::AtomicNone", AtomicType.Add: "AtomicType::AtomicAdd"}
_REDUCE = {op: f"{COMM_NS}::CollOp::{op.name}" for op in ReduceOp}


def kernel_calls(fn: Function) -> list[Call]:
    """The op calls of ``fn``'s statements, in order (one walk, shared by the kernel's checks)."""
    return [e for s in walk_stmts(fn.body) for e in stmt_exprs(s) if isinstance(e, Call)]


def _calls_syncall(fn: Function, calls: list[Call] | None = None) -> int:
    """0: the kernel does not call ``pl.system.syncall``; else its launch's block count when the
    calls record it (an inline ``pl.spmd`` body), 1 when the kernel's parameters carry it."""
    counts = [
        int(e.attr("blocks", 1))
        for e in (kernel_calls(fn) if calls is None else calls)
        if e.op == "system.syncall"
    ]
    return max(counts, default=0)


def _uses_comm(fn: Function, calls: list[Call] | None = None) -> bool:
    return any(
        e.op.startswith("comm.") or e.op in ("comm.rank", "comm.nranks")
        for e in (kernel_calls(fn) if calls is None else calls)
    )


_LOAD = OPS["tile.load"].cpp or Cpp("TLOAD")
_STORE = OPS["tile.store"].cpp or Cpp("TSTORE")
# ops of the cube unit: their operands are Left/Right tiles (the table's spaces)
_CUBE_OPS = frozenset(
    n for n, s in OPS.items() if s.spaces and {MemorySpace.Left, MemorySpace.Right} <= set(s.spaces)
)


@dataclass(frozen=True)
class KernelSource:
    name: str
    core_type: CoreType
    entry: str
    text: str
    params: tuple[Param, ...]  # ABI order
    tiles: tuple[TileAlloc, ...] = ()  # one per storage: padded shape, live range


def abi_params(fn: Function) -> tuple[Param, ...]:
    """The kernel's parameters in ABI order: tensors first, then scalars."""
    tensors = [p for p in fn.params if isinstance(p.var.type, TensorType)]
    scalars = [p for p in fn.params if not isinstance(p.var.type, TensorType)]
    return (*tensors, *scalars)


_CUBE_SPACES = (MemorySpace.Left, MemorySpace.Right, MemorySpace.Mat, MemorySpace.Acc, MemorySpace.Bias)


def core_type_of(fn: Function, calls: list[Call] | None = None) -> CoreType:
    """AIC when the kernel uses the cube unit (matmul or a Left/Right/Mat tile), AIV otherwise
    (``calls``: :func:`kernel_calls` of ``fn``, when the caller has them)."""
    for e in kernel_calls(fn) if calls is None else calls:
        if e.op in _CUBE_OPS:
            return CoreType.AIC
        t = e.type
        if isinstance(t, TileType) and t.memory in _CUBE_SPACES:
            return CoreType.AIC
    return CoreType.AIV


@functools.lru_cache(maxsize=1024)  # a pure function of its arguments, asked once per declaration
def tile_type(t: TileType, pad: PadValue | None = None, *, zn: bool = False) -> str:
    """The PTO-ISA ``Tile`` type of an IR tile (its padded physical shape, dynamic valid shape).
    A Mat tile is NZ (column-major grid of row-major boxes), or with ``zn`` ZN (row-major grid of
    column-major boxes): the bytes of an NZ ``[R, C]`` tile read as its transpose ``[C, R]``."""
    p = pto_tile(t)
    ct = kernel_cpp_type(t.dtype)
    if t.memory is MemorySpace.Vec:
        layout = "BLayout::ColMajor" if p.col_major else "BLayout::RowMajor"
        tail = f", SLayout::NoneBox, TileConfig::fractalABSize, {_PAD[pad]}" if pad is not None else ""
        return f"Tile<TileType::Vec, {ct}, {p.rows}, {p.cols}, {layout}, -1, -1{tail}>"
    if t.memory is MemorySpace.Mat:
        grid, box = ("RowMajor", "ColMajor") if zn else ("ColMajor", "RowMajor")
        return f"Tile<TileType::Mat, {ct}, {p.rows}, {p.cols}, BLayout::{grid}, -1, -1, SLayout::{box}, 512>"
    if t.memory is MemorySpace.Bias:  # one row-major row (the ISA's bias table takes no boxes)
        return f"Tile<TileType::Bias, {ct}, {p.rows}, {p.cols}, BLayout::RowMajor, -1, -1>"
    alias = {MemorySpace.Left: "TileLeft", MemorySpace.Right: "TileRight", MemorySpace.Acc: "TileAcc"}
    return f"{alias[t.memory]}<{ct}, {p.rows}, {p.cols}, -1, -1>"


def _is_mat(v: object) -> bool:
    return isinstance(v, Var) and isinstance(v.type, TileType) and v.type.memory is MemorySpace.Mat


def zn_mat_tiles(fn: Function) -> frozenset[str]:
    """The IR names of the Mat tiles stored ZN: ``pl.tile.transpose_view`` of an NZ Mat tile (of a
    ZN one: NZ again), and the loop holders, loop results and branch results those flow into.

    The ISA's ``TTRANS`` needs a row-major source, which an NZ tile is not; reading the NZ bytes
    as a ZN tile (``TRESHAPE`` over the same storage) is the transpose, with no data moved. A
    holder or result that would receive both layouts is refused: the bytes of one storage have
    one layout."""
    zn: set[str] = set()

    def is_zn(e: object) -> bool:
        return isinstance(e, Var) and e.name in zn

    def join(target: Var, sources: list[Expr], what: str) -> None:
        if not _is_mat(target):
            return
        kinds = {is_zn(v) for v in sources if isinstance(v, Var)}
        if len(kinds) > 1:
            raise PyptoCompileError(
                f"kernel {fn.name!r}: Mat tile {target.name} ({what}) receives both a tile and a "
                "pl.tile.transpose_view of one (NZ and ZN layouts); carry the untransposed tile and "
                "take pl.tile.transpose_view where it is used"
            )
        if kinds == {True}:
            zn.add(target.name)

    def walk(stmts: tuple[Stmt, ...], carried: list[list[tuple[Expr, ...]]]) -> None:
        for s in stmts:
            if isinstance(s, Assign) and isinstance(s.value, Call):
                e = s.value
                if e.op == "tile.transpose_view" and _is_mat(s.var):
                    if not is_zn(e.args[0]):
                        zn.add(s.var.name)
                elif e.op in PRINT_OPS and e.args and is_zn(e.args[0]):
                    zn.add(s.var.name)
            elif isinstance(s, (For, While)):
                for ia in s.iter_args:
                    join(ia.var, [ia.init], "a loop-carried value")
                exits: list[tuple[Expr, ...]] = []
                walk(s.body, [*carried, exits])
                if s.body and isinstance(s.body[-1], Yield):
                    exits.append(s.body[-1].values)
                for i, ia in enumerate(s.iter_args):
                    values = [ia.var, *(x[i] for x in exits if i < len(x))]
                    join(ia.var, values, "a loop-carried value")
                for ia, r in zip(s.iter_args, s.results, strict=False):
                    join(r, [ia.var], "a loop result")
            elif isinstance(s, (Break, Continue)) and carried:
                carried[-1].append(s.values)
            elif isinstance(s, If):
                walk(s.then_body, carried)
                walk(s.else_body, carried)
                arms = [b[-1].values for b in (s.then_body, s.else_body) if b and isinstance(b[-1], Yield)]
                for i, r in enumerate(s.results):
                    join(r, [a[i] for a in arms if i < len(a)], "a branch result")

    walk(fn.body, [])
    return frozenset(zn)


def _copy_pipe(dst: MemorySpace, src: MemorySpace) -> Pipe:
    """The pipe of a TMOV/TEXTRACT from ``src`` to ``dst``."""
    if src is MemorySpace.Acc:
        return Pipe.FIX
    if src is MemorySpace.Mat:
        return Pipe.MTE1
    if dst is MemorySpace.Mat:
        return Pipe.MTE3
    return Pipe.V


class _GenBase:
    """The kernel plan under construction and the tile declarations."""

    def __init__(
        self, fn: Function, mem: KernelMemory, backend: BackendType = BackendType.Ascend910B
    ) -> None:
        self.fn = fn
        self.mem = mem
        self.backend = backend  # the chip the kernel is for: a few ops differ between a2a3 and a5
        self.dim_of: dict[tuple[str, int], str] = {}
        self.items: list[Item] = []
        self.loops: list[For | While] = []  # the loops around the statement being emitted
        self.space_of: dict[str, MemorySpace] = {}
        self.cname_key: dict[str, str] = {}  # C++ tile name -> IR key of its storage
        # IR names of the Mat tiles stored ZN (none for the op table's emitter probes, fn None)
        self.zn = zn_mat_tiles(fn) if fn is not None else frozenset()

    # ---------------------------------------------------------------- plan building

    def raw(self, *lines: str) -> None:
        self.items.append(Inst(tuple(lines)))

    def inst(self, line: str, pipe: Pipe, reads: tuple[str, ...] = (), writes: tuple[str, ...] = ()) -> None:
        self.items.append(Inst((line,), pipe, reads, writes))

    def nested(self) -> list[Item]:
        """Start collecting a nested block; returns the outer list to restore."""
        outer = self.items
        self.items = []
        return outer

    def declare(
        self,
        key: str,
        name: str,
        t: TileType,
        valid: tuple[str, str],
        *,
        pad: PadValue | None = None,
        zn: bool | None = None,
    ) -> None:
        """Declare tile ``name`` (storage of IR name ``key``) with valid shape ``valid``."""
        vr, vc = valid
        if key not in self.mem.slot_of:
            raise PyptoCompileError(f"kernel codegen: tile {key} has no storage (a compiler bug)")
        slot = self.mem.slot(key)
        self.space_of[name] = t.memory
        if zn is None:
            zn = key in self.zn
        decl = tile_type(t, pad, zn=zn) if pad is not None or zn else tile_type(t)  # the common key first
        self.raw(f"{decl} {name}({vr}, {vc});", f"TASSIGN({name}, {slot.offset:#x});")

    def storage_conflict(self, a: str, b: str) -> bool:
        ka, kb = self.cname_key.get(a, a), self.cname_key.get(b, b)
        if ka not in self.mem.slot_of or kb not in self.mem.slot_of:
            return a == b
        sa, sb = self.mem.slot(ka), self.mem.slot(kb)
        return (
            sa.space is sb.space and sa.offset < sb.offset + sb.nbytes and sb.offset < sa.offset + sa.nbytes
        )

    # ---------------------------------------------------------------- the kernel

    def holder(self, v: Var, ref: bool = False) -> str:
        t = v.type
        if isinstance(t, TensorType):
            return "simpler::ChipTensor" + ("&" if ref else "")
        assert isinstance(t, ScalarType)
        return scalar_cpp_type(t.dtype)

    def value(self, e: Expr) -> str:
        if isinstance(e, Var):
            return ident(e.name)
        return scalar_expr(e, self.dim_of)
