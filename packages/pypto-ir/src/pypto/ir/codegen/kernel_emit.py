"""Kernel codegen, part 2: the instruction emitters.

One method per kind of IR operation: global-memory views and TLOAD/TSTORE, remote loads and
stores, prints, system and cross-rank calls, tile and scalar assignments, and the generic
one-instruction emitter driven by the op table (``OpSpec.cpp``). pypto.ir.codegen.kernel
walks the statements and calls them.
"""

from __future__ import annotations

import json

from pypto.ir.analysis.tile_liveness import COMM_STAGING, STAGING_SHAPE, given_scratch, staging_key
from pypto.ir.codegen.block_group import (
    BARRIER,
)
from pypto.ir.codegen.cpp import (
    converted_scalar,
    ident,
    kernel_cpp_type,
    literal,
    scalar_cpp_type,
    scalar_expr,
)
from pypto.ir.codegen.kernel_tiles import (
    _ATOMIC,
    _LOAD,
    _REDUCE,
    _STORE,
    COMM_EFFECTS,
    DEFERRED,
    PRINT_OPS,
    _copy_pipe,
    _GenBase,
)
from pypto.ir.codegen.plan import Barrier, Inst, Pipe
from pypto.ir.dtypes import DataType
from pypto.ir.errors import PyptoCompileError
from pypto.ir.nodes import (
    Call,
    Const,
    Expr,
    Var,
)
from pypto.ir.ops import OPS, Cpp
from pypto.ir.ops.cast_modes import cpp_round_mode
from pypto.ir.ops.pipe_ops import PIPE_OPS, no_pipe
from pypto.ir.ops.sort_rules import MaskPattern
from pypto.ir.ops.system_ops import HINTS as SYSTEM_HINTS
from pypto.ir.param_info import Layout
from pypto.ir.passes.memory_alloc import is_alias
from pypto.ir.platforms import BackendType
from pypto.ir.pto_layout import pto_tile
from pypto.ir.types import (
    AtomicType,
    MemorySpace,
    NotifyOp,
    ScalarType,
    TensorType,
    TileType,
    WaitCmp,
)

# The cube unit's instructions (PIPE_M), and those of them that add into an accumulator operand
# (called as ``fn(dst, acc, lhs, rhs)``; dst may be the accumulator's storage).
_CUBE_INSTRUCTIONS = frozenset({"TMATMUL", "TMATMUL_ACC", "TMATMUL_BIAS", "TGEMV", "TGEMV_ACC", "TGEMV_BIAS"})
_ACCUMULATING = frozenset({"TMATMUL_ACC", "TGEMV_ACC"})


