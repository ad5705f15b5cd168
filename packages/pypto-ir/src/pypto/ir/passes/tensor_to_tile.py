"""Tensor-to-tile lowering: tensor-level statements inside kernels become load/compute/store.

Inside a kernel, ``out[:] = pl.add(a, b)`` (a ``TensorWrite`` of tensor-level ops) becomes:
load each tensor operand into a Vec tile of its whole (static) shape, apply the tile op,
store the tile into the window of ``out``. A tensor-level matmul loads its operands into Mat,
moves them to Left/Right, multiplies into Acc and moves the result to Vec. Tensor-level
values are held in tiles, so every tensor operand needs a static shape that fits one tile.
"""

from __future__ import annotations

from dataclasses import replace

from pypto.ir.dtypes import DataType
from pypto.ir.errors import KernelError
from pypto.ir.nodes import (
    Arg,
    Assign,
    Call,
    Const,
    Expr,
    ExprStmt,
    For,
    Function,
    If,
    Program,
    Stmt,
    TensorWrite,
    Var,
    Yield,
)
from pypto.ir.ops import OPS, infer, tile_shape_for
from pypto.ir.param_info import Layout
from pypto.ir.types import AtomicType, MemorySpace, TensorType, TileType, Type

NAME = "tensor_to_tile"
MAX_TILE_ELEMENTS = 1 << 16
"""Largest tile a tensor-level op may need (elements); larger tensors must be tiled by hand."""


def run(program: Program) -> Program:
    return program.replace(tuple(_lower_fn(f) if f.func_type.is_kernel else f for f in program.funcs))


def _lower_fn(fn: Function) -> Function:
    lw = _Lowerer()
    return replace(fn, body=lw.body(fn.body))


def _add(a: Expr, b: Expr) -> Expr:
    from pypto.ir.nodes import BinOp
    from pypto.ir.types import ScalarType

    if isinstance(a, Const) and isinstance(b, Const):
        return Const(int(a.value) + int(b.value), DataType.INT64)
    if isinstance(a, Const) and a.value == 0:
        return b
    if isinstance(b, Const) and b.value == 0:
        return a
    return BinOp("add", a, b, ScalarType(DataType.INT64))


def _is_tensor_compute(e: object) -> bool:
    """A tensor-level op that is kernel work (the op table's ``on_core``): lowered to tiles. The
    others (dims, element reads/writes, windows, allocation) stay as they are."""
    return isinstance(e, Call) and e.op.startswith("tensor.") and OPS[e.op].on_core


