"""Kernel C++: one InCore function -> one source calling the tile library (simpler/tile.hpp).

The entry is ``extern "C" void kernel_entry(std::int64_t* args)``; ``args[i]`` follows the
kernel's ABI order: its tensor parameters in order, then its scalar parameters in order.
Every tile is a local declared where the IR defines it; every op is one library call, the one
its entry in the op table records (``OpSpec.cpp``, pypto.ir.ops.table).
Loop-carried values live in variables declared before the loop and assigned at its end.
Every tile declared is recorded (``KernelSource.tiles``; each stays on the stack for the whole
call): the build checks that they are the tiles pypto.ir.analysis.tile_liveness gives live
ranges to, and checks the peak of those live at once against the platform's on-chip buffers
(pypto.ir.platforms).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from pypto.ir import __version__
from pypto.ir.codegen.block_group import (
    BARRIER,
    BLOCK_FN,
    BLOCK_STACK_BYTES,
    GROUP_HELPERS,
    SPMD_PARAMS,
    group_entry,
)
from pypto.ir.codegen.cpp import (
    SCALAR_HELPERS,
    converted_scalar,
    cpp_type,
    ident,
    literal,
    scalar_cpp_type,
    scalar_expr,
)
from pypto.ir.dtypes import DataType
from pypto.ir.errors import PyptoCompileError, Span
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
    expr_vars,
    stmt_exprs,
    walk_stmts,
)
from pypto.ir.ops import OPS, Cpp
from pypto.ir.ops.cast_modes import cpp_round_mode
from pypto.ir.ops.system_ops import HINTS as SYSTEM_HINTS
from pypto.ir.param_info import Layout, nz_block_shape
from pypto.ir.passes.ssa import base_name
from pypto.ir.platforms import TileAlloc
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

__all__ = ["BESPOKE", "ENTRY", "KernelSource", "abi_params", "core_type_of", "generate_kernel"]

ENTRY = "kernel_entry"

_SPACE = {
    MemorySpace.Vec: "Vec",
    MemorySpace.Mat: "Mat",
    MemorySpace.Left: "Left",
    MemorySpace.Right: "Right",
    MemorySpace.Acc: "Acc",
}
# pt::Pad of a fillpad's pad attribute
_PAD = {PadValue.zero: "pt::Pad::Zero", PadValue.min: "pt::Pad::Min", PadValue.max: "pt::Pad::Max"}

# Tile ops the emitter writes itself rather than as their table's one library call: load/store
# (ND or NZ, an optional valid shape; their library functions are still the table's), a scratch
# tile (a declaration), a filled tile (Tile::fill) and a tile element read (element access).
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
    }
)
PRINT_OPS = frozenset({"tile.print", "scalar.print"})
# Cross-rank operations with an effect (simpler/tile/comm.hpp): each is one library call; as a
# value each names the window it acts on (the first tensor operand).
COMM_EFFECTS = {
    "comm.notify": 0,
    "comm.wait": 0,
    "comm.barrier": 0,
    "comm.remote_store": 1,
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
"""The kernel's ``pt::DeferredWaits`` (declared first when it calls ``pld.system.defer_wait``)."""
_ATOMIC = {AtomicType.None_: "pt::AtomicType::None", AtomicType.Add: "pt::AtomicType::Add"}
_REDUCE = {op: f"pt::ReduceOp::{op.name}" for op in ReduceOp}


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


def _cpp(op: str) -> Cpp:
    cpp = OPS[op].cpp
    if cpp is None or cpp.nz_fn is None:
        raise PyptoCompileError(f"kernel codegen: the op table gives {op} no ND and NZ library functions")
    return cpp


_LOAD, _STORE = _cpp("tile.load"), _cpp("tile.store")
_PRINT = OPS["tile.print"].cpp or Cpp("print")  # one library function prints tiles and scalars
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
    tiles: tuple[TileAlloc, ...] = ()  # every tile the kernel declares, in source order (no ranges)


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


def tile_type(t: TileType) -> str:
    r, c = t.shape
    return f"pt::Tile<pt::Space::{_SPACE[t.memory]}, {cpp_type(t.dtype)}, {r}, {c}>"


