"""Kernel C++: one InCore function -> one PTO-ISA program.

The source includes ``<pto/pto-inst.hpp>`` (the PTO-ISA instruction set: our CPU implementation,
or the official headers when PTO_ISA_ROOT is set) and ``<simpler/kernel_args.hpp>`` (the kernel
ABI's argument decoding, checked GM views of ChipTensor arguments, and the ops the ISA lacks,
namespace ``simpler::kernel``, spelled ``sk::``). Its entry is ``extern "C" void
kernel_entry(std::int64_t* args)``; ``args[i]`` follows the kernel's ABI order: its tensor
parameters in order, then its scalar parameters in order.

Every tile is an ISA ``Tile`` declared where the IR defines it, with its padded physical shape
(pypto.ir.pto_layout), its valid shape computed from its operands' at run time, and placed by
``TASSIGN`` at the byte offset the memory-allocation pass gives it (pypto.ir.passes.memory_alloc;
SSA versions sharing storage share the offset, the others are copied with TMOV). Every op is one
instruction, the one its op-table entry names (``OpSpec.cpp``). The body is built as a kernel
plan (pypto.ir.codegen.plan) and the sync-insertion pass (pypto.ir.passes.sync_insertion) adds
the pipe synchronisation before it is printed. ``KernelSource.tiles`` lists the storages (padded
shapes, live ranges) for the capacity check (pypto.ir.platforms).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from pypto.ir import __version__
from pypto.ir.analysis.tile_liveness import given_scratch
from pypto.ir.codegen.block_group import (
    BARRIER,
    BLOCK_FN,
    BLOCK_STACK_BYTES,
    GROUP_HELPERS,
    SPMD_PARAMS,
    group_entry,
)
from pypto.ir.codegen.cpp import (
    COMM_NS,
    SCALAR_HELPERS,
    converted_scalar,
    ident,
    kernel_cpp_type,
    literal,
    scalar_cpp_type,
    scalar_expr,
)
from pypto.ir.codegen.plan import Branch, Inst, Item, Jump, Loop, Pipe, render
from pypto.ir.dtypes import DataType
from pypto.ir.errors import PyptoCompileError
from pypto.ir.nodes import (
    Assign,
    Break,
    Call,
    Const,
    Continue,
    Expr,
    ExprStmt,
    For,
    Function,
    If,
    Param,
    Return,
    Stmt,
    Var,
    While,
    Yield,
    stmt_exprs,
    walk_stmts,
)
from pypto.ir.ops import OPS, Cpp
from pypto.ir.ops.cast_modes import cpp_round_mode
from pypto.ir.ops.system_ops import HINTS as SYSTEM_HINTS
from pypto.ir.param_info import Layout, nz_block_shape
from pypto.ir.passes.memory_alloc import KernelMemory, allocate_kernel
from pypto.ir.passes.sync_insertion import insert_syncs
from pypto.ir.platforms import DEFAULT_PLATFORM, TileAlloc
from pypto.ir.pto_layout import pto_tile
from pypto.ir.types import (
    AtomicType,
    CoreType,
    MemorySpace,
    NotifyOp,
    PadValue,
    ReduceOp,
    ScalarType,
    TensorType,
    TileType,
    WaitCmp,
)

__all__ = ["BESPOKE", "ENTRY", "KernelSource", "abi_params", "core_type_of", "generate_kernel", "tile_type"]

ENTRY = "kernel_entry"

# PTO-ISA PadValue of a fillpad's pad attribute (the destination tile's pad value)
_PAD = {PadValue.zero: "PadValue::Zero", PadValue.min: "PadValue::Min", PadValue.max: "PadValue::Max"}

# Tile ops the emitter writes itself rather than as their table's one instruction: load/store
# (a GM view, ND or NZ), a scratch tile (a declaration), a filled tile (TEXPANDS), a valid-shape
# change, a tile element read, a print.
BESPOKE = frozenset(
    {
        "tile.load",
        "tile.store",
        "tile.create",
        "tile.full",
        "tile.expands",
        "tile.set_validshape",
        "tile.read",
        "tile.print",
        "tile.fillpad",
    }
)
PRINT_OPS = frozenset({"tile.print", "scalar.print"})
# Cross-rank operations with an effect on ChipTensors (simpler/tile/comm.hpp, collectives.hpp):
# each is one call of simpler's comm functions; as a value each names the window it acts on.
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
_ATOMIC = {AtomicType.None_: f"{COMM_NS}::AtomicType::None", AtomicType.Add: f"{COMM_NS}::AtomicType::Add"}
_REDUCE = {op: f"{COMM_NS}::ReduceOp::{op.name}" for op in ReduceOp}


def _calls_syncall(fn: Function) -> int:
    """0: the kernel does not call ``pl.system.syncall``; else its launch's block count when the
    calls record it (an inline ``pl.spmd`` body), 1 when the kernel's parameters carry it."""
    counts = [
        int(e.attr("blocks", 1))
        for s in walk_stmts(fn.body)
        for e in stmt_exprs(s)
        if isinstance(e, Call) and e.op == "system.syncall"
    ]
    return max(counts, default=0)