class _Lowerer:
    def __init__(self) -> None:
        self.tiles: dict[str, Var] = {}  # tensor-level value -> the tile that holds it
        self.loaded: dict[tuple[str, MemorySpace], Var] = {}  # tensor already loaded in this body
        self.views: dict[str, Call] = {}  # window value -> its tensor.view call
        self.n = 0

    def fresh(self, base: str, ty: Type) -> Var:
        self.n += 1
        return Var(f"{base}_t{self.n}", ty)

    def body(self, stmts: tuple[Stmt, ...]) -> tuple[Stmt, ...]:
        out: list[Stmt] = []
        for original in stmts:
            s = original
            if isinstance(s, Assign) and isinstance(s.value, Call) and s.value.op == "tensor.view":
                self.views[s.var.name] = s.value  # consumed by the loads and stores that use it
                continue
            if (
                isinstance(s, (Assign, ExprStmt))
                and isinstance(s.value, Call)
                and self._through_view(s.value)
            ):
                s = replace(s, value=self._rebase(s.value))
            if isinstance(s, Assign) and isinstance(s.value, Call) and s.value.op == "tensor.assemble":
                out.extend(self.assemble(s.var, s.value))
            elif isinstance(s, Assign) and _is_tensor_compute(s.value):
                assert isinstance(s.value, Call)
                tile = self.lower_call(s.value, out, s.var.name)
                self.tiles[s.var.name] = tile
            elif isinstance(s, TensorWrite):
                out.extend(self.write(s))
            elif isinstance(s, For):
                self.loaded = {}
                out.append(replace(s, body=self.body(s.body)))
                self.loaded = {}  # the loop may have written anything
            elif isinstance(s, If):
                self.loaded = {}
                then = self.body(s.then_body)
                self.loaded = {}
                els = self.body(s.else_body)
                self.loaded = {}
                out.append(replace(s, then_body=then, else_body=els))
            elif isinstance(s, (Assign, ExprStmt, Yield)) and self._mentions_lowered(s):
                raise KernelError(
                    "a tensor-level value can only be written into a tensor (out[...] = value) or used by "
                    "another tensor-level op",
                    getattr(s, "span", None),
                )
            else:
                value = s.value if isinstance(s, (Assign, ExprStmt)) else None
                if isinstance(value, Call) and value.op == "tile.store" and isinstance(value.args[2], Var):
                    self.loaded = {k: v for k, v in self.loaded.items() if k[0] != value.args[2].name}
                out.append(s)
        return tuple(out)

    def _through_view(self, c: Call) -> bool:
        pos = {"tile.load": 0, "tile.store": 2}.get(c.op)
        return pos is not None and isinstance(c.args[pos], Var) and c.args[pos].name in self.views  # type: ignore[union-attr]

    def _rebase(self, c: Call) -> Call:
        """A load/store through a window becomes one on the base tensor, offsets added."""
        pos = 0 if c.op == "tile.load" else 2
        view = self.views[c.args[pos].name]  # type: ignore[union-attr]
        base, base_offs = view.args
        offs = c.args[1]
        assert isinstance(offs, tuple)
        assert isinstance(base_offs, tuple)
        summed = tuple(_add(a, b) for a, b in zip(base_offs, offs, strict=True))
        args = list(c.args)
        args[pos] = base
        args[1] = summed
        ty = c.type if c.op == "tile.load" else base.type  # type: ignore[union-attr]
        return replace(c, args=tuple(args), type=ty)

    def _mentions_lowered(self, s: Stmt) -> bool:
        from pypto.ir.nodes import expr_vars, stmt_exprs

        return any(v.name in self.tiles for e in stmt_exprs(s) for v in expr_vars(e))

    def operand(self, e: Expr, out: list[Stmt], span: object, memory: MemorySpace = MemorySpace.Vec) -> Expr:
        """The tile holding tensor-level operand ``e`` (loading a tensor on demand)."""
        if isinstance(e, Var) and e.name in self.tiles:
            t = self.tiles[e.name]
            if memory is not MemorySpace.Vec and isinstance(t.type, TileType) and t.type.memory is not memory:
                return self.emit("tile.move", [t], {"memory": memory}, out, "mv")
            return t
        if isinstance(e, Var) and e.name in self.views:
            view = self.views[e.name]
            base, offs = view.args
            vt = view.type
            assert isinstance(vt, TensorType)
            assert isinstance(offs, tuple)
            attrs_v: dict[str, object] = {"shape": vt.static_shape, "memory": memory}
            if vt.layout is Layout.NZ:
                attrs_v["layout"] = Layout.NZ
            return self.emit("tile.load", [base, offs], attrs_v, out, "ld")
        if isinstance(e.type, TensorType):
            tt = e.type
            if not tt.is_static:
                raise KernelError(
                    f"tensor-level ops need static shapes, but {e} has shape {list(tt.shape)}; "
                    "use pl.load / pl.store with a tile shape inside a pl.range loop",
                    getattr(e, "span", None) or span,  # type: ignore[arg-type]
                )
            shape = tt.static_shape
            n = 1
            for d in shape:
                n *= d
            if n > MAX_TILE_ELEMENTS:
                raise KernelError(
                    f"tensor-level op on {e} ({list(shape)}, {n} elements) needs one tile larger than "
                    f"{MAX_TILE_ELEMENTS} elements; tile it with pl.range and pl.load/pl.store",
                    getattr(e, "span", None) or span,  # type: ignore[arg-type]
                )
            assert isinstance(e, Var)
            cached = self.loaded.get((e.name, memory))
            if cached is not None:
                return cached
            zeros = tuple(Const(0, DataType.INT64) for _ in shape)
            tile_shape_for(len(shape), shape, "load")
            attrs: dict[str, object] = {"shape": shape, "memory": memory}
            if tt.layout is Layout.NZ:
                attrs["layout"] = Layout.NZ
            v = self.emit("tile.load", [e, zeros], attrs, out, "ld")
            self.loaded[(e.name, memory)] = v
            return v
        return e  # a scalar operand

    def emit(self, op: str, args: list[Arg], attrs: dict[str, object], out: list[Stmt], base: str) -> Var:
        types = [a.type for a in args if not isinstance(a, tuple)]
        ty = infer(op, types, dict(attrs))
        v = self.fresh(base, ty)
        out.append(Assign(v, Call(op, tuple(args), tuple(sorted(attrs.items())), ty)))
        return v

    def lower_call(self, c: Call, out: list[Stmt], base: str) -> Var:
        kind = c.op.split(".", 1)[1]
        if kind == "matmul":
            a = self.operand(c.args[0], out, c.span, MemorySpace.Mat)  # type: ignore[arg-type]
            b = self.operand(c.args[1], out, c.span, MemorySpace.Mat)  # type: ignore[arg-type]
            left = self.emit("tile.move", [a], {"memory": MemorySpace.Left}, out, "lhs")
            right = self.emit("tile.move", [b], {"memory": MemorySpace.Right}, out, "rhs")
            acc = self.emit("tile.matmul", [left, right], {}, out, "acc")
            return self.emit("tile.move", [acc], {"memory": MemorySpace.Vec}, out, base)
        args: list[Arg] = [self.operand(a, out, c.span) for a in c.args if not isinstance(a, tuple)]
        return self.emit(f"tile.{kind}", args, dict(c.attrs), out, base)

    def assemble(self, v: Var, c: Call) -> list[Stmt]:
        """``v = tensor.assemble(target, source, offsets)``: the source as a Vec tile stored into
        the target's window (``v`` names the target); ``atomic=Add`` loads the window first and
        stores the sum."""
        out: list[Stmt] = []
        target, source, offs = c.args
        assert isinstance(target, Var)
        assert isinstance(offs, tuple)
        if isinstance(source, Call) and _is_tensor_compute(source):
            tile: Arg = self.lower_call(source, out, v.name)
        else:
            tile = self.operand(source, out, c.span)  # type: ignore[arg-type]
        assert isinstance(tile, Var)
        tt = tile.type
        assert isinstance(tt, TileType)
        if tt.memory is not MemorySpace.Vec:
            tile = self.emit("tile.move", [tile], {"memory": MemorySpace.Vec}, out, "mv")
            tt = tile.type
            assert isinstance(tt, TileType)
        if c.attr("atomic") is AtomicType.Add:
            shape = (1,) * (len(offs) - 2) + tt.shape if len(offs) >= 2 else (tt.shape[1],)
            load = Call(
                "tile.load",
                (target, offs),
                (("memory", MemorySpace.Vec), ("shape", shape)),
                infer("tile.load", [target.type], {"shape": shape, "memory": MemorySpace.Vec}),
                c.span,
            )
            if target.name in self.views:
                load = self._rebase(load)
            held = self.fresh("acc", load.type)
            out.append(Assign(held, load, c.span))
            tile = self.emit("tile.add", [held, tile], {}, out, "sum")
        for key in [k for k in self.loaded if k[0] == target.name]:
            del self.loaded[key]  # the tensor changes: a later read must load again
        infer("tile.store", [tile.type, target.type], {})
        store = Call("tile.store", (tile, offs, target), (), target.type, c.span)
        if target.name in self.views:
            store = self._rebase(store)
        out.append(Assign(v, store, c.span))
        return out

    def write(self, s: TensorWrite) -> list[Stmt]:
        out: list[Stmt] = []
        if isinstance(s.value, Call) and _is_tensor_compute(s.value):
            tile = self.lower_call(s.value, out, s.target.name)
        else:
            tile = self.operand(s.value, out, s.span)  # type: ignore[assignment]
        assert isinstance(tile, Var)
        tt = tile.type
        assert isinstance(tt, TileType)
        if tt.memory is not MemorySpace.Vec:
            tile = self.emit("tile.move", [tile], {"memory": MemorySpace.Vec}, out, "mv")
        for key in [k for k in self.loaded if k[0] == s.target.name]:
            del self.loaded[key]  # the tensor changes: a later read must load again
        store = Call("tile.store", (tile, s.offsets, s.target), (), s.target.type, s.span)
        infer("tile.store", [tile.type, s.target.type], {})
        out.append(ExprStmt(store, s.span))
        return out