def generate_kernel(fn: Function) -> KernelSource:
    return _KernelGen(fn).run()


class _KernelGen:
    def __init__(self, fn: Function) -> None:
        self.fn = fn
        self.lines: list[str] = []
        self.dim_of: dict[tuple[str, int], str] = {}
        self.later_uses: dict[str, int] = {}
        self.tiles: list[TileAlloc] = []
        self.loops: list[For | While] = []  # the loops around the statement being emitted

    def record(self, name: str, t: TileType, span: object = None) -> None:
        """Record a tile the generated code declares (its storage lives for the invocation)."""
        r, c = t.shape
        where = span if isinstance(span, Span) else None
        self.tiles.append(TileAlloc(base_name(name), t.memory, t.dtype, (int(r), int(c)), where))

    def emit(self, depth: int, text: str) -> None:
        self.lines.append("    " * depth + text)

    def run(self) -> KernelSource:
        fn = self.fn
        params = abi_params(fn)
        group = _calls_syncall(fn)
        head = [
            f"// Generated by pypto-ir {__version__} from kernel '{fn.name}'. Do not edit.",
            "#include <cstdint>",
            "#include <limits>",
            "#include <simpler/tile.hpp>",
            "",
            "namespace pt = simpler::tile;",
            "",
            "SIMPLER_DEFINE_KERNEL_ABI();",
            "",
            SCALAR_HELPERS,
        ]
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
                self.emit(
                    1,
                    f"const simpler::ChipTensor& {name} = pt::tensor_arg(args[{i}]);  // {p.direction.value}",
                )
                self.emit(1, f"(void){name};")
                if t.layout is Layout.NZ:
                    n = len(t.shape)
                    rows, c0 = nz_block_shape(t.dtype)
                    # logical [.., R, C] from the blocked [.., C/C0, R/16, 16, C0] (load_nz checks the block)
                    self.dim_of[(p.name, n - 1)] = (
                        f"(static_cast<std::int64_t>({name}.shapes[{n - 2}]) * {c0})"
                    )
                    self.dim_of[(p.name, n - 2)] = (
                        f"(static_cast<std::int64_t>({name}.shapes[{n - 1}]) * {rows})"
                    )
            else:
                assert isinstance(t, ScalarType)
                ct = cpp_type(t.dtype)
                hold = scalar_cpp_type(t.dtype)
                value = f"pt::scalar_arg<{ct}>(args[{i}])"
                if hold != ct:
                    value = f"static_cast<{hold}>({value})"
                self.emit(1, f"const {hold} {name} = {value};")
                self.emit(1, f"(void){name};")
        if any(
            isinstance(e, Call) and e.op == "comm.defer_wait"
            for st in walk_stmts(fn.body)
            for e in stmt_exprs(st)
        ):  # waited for when the kernel returns, before its task completes
            self.lines.insert(0, f"    pt::DeferredWaits {DEFERRED};")
        self.body(fn.body, 1)
        self.lines.append("}")
        if group:
            self.lines.append("}  // namespace")
            names = [p.name for p in params]
            at = {n: names.index(n) for n in SPMD_PARAMS if n in names}
            count = (
                f"pt::scalar_arg<std::int64_t>(args[{at[SPMD_PARAMS[1]]}])" if SPMD_PARAMS[1] in at else None
            )
            if count is None and group > 1:  # an inline pl.spmd body: the launch's count is known
                count = str(group)
            self.lines.append(
                group_entry(ENTRY, len(params), at.get(SPMD_PARAMS[0]), count, BLOCK_STACK_BYTES)
            )
        text = "\n".join(head) + "\n" + "\n".join(self.lines) + "\n"
        return KernelSource(fn.name, core_type_of(fn), ENTRY, text, params, tuple(self.tiles))

    def used_after(self, body: tuple[Stmt, ...], index: int, name: str) -> bool:
        for s in body[index + 1 :]:
            for inner in walk_stmts((s,)):
                for e in stmt_exprs(inner):
                    if any(v.name == name for v in expr_vars(e)):
                        return True
        return False

    def body(self, stmts: tuple[Stmt, ...], depth: int) -> None:
        for i, s in enumerate(stmts):
            if isinstance(s, Assign):
                self.assign(s.var, s.value, depth, stmts, i)
            elif isinstance(s, ExprStmt):
                if isinstance(s.value, Call) and s.value.op == "tensor.write":
                    self.write(s.value, depth)
                    continue
                if isinstance(s.value, Call) and s.value.op in PRINT_OPS:
                    self.debug_print(s.value, depth)
                    continue
                if isinstance(s.value, Call) and s.value.op.startswith("system."):
                    self.system_call(s.value, depth)
                    continue
                if isinstance(s.value, Call) and s.value.op in COMM_EFFECTS:
                    self.emit(depth, self.comm_call(s.value))
                    continue
                if isinstance(s.value, Call) and s.value.op != "tile.store" and self.in_place(s.value, depth):
                    continue
                if not isinstance(s.value, Call) or s.value.op != "tile.store":
                    raise PyptoCompileError(f"kernel codegen: unexpected statement {s.value}")
                self.store(s.value, depth)
            elif isinstance(s, (For, While)):
                self.loop(s, depth)
            elif isinstance(s, If):
                self.branch(s, depth)
            elif isinstance(s, (Break, Continue)):
                self.leave(s, depth)
            elif isinstance(s, Yield):
                pass  # handled by loop()
            elif isinstance(s, Return):
                if s.values:
                    pass  # a kernel's tensor returns alias its parameters; nothing to emit
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

    def store(self, c: Call, depth: int) -> None:
        tile, offs, dst = c.args
        assert isinstance(tile, Var)
        assert isinstance(dst, Var)
        nz = isinstance(dst.type, TensorType) and dst.type.layout is Layout.NZ
        fn = _STORE.nz_fn if nz else _STORE.fn
        self.emit(depth, f"pt::{fn}({ident(dst.name)}, {ident(tile.name)}, {self.offsets(offs)});")

    def in_place(self, c: Call, depth: int) -> bool:
        """A tile op as a statement updates its ``into`` operand in place (the blocked-matmul
        lowering's accumulations and scratch writes): the library call on the existing tile."""
        spec = OPS.get(c.op)
        if spec is None or spec.cpp is None or spec.cpp.into is None:
            return False
        into = c.args[spec.cpp.into]
        assert isinstance(into, Var)
        assert isinstance(into.type, TileType)
        _, line = self.call(ident(into.name), into.type, c, spec.cpp)
        self.emit(depth, line)
        return True

    def debug_print(self, c: Call, depth: int) -> None:
        (value,) = c.args
        label = json.dumps(str(c.attr("label")))  # a valid C string literal for any label
        if c.op == "tile.print":
            assert isinstance(value, Var)
            self.emit(depth, f"pt::{_PRINT.fn}({label}, {ident(value.name)});")
            return
        vt = value.type  # type: ignore[union-attr]
        assert isinstance(vt, ScalarType)
        hold = scalar_cpp_type(vt.dtype)
        self.emit(depth, f"pt::{_PRINT.fn}({label}, static_cast<{hold}>({scalar_expr(value, self.dim_of)}));")  # type: ignore[arg-type]

    def system_call(self, c: Call, depth: int) -> None:
        """A ``pl.system`` statement: ``syncall`` waits at the launch's barrier; the others order
        pipes or set up hardware the simulated chip does not have, and are recorded as comments."""
        if c.op in SYSTEM_HINTS:
            shown = ", ".join([str(a) for a in c.args] + [f"{k}={v!r}" for k, v in c.attrs])
            self.emit(
                depth, f"// pl.system.{c.op.split('.', 1)[1]}({shown}): no effect on the simulated chip"
            )
            return
        if c.op != "system.syncall":
            raise PyptoCompileError(f"kernel codegen: {c.op} is not a kernel statement")
        if len(c.args) > 1:  # soft mode with an explicit participant count: it must be the launch's
            used = f"static_cast<std::int64_t>({self.scalar_arg(c.args[1], DataType.INT64)})"
            self.emit(depth, f"if ({used} != {BARRIER}.count()) {{")
            self.emit(
                depth + 1,
                'simpler::report_kernel_error("pl.system.syncall: used_cores is %lld but the launch has %lld '
                f'blocks", static_cast<long long>({used}), static_cast<long long>({BARRIER}.count()));',
            )
            self.emit(depth + 1, "return;")
            self.emit(depth, "}")
        self.emit(depth, f"{BARRIER}.arrive_and_wait();  // pl.system.syncall")

    def comm_call(self, c: Call) -> str:
        """The tile-library call of a cross-rank operation with an effect."""
        a = c.args

        def name(i: int) -> str:
            v = a[i]
            assert isinstance(v, Var)
            return ident(v.name)

        def scalar(i: int) -> str:
            return f"static_cast<std::int64_t>({self.scalar_arg(a[i], DataType.INT64)})"

        if c.op == "comm.notify":
            op = "pt::NotifyOp::" + NotifyOp(c.attr("op")).name
            return f"pt::notify({name(0)}, {scalar(1)}, {self.offsets(a[2])}, {scalar(3)}, {op});"
        if c.op == "comm.wait":
            cmp = "pt::WaitCmp::" + WaitCmp(c.attr("cmp")).name
            return f"pt::wait({name(0)}, {self.offsets(a[1])}, {scalar(2)}, {cmp});"
        if c.op == "comm.barrier":
            return f"pt::barrier({name(0)});"
        if c.op == "comm.remote_store":
            atomic = _ATOMIC[c.attr("atomic")]
            return f"pt::remote_store({name(1)}, {name(0)}, {scalar(2)}, {self.offsets(a[3])}, {atomic});"
        region = "".join(f", {self.offsets(x)}" for x in a[3:6]) if c.op in ("comm.put", "comm.get") else ""
        if c.op == "comm.put":
            return f"pt::put({name(0)}, {scalar(1)}, {name(2)}{region}, {_ATOMIC[c.attr('atomic')]});"
        if c.op == "comm.get":
            return f"pt::get({name(0)}, {scalar(1)}, {name(2)}{region});"
        if c.op == "comm.allreduce":
            ring = "true" if c.attr("mode") == "ring" else "false"
            return f"pt::allreduce({name(0)}, {name(1)}, {_REDUCE[c.attr('op')]}, {ring});"
        if c.op == "comm.broadcast":
            return f"pt::broadcast({name(0)}, {name(1)}, {scalar(2)});"
        if c.op == "comm.reduce_scatter":
            return f"pt::reduce_scatter({name(0)}, {name(1)}, {_REDUCE[c.attr('op')]});"
        if c.op == "comm.defer_wait":
            return f"{DEFERRED}.add({name(0)}, {self.offsets(a[1])}, {scalar(2)}, pt::WaitCmp::Ge);"
        fn = c.op.split(".", 1)[1]
        assert fn in ("allgather", "all_to_all", "all_to_all_v"), c.op
        return f"pt::{fn}({', '.join(name(i) for i in range(len(a)))});"

    def write(self, c: Call, depth: int) -> None:
        dst, idx, value = c.args
        assert isinstance(dst, Var)
        t = dst.type
        assert isinstance(t, TensorType)
        ct = cpp_type(t.dtype)
        self.record(f"pl.write({dst.name})", TileType((1, 1), t.dtype, MemorySpace.Vec), c.span)
        self.emit(depth, "{  // one element through a 1x1 tile (bounds-checked like any store)")
        self.emit(depth + 1, f"pt::Tile<pt::Space::Vec, {ct}, 1, 1> one;")
        self.emit(depth + 1, f"one(0, 0) = static_cast<{ct}>({self.scalar_arg(value, t.dtype)});")
        self.emit(depth + 1, f"pt::{_STORE.fn}({ident(dst.name)}, one, {self.offsets(idx)});")
        self.emit(depth, "}")

    def scalar_arg(self, e: object, elem: DataType) -> str:
        assert not isinstance(e, tuple)
        src = getattr(getattr(e, "type", None), "dtype", None)
        if isinstance(e, Const):
            return converted_scalar(literal(e), e.dtype, elem)
        return converted_scalar(scalar_expr(e, self.dim_of), src, elem)  # type: ignore[arg-type]

    def assign(self, v: Var, e: Expr, depth: int, body: tuple[Stmt, ...], index: int) -> None:
        name = ident(v.name)
        t = v.type
        if isinstance(e, Call) and e.op in PRINT_OPS:  # x = pl.print(y): print y, x names y
            self.debug_print(e, depth)
            (value,) = e.args
            if isinstance(t, ScalarType):
                assert not isinstance(value, tuple)
                hold = scalar_cpp_type(t.dtype)
                self.emit(
                    depth, f"const {hold} {name} = static_cast<{hold}>({scalar_expr(value, self.dim_of)});"
                )
            else:
                assert isinstance(value, Var)
                self.emit(depth, f"const auto& {name} = {ident(value.name)};")
            self.emit(depth, f"(void){name};")
            return
        if isinstance(t, ScalarType):
            if isinstance(e, Call) and e.op == "tile.read":
                src, idx = e.args
                assert isinstance(src, Var)
                assert isinstance(idx, tuple)
                r, c = (scalar_expr(i, self.dim_of) for i in idx)
                hold = scalar_cpp_type(t.dtype)
                self.emit(
                    depth,
                    f"const {hold} {name} = static_cast<{hold}>({ident(src.name)}(static_cast<int>({r}), static_cast<int>({c})));",
                )
                return
            if isinstance(e, Call) and e.op == "tensor.read":
                src, idx = e.args
                assert isinstance(src, Var)
                hold = scalar_cpp_type(t.dtype)
                self.record(
                    f"{v.name} (pl.read)", TileType((1, 1), t.dtype, MemorySpace.Vec), v.span or e.span
                )
                self.emit(depth, f"pt::Tile<pt::Space::Vec, {cpp_type(t.dtype)}, 1, 1> {name}_rd;")
                self.emit(depth, f"pt::{_LOAD.fn}({name}_rd, {ident(src.name)}, {self.offsets(idx)});")
                self.emit(depth, f"const {hold} {name} = static_cast<{hold}>({name}_rd(0, 0));")
                return
            self.emit(depth, f"const {scalar_cpp_type(t.dtype)} {name} = {scalar_expr(e, self.dim_of)};")
            return
        if not isinstance(e, Call):
            raise PyptoCompileError(f"kernel codegen: {v.name} = {e} is not an op call")
        args = e.args
        if e.op == "tensor.write":
            self.write(e, depth)
            dst = args[0]
            assert isinstance(dst, Var)
            self.emit(depth, f"const simpler::ChipTensor& {name} = {ident(dst.name)};")
            self.emit(depth, f"(void){name};")
            return
        if e.op in COMM_EFFECTS or e.op == "comm.ctx":
            if e.op != "comm.ctx":
                self.emit(depth, self.comm_call(e))
            win = args[COMM_EFFECTS.get(e.op, 0)]
            assert isinstance(win, Var)
            self.emit(depth, f"const simpler::ChipTensor& {name} = {ident(win.name)};")
            self.emit(depth, f"(void){name};")
            return
        if e.op == "tile.store":
            self.store(e, depth)
            dst = args[2]
            assert isinstance(dst, Var)
            self.emit(depth, f"const simpler::ChipTensor& {name} = {ident(dst.name)};")
            self.emit(depth, f"(void){name};")
            return
        assert isinstance(t, TileType), f"{v.name}: {t}"
        self.record(v.name, t, v.span or e.span)  # every branch below declares exactly this tile
        decl = f"{tile_type(t)} {name};"
        if e.op == "tile.create":
            self.emit(depth, f"{decl}  // scratch")
            self.emit(depth, f"(void){name};")
            return
        if e.op == "tile.full":
            self.emit(depth, decl)
            self.emit(
                depth, f"{name}.fill(static_cast<{cpp_type(t.dtype)}>({self.scalar_arg(args[0], t.dtype)}));"
            )
            return
        if e.op == "comm.remote_load":
            win, peer, offs = args[:3]
            assert isinstance(win, Var)
            self.emit(depth, decl)
            if len(args) == 4:  # valid_shape: only that part is loaded
                vr, vc = (f"static_cast<int>({scalar_expr(x, self.dim_of)})" for x in args[3])  # type: ignore[union-attr]
                self.emit(depth, f"{name}.set_valid({vr}, {vc});")
            self.emit(
                depth,
                f"pt::remote_load({name}, {ident(win.name)}, "
                f"static_cast<std::int64_t>({self.scalar_arg(peer, DataType.INT64)}), {self.offsets(offs)});",
            )
            return
        if e.op == "tile.expands":  # the scalar everywhere; the target's valid shape
            target = args[0]
            assert isinstance(target, Var)
            self.emit(depth, decl)
            self.emit(
                depth, f"{name}.fill(static_cast<{cpp_type(t.dtype)}>({self.scalar_arg(args[1], t.dtype)}));"
            )
            self.emit(
                depth, f"{name}.set_valid({ident(target.name)}.valid_rows, {ident(target.name)}.valid_cols);"
            )
            return
        if e.op == "tile.set_validshape":  # the same data; set_valid reports a shape outside the tile
            src = args[0]
            assert isinstance(src, Var)
            vr, vc = (f"static_cast<int>({scalar_expr(x, self.dim_of)})" for x in args[1:])  # type: ignore[arg-type]
            self.emit(depth, f"{tile_type(t)} {name} = {ident(src.name)};")
            self.emit(depth, f"{name}.set_valid({vr}, {vc});")
            return
        spec = OPS.get(e.op)
        if spec is None or spec.cpp is None:
            raise PyptoCompileError(f"kernel codegen: no C++ for op {e.op}")
        cpp = spec.cpp
        if e.op == "tile.load":
            src, offs = args[0], args[1]
            assert isinstance(src, Var)
            nz = e.attr("layout") is Layout.NZ or (
                isinstance(src.type, TensorType) and src.type.layout is Layout.NZ
            )
            valid = ""
            if len(args) == 3:
                vr, vc = (scalar_expr(x, self.dim_of) for x in args[2])  # type: ignore[union-attr]
                valid = f", static_cast<int>({vr}), static_cast<int>({vc})"
            self.emit(depth, decl)
            self.emit(
                depth,
                f"pt::{cpp.nz_fn if nz else cpp.fn}({name}, {ident(src.name)}, {self.offsets(offs)}{valid});",
            )
            return
        for line in self.call(name, t, e, cpp):
            self.emit(depth, line)

    def call(self, name: str, t: TileType, e: Call, cpp: Cpp) -> tuple[str, str]:
        """The declaration of tile ``name`` and the library call that computes it (``cpp``)."""
        args = e.args
        fn = cpp.fn
        parts = [name]
        like = args[cpp.scalar_like] if cpp.scalar_like is not None else None
        scalar_dtype = (
            like.type.dtype if isinstance(like, Var) and isinstance(like.type, TileType) else t.dtype
        )
        for i in cpp.operands:
            a = args[i]
            if isinstance(a, Var) and not isinstance(a.type, ScalarType):
                parts.append(ident(a.name))
            else:  # a scalar operand (the last one, by the table's rule)
                assert cpp.scalar_fn is not None, f"{e.op}: scalar operand without a scalar form"
                fn = cpp.scalar_fn
                parts.append(self.scalar_arg(a, scalar_dtype))
        if cpp.tail == "row_col":
            offs = args[OPS[e.op].offsets_at or 0]
            assert isinstance(offs, tuple)
            parts += [scalar_expr(o, self.dim_of) for o in offs]
        elif cpp.tail == "pad":
            parts.append(_PAD[e.attr("pad")])
        elif cpp.tail == "cmp":
            parts.append(f"static_cast<pt::CmpMode>({int(e.attr('cmp_type', 0))})")
        elif cpp.tail == "round":
            parts.append(cpp_round_mode(e.attr("mode")))
        if cpp.into is None:
            head = f"{tile_type(t)} {name};"
        else:
            into = args[cpp.into]
            assert isinstance(into, Var)
            head = f"{tile_type(t)} {name} = {ident(into.name)};  // {fn} into a copy (SSA)"
        return head, f"pt::{fn}({', '.join(parts)});"

    def loop(self, s: For | While, depth: int) -> None:
        for ia in s.iter_args:
            if isinstance(ia.var.type, TileType):
                self.record(ia.var.name, ia.var.type, ia.var.span or s.span)
            self.emit(depth, f"{self.holder(ia.var)} {ident(ia.var.name)} = {self.value(ia.init)};")
        if isinstance(s, While):
            self.emit(depth, f"while ({scalar_expr(s.cond, self.dim_of)}) {{")
        else:
            var = ident(s.var.name)
            start, stop, step = (scalar_expr(x, self.dim_of) for x in (s.start, s.stop, s.step))
            if isinstance(s.step, Const):
                cond = f"{var} < {stop}" if int(s.step.value) > 0 else f"{var} > {stop}"
            else:
                cond = f"(({step}) > 0 ? {var} < {stop} : {var} > {stop})"
            if s.stage is not None:  # the simulated core runs iterations in order
                self.emit(depth, f"// pl.pipeline(stage={s.stage}): a software-pipelining hint")
            self.emit(depth, f"for (std::int64_t {var} = {start}; {cond}; {var} += {step}) {{")
        self.loops.append(s)
        try:
            self.body(s.body, depth + 1)
        finally:
            self.loops.pop()
        if s.iter_args:
            y = s.body[-1]
            assert isinstance(y, Yield)
            self.carry(s, y.values, depth + 1)
        self.emit(depth, "}")
        for ia, r in zip(s.iter_args, s.results, strict=True):
            self.emit(depth, f"{self.holder(r, ref=True)} {ident(r.name)} = {ident(ia.var.name)};")
            self.emit(depth, f"(void){ident(r.name)};")

    def carry(self, s: For | While, values: tuple[Expr, ...], depth: int) -> None:
        """Set the loop's iter args to their next values (at a yield, break or continue)."""
        for ia, v in zip(s.iter_args, values, strict=True):
            if not (isinstance(v, Var) and v.name == ia.var.name):
                self.emit(depth, f"{ident(ia.var.name)} = {self.value(v)};")

    def leave(self, s: Break | Continue, depth: int) -> None:
        """``break`` / ``continue``: the innermost loop's iter args take the values recorded at
        the statement (its results after a break, its next iteration's after a continue)."""
        if not self.loops:
            raise PyptoCompileError("kernel codegen: break / continue outside a loop")
        self.carry(self.loops[-1], s.values, depth)
        self.emit(depth, "break;" if isinstance(s, Break) else "continue;")

    def branch(self, s: If, depth: int) -> None:
        for r in s.results:
            if isinstance(r.type, TileType):
                self.record(r.name, r.type, r.span or s.span)
            init = "{}" if not isinstance(r.type, TileType) else ""
            self.emit(depth, f"{self.holder(r)} {ident(r.name)}{init};")
        self.emit(depth, f"if ({scalar_expr(s.cond, self.dim_of)}) {{")
        self.arm(s.then_body, s.results, depth + 1)
        self.emit(depth, "} else {")
        self.arm(s.else_body, s.results, depth + 1)
        self.emit(depth, "}")

    def arm(self, body: tuple[Stmt, ...], results: tuple[Var, ...], depth: int) -> None:
        self.body(body, depth)
        if results:
            y = body[-1]
            assert isinstance(y, Yield)
            for r, v in zip(results, y.values, strict=True):
                self.emit(depth, f"{ident(r.name)} = {self.value(v)};")

    def holder(self, v: Var, ref: bool = False) -> str:
        t = v.type
        if isinstance(t, TileType):
            return tile_type(t) + ("&" if ref else "")
        if isinstance(t, TensorType):
            return "simpler::ChipTensor" + ("&" if ref else "")
        assert isinstance(t, ScalarType)
        return scalar_cpp_type(t.dtype)

    def value(self, e: Expr) -> str:
        if isinstance(e, Var):
            return ident(e.name)
        return scalar_expr(e, self.dim_of)