def _uses_comm(fn: Function) -> bool:
    return any(
        isinstance(e, Call) and (e.op.startswith("comm.") or e.op in ("comm.rank", "comm.nranks"))
        for s in walk_stmts(fn.body)
        for e in stmt_exprs(s)
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


def core_type_of(fn: Function) -> CoreType:
    """AIC when the kernel uses the cube unit (matmul or a Left/Right/Mat tile), AIV otherwise."""
    for s in walk_stmts(fn.body):
        for e in stmt_exprs(s):
            if isinstance(e, Call):
                if e.op in _CUBE_OPS:
                    return CoreType.AIC
                t = e.type
                if isinstance(t, TileType) and t.memory in (
                    MemorySpace.Left,
                    MemorySpace.Right,
                    MemorySpace.Mat,
                    MemorySpace.Acc,
                ):
                    return CoreType.AIC
    return CoreType.AIV


def tile_type(t: TileType, pad: PadValue | None = None) -> str:
    """The PTO-ISA ``Tile`` type of an IR tile (its padded physical shape, dynamic valid shape)."""
    p = pto_tile(t)
    ct = kernel_cpp_type(t.dtype)
    if t.memory is MemorySpace.Vec:
        layout = "BLayout::ColMajor" if p.col_major else "BLayout::RowMajor"
        tail = f", SLayout::NoneBox, TileConfig::fractalABSize, {_PAD[pad]}" if pad is not None else ""
        return f"Tile<TileType::Vec, {ct}, {p.rows}, {p.cols}, {layout}, -1, -1{tail}>"
    if t.memory is MemorySpace.Mat:
        return f"Tile<TileType::Mat, {ct}, {p.rows}, {p.cols}, BLayout::ColMajor, -1, -1, SLayout::RowMajor, 512>"
    alias = {MemorySpace.Left: "TileLeft", MemorySpace.Right: "TileRight", MemorySpace.Acc: "TileAcc"}
    return f"{alias[t.memory]}<{ct}, {p.rows}, {p.cols}, -1, -1>"


def _copy_pipe(dst: MemorySpace, src: MemorySpace) -> Pipe:
    """The pipe of a TMOV/TEXTRACT from ``src`` to ``dst``."""
    if src is MemorySpace.Acc:
        return Pipe.FIX
    if src is MemorySpace.Mat:
        return Pipe.MTE1
    if dst is MemorySpace.Mat:
        return Pipe.MTE3
    return Pipe.V


def generate_kernel(fn: Function, platform: str = DEFAULT_PLATFORM) -> KernelSource:
    return _KernelGen(fn, allocate_kernel(fn, platform)).run()


class _KernelGen:
    def __init__(self, fn: Function, mem: KernelMemory) -> None:
        self.fn = fn
        self.mem = mem
        self.dim_of: dict[tuple[str, int], str] = {}
        self.items: list[Item] = []
        self.loops: list[For | While] = []  # the loops around the statement being emitted
        self.space_of: dict[str, MemorySpace] = {}

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
        self, key: str, name: str, t: TileType, valid: tuple[str, str], *, pad: PadValue | None = None
    ) -> None:
        """Declare tile ``name`` (storage of IR name ``key``) with valid shape ``valid``."""
        vr, vc = valid
        if key not in self.mem.slot_of:
            raise PyptoCompileError(f"kernel codegen: tile {key} has no storage (a compiler bug)")
        slot = self.mem.slot(key)
        self.space_of[name] = t.memory
        self.raw(f"{tile_type(t, pad)} {name}({vr}, {vc});", f"TASSIGN({name}, {slot.offset:#x});")

    def storage_conflict(self, a: str, b: str) -> bool:
        ka, kb = self.cname_key.get(a, a), self.cname_key.get(b, b)
        if ka not in self.mem.slot_of or kb not in self.mem.slot_of:
            return a == b
        sa, sb = self.mem.slot(ka), self.mem.slot(kb)
        return (
            sa.space is sb.space and sa.offset < sb.offset + sb.nbytes and sb.offset < sa.offset + sa.nbytes
        )

    # ---------------------------------------------------------------- the kernel

    def run(self) -> KernelSource:
        fn = self.fn
        params = abi_params(fn)
        group = _calls_syncall(fn)
        self.cname_key: dict[str, str] = {}  # C++ tile name -> IR key of its storage
        for key in self.mem.slot_of:
            if not key.startswith("@"):
                self.cname_key[ident(key)] = key
        head = [
            f"// Generated by pypto-ir {__version__} from kernel '{fn.name}'. Do not edit.",
            "#include <cstdint>",
            "#include <limits>",
            "",
            "#ifndef __gm__",
            "#define __gm__",
            "#endif",
            "#ifndef __aicore__",
            "#if defined(__CPU_SIM)",
            "#define __aicore__",
            "#else",
            "#define __aicore__ [aicore]",
            "#endif",
            "#endif",
            "",
            "#include <pto/pto-inst.hpp>",
            "#include <simpler/kernel_args.hpp>",
        ]
        if _uses_comm(fn):  # simpler's cross-rank operations on ChipTensors
            head += [
                "#include <simpler/tile/collectives.hpp>",
                "#include <simpler/tile/comm.hpp>",
                "#include <simpler/kernel_comm.hpp>",
            ]
        head += ["", "using namespace pto;", "namespace sk = simpler::kernel;"]
        if _uses_comm(fn):
            head.append(f"namespace {COMM_NS} = simpler::tile;  // cross-rank operations (no tiles)")
        head += ["", "SIMPLER_DEFINE_KERNEL_ABI();", "", SCALAR_HELPERS]
        if group:  # the blocks of its launch run as one group (codegen/block_group.py)
            head += [
                GROUP_HELPERS,
                f"namespace {{\nvoid {BLOCK_FN}(std::int64_t* args, PyptoBlockBarrier& {BARRIER}) {{",
            ]
        else:
            head.append(
                f'extern "C" __attribute__((visibility("default"))) void {ENTRY}(std::int64_t* args) {{'
            )
        for i, p in enumerate(params):
            t = p.var.type
            name = ident(p.name)
            if isinstance(t, TensorType):
                self.raw(
                    f"const simpler::ChipTensor& {name} = sk::tensor_arg(args[{i}]);  // {p.direction.value}",
                    f"(void){name};",
                )
                if t.layout is Layout.NZ:
                    n = len(t.shape)
                    rows, c0 = nz_block_shape(t.dtype)
                    # logical [.., R, C] from the blocked [.., C/C0, R/16, 16, C0]
                    self.dim_of[(p.name, n - 1)] = (
                        f"(static_cast<std::int64_t>({name}.shapes[{n - 2}]) * {c0})"
                    )
                    self.dim_of[(p.name, n - 2)] = (
                        f"(static_cast<std::int64_t>({name}.shapes[{n - 1}]) * {rows})"
                    )
            else:
                assert isinstance(t, ScalarType)
                ct = kernel_cpp_type(t.dtype)
                hold = scalar_cpp_type(t.dtype)
                value = f"sk::scalar_arg<{ct}>(args[{i}])"
                if hold != ct:
                    value = f"static_cast<{hold}>({value})"
                self.raw(f"const {hold} {name} = {value};", f"(void){name};")
        if any(
            isinstance(e, Call) and e.op == "comm.defer_wait"
            for st in walk_stmts(fn.body)
            for e in stmt_exprs(st)
        ):  # waited for when the kernel returns, before its task completes
            self.items.insert(0, Inst((f"{COMM_NS}::DeferredWaits {DEFERRED};",)))
        self.body(fn.body)
        items = insert_syncs(self.items, self.storage_conflict)
        lines = render(items, 1)
        lines.append("}")
        if group:
            lines.append("}  // namespace")
            names = [p.name for p in params]
            at = {n: names.index(n) for n in SPMD_PARAMS if n in names}
            count = (
                f"sk::scalar_arg<std::int64_t>(args[{at[SPMD_PARAMS[1]]}])" if SPMD_PARAMS[1] in at else None
            )
            if count is None and group > 1:  # an inline pl.spmd body: the launch's count is known
                count = str(group)
            lines.append(group_entry(ENTRY, len(params), at.get(SPMD_PARAMS[0]), count, BLOCK_STACK_BYTES))
        text = "\n".join(head) + "\n" + "\n".join(lines) + "\n"
        return KernelSource(fn.name, core_type_of(fn), ENTRY, text, params, self.mem.tiles)

    def body(self, stmts: tuple[Stmt, ...]) -> None:
        for s in stmts:
            if isinstance(s, Assign):
                self.assign(s.var, s.value)
            elif isinstance(s, ExprStmt):
                c = s.value
                if not isinstance(c, Call):
                    raise PyptoCompileError(f"kernel codegen: unexpected statement {c}")
                if c.op == "tensor.write":
                    self.write(c)
                elif c.op in PRINT_OPS:
                    self.debug_print(c)
                elif c.op.startswith("system."):
                    self.system_call(c)
                elif c.op in COMM_EFFECTS:
                    self.raw(self.comm_call(c))
                elif c.op == "tile.store":
                    self.store(c)
                elif c.op == "comm.remote_store":
                    self.remote_store(c)
                elif not self.in_place(c):
                    raise PyptoCompileError(f"kernel codegen: unexpected statement {c}")
            elif isinstance(s, (For, While)):
                self.loop(s)
            elif isinstance(s, If):
                self.branch(s)
            elif isinstance(s, (Break, Continue)):
                self.leave(s)
            elif isinstance(s, (Yield, Return)):
                pass  # a yield is handled by loop()/branch(); a kernel's tensor returns alias its parameters
            else:
                raise PyptoCompileError(
                    f"kernel codegen: {type(s).__name__} cannot appear in a lowered kernel"
                )

    def offsets(self, offs: object) -> str:
        assert isinstance(offs, tuple)
        parts = [
            str(int(o.value))
            if isinstance(o, Const)
            else f"static_cast<std::int64_t>({scalar_expr(o, self.dim_of)})"
            for o in offs
        ]
        return "{" + ", ".join(parts) + "}"

    def gm(
        self, op: str, tensor: Var, dtype: DataType, offs: object, shape: tuple[str, str], *, nz: bool = False
    ) -> tuple[str, str]:
        """A checked GM view of ``tensor``'s [rows, cols] window at ``offs`` (``nz``: of an NZ
        tensor): (declaration line, view name); the line returns from the kernel when the region
        is rejected."""
        rows, cols = shape
        view = f"{ident(tensor.name)}_gm{len(self.items)}"
        ct = kernel_cpp_type(dtype)
        code = dtype.wire_code
        kind, fn = ("GmViewNz", _LOAD.nz_fn) if nz else ("GmView", "gm_view")
        line = (
            f"sk::{kind}<{ct}> {view}; "
            f'if (!sk::{fn}<{ct}>({view}, "{op} {tensor.name}", {ident(tensor.name)}, {code}, '
            f"{self.offsets(offs)}, {rows}, {cols})) return;"
        )
        return line, view

    def remote_store(self, c: Call) -> None:
        """A tile into a peer's window (simpler/kernel_comm.hpp; it drains every pipe around it)."""
        tile, win, peer, offs = c.args
        assert isinstance(tile, Var)
        assert isinstance(win, Var)
        assert isinstance(tile.type, TileType)
        add = "true" if c.attr("atomic") is AtomicType.Add else "false"
        name = ident(tile.name)
        self.inst(
            f"if (!sk::remote_store({ident(win.name)}, {name}, "
            f"static_cast<std::int64_t>({self.scalar_arg(peer, DataType.INT64)}), {tile.type.dtype.wire_code}, "
            f"{self.offsets(offs)}, {add})) return;",
            Pipe.MTE3,
            reads=(name,),
        )

    def store(self, c: Call) -> None:
        tile, offs, dst = c.args
        assert isinstance(tile, Var)
        assert isinstance(dst, Var)
        assert isinstance(tile.type, TileType)
        nz = isinstance(dst.type, TensorType) and dst.type.layout is Layout.NZ
        name = ident(tile.name)
        line, view = self.gm(
            _STORE.fn, dst, tile.type.dtype, offs, (f"{name}.GetValidRow()", f"{name}.GetValidCol()"), nz=nz
        )
        self.raw(line)
        pipe = Pipe.FIX if tile.type.memory is MemorySpace.Acc else Pipe.MTE3
        self.inst(f"{_STORE.fn}({view}, {name});", pipe, reads=(name,))

    def in_place(self, c: Call) -> bool:
        """A tile op as a statement updates its ``into`` operand in place (the blocked-matmul
        lowering's accumulations and scratch writes)."""
        spec = OPS.get(c.op)
        if spec is None or spec.cpp is None or spec.cpp.into is None:
            return False
        into = c.args[spec.cpp.into]
        assert isinstance(into, Var)
        assert isinstance(into.type, TileType)
        self.instruction(ident(into.name), into.type, c, spec.cpp)
        return True

    def debug_print(self, c: Call) -> None:
        (value,) = c.args
        label = json.dumps(str(c.attr("label")))  # a valid C string literal for any label
        if c.op == "tile.print":
            assert isinstance(value, Var)
            name = ident(value.name)
            self.raw(f"sk::print_label({label});")
            self.inst(f"TPRINT({name});", Pipe.S, reads=(name,))
            return
        vt = value.type  # type: ignore[union-attr]
        assert isinstance(vt, ScalarType)
        held = (
            "double"
            if vt.dtype.is_float
            else "unsigned long long"
            if vt.dtype.is_unsigned_int
            else "long long"
        )
        self.raw(
            f"sk::print_scalar({label}, static_cast<{held}>({scalar_expr(value, self.dim_of)}));"  # type: ignore[arg-type]
        )

    def system_call(self, c: Call) -> None:
        """A ``pl.system`` statement: ``syncall`` waits at the launch's barrier; the others order
        pipes or set up hardware the simulated chip does not have, and are recorded as comments."""
        if c.op in SYSTEM_HINTS:
            shown = ", ".join([str(a) for a in c.args] + [f"{k}={v!r}" for k, v in c.attrs])
            self.raw(f"// pl.system.{c.op.split('.', 1)[1]}({shown}): no effect on the simulated chip")
            return
        if c.op != "system.syncall":
            raise PyptoCompileError(f"kernel codegen: {c.op} is not a kernel statement")
        if len(c.args) > 1:  # soft mode with an explicit participant count: it must be the launch's
            used = f"static_cast<std::int64_t>({self.scalar_arg(c.args[1], DataType.INT64)})"
            self.raw(
                f"if ({used} != {BARRIER}.count()) {{",
                '    simpler::report_kernel_error("pl.system.syncall: used_cores is %lld but the launch has %lld '
                f'blocks", static_cast<long long>({used}), static_cast<long long>({BARRIER}.count()));',
                "    return;",
                "}",
            )
        self.items.append(
            Inst(("pipe_barrier(PIPE_ALL);", f"{BARRIER}.arrive_and_wait();  // pl.system.syncall"))
        )

    def comm_call(self, c: Call) -> str:
        """The call of a cross-rank operation with an effect on ChipTensors."""
        a = c.args
        ns = COMM_NS

        def name(i: int) -> str:
            v = a[i]
            assert isinstance(v, Var)
            return ident(v.name)

        def scalar(i: int) -> str:
            return f"static_cast<std::int64_t>({self.scalar_arg(a[i], DataType.INT64)})"

        if c.op == "comm.notify":
            op = f"{ns}::NotifyOp::" + NotifyOp(c.attr("op")).name
            return f"{ns}::notify({name(0)}, {scalar(1)}, {self.offsets(a[2])}, {scalar(3)}, {op});"
        if c.op == "comm.wait":
            cmp = f"{ns}::WaitCmp::" + WaitCmp(c.attr("cmp")).name
            return f"{ns}::wait({name(0)}, {self.offsets(a[1])}, {scalar(2)}, {cmp});"
        if c.op == "comm.barrier":
            return f"{ns}::barrier({name(0)});"
        region = "".join(f", {self.offsets(x)}" for x in a[3:6]) if c.op in ("comm.put", "comm.get") else ""
        if c.op == "comm.put":
            return f"{ns}::put({name(0)}, {scalar(1)}, {name(2)}{region}, {_ATOMIC[c.attr('atomic')]});"
        if c.op == "comm.get":
            return f"{ns}::get({name(0)}, {scalar(1)}, {name(2)}{region});"
        if c.op == "comm.allreduce":
            ring = "true" if c.attr("mode") == "ring" else "false"
            return f"{ns}::allreduce({name(0)}, {name(1)}, {_REDUCE[c.attr('op')]}, {ring});"
        if c.op == "comm.broadcast":
            return f"{ns}::broadcast({name(0)}, {name(1)}, {scalar(2)});"
        if c.op == "comm.reduce_scatter":
            return f"{ns}::reduce_scatter({name(0)}, {name(1)}, {_REDUCE[c.attr('op')]});"
        if c.op == "comm.defer_wait":
            return f"{DEFERRED}.add({name(0)}, {self.offsets(a[1])}, {scalar(2)}, {ns}::WaitCmp::Ge);"
        fn = c.op.split(".", 1)[1]
        assert fn in ("allgather", "all_to_all", "all_to_all_v"), c.op
        return f"{ns}::{fn}({', '.join(name(i) for i in range(len(a)))});"

    def one_tile(self, key: str, dtype: DataType) -> tuple[str, TileType]:
        """Declare the 1x1 Vec tile of a ``pl.read``/``pl.write`` (storage key ``key``)."""
        t = TileType((1, 1), dtype, MemorySpace.Vec)
        name = f"one{len(self.items)}"
        self.cname_key[name] = key
        self.declare(key, name, t, ("1", "1"))
        return name, t

    def write(self, c: Call) -> None:
        dst, idx, value = c.args
        assert isinstance(dst, Var)
        t = dst.type
        assert isinstance(t, TensorType)
        ct = kernel_cpp_type(t.dtype)
        one, _ = self.one_tile(f"@{id(c)}", t.dtype)
        self.inst(
            f"{one}.SetValue(0, static_cast<{ct}>({self.scalar_arg(value, t.dtype)}));", Pipe.S, writes=(one,)
        )
        line, view = self.gm(_STORE.fn, dst, t.dtype, idx, ("1", "1"))
        self.raw(line)
        self.inst(f"{_STORE.fn}({view}, {one});", Pipe.MTE3, reads=(one,))

    def scalar_arg(self, e: object, elem: DataType) -> str:
        assert not isinstance(e, tuple)
        src = getattr(getattr(e, "type", None), "dtype", None)
        if isinstance(e, Const):
            return converted_scalar(literal(e), e.dtype, elem, kernel=True)
        return converted_scalar(scalar_expr(e, self.dim_of), src, elem, kernel=True)  # type: ignore[arg-type]

    def elem_scalar(self, e: object, elem: DataType) -> str:
        """A scalar operand as the element type of a tile instruction."""
        return f"static_cast<{kernel_cpp_type(elem)}>({self.scalar_arg(e, elem)})"

    def assign(self, v: Var, e: Expr) -> None:
        name = ident(v.name)
        t = v.type
        if isinstance(e, Call) and e.op in PRINT_OPS:  # x = pl.print(y): print y, x names y
            self.debug_print(e)
            (value,) = e.args
            if isinstance(t, ScalarType):
                assert not isinstance(value, tuple)
                hold = scalar_cpp_type(t.dtype)
                self.raw(f"const {hold} {name} = static_cast<{hold}>({scalar_expr(value, self.dim_of)});")
            else:
                assert isinstance(value, Var)
                self.raw(f"auto& {name} = {ident(value.name)};")
                self.cname_key[name] = self.cname_key.get(ident(value.name), value.name)
            self.raw(f"(void){name};")
            return
        if isinstance(t, ScalarType):
            if isinstance(e, Call) and e.op == "tile.read":
                src, idx = e.args
                assert isinstance(src, Var)
                assert isinstance(idx, tuple)
                r, c = (scalar_expr(i, self.dim_of) for i in idx)
                hold = scalar_cpp_type(t.dtype)
                s = ident(src.name)
                self.items.append(
                    Inst(
                        (
                            f"const {hold} {name} = static_cast<{hold}>({s}.GetValue("
                            f"sk::elem({s}, static_cast<int>({r}), static_cast<int>({c}))));",
                        ),
                        Pipe.S,
                        reads=(s,),
                    )
                )
                return
            if isinstance(e, Call) and e.op == "tensor.read":
                src, idx = e.args
                assert isinstance(src, Var)
                hold = scalar_cpp_type(t.dtype)
                one, _ = self.one_tile(f"@{id(e)}", t.dtype)
                line, view = self.gm(_LOAD.fn, src, t.dtype, idx, ("1", "1"))
                self.raw(line)
                self.inst(f"{_LOAD.fn}({one}, {view});", Pipe.MTE2, writes=(one,))
                self.items.append(
                    Inst(
                        (f"const {hold} {name} = static_cast<{hold}>({one}.GetValue(0));",),
                        Pipe.S,
                        reads=(one,),
                    )
                )
                return
            self.raw(f"const {scalar_cpp_type(t.dtype)} {name} = {scalar_expr(e, self.dim_of)};")
            return
        if not isinstance(e, Call):
            raise PyptoCompileError(f"kernel codegen: {v.name} = {e} is not an op call")
        args = e.args
        if e.op == "comm.remote_store":
            self.remote_store(e)
            win = args[1]
            assert isinstance(win, Var)
            self.raw(f"const simpler::ChipTensor& {name} = {ident(win.name)};", f"(void){name};")
            return
        if e.op == "tensor.write":
            self.write(e)
            dst = args[0]
            assert isinstance(dst, Var)
            self.raw(f"const simpler::ChipTensor& {name} = {ident(dst.name)};", f"(void){name};")
            return
        if e.op in COMM_EFFECTS or e.op == "comm.ctx":
            if e.op != "comm.ctx":
                self.raw(self.comm_call(e))
            win = args[COMM_EFFECTS.get(e.op, 0)]
            assert isinstance(win, Var)
            self.raw(f"const simpler::ChipTensor& {name} = {ident(win.name)};", f"(void){name};")
            return
        if e.op == "tile.store":
            self.store(e)
            dst = args[2]
            assert isinstance(dst, Var)
            self.raw(f"const simpler::ChipTensor& {name} = {ident(dst.name)};", f"(void){name};")
            return
        assert isinstance(t, TileType), f"{v.name}: {t}"
        rows, cols = (int(x) for x in t.shape)
        self.cname_key[name] = v.name
        if e.op == "tile.create":
            self.declare(v.name, name, t, (str(rows), str(cols)))
            self.raw(f"(void){name};  // scratch")
            return
        if e.op in ("tile.full", "tile.expands"):
            value = args[0] if e.op == "tile.full" else args[1]
            vr, vc = str(rows), str(cols)
            if e.op == "tile.expands":  # the target's valid shape
                target = args[0]
                assert isinstance(target, Var)
                vr, vc = f"{ident(target.name)}.GetValidRow()", f"{ident(target.name)}.GetValidCol()"
            self.declare(v.name, name, t, (vr, vc))
            self.inst(f"TEXPANDS({name}, {self.elem_scalar(value, t.dtype)});", Pipe.V, writes=(name,))
            return
        if e.op == "tile.set_validshape":  # the same storage, another valid shape
            src = args[0]
            assert isinstance(src, Var)
            vr, vc = self.checked_valid("pl.set_validshape", args[1:], (rows, cols))  # type: ignore[arg-type]
            self.declare(v.name, name, t, (vr, vc))
            if not self.mem.shares(v.name, src.name):
                self.copy(name, t, ident(src.name), MemorySpace.Vec, valid=False)
            return
        if e.op == "comm.remote_load":  # a tile from a peer's window (simpler/kernel_comm.hpp)
            win, peer, offs = args[:3]
            assert isinstance(win, Var)
            vr, vc = str(rows), str(cols)
            if len(args) == 4:
                vr, vc = self.checked_valid("pld.tile.remote_load", args[3], (rows, cols))  # type: ignore[arg-type]
            self.declare(v.name, name, t, (vr, vc))
            self.inst(
                f"if (!sk::remote_load({name}, {ident(win.name)}, "
                f"static_cast<std::int64_t>({self.scalar_arg(peer, DataType.INT64)}), {t.dtype.wire_code}, "
                f"{self.offsets(offs)})) return;",
                Pipe.MTE2,
                writes=(name,),
            )
            return
        if e.op == "tile.fillpad":
            src = args[0]
            assert isinstance(src, Var)
            self.declare(v.name, name, t, (str(rows), str(cols)), pad=e.attr("pad"))
            s = ident(src.name)
            self.inst(f"TFILLPAD({name}, {s});", Pipe.V, reads=(s,), writes=(name,))
            return
        spec = OPS.get(e.op)
        if spec is None or spec.cpp is None:
            raise PyptoCompileError(f"kernel codegen: no PTO-ISA instruction for op {e.op}")
        cpp = spec.cpp
        if e.op == "tile.load":
            src, offs = args[0], args[1]
            assert isinstance(src, Var)
            nz = e.attr("layout") is Layout.NZ or (
                isinstance(src.type, TensorType) and src.type.layout is Layout.NZ
            )
            vr, vc = str(rows), str(cols)
            if len(args) == 3:
                vr, vc = self.checked_valid("pl.load", args[2], (rows, cols))  # type: ignore[arg-type]
            self.declare(v.name, name, t, (vr, vc))
            line, view = self.gm(
                cpp.fn, src, t.dtype, offs, (f"{name}.GetValidRow()", f"{name}.GetValidCol()"), nz=nz
            )
            self.raw(line)
            self.inst(f"{cpp.fn}({name}, {view});", Pipe.MTE2, writes=(name,))
            return
        if cpp.into is not None:  # the result is the into operand updated: its storage or a copy
            into = args[cpp.into]
            assert isinstance(into, Var)
            src_name = ident(into.name)
            self.declare(v.name, name, t, (f"{src_name}.GetValidRow()", f"{src_name}.GetValidCol()"))
            if not self.mem.shares(v.name, into.name) and cpp.fn != "TMATMUL_ACC":
                self.copy(name, t, src_name, t.memory)
            self.instruction(name, t, e, cpp)
            return
        vr, vc = self.valid_shape(t, e, cpp)
        self.declare(v.name, name, t, (vr, vc))
        self.instruction(name, t, e, cpp)

    def checked_valid(self, op: str, valid: tuple[Expr, ...], static: tuple[int, int]) -> tuple[str, str]:
        """A valid shape given by the kernel (constants or run-time scalars), checked against the
        tile's static shape when the kernel runs (a failure is reported and the kernel returns)."""
        vr, vc = (f"static_cast<std::int64_t>({scalar_expr(x, self.dim_of)})" for x in valid)
        if not all(isinstance(x, Const) for x in valid):
            self.raw(f'if (!sk::valid_shape_ok("tile {op}", {vr}, {vc}, {static[0]}, {static[1]})) return;')
        return f"static_cast<unsigned>({vr})", f"static_cast<unsigned>({vc})"

    def valid_shape(self, t: TileType, e: Call, cpp: Cpp) -> tuple[str, str]:
        """The C++ of the result's valid shape (``Cpp.valid``)."""
        tiles = [a for a in e.args if isinstance(a, Var) and isinstance(a.type, TileType)]
        r, c = (int(x) for x in t.shape)
        if cpp.valid == "static" or not tiles:
            return str(r), str(c)
        a0 = ident(tiles[0].name)
        if cpp.valid == "same":
            return f"{a0}.GetValidRow()", f"{a0}.GetValidCol()"
        if cpp.valid == "row":
            return f"{a0}.GetValidRow()", "1"
        if cpp.valid == "col":
            return "1", f"{a0}.GetValidCol()"
        if cpp.valid == "mask":
            return f"{a0}.GetValidRow()", f"(({a0}.GetValidCol() + 7) / 8)"
        if cpp.valid == "trans":
            return f"{a0}.GetValidCol()", f"{a0}.GetValidRow()"
        assert cpp.valid == "matmul"
        a1 = ident(tiles[1].name)
        return f"{a0}.GetValidRow()", f"{a1}.GetValidCol()"

    def copy(self, dst: str, t: TileType, src: str, src_space: MemorySpace, valid: bool = True) -> None:
        """``dst`` = ``src`` (a TMOV between two storages)."""
        if valid:
            self.raw(f"{dst}.SetValidShape({src}.GetValidRow(), {src}.GetValidCol());")
        self.inst(f"TMOV({dst}, {src});", _copy_pipe(t.memory, src_space), reads=(src,), writes=(dst,))

    @staticmethod
    def column_vector_op(t: TileType, cpp: Cpp) -> bool:
        """An element-wise instruction on a column vector: the ISA's element-wise instructions
        (with a scalar ones especially) take row-major tiles, and a ``[R, 1]`` tile is
        column-major, so the kernel applies it to row-major views of the same bytes."""
        return (
            t.memory is MemorySpace.Vec
            and pto_tile(t).col_major
            and cpp.valid == "same"
            and cpp.inplace
            and not cpp.helper
        )

    def row_view(self, name: str, t: TileType) -> str:
        """Declare ``<name>_row``: a row-major [1, rows] tile over the bytes of column vector
        ``name`` (its valid rows as valid columns); returns its name."""
        p = pto_tile(t)
        view = f"{name}_row{len(self.items)}"
        key = self.cname_key.get(name, name)
        offset = self.mem.slot(key).offset
        self.cname_key[view] = key
        ct = kernel_cpp_type(t.dtype)
        self.raw(
            f"Tile<TileType::Vec, {ct}, 1, {p.rows}, BLayout::RowMajor, -1, -1> {view}(1, {name}.GetValidRow());",
            f"TASSIGN({view}, {offset:#x});",
        )
        return view

    def instruction(self, name: str, t: TileType, e: Call, cpp: Cpp) -> None:
        """The instruction that computes tile ``name`` (``cpp``)."""
        args = e.args
        fn = cpp.fn
        parts = [name]
        reads: list[str] = []
        like = args[cpp.scalar_like] if cpp.scalar_like is not None else None
        scalar_dtype = (
            like.type.dtype if isinstance(like, Var) and isinstance(like.type, TileType) else t.dtype
        )
        flat = self.column_vector_op(t, cpp)
        if flat:  # the instruction works on row-major tiles: the same bytes as [1, rows] rows
            parts = [self.row_view(name, t)]
        for i in cpp.operands:
            a = args[i]
            if isinstance(a, Var) and not isinstance(a.type, ScalarType):
                shown = ident(a.name)
                if flat and isinstance(a.type, TileType) and pto_tile(a.type).col_major:
                    shown = self.row_view(ident(a.name), a.type)
                parts.append(shown)
                reads.append(ident(a.name))
            else:  # a scalar operand (the last one, by the table's rule)
                assert cpp.scalar_fn is not None, f"{e.op}: scalar operand without a scalar form"
                fn = cpp.scalar_fn
                parts.append(self.elem_scalar(a, scalar_dtype))
        given = given_scratch(e, cpp.tmp_arg) if cpp.tmp else None
        if given is not None:  # the kernel's own scratch tile
            parts.insert(len(parts) if cpp.tmp_at is None else cpp.tmp_at, ident(given.name))
            reads.append(ident(given.name))
        elif cpp.tmp:
            tmp_key = f"@tmp{id(e)}"
            tmp = f"{name}_tmp"
            like = args[cpp.tmp_like] if cpp.tmp_like is not None else None
            tt = like.type if isinstance(like, Var) else t
            assert isinstance(tt, TileType)
            self.cname_key[tmp] = tmp_key
            vr, vc = (
                (f"{ident(like.name)}.GetValidRow()", f"{ident(like.name)}.GetValidCol()")
                if isinstance(like, Var)
                else (str(tt.shape[0]), str(tt.shape[1]))
            )
            self.declare(tmp_key, tmp, tt, (vr, vc))
            parts.insert(len(parts) if cpp.tmp_at is None else cpp.tmp_at, tmp)
            reads.append(tmp)
        if cpp.tail == "row_col":
            offs = args[OPS[e.op].offsets_at or 0]
            assert isinstance(offs, tuple)
            parts += [f"static_cast<std::uint16_t>({scalar_expr(o, self.dim_of)})" for o in offs]
        elif cpp.tail == "cmp":
            parts.append(f"static_cast<CmpMode>({int(e.attr('cmp_type', 0))})")
        elif cpp.tail == "round":
            parts += [cpp_round_mode(e.attr("mode")), "SaturationMode::ON"]  # out-of-range values saturate
        if fn == "TMATMUL_ACC":  # dst = acc + a @ b (dst may be the acc's storage)
            acc = args[cpp.into or 0]
            assert isinstance(acc, Var)
            parts = [name, ident(acc.name), *parts[1:]]
            reads.append(ident(acc.name))
        into_arg = args[cpp.into] if cpp.into is not None else None
        src_tiles = [
            a
            for a in args
            if isinstance(a, Var)
            and isinstance(a.type, TileType)
            and not (isinstance(into_arg, Var) and a.name == into_arg.name)
        ]
        src_space = src_tiles[0].type.memory if src_tiles else t.memory  # type: ignore[union-attr]
        if cpp.helper:
            call, pipe = f"sk::{fn}", Pipe.S
        elif fn in ("TMATMUL", "TMATMUL_ACC"):
            call, pipe = fn, Pipe.M
        elif fn in ("TMOV", "TEXTRACT", "TINSERT"):
            call, pipe = fn, _copy_pipe(t.memory, src_space)
        else:
            call, pipe = fn, Pipe.V
        writes = (name,)
        if cpp.into is not None:
            reads.append(name)
        self.inst(f"{call}({', '.join(parts)});", pipe, tuple(reads), writes)

    def loop(self, s: For | While) -> None:
        for ia in s.iter_args:
            name = ident(ia.var.name)
            if isinstance(ia.var.type, TileType):
                init = ia.init
                assert isinstance(init, Var)
                i = ident(init.name)
                self.cname_key[name] = ia.var.name
                self.declare(ia.var.name, name, ia.var.type, (f"{i}.GetValidRow()", f"{i}.GetValidCol()"))
                if not self.mem.shares(ia.var.name, init.name):
                    self.copy(name, ia.var.type, i, init.type.memory, valid=False)  # type: ignore[union-attr]
            else:
                self.raw(f"{self.holder(ia.var)} {name} = {self.value(ia.init)};")
        if isinstance(s, While):
            head = f"while ({scalar_expr(s.cond, self.dim_of)}) {{"
        else:
            var = ident(s.var.name)
            start, stop, step = (scalar_expr(x, self.dim_of) for x in (s.start, s.stop, s.step))
            if isinstance(s.step, Const):
                cond = f"{var} < {stop}" if int(s.step.value) > 0 else f"{var} > {stop}"
            else:
                cond = f"(({step}) > 0 ? {var} < {stop} : {var} > {stop})"
            if s.stage is not None:  # the simulated core runs iterations in order
                self.raw(f"// pl.pipeline(stage={s.stage}): a software-pipelining hint")
            head = f"for (std::int64_t {var} = {start}; {cond}; {var} += {step}) {{"
        outer = self.nested()
        self.loops.append(s)
        try:
            self.body(s.body)
            if s.iter_args:
                y = s.body[-1]
                assert isinstance(y, Yield)
                self.carry(s, y.values)
        finally:
            self.loops.pop()
            body = self.items
            self.items = outer
        self.items.append(Loop(head, body))
        for ia, r in zip(s.iter_args, s.results, strict=True):
            ref = ident(r.name)
            if isinstance(r.type, TileType):
                self.cname_key[ref] = ia.var.name
                self.raw(f"auto& {ref} = {ident(ia.var.name)};", f"(void){ref};")
            else:
                self.raw(f"{self.holder(r, ref=True)} {ref} = {ident(ia.var.name)};", f"(void){ref};")

    def carry(self, s: For | While, values: tuple[Expr, ...]) -> None:
        """Set the loop's iter args to their next values (at a yield, break or continue)."""
        for ia, v in zip(s.iter_args, values, strict=True):
            if isinstance(v, Var) and v.name == ia.var.name:
                continue
            h = ident(ia.var.name)
            if isinstance(ia.var.type, TileType):
                assert isinstance(v, Var)
                if self.mem.shares(ia.var.name, v.name):
                    self.raw(
                        f"{h}.SetValidShape({ident(v.name)}.GetValidRow(), {ident(v.name)}.GetValidCol());"
                    )
                else:
                    self.copy(h, ia.var.type, ident(v.name), v.type.memory)  # type: ignore[union-attr]
            else:
                self.raw(f"{h} = {self.value(v)};")

    def leave(self, s: Break | Continue) -> None:
        """``break`` / ``continue``: the innermost loop's iter args take the values recorded at
        the statement (its results after a break, its next iteration's after a continue)."""
        if not self.loops:
            raise PyptoCompileError("kernel codegen: break / continue outside a loop")
        self.carry(self.loops[-1], s.values)
        self.items.append(Jump(("break;" if isinstance(s, Break) else "continue;",)))

    def branch(self, s: If) -> None:
        for r in s.results:
            name = ident(r.name)
            if isinstance(r.type, TileType):
                rr, rc = (int(x) for x in r.type.shape)
                self.cname_key[name] = r.name
                self.declare(r.name, name, r.type, (str(rr), str(rc)))
            else:
                self.raw(f"{self.holder(r)} {name}{{}};")
        cond = scalar_expr(s.cond, self.dim_of)
        outer = self.nested()
        self.arm(s.then_body, s.results)
        then = self.items
        self.items = []
        self.arm(s.else_body, s.results)
        orelse = self.items
        self.items = outer
        self.items.append(Branch(cond, then, orelse))

    def arm(self, body: tuple[Stmt, ...], results: tuple[Var, ...]) -> None:
        self.body(body)
        if results:
            y = body[-1]
            assert isinstance(y, Yield)
            for r, v in zip(results, y.values, strict=True):
                name = ident(r.name)
                if isinstance(r.type, TileType):
                    assert isinstance(v, Var)
                    if self.mem.shares(r.name, v.name):
                        self.raw(
                            f"{name}.SetValidShape({ident(v.name)}.GetValidRow(), {ident(v.name)}.GetValidCol());"
                        )
                    else:
                        self.copy(name, r.type, ident(v.name), v.type.memory)  # type: ignore[union-attr]
                else:
                    self.raw(f"{name} = {self.value(v)};")

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
