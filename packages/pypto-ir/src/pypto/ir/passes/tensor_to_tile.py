"""Tensor-to-tile lowering: tensor-level statements inside kernels become load/compute/store.

Inside a kernel, ``out[:] = pl.add(a, b)`` (a ``TensorWrite`` of tensor-level ops) becomes:
load each tensor operand into a Vec tile of its whole (static) shape, apply the tile op,
store the tile into the window of ``out``. A tensor-level matmul loads its operands into Mat,
moves them to Left/Right, multiplies into Acc and moves the result to Vec. Tensor-level
values are held in tiles, so every tensor operand needs a static shape that fits one tile.
A value of rank 3 or more is held with its leading dims flattened into rows (tensor_planes).
A scope-local ``pl.create_tensor`` is a zero-filled Vec tile; a loop or ``if`` that carries a
tensor-level value carries its Vec tile.
"""

from __future__ import annotations

from dataclasses import replace

from pypto.ir import nodes
from pypto.ir.dtypes import DataType
from pypto.ir.errors import KernelError, Span
from pypto.ir.ops import OPS, infer, tile_shape_for
from pypto.ir.param_info import Layout, ParamDirection
from pypto.ir.passes import tensor_gather, tensor_planes, transposed_reads
from pypto.ir.passes._rewrite import add_index, subst_body
from pypto.ir.passes.matmul_tiling import (
    CAPACITY,
    Scratch,
    Store,
    budget,
    emit_blocked_matmul,
    needs_blocking,
)
from pypto.ir.types import AtomicType, MemorySpace, ScalarType, TensorType, TileType, Type

NAME = "tensor_to_tile"
MAX_TILE_ELEMENTS = tensor_planes.MAX_ELEMENTS
"""Largest tile a tensor-level op may need (elements); larger tensors must be tiled by hand."""


def fits_one_tile(tt: TensorType) -> bool:
    """Whether a tensor-level value of type ``tt`` can be held in one Vec tile: a static 2-D
    shape of at most ``MAX_TILE_ELEMENTS`` elements that fits the smallest Vec buffer."""
    if not tt.is_static or len(tt.shape) != 2:
        return False
    rows, cols = tt.static_shape
    return rows * cols <= MAX_TILE_ELEMENTS and rows * cols * tt.dtype.itemsize <= CAPACITY[MemorySpace.Vec]


def run(program: nodes.Program) -> nodes.Program:
    return program.replace(tuple(_lower_fn(f) if f.func_type.is_kernel else f for f in program.funcs))


def _lower_fn(fn: nodes.Function) -> nodes.Function:
    read_only = frozenset(p.name for p in fn.params if p.direction is ParamDirection.IN)
    lw = _Lowerer(_budget(fn), read_only)
    return replace(fn, body=lw.body(fn.body))


def _budget(fn: nodes.Function) -> dict[MemorySpace, int]:
    """The buffer bytes each blocked matmul of ``fn`` may use (matmul_tiling.budget)."""
    from pypto.ir.nodes import stmt_exprs, walk_stmts

    pairs = []
    for s in walk_stmts(fn.body):
        for e in stmt_exprs(s):
            if isinstance(e, nodes.Call) and e.op == "tensor.matmul":
                a, b = e.args[0], e.args[1]
                assert not isinstance(a, tuple)
                assert not isinstance(b, tuple)
                pairs.append(
                    tensor_planes.plane_types(e) if tensor_planes.planar(e.type) else (a.type, b.type)
                )
    return budget(pairs)


def _big_matmul(c: nodes.Call) -> bool:
    a, b = c.args[0], c.args[1]
    assert not isinstance(a, tuple)
    assert not isinstance(b, tuple)
    return needs_blocking(a.type, b.type) or tensor_planes.too_big(c)


def _is_tensor_compute(e: object) -> bool:
    """A tensor-level op that is kernel work (the op table's ``on_core``): lowered to tiles. The
    others (dims, element reads/writes, windows, allocation) stay as they are."""
    return isinstance(e, nodes.Call) and e.op.startswith("tensor.") and OPS[e.op].on_core