class _Emitters(_GenBase):
    """The instruction emitters (they append to the plan through ``_GenBase``)."""

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

    def peer_view(
        self, op: str, win: Var, peer: object, dtype: DataType, offs: object, *, shape: tuple[str, str]
    ) -> str:
        """A checked GM view of rank ``peer``'s copy of window ``win`` at ``offs`` (declared by a
        line that returns from the kernel when it is rejected): the view's name."""
        view = f"{ident(win.name)}_peer{len(self.items)}"
        ct = kernel_cpp_type(dtype)
        rows, cols = shape
        self.raw(
            f"sk::GmView<{ct}> {view}; "
            f'if (!sk::peer_gm_view<{ct}>({view}, "{op}", {ident(win.name)}, '
            f"static_cast<std::int64_t>({self.scalar_arg(peer, DataType.INT64)}), {dtype.wire_code}, "
            f"{self.offsets(offs)}, {rows}, {cols})) return;"
        )
        return view

    def remote_store(self, c: Call) -> None:
        """A tile into a peer's window: TSTORE (with AtomicAdd: the atomic form) through the
        peer's view (simpler/kernel_comm.hpp)."""
        tile, win, peer, offs = c.args
        assert isinstance(tile, Var)
        assert isinstance(win, Var)
        assert isinstance(tile.type, TileType)
        name = ident(tile.name)
        dt = tile.type.dtype
        valid = (f"{name}.GetValidRow()", f"{name}.GetValidCol()")
        view = self.peer_view("pld.tile.remote_store", win, peer, dt, offs, shape=valid)
        if c.attr("atomic") is AtomicType.Add:
            line = f"TSTORE<decltype({name}), sk::GmView<{kernel_cpp_type(dt)}>, AtomicType::AtomicAdd>({view}, {name});"
        else:
            line = f"TSTORE({view}, {name});"
        self.inst(line, Pipe.MTE3, reads=(name,))

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

    def staging(self, c: Call) -> list[str]:
        """Declare the staging tiles of comm call ``c`` (tile_liveness.COMM_STAGING): their names."""
        at, count = COMM_STAGING[c.op]
        data = c.args[at]
        assert isinstance(data, Var)
        assert isinstance(data.type, TensorType)
        t = TileType(STAGING_SHAPE, data.type.dtype, MemorySpace.Vec)
        names = []
        for i in range(count):
            key = staging_key(c, i)
            name = f"stage{len(self.items)}_{i}"
            self.cname_key[name] = key
            self.declare(key, name, t, tuple(str(x) for x in STAGING_SHAPE))  # type: ignore[arg-type]
            names.append(name)
        return names

    def comm_call(self, c: Call) -> None:
        """A cross-rank operation with an effect on ChipTensors: PTO-ISA communication
        instructions on checked views of the windows (simpler/kernel_comm.hpp), or a collective's
        schedule of them (simpler/kernel_collectives.hpp). Every pipe drains before and after
        (the instructions move data between global memories, outside the tile hazards)."""
        a = c.args
        system = c.op in ("comm.notify", "comm.wait", "comm.defer_wait")
        op = ("pld.system." if system else "pld.tensor.") + c.op.split(".", 1)[1]

        def name(i: int) -> str:
            v = a[i]
            assert isinstance(v, Var)
            return ident(v.name)

        def scalar(i: int) -> str:
            return f"static_cast<std::int64_t>({self.scalar_arg(a[i], DataType.INT64)})"

        def elem(i: int) -> str:
            v = a[i]
            assert isinstance(v, Var)
            assert isinstance(v.type, TensorType)
            return kernel_cpp_type(v.type.dtype)

        def code(i: int) -> int:
            v = a[i]
            assert isinstance(v, Var)
            assert isinstance(v.type, TensorType)
            return v.type.dtype.wire_code

        stage = self.staging(c) if c.op in COMM_STAGING else []
        n = len(self.items)
        lines: tuple[str, ...]
        if c.op in ("comm.notify", "comm.wait", "comm.defer_wait"):
            peer = scalar(1) if c.op == "comm.notify" else "-1"
            offs = self.offsets(a[2] if c.op == "comm.notify" else a[1])
            value = scalar(3) if c.op == "comm.notify" else scalar(2)
            if c.op == "comm.defer_wait":  # waited for when the kernel returns (DeferredWaits)
                self.raw(f"if (!{DEFERRED}.add({name(0)}, {offs}, {value})) return;")
                return
            if c.op == "comm.notify":
                how = "pto::comm::NotifyOp::" + NotifyOp(c.attr("op")).name
                instr = f"pto::comm::TNOTIFY(cell{n}, v{n}, {how});"
            else:
                how = "pto::comm::WaitCmp::" + WaitCmp(c.attr("cmp")).name.upper()
                instr = f"pto::comm::TWAIT(cell{n}, v{n}, {how});"
            lines = (
                f"pto::comm::Signal cell{n}; std::int32_t v{n} = 0;",
                f'if (!sk::signal_cell(cell{n}, "{op}", {name(0)}, {peer}, {offs}) || '
                f'!sk::int32_value("{op}", {value}, &v{n})) return;',
                instr,
            )
        elif c.op in ("comm.put", "comm.get"):
            ct, dt = elem(0), code(0)
            region = [self.offsets(x) for x in a[3:6]] if len(a) > 3 else ["{}", "{}", "{}"]
            dst_peer, src_peer = (scalar(1), "-1") if c.op == "comm.put" else ("-1", scalar(1))
            d, s = f"dst{n}", f"src{n}"
            if c.op == "comm.put":
                instr = f"pto::comm::TPUT<{_ATOMIC[c.attr('atomic')]}>({d}, {s}, {stage[0]});"
            else:
                instr = f"pto::comm::TGET({d}, {s}, {stage[0]});"
            lines = (
                f"sk::GmN<{ct}> {d}, {s};",
                f'if (!sk::tensor_gm<{ct}>({d}, "{op}", "dst", {name(0)}, {dt}, {dst_peer}, {region[0]}, {region[2]}) || '
                f'!sk::tensor_gm<{ct}>({s}, "{op}", "src", {name(2)}, {dt}, {src_peer}, {region[1]}, {region[2]})) '
                "return;",
                instr,
            )
        elif c.op == "comm.barrier":
            lines = (f"if (!sk::barrier({name(0)})) return;",)
        elif c.op == "comm.allreduce":
            ring = "true" if c.attr("mode") == "ring" else "false"
            lines = (
                f"if (!sk::allreduce<{elem(0)}>({name(0)}, {name(1)}, {_REDUCE[c.attr('op')]}, {ring}, "
                f"{stage[0]}, {stage[1]})) return;",
            )
        elif c.op == "comm.reduce_scatter":
            lines = (
                f"if (!sk::reduce_scatter<{elem(0)}>({name(0)}, {name(1)}, {_REDUCE[c.attr('op')]}, "
                f"{stage[0]}, {stage[1]})) return;",
            )
        elif c.op == "comm.broadcast":
            lines = (
                f"if (!sk::broadcast<{elem(0)}>({name(0)}, {name(1)}, {scalar(2)}, {stage[0]})) return;",
            )
        else:
            fn = c.op.split(".", 1)[1]
            assert fn in ("allgather", "all_to_all", "all_to_all_v"), c.op
            operands = ", ".join(name(i) for i in range(len(a)))
            lines = (f"if (!sk::{fn}<{elem(1)}>({operands}, {stage[0]})) return;",)
        self.items += [Barrier(), Inst(lines), Barrier()]

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
                self.comm_call(e)
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
        rows, cols = int(t.shape[0]), int(t.shape[1])
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
        if e.op == "tile.tri":
            self.tri(v, name, t, e)
            return
        if e.op == "tile.random":
            self.random(v, name, t, e)
            return
        if e.op == "tile.mrgsort_lists":
            self.mrgsort_lists(v, name, t, e)
            return
        if e.op == "tile.ci":  # TCI<tile type, element type, descending>(dst, start)
            self.declare(v.name, name, t, (str(rows), str(cols)))
            elem = kernel_cpp_type(t.dtype)
            down = 1 if e.attr("descending") else 0
            start = self.scalar_arg(args[0], t.dtype)  # converted to the element type
            self.inst(f"TCI<decltype({name}), {elem}, {down}>({name}, {start});", Pipe.V, writes=(name,))
            return
        if e.op == "tile.set_validshape":  # the same storage, another valid shape
            src = args[0]
            assert isinstance(src, Var)
            vr, vc = self.checked_valid("pl.set_validshape", args[1:], (rows, cols))  # type: ignore[arg-type]
            self.declare(v.name, name, t, (vr, vc))
            if not self.mem.shares(v.name, src.name):
                self.copy(name, t, ident(src.name), MemorySpace.Vec, valid=False)
            return
        if e.op == "comm.remote_load":  # TLOAD through a peer's view (simpler/kernel_comm.hpp)
            win, peer, offs = args[:3]
            assert isinstance(win, Var)
            vr, vc = str(rows), str(cols)
            if len(args) == 4:
                vr, vc = self.checked_valid("pld.tile.remote_load", args[3], (rows, cols))  # type: ignore[arg-type]
            self.declare(v.name, name, t, (vr, vc))
            valid = (f"{name}.GetValidRow()", f"{name}.GetValidCol()")
            view = self.peer_view("pld.tile.remote_load", win, peer, t.dtype, offs, shape=valid)
            self.inst(f"{_LOAD.fn}({name}, {view});", Pipe.MTE2, writes=(name,))
            return
        if e.op in ("tile.fillpad", "tile.fillpad_expand"):  # the destination's PadValue is the pad
            src = args[0]
            assert isinstance(src, Var)
            self.declare(v.name, name, t, (str(rows), str(cols)), pad=e.attr("pad"))
            s = ident(src.name)
            fn = "TFILLPAD" if e.op == "tile.fillpad" else "TFILLPAD_EXPAND"
            self.inst(f"{fn}({name}, {s});", Pipe.V, reads=(s,), writes=(name,))
            return
        if e.op in PIPE_OPS:
            raise no_pipe(e.op)
        if is_alias(e):
            self.alias(v, e)
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
            if not self.mem.shares(v.name, into.name) and cpp.fn not in _ACCUMULATING:
                self.copy(name, t, src_name, t.memory)
            self.instruction(name, t, e, cpp)
            return
        vr, vc = self.valid_shape(t, e, cpp)
        self.declare(v.name, name, t, (vr, vc))
        self.instruction(name, t, e, cpp)

    def alias(self, v: Var, e: Call) -> None:
        """A reshape, or a Mat tile's transpose view: the operand's storage declared again as
        the result's tile and reinterpreted with TRESHAPE, which the device backends implement
        by pointing the result at the operand's bytes (no data moves, no pipe runs; the
        instructions that read the result are ordered against the operand's writers through
        the shared storage). A Mat tile's transpose is its NZ bytes read as ZN."""
        t = v.type
        src = e.args[0]
        assert isinstance(t, TileType)
        assert isinstance(src, Var)
        if not self.mem.shares(v.name, src.name):
            raise PyptoCompileError(
                f"kernel codegen: {e.op} result {v.name} does not share {src.name}'s storage (a compiler bug)"
            )
        name, s = ident(v.name), ident(src.name)
        if e.op == "tile.transpose_view":  # NZ bytes read as ZN, ZN as NZ
            self.declare(
                v.name, name, t, (f"{s}.GetValidCol()", f"{s}.GetValidRow()"), zn=src.name not in self.zn
            )
        else:
            self.declare(v.name, name, t, (str(int(t.shape[0])), str(int(t.shape[1]))))
        self.raw(f"TRESHAPE({name}, {s});")

    def tri(self, v: Var, name: str, t: TileType, e: Call) -> None:
        """``pl.tri``: TTRI<tile type, 0 lower / 1 upper>(dst, diagonal) over the valid shape."""
        if self.backend is BackendType.Ascend910B and t.dtype in (
            DataType.INT8,
            DataType.UINT8,
            DataType.BF16,
        ):
            raise PyptoCompileError(
                f"pl.tri: dtype {t.dtype.name} is not supported on {self.backend.hardware} hardware (TTRI there "
                "takes INT16, UINT16, INT32, UINT32, FP16 or FP32); use an a5 platform or another dtype"
            )
        valid = e.attr("valid_shape") or t.shape
        self.declare(v.name, name, t, (str(valid[0]), str(valid[1])))
        upper = 1 if e.attr("upper") else 0
        diagonal = self.scalar_arg(e.args[0], DataType.INT32)  # TTRI takes an int
        self.inst(f"TTRI<decltype({name}), {upper}>({name}, {diagonal});", Pipe.V, writes=(name,))

    def random(self, v: Var, name: str, t: TileType, e: Call) -> None:
        """``pl.tile.random``: ``TRANDOM<rounds>(dst, key, counter)`` over the valid shape, the key
        and counter the instruction's 32-bit word arrays (A5 only: refused for a2a3)."""
        if self.backend is BackendType.Ascend910B:
            raise PyptoCompileError(
                f"pl.tile.random: TRANDOM exists on A5 (Ascend950) only, not on {self.backend.hardware} "
                "hardware; compile for an a5 platform (a5sim)"
            )
        valid = e.attr("valid_shape") or t.shape
        self.declare(v.name, name, t, (str(valid[0]), str(valid[1])))
        words = [self.scalar_arg(a, DataType.UINT32) for a in e.args]
        self.raw(f"TRandomKey {name}_key = {{{', '.join(words[:2])}}};")
        self.raw(f"TRandomCounter {name}_counter = {{{', '.join(words[2:])}}};")
        rounds = int(e.attr("rounds") or 10)
        self.inst(f"TRANDOM<{rounds}>({name}, {name}_key, {name}_counter);", Pipe.V, writes=(name,))

    def mrgsort_lists(self, v: Var, name: str, t: TileType, e: Call) -> None:
        """TMRGSORT's multi-list form: ``TMRGSORT<dst, tmp, src0.., exhausted>(dst, executed, tmp,
        src0, ..)``, the sorted lists merged into a row of tmp's valid shape; ``executed`` (how
        many pairs each list gave) is the instruction's own output, not read further."""
        *lists, tmp = (ident(a.name) for a in e.args if isinstance(a, Var))
        self.declare(v.name, name, t, (f"{tmp}.GetValidRow()", f"{tmp}.GetValidCol()"))
        executed = f"{name}_executed"
        self.raw(f"MrgSortExecutedNumList {executed}{{}};")
        types = ", ".join(
            [f"decltype({name})", *(f"std::remove_reference_t<decltype({x})>" for x in (tmp, *lists))]
        )
        flag = "true" if e.attr("exhausted") else "false"
        self.inst(
            f"TMRGSORT<{types}, {flag}>({name}, {executed}, {tmp}, {', '.join(lists)});",
            Pipe.V,
            (tmp, *lists),
            (name, tmp),
        )

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
        r, c = int(t.shape[0]), int(t.shape[1])
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
        if cpp.valid == "pairs":
            return f"{a0}.GetValidRow()", f"({a0}.GetValidCol() * 2)"
        if cpp.valid == "rows":
            return f"{a0}.GetValidRow()", str(c)
        if cpp.valid == "index":
            a1 = ident(tiles[1].name)
            return f"{a1}.GetValidRow()", f"{a1}.GetValidCol()"
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
        if cpp.tail in ("row_col", "position"):
            offs = args[OPS[e.op].offsets_at or 0]
            assert isinstance(offs, tuple)
            if cpp.tail == "row_col":
                parts += [f"static_cast<std::uint16_t>({scalar_expr(o, self.dim_of)})" for o in offs]
            else:
                parts[1:1] = [f"static_cast<std::int64_t>({scalar_expr(o, self.dim_of)})" for o in offs]
        elif cpp.tail == "count":
            parts.append(f"static_cast<std::uint32_t>({scalar_expr(args[-1], self.dim_of)})")  # type: ignore[arg-type]
        elif cpp.tail == "cmp":
            parts.append(f"static_cast<CmpMode>({int(e.attr('cmp_type', 0))})")
        elif cpp.tail == "round":
            parts.append(cpp_round_mode(e.attr("mode")))
            if not t.dtype.is_float:  # an integer destination saturates (TCVT's explicit form)
                parts.append("SaturationMode::ON")
            # a float destination takes the form without SaturationMode: overflow gives infinity
            # and NaN stays NaN (IEEE, as torch), where the official CPU backend's explicit form
            # clamps the source into both types' range, NaN and infinities included
        if fn in _ACCUMULATING:  # dst = acc + a @ b (dst may be the acc's storage)
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
        if fn == "TMATMUL_ACC" and len(args) == 4:  # init_cond: overwrite where it holds
            cond = scalar_expr(args[3], self.dim_of)  # type: ignore[arg-type]
            product = ", ".join(parts[2:])
            self.inst(
                f"if ({cond}) TMATMUL({name}, {product}); else TMATMUL_ACC({', '.join(parts)});",
                Pipe.M,
                (*reads, name),
                (name,),
            )
            return
        if cpp.helper:
            call, pipe = f"sk::{fn}", Pipe.S
        elif fn in _CUBE_INSTRUCTIONS:
            phase = e.attr("acc_phase")  # a GEMV's accumulation phase: the instruction's template argument
            call, pipe = (f"{fn}<AccPhase::{phase.capitalize()}>" if phase else fn), Pipe.M
        elif fn in ("TMOV", "TEXTRACT", "TINSERT"):
            call, pipe = fn, _copy_pipe(t.memory, src_space)
        elif cpp.template == "mask_pattern":
            pattern = MaskPattern(e.attr("mask_pattern")).name
            src = f"std::remove_reference_t<decltype({parts[1]})>"  # the source may be a loop result's alias
            call, pipe = f"{fn}<decltype({name}), {src}, MaskPattern::{pattern}>", Pipe.V
        else:
            call, pipe = fn, Pipe.V
        writes = (name,)
        if cpp.into is not None:
            reads.append(name)
        self.inst(f"{call}({', '.join(parts)});", pipe, tuple(reads), writes)