class _Lowerer:
    def __init__(self, caps: dict[MemorySpace, int], read_only: frozenset[str] = frozenset()) -> None:
        self.caps = caps  # buffer bytes each blocked matmul of this kernel may use
        self.read_only = read_only  # the kernel's tensor parameters it never writes (In)
        # a transpose of a read-only tensor: a cube operand reads it in L1 (transposed_reads)
        self.transposed: dict[str, nodes.Call] = {}
        self.blocked: dict[str, nodes.Call] = {}  # a matmul lowered by blocks where its value is consumed
        self.alias: dict[str, nodes.Expr] = {}  # a value that names another (a blocked assemble's result)
        self.tiles: dict[str, nodes.Var] = {}  # tensor-level value -> the tile that holds it
        self.loaded: dict[tuple[str, MemorySpace], nodes.Var] = {}  # tensor already loaded in this body
        self.views: dict[str, nodes.Call] = {}  # window value -> its tensor.view call
        self.n = 0

    def fresh(self, base: str, ty: Type) -> nodes.Var:
        self.n += 1
        return nodes.Var(f"{base}_t{self.n}", ty)

    def body(self, stmts: tuple[nodes.Stmt, ...]) -> tuple[nodes.Stmt, ...]:
        out: list[nodes.Stmt] = []
        for original in stmts:
            s = original
            if self.alias:
                s = subst_body((s,), self.alias)[0]
            if (
                isinstance(s, nodes.Assign)
                and isinstance(s.value, nodes.Call)
                and s.value.op == "tensor.matmul"
                and _big_matmul(s.value)
            ):
                self.blocked[s.var.name] = s.value  # emitted where its value is consumed
                continue
            if (
                isinstance(s, nodes.Assign)
                and isinstance(s.value, nodes.Call)
                and s.value.op == "tensor.transpose"
                and transposed_reads.deferrable(self, s.value)
            ):
                self.transposed[s.var.name] = s.value  # read where it is used
                continue
            if (
                isinstance(s, nodes.Assign)
                and isinstance(s.value, nodes.Call)
                and s.value.op == "tensor.view"
            ):
                view = s.value
                inner = view.args[0]
                if isinstance(inner, nodes.Var) and inner.name in self.views:  # a window of a window
                    outer = self.views[inner.name]
                    offs, base_offs = view.args[1], outer.args[1]
                    assert isinstance(offs, tuple)
                    assert isinstance(base_offs, tuple)
                    summed = tuple(add_index(a, b) for a, b in zip(base_offs, offs, strict=True))
                    view = replace(view, args=(outer.args[0], summed))
                self.views[s.var.name] = view  # consumed by the loads and stores that use it
                continue
            if (
                isinstance(s, (nodes.Assign, nodes.ExprStmt))
                and isinstance(s.value, nodes.Call)
                and self._through_view(s.value)
            ):
                s = replace(s, value=self._rebase(s.value))
            if (
                isinstance(s, nodes.Assign)
                and isinstance(s.value, nodes.Call)
                and s.value.op == "tensor.create"
            ):
                self.tiles[s.var.name] = self.scratch(s.value, out, s.var.name)
            elif (
                isinstance(s, nodes.Assign)
                and isinstance(s.value, nodes.Call)
                and s.value.op == "tensor.assemble"
            ):
                out.extend(self.assemble(s.var, s.value))
            elif (
                isinstance(s, nodes.ExprStmt)
                and isinstance(s.value, nodes.Call)
                and s.value.op == "tensor.assemble"
            ):
                # `pl.assemble(t, v, offsets)` as a statement writes t all the same
                target = s.value.args[0]
                assert isinstance(target, nodes.Var)
                written = self.fresh(target.name, target.type)
                out.extend(self.assemble(written, s.value))
                if written.name in self.tiles:  # an on-chip target: its name now holds the new tile
                    self.tiles[target.name] = self.tiles[written.name]
            elif (
                isinstance(s, (nodes.Assign, nodes.ExprStmt))
                and isinstance(s.value, nodes.Call)
                and s.value.op == "tensor.expand_clone"
            ):
                out.extend(self.expand_clone(s.var if isinstance(s, nodes.Assign) else None, s.value))
            elif isinstance(s, nodes.Assign) and _is_tensor_compute(s.value):
                assert isinstance(s.value, nodes.Call)
                tile = self.lower_call(s.value, out, s.var.name)
                self.tiles[s.var.name] = tile
            elif isinstance(s, nodes.TensorWrite):
                out.extend(self.write(s))
            elif isinstance(s, (nodes.For, nodes.While)):
                out.append(self.loop(s, out))
            elif isinstance(s, nodes.If):
                before, blocked = dict(self.tiles), dict(self.blocked)
                self.loaded = {}
                then = self.body(s.then_body)
                self.loaded = {}
                self.restore_deferred(before, blocked)  # the then branch's do not reach the else branch
                els = self.body(s.else_body)
                self.loaded = {}
                self.kept_bindings(before, blocked, "an if", s.span)
                out.append(self.branch(s, then, els))
            elif isinstance(s, (nodes.Break, nodes.Continue)) and any(self._lowered(v) for v in s.values):
                raise KernelError(
                    "a loop that carries a tensor-level value leaves or restarts only at the end of its "
                    "body: break / continue are not supported in it; carry a tile (pl.load) instead",
                    s.span,
                )
            elif isinstance(s, nodes.Yield):
                out.append(s)  # the enclosing loop or if turns tensor-level values into their tiles
            elif isinstance(s, (nodes.Assign, nodes.ExprStmt, nodes.Yield)) and self._mentions_lowered(s):
                raise KernelError(
                    "a tensor-level value can only be written into a tensor (out[...] = value) or used by "
                    "another tensor-level op",
                    getattr(s, "span", None),
                )
            else:
                value = s.value if isinstance(s, (nodes.Assign, nodes.ExprStmt)) else None
                if (
                    isinstance(value, nodes.Call)
                    and value.op == "tile.store"
                    and isinstance(value.args[2], nodes.Var)
                ):
                    self.loaded = {k: v for k, v in self.loaded.items() if k[0] != value.args[2].name}
                out.append(s)
        return tuple(out)

    def loop(self, s: nodes.For | nodes.While, out: list[nodes.Stmt]) -> nodes.For | nodes.While:
        """A loop whose iter arg starts as an on-chip value (a tensor-level value, a scratch
        ``pl.create_tensor`` or a tile) carries it as a Vec tile: the iter arg, the yielded value
        and the loop's result are that tile."""
        iters = []
        carried: dict[int, nodes.Var] = {}
        for i, ia in enumerate(s.iter_args):
            init = self.on_chip(ia.init, out, s.span) if isinstance(ia.var.type, TensorType) else None
            if init is None:
                iters.append(ia)
                continue
            init = self.operand(init, out, s.span)  # type: ignore[assignment]
            assert isinstance(init, nodes.Var)
            var = nodes.Var(ia.var.name, init.type, ia.var.span)
            self.tiles[ia.var.name] = var
            carried[i] = var
            iters.append(replace(ia, var=var, init=init))
        if carried and _leaves_loop(s.body):
            raise KernelError(
                "a loop that carries a tensor-level value leaves or restarts only at the end of its "
                "body: break / continue are not supported in it; carry a tile (pl.load) instead",
                s.span,
            )
        self.loaded = {}
        before, blocked = dict(self.tiles), dict(self.blocked)
        body = list(self.body(s.body))
        self.kept_bindings(before, blocked, "a loop", s.span)
        self.loaded = {}  # the loop may have written anything
        results = list(s.results)
        if s.iter_args:
            y = body.pop()
            assert isinstance(y, nodes.Yield)
            values = list(y.values)
            for i, v in enumerate(values):
                if i in carried:
                    values[i] = self.carried_tile(v, carried[i].type, body, y.span)
                elif self._lowered(v):
                    raise KernelError(
                        f"the loop carries {v} as a tensor-level value, but it starts as "
                        f"{s.iter_args[i].init}, a tensor in device memory; start it on chip "
                        "(pl.create_tensor or a tile inside the pl.at scope) or assemble it into the tensor",
                        y.span or s.span,
                    )
            body.append(replace(y, values=tuple(values)))
            for i, var in carried.items():
                results[i] = nodes.Var(s.results[i].name, var.type, s.results[i].span)
                self.tiles[s.results[i].name] = results[i]
        return replace(s, body=tuple(body), iter_args=tuple(iters), results=tuple(results))

    def kept_bindings(
        self, before: dict[str, nodes.Var], blocked: dict[str, nodes.Call], where: str, span: Span | None
    ) -> None:
        """A write as a statement (``pl.assemble(t, v, offsets)``, ``pl.expand_clone(src, t)``)
        gives an on-chip tensor ``t`` a new tile under its own name; inside a loop or a branch that
        tile would not reach the code after it, so it is refused there, naming the form to write.
        Deferred values made inside the loop or branch are made again after it (restore_deferred)."""
        self.restore_deferred(before, blocked)
        moved = sorted(n for n, v in before.items() if self.tiles.get(n) is not v)
        if moved:
            raise KernelError(
                f"the scope-local tensor {moved[0]!r} is written by a statement inside {where}, which "
                f"does not carry it out; assign the write's result ({moved[0]} = pl.assemble({moved[0]}, "
                "...)) so that the value reaches the code after it",
                span,
            )

    def branch(self, s: nodes.If, then: tuple[nodes.Stmt, ...], els: tuple[nodes.Stmt, ...]) -> nodes.If:
        """An ``if`` whose branches yield a tensor-level value yields its Vec tile from both."""
        if not s.results:
            return replace(s, then_body=then, else_body=els)
        bodies = [list(then), list(els)]
        yields: list[nodes.Yield] = []
        for b in bodies:
            y = b.pop()
            assert isinstance(y, nodes.Yield)
            yields.append(y)
        values = [list(y.values) for y in yields]
        results = list(s.results)
        for i, r in enumerate(s.results):
            if not any(self._lowered(vs[i]) for vs in values):
                continue
            first = self.operand(values[0][i], bodies[0], s.span)
            assert isinstance(first.type, TileType)
            want = TileType(first.type.shape, first.type.dtype, MemorySpace.Vec)
            for k in (0, 1):
                values[k][i] = self.carried_tile(values[k][i], want, bodies[k], s.span)
            results[i] = nodes.Var(r.name, want, r.span)
            self.tiles[r.name] = results[i]
        for k in (0, 1):
            bodies[k].append(replace(yields[k], values=tuple(values[k])))
        return replace(s, then_body=tuple(bodies[0]), else_body=tuple(bodies[1]), results=tuple(results))

    def carried_tile(self, v: nodes.Expr, want: Type, out: list[nodes.Stmt], span: Span | None) -> nodes.Expr:
        """The Vec tile of tensor-level value ``v`` for a loop carry or branch result of type ``want``."""
        tile = self.operand(v, out, span, MemorySpace.Vec)
        if tile.type != want:
            raise KernelError(
                f"a loop or branch carries a tensor-level value as {want}, but one of its values is "
                f"{tile.type} ({v}); give every value of the carried name the same shape and dtype",
                span,
            )
        return tile

    def restore_deferred(self, before: dict[str, nodes.Var], blocked: dict[str, nodes.Call]) -> None:
        """Deferred values (a transpose read in Vec, a blocked product: ``blocked`` was pending
        before) made inside a nested body, whose tiles do not reach the code after it, are
        deferred again there: a later reader makes its own."""
        for name in [n for n in self.tiles if n not in before and (n in self.transposed or n in blocked)]:
            del self.tiles[name]
        self.blocked.update(blocked)

    def _lowered(self, e: nodes.Expr) -> bool:
        return isinstance(e, nodes.Var) and (
            e.name in self.tiles or e.name in self.blocked or e.name in self.transposed
        )

    def _through_view(self, c: nodes.Call) -> bool:
        pos = {"tile.load": 0, "tile.store": 2}.get(c.op)
        return pos is not None and isinstance(c.args[pos], nodes.Var) and c.args[pos].name in self.views  # type: ignore[union-attr]

    def _rebase(self, c: nodes.Call) -> nodes.Call:
        """A load/store through a window becomes one on the base tensor, offsets added."""
        pos = 0 if c.op == "tile.load" else 2
        view = self.views[c.args[pos].name]  # type: ignore[union-attr]
        base, base_offs = view.args
        offs = c.args[1]
        assert isinstance(offs, tuple)
        assert isinstance(base_offs, tuple)
        summed = tuple(add_index(a, b) for a, b in zip(base_offs, offs, strict=True))
        args = list(c.args)
        args[pos] = base
        args[1] = summed
        ty = c.type if c.op == "tile.load" else base.type  # type: ignore[union-attr]
        return replace(c, args=tuple(args), type=ty)

    def _mentions_lowered(self, s: nodes.Stmt) -> bool:
        from pypto.ir.nodes import expr_vars, stmt_exprs

        return any(self._lowered(v) for e in stmt_exprs(s) for v in expr_vars(e))

    def emit_blocked(
        self, call: nodes.Call, sink: Store | Scratch, *, out: list[nodes.Stmt], base: str
    ) -> nodes.Var | None:
        """The blocked nest of a matmul too large for one set of cube tiles (matmul_tiling); of
        a batched one, a nest a batch (tensor_planes)."""
        if tensor_planes.planar(call.type):
            tensor_planes.by_batch(self, call, sink, out=out, base=base)
            return None
        return emit_blocked_matmul(self, call, sink, caps=self.caps, out=out, base=base)

    def on_chip(
        self, e: nodes.Expr, out: list[nodes.Stmt], span: Span | None, memory: MemorySpace = MemorySpace.Mat
    ) -> nodes.Var | None:
        """The tile holding ``e`` when it is an on-chip value (a blocked product is written
        into a scratch tile first: in Vec when ``memory`` is Vec, for a vector op, else in L1);
        None for a tensor in device memory."""
        if isinstance(e, nodes.Var) and e.name in self.transposed and e.name not in self.tiles:
            self.tiles[e.name] = self.lower_call(self.transposed[e.name], out, e.name)  # in Vec
        if isinstance(e, nodes.Var) and e.name in self.blocked:
            call = self.blocked.pop(e.name)
            space = MemorySpace.Vec if memory is MemorySpace.Vec else MemorySpace.Mat
            scratch = self.emit_blocked(call, Scratch(memory=space), out=out, base=e.name)
            assert scratch is not None
            self.tiles[e.name] = scratch
        if isinstance(e, nodes.Var) and e.name in self.tiles:
            return self.tiles[e.name]
        if isinstance(e, nodes.Var) and isinstance(e.type, TileType):
            return e
        return None

    def store_sink(self, target: nodes.Var, offsets: tuple[nodes.Expr, ...], atomic: bool) -> Store:
        def rebase(c: nodes.Call) -> nodes.Call:
            return self._rebase(c) if target.name in self.views else c

        return Store(target, offsets, atomic, rebase)

    def operand(
        self, e: nodes.Expr, out: list[nodes.Stmt], span: object, memory: MemorySpace = MemorySpace.Vec
    ) -> nodes.Expr:
        """The tile holding tensor-level operand ``e`` (loading a tensor on demand)."""
        if isinstance(e, nodes.Var) and e.name in self.transposed:
            if memory is MemorySpace.Mat and not tensor_planes.planar(e.type):
                return transposed_reads.in_l1(self, self.transposed[e.name], out)
            self.on_chip(e, out, span)  # type: ignore[arg-type]
        if isinstance(e, nodes.Var) and e.name in self.blocked:
            self.on_chip(e, out, span, memory)  # type: ignore[arg-type]
        if isinstance(e, nodes.Var) and e.name in self.tiles:
            t = self.tiles[e.name]
            if memory is not MemorySpace.Vec and isinstance(t.type, TileType) and t.type.memory is not memory:
                return self.emit("tile.move", [t], {"memory": memory}, out, "mv")
            if (
                memory is MemorySpace.Vec
                and isinstance(t.type, TileType)
                and t.type.memory is MemorySpace.Mat
            ):
                raise KernelError(
                    f"{e.name} is a matmul product too large for one cube tile, kept in L1 (Mat) because a "
                    "matmul read it first; no platform moves L1 to Vec, so a vector op cannot read it there: "
                    "use it in vector ops before the next matmul reads it, or tile the matmul by hand",
                    getattr(e, "span", None) or span,  # type: ignore[arg-type]
                )
            return t
        if isinstance(e, nodes.Var) and e.name in self.views:
            view = self.views[e.name]
            base, offs = view.args
            vt = view.type
            assert isinstance(vt, TensorType)
            assert isinstance(offs, tuple)
            held = self.on_chip(base, out, span)  # type: ignore[arg-type]
            if held is not None and len(offs) != 2:
                raise KernelError(
                    f"{e.name}: a window of an on-chip tensor-level value takes 2-D tensors, got {vt}",
                    getattr(e, "span", None) or span,  # type: ignore[arg-type]
                )
            if held is None and tensor_planes.planar(vt):
                return tensor_planes.load(self, e, memory, out, getattr(e, "span", None) or span)  # type: ignore[arg-type]
            if held is not None:  # a window of an on-chip value: the sub-tile, copied out of it
                sub = self.emit("tile.slice", [held, offs], {"shape": vt.static_shape}, out, "sub")
                return self.operand(self.narrow(sub, view, out), out, span, memory)
            attrs_v: dict[str, object] = {"shape": vt.static_shape, "memory": memory}
            if vt.layout is Layout.NZ:
                attrs_v["layout"] = Layout.NZ
            loaded = self.emit("tile.load", [base, offs], attrs_v, out, "ld")
            return self.narrow(loaded, view, out)
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
            assert isinstance(e, nodes.Var)
            cached = self.loaded.get((e.name, memory))
            if cached is not None:
                return cached
            if tensor_planes.planar(tt):
                v = tensor_planes.load(self, e, memory, out, getattr(e, "span", None) or span)  # type: ignore[arg-type]
                self.loaded[(e.name, memory)] = v
                return v
            zeros = tuple(nodes.Const(0, DataType.INT64) for _ in shape)
            tile_shape_for(len(shape), shape, "load")
            attrs: dict[str, object] = {"shape": shape, "memory": memory}
            if tt.layout is Layout.NZ:
                attrs["layout"] = Layout.NZ
            v = self.emit("tile.load", [e, zeros], attrs, out, "ld")
            self.loaded[(e.name, memory)] = v
            return v
        if isinstance(e, nodes.Var) and isinstance(e.type, TileType) and e.type.memory is not memory:
            return self.emit("tile.move", [e], {"memory": memory}, out, "mv")  # a tile mixed in
        return e  # a scalar operand, or a tile mixed in where it already is

    def narrow(self, tile: nodes.Var, view: nodes.Call, out: list[nodes.Stmt]) -> nodes.Var:
        """The tile read through a window that ``pl.slice`` gave a constant valid shape (and a pad
        value): that valid shape, the elements outside it set to the pad value."""
        valid = view.attr("valid_shape")
        if valid is None or not isinstance(tile.type, TileType) or tile.type.memory is not MemorySpace.Vec:
            return tile
        rows, cols = (1, valid[0]) if len(valid) == 1 else (valid[-2], valid[-1])
        dims = [nodes.Const(rows, DataType.INT64), nodes.Const(cols, DataType.INT64)]
        narrowed = self.emit("tile.set_validshape", [tile, *dims], {}, out, "vs")
        pad = view.attr("pad")
        if pad is None:
            return narrowed
        filled = self.emit("tile.fillpad", [narrowed], {"pad": pad}, out, "pad")
        return self.emit("tile.set_validshape", [filled, *dims], {}, out, "vs")

    def emit(
        self, op: str, args: list[nodes.Arg], attrs: dict[str, object], out: list[nodes.Stmt], base: str
    ) -> nodes.Var:
        types = [a.type for a in args if not isinstance(a, tuple)]
        ty = infer(op, types, dict(attrs))
        v = self.fresh(base, ty)
        out.append(nodes.Assign(v, nodes.Call(op, tuple(args), tuple(sorted(attrs.items())), ty)))
        return v

    def lower_call(self, c: nodes.Call, out: list[nodes.Stmt], base: str) -> nodes.Var:
        kind = c.op.split(".", 1)[1]
        src = c.args[0] if c.args else None
        if kind == "cast" and isinstance(src, nodes.Var) and src.name in self.blocked:
            scratch = self.emit_blocked(
                self.blocked.pop(src.name),
                Scratch(c.attr("dtype"), c.attr("mode")),
                out=out,
                base=base,
            )
            assert scratch is not None
            return scratch
        if kind == "matmul" and tensor_planes.planar(c.type):
            return tensor_planes.matmul(self, c, out, base)
        if kind == "transpose" and tensor_planes.planar(c.type):
            return tensor_planes.transpose(self, c, out, base)
        if kind == "matmul" and _big_matmul(c):
            scratch = self.emit_blocked(c, Scratch(), out=out, base=base)
            assert scratch is not None
            return scratch
        if kind == "matmul_acc":
            acc = self.operand(c.args[0], out, c.span)  # type: ignore[arg-type]
            lhs, rhs = c.args[1], c.args[2]
            assert not isinstance(lhs, tuple)
            assert not isinstance(rhs, tuple)
            product = nodes.Call(
                "tensor.matmul", (lhs, rhs), (), infer("tensor.matmul", [lhs.type, rhs.type], {}), c.span
            )
            prod = self.lower_call(product, out, base + "_mm")
            return self.emit("tile.add", [acc, prod], {}, out, base)
        if kind == "matmul":
            a = self.operand(c.args[0], out, c.span, MemorySpace.Mat)  # type: ignore[arg-type]
            b = self.operand(c.args[1], out, c.span, MemorySpace.Mat)  # type: ignore[arg-type]
            left = self.emit("tile.move", [a], {"memory": MemorySpace.Left}, out, "lhs")
            right = self.emit("tile.move", [b], {"memory": MemorySpace.Right}, out, "rhs")
            acc = self.emit("tile.matmul", [left, right], {}, out, "acc")
            return self.emit("tile.move", [acc], {"memory": MemorySpace.Vec}, out, base)
        tensor_planes.check_plane_wise(c)
        args: list[nodes.Arg] = [self.operand(a, out, c.span) for a in c.args if not isinstance(a, tuple)]
        if kind in ("gather", "scatter"):
            return tensor_gather.lower(self, kind, args, dim=c.attr("dim"), out=out, base=base)
        if kind == "mrgsort_lists":  # the tile form's scratch row, as wide as the result
            shape = c.type.static_shape  # type: ignore[union-attr]
            tmp = self.emit(
                "tile.create",
                [],
                {"shape": shape, "dtype": DataType.FP32, "memory": MemorySpace.Vec},
                out,
                base + "_tmp",
            )
            return self.emit("tile.mrgsort_lists", [*args, tmp], dict(c.attrs), out, base)
        if kind == "cmp":  # 0/1 in lhs's dtype: the tile comparison's mask selects between them
            mask = self.emit("tile.cmp", args, dict(c.attrs), out, base + "_mask")
            lhs = args[0]
            assert isinstance(lhs, nodes.Var)
            assert isinstance(lhs.type, TileType)
            one, zero = (
                nodes.Const(v if lhs.type.dtype.is_float else int(v), lhs.type.dtype) for v in (1.0, 0.0)
            )
            ones = self.emit("tile.expands", [lhs, one], {}, out, base + "_one")
            zeros = self.emit("tile.expands", [lhs, zero], {}, out, base + "_zero")
            return self.emit("tile.sel", [mask, ones, zeros], {}, out, base)
        return self.emit(f"tile.{kind}", args, dict(c.attrs), out, base)

    def scratch(self, c: nodes.Call, out: list[nodes.Stmt], base: str) -> nodes.Var:
        """A ``pl.create_tensor`` inside the kernel (outline_scopes left only those that fit one
        tile): a Vec tile of its shape and dtype, cleared to zero so that reading it before
        any write gives zeros, not a previous task's data."""
        tt = c.type
        assert isinstance(tt, TensorType)
        zero = nodes.Const(0.0 if tt.dtype.is_float else 0, tt.dtype)
        return self.emit("tile.full", [zero], {"shape": tt.static_shape, "dtype": tt.dtype}, out, base)

    def assemble(self, v: nodes.Var, c: nodes.Call) -> list[nodes.Stmt]:
        """``v = tensor.assemble(target, source, offsets)``: the source as a Vec tile stored into
        the target's window (``v`` names the target); ``atomic=Add`` loads the window first and
        stores the sum."""
        out: list[nodes.Stmt] = []
        target, source, offs = c.args
        assert isinstance(target, nodes.Var)
        assert isinstance(offs, tuple)
        atomic = c.attr("atomic") is AtomicType.Add
        if isinstance(source, nodes.Var) and source.name in self.blocked:
            sink = self.store_sink(target, offs, atomic)
            self.emit_blocked(self.blocked.pop(source.name), sink, out=out, base=v.name)
            self.forget(target)
            self.alias[v.name] = target
            return out
        if isinstance(source, nodes.Call) and _is_tensor_compute(source):
            tile: nodes.Arg = self.lower_call(source, out, v.name)
        else:
            tile = self.operand(source, out, c.span)  # type: ignore[arg-type]
        assert isinstance(tile, nodes.Var)
        tt = tile.type
        assert isinstance(tt, TileType)
        if tt.memory is not MemorySpace.Vec:
            tile = self.emit("tile.move", [tile], {"memory": MemorySpace.Vec}, out, "mv")
            tt = tile.type
            assert isinstance(tt, TileType)
        held = self.tiles.get(target.name)
        if tensor_planes.planar(source.type):  # type: ignore[union-attr]
            self.forget(target)
            out.append(tensor_planes.assemble(self, v, c, tile, on_chip=held is not None, out=out))
            return out
        if held is not None:  # an on-chip target (a scope-local pl.create_tensor): written in its tile
            static = {"static_offsets": c.attr("static_offsets") or [None] * len(offs)}
            if atomic:
                window = self.emit("tile.slice", [held, offs], {"shape": tt.shape, **static}, out, "win")
                tile = self.emit("tile.add", [window, tile], {}, out, "sum")
            self.tiles[v.name] = self.emit("tile.assemble", [held, tile, offs], static, out, v.name)
            return out
        if c.attr("atomic") is AtomicType.Add:
            shape = (1,) * (len(offs) - 2) + tt.shape if len(offs) >= 2 else (tt.shape[1],)
            load = nodes.Call(
                "tile.load",
                (target, offs),
                (("memory", MemorySpace.Vec), ("shape", shape)),
                infer("tile.load", [target.type], {"shape": shape, "memory": MemorySpace.Vec}),
                c.span,
            )
            if target.name in self.views:
                load = self._rebase(load)
            held = self.fresh("acc", load.type)
            out.append(nodes.Assign(held, load, c.span))
            tile = self.emit("tile.add", [held, tile], {}, out, "sum")
        for key in [k for k in self.loaded if k[0] == target.name]:
            del self.loaded[key]  # the tensor changes: a later read must load again
        infer("tile.store", [tile.type, target.type], {})
        store = nodes.Call("tile.store", (tile, offs, target), (), target.type, c.span)
        if target.name in self.views:
            store = self._rebase(store)
        out.append(nodes.Assign(v, store, c.span))
        return out

    def expand_clone(self, v: nodes.Var | None, c: nodes.Call) -> list[nodes.Stmt]:
        """``v = tensor.expand_clone(src, target)``: src's tile, widened along its extent-1 axis by
        ``tile.col_expand`` / ``tile.row_expand``, stored into target (``v`` then names target). A
        rank-3 target is written in a loop over its first axis, a [rows, cols] block a step: one
        block of src loaded a step, or once when src is repeated along that axis."""
        out: list[nodes.Stmt] = []
        src, target = c.args
        assert isinstance(target, nodes.Var)
        assert isinstance(target.type, TensorType)
        shape = target.type.static_shape
        rows, cols = shape[-2], shape[-1]
        zero = nodes.Const(0, DataType.INT64)

        def widened(tile: nodes.Var, into: list[nodes.Stmt]) -> nodes.Var:
            assert isinstance(tile.type, TileType)
            if tuple(tile.type.shape) == (rows, cols):
                return tile
            attrs = {"shape": (rows, cols), "dtype": tile.type.dtype, "memory": MemorySpace.Vec}
            dst = self.emit("tile.create", [], attrs, into, "ec_dst")
            op = "tile.col_expand" if tile.type.shape[0] != rows else "tile.row_expand"
            return self.emit(op, [dst, tile], {}, into, "ec")

        def store(tile: nodes.Var, offs: tuple[nodes.Expr, ...], into: list[nodes.Stmt]) -> None:
            call = nodes.Call("tile.store", (tile, offs, target), (), target.type, c.span)
            infer("tile.store", [tile.type, target.type], {})
            into.append(nodes.ExprStmt(self._rebase(call) if target.name in self.views else call, c.span))

        if len(shape) == 2:
            if isinstance(src, nodes.Call) and _is_tensor_compute(src):
                tile = self.lower_call(src, out, "ec_src")
            else:
                tile = self.operand(src, out, c.span)  # type: ignore[arg-type,assignment]
            assert isinstance(tile, nodes.Var)
            held = widened(tile, out)
            if target.name in self.tiles:  # an on-chip target: its tile is replaced whole
                self.tiles[(v or target).name] = held  # the statement form rebinds the target's name
                return out
            store(held, (zero, zero), out)
        else:
            assert not isinstance(src, tuple)
            assert isinstance(src.type, TensorType)
            shape_src = src.type.static_shape
            block = (1, *shape_src[1:])
            held_src: nodes.Var | None = None  # an on-chip source: its flattened tile
            if isinstance(src, nodes.Call) and _is_tensor_compute(src):
                held_src = self.lower_call(src, out, "ec_src")
            elif self._lowered(src):
                on_chip = self.operand(src, out, c.span)
                assert isinstance(on_chip, nodes.Var)
                held_src = on_chip

            def load(offs: tuple[nodes.Expr, ...], into: list[nodes.Stmt]) -> nodes.Var:
                if held_src is not None and shape_src[0] == 1:  # one plane: the tile itself
                    return held_src
                if held_src is not None:  # the plane's rows of the on-chip source
                    r = nodes.Const(block[-2], DataType.INT64)
                    row = nodes.BinOp("mul", offs[0], r, ScalarType(DataType.INT64))
                    return self.emit(
                        "tile.slice", [held_src, (row, zero)], {"shape": block[-2:]}, into, "ec_src"
                    )
                assert isinstance(src, nodes.Var)
                attrs = {"shape": block, "memory": MemorySpace.Vec}
                call = nodes.Call(
                    "tile.load",
                    (src, offs),
                    tuple(sorted(attrs.items())),
                    infer("tile.load", [src.type], attrs),
                    c.span,
                )
                tile = self.fresh("ec_src", call.type)
                into.append(
                    nodes.Assign(tile, self._rebase(call) if src.name in self.views else call, c.span)
                )
                return tile

            i = self.fresh("ec_i", ScalarType(DataType.INT64))
            body: list[nodes.Stmt] = []
            if src.type.static_shape[0] == 1 and shape[0] > 1:  # repeated along the first axis
                held = widened(load((zero, zero, zero), out), out)
            else:
                held = widened(load((i, zero, zero), body), body)
            store(held, (i, zero, zero), body)
            one, stop = nodes.Const(1, DataType.INT64), nodes.Const(shape[0], DataType.INT64)
            out.append(nodes.For(i, zero, stop, one, tuple(body), span=c.span))
        self.forget(target)
        if v is not None:
            self.alias[v.name] = target
        return out

    def forget(self, target: nodes.Var) -> None:
        for key in [k for k in self.loaded if k[0] == target.name]:
            del self.loaded[key]  # the tensor changes: a later read must load again

    def write(self, s: nodes.TensorWrite) -> list[nodes.Stmt]:
        out: list[nodes.Stmt] = []
        if isinstance(s.value, nodes.Call) and s.value.op == "tensor.expand_clone":
            # `out = pl.expand_clone(src, out)` of an Out parameter: the expand_clone writes out;
            # into another tensor's window, the written target is then copied there
            out.extend(self.expand_clone(None, s.value))
            written = s.value.args[1]
            assert isinstance(written, nodes.Var)
            zero = all(isinstance(o, nodes.Const) and o.value == 0 for o in s.offsets)
            if written.name == s.target.name and zero:
                return out
            s = replace(s, value=written)
        v = s.value
        big = isinstance(v, nodes.Call) and v.op == "tensor.matmul" and _big_matmul(v)
        if big or (isinstance(v, nodes.Var) and v.name in self.blocked):
            call = v if isinstance(v, nodes.Call) else self.blocked.pop(v.name)  # type: ignore[union-attr]
            sink = self.store_sink(s.target, s.offsets, False)
            self.emit_blocked(call, sink, out=out, base=s.target.name)
            self.forget(s.target)
            return out
        if isinstance(s.value, nodes.Call) and _is_tensor_compute(s.value):
            tile = self.lower_call(s.value, out, s.target.name)
        else:
            tile = self.operand(s.value, out, s.span)  # type: ignore[assignment]
        assert isinstance(tile, nodes.Var)
        tt = tile.type
        assert isinstance(tt, TileType)
        if tt.memory is not MemorySpace.Vec:
            tile = self.emit("tile.move", [tile], {"memory": MemorySpace.Vec}, out, "mv")
        for key in [k for k in self.loaded if k[0] == s.target.name]:
            del self.loaded[key]  # the tensor changes: a later read must load again
        if tensor_planes.planar(s.value.type):
            shape = s.value.type.static_shape  # type: ignore[union-attr]
            last = tensor_planes.store(
                self, tile, shape, target=s.target, offs=s.offsets, out=out, span=s.span
            )
            out.append(nodes.ExprStmt(last, s.span))
            return out
        store = nodes.Call("tile.store", (tile, s.offsets, s.target), (), s.target.type, s.span)
        infer("tile.store", [tile.type, s.target.type], {})
        out.append(nodes.ExprStmt(store, s.span))
        return out


def _leaves_loop(body: tuple[nodes.Stmt, ...]) -> bool:
    """Whether ``body`` has a ``break`` / ``continue`` of its own loop (not of a nested one)."""
    for s in body:
        if isinstance(s, (nodes.Break, nodes.Continue)):
            return True
        if isinstance(s, nodes.If) and (_leaves_loop(s.then_body) or _leaves_loop(s.else_body)):
            return True
        if isinstance(s, nodes.Scope) and _leaves_loop(s.body):
            return True
    return False
