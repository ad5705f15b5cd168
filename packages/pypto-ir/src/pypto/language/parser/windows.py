"""Writes through subscripts and tensor windows in the kernel language: ``out[...] = value`` of a
tensor or a tile, one element ``t[i, j]``, and the window a subscript of a tensor reads
(``t[a:b, c]``, ``C[i][j]``), shared by the statement parser (statements.py)."""

from __future__ import annotations

import ast
from typing import Any

from pypto.ir.nodes import (
    Assign,
    Call,
    Const,
    Expr,
    ExprStmt,
    Stmt,
    TensorWrite,
    Var,
)
from pypto.ir.types import (
    ArrayType,
    FunctionType,
    ScalarType,
    TensorType,
    TileType,
)
from pypto.language.fold import INDEX, extent
from pypto.language.parser.control import _Control
from pypto.language.parser.subscripts import (
    chained,
    fit_to_window,
    lifted,
    scalar_lead,
    tile_subscript,
    tile_write_window,
    trusted_extents,
)


class _Windows(_Control):
    def tensor_write(self, target: ast.Subscript, value_node: ast.expr, s: ast.stmt) -> Stmt:
        span = self.src.span(s)
        if not isinstance(target.value, ast.Name):
            raise self.err("write through a tensor name: out[:] = ...", target)
        tvar = self.lookup(target.value.id, target.value)
        if isinstance(tvar, Var) and isinstance(tvar.type, TileType):
            return self.tile_write(tvar, target, value_node, s)
        if not isinstance(tvar, Var) or not isinstance(tvar.type, TensorType):
            raise self.err(
                f"{target.value.id!r} is not a tensor or a tile; only those can be written with [...]", target
            )
        tt = tvar.type
        index = self.element_index(tvar, target)
        if index is not None:  # t[i, j] = v: one element, as pl.write(t, [i, j], v)
            write = self.make_op(
                "write", [tvar, tuple(index), self.scalar(value_node, "the value written")], {}, target
            )
            return ExprStmt(write, span)
        offsets, extents = self.window(tvar, target, runtime_ok=True)
        value = self.expr(value_node)
        vt = value.type
        if isinstance(vt, TensorType):  # a narrowed, lower-rank or trusted run-time window
            value = fit_to_window(self, value, extents, scalar_lead(target), value_node)
            vt = value.type
            extents = trusted_extents(vt, extents, scalar_lead(target))
        if isinstance(vt, TileType):
            call = self.make_op("store", [value, tuple(offsets), tvar], {}, value_node)
            var = Var(tvar.name, tvar.type, self.src.span(target))
            self.st.env[tvar.name] = var
            return Assign(var, call, span)
        if not isinstance(vt, TensorType):
            raise self.err(
                f"the value written to {tvar.name!r} must be a tensor or tile expression, got {vt}",
                value_node,
            )
        if lifted(vt.shape, len(extents), scalar_lead(target)) != tuple(extents):
            raise self.err(
                f"shape mismatch: the window of {tvar.name!r} is [{', '.join(map(str, extents))}] "
                f"but the value is [{', '.join(map(str, vt.shape))}]",
                s,
            )
        if vt.dtype is not tt.dtype:
            raise self.err(
                f"dtype mismatch: {tvar.name!r} is {tt.dtype.value} but the value is {vt.dtype.value}; use pl.cast",
                value_node,
            )
        if not self.st.in_scope and not self.st.func_type.is_kernel:
            if self.st.func_type is not FunctionType.Opaque:
                raise self.err(
                    "tensor computations run on a core: put this inside `with pl.at(level=pl.Level.CORE_GROUP):`",
                    s,
                )
            self.st.outside_node = self.st.outside_node or (s, "store")
        self.st.saw_tile = True
        if isinstance(value, Call) and value.op == "tensor.view":
            # `out[...] = a[i:i + 16, :]` is lowered as `v = a[i:i + 16, :]; out[...] = v`
            self.hoisted += 1
            view = Var(f"{self.prefix}_view{self.hoisted}", vt, self.src.span(value_node))
            self.pending.append(Assign(view, value, self.src.span(value_node)))
            value = view
        return TensorWrite(tvar, tuple(offsets), value, span)

    @staticmethod
    def _subscripts(target: ast.Subscript) -> list[ast.expr]:
        return list(target.slice.elts) if isinstance(target.slice, ast.Tuple) else [target.slice]

    def tile_write(self, tvar: Var, target: ast.Subscript, value_node: ast.expr, s: ast.stmt) -> Stmt:
        """``t[0:16, 0:32] = src`` / ``t[i] = row`` on a tile: ``pl.tile.assemble(t, src, offsets)``,
        the window's shape being the source's (a ``[n]`` source into a one-row window too);
        ``t[i, j] = v`` of a scalar ``v`` is ``pl.tile.write(t, [i, j], v)``."""
        name = target.value.id  # type: ignore[attr-defined]
        idx = self.element_index(tvar, target) if id(tvar) not in self.st.nd_shapes else None
        raw = self.expr(value_node) if idx is not None else None
        if idx is not None and raw is not None and isinstance(raw.type, ScalarType):
            static = [int(i.value) if isinstance(i, Const) else None for i in idx]
            written = self.make_op("write", [tvar, tuple(idx), raw], {"static_offsets": static}, s)
            var = Var(self.prefix + name, written.type, self.src.span(target))
            self.st.env[name] = var
            return Assign(var, written, self.src.span(s))
        offsets, extents = tile_write_window(self, tvar, target)
        value = fit_to_window(self, raw if raw is not None else self.expr(value_node), extents, 0, value_node)
        vt = value.type
        if not isinstance(vt, TileType):
            raise self.err(
                f"the value written into the tile {tvar.name!r} must be a tile, got {vt}", value_node
            )
        if tuple(vt.shape) != tuple(extents):
            raise self.err(
                f"shape mismatch: the window of tile {tvar.name!r} is [{', '.join(map(str, extents))}] "
                f"but the value is [{', '.join(map(str, vt.shape))}]",
                value_node,
            )
        call = self.make_op("assemble", [tvar, value, tuple(offsets)], {}, s)
        var = Var(self.prefix + name, call.type, self.src.span(target))
        self.st.env[name] = var
        if tvar.type == var.type and id(tvar) in self.st.nd_shapes:
            self.st.nd_shapes[id(var)] = self.st.nd_shapes[id(tvar)]
        return Assign(var, call, self.src.span(s))

    def element_index(self, tvar: Expr, target: ast.Subscript) -> list[Expr] | None:
        """The indices of ``t[i, j]`` when every dimension is indexed by a scalar (an element),
        else None (a window)."""
        tt = tvar.type
        assert isinstance(tt, (TensorType, TileType))
        items = self._subscripts(target)
        if len(items) != len(tt.shape) or any(isinstance(i, ast.Slice) for i in items):
            return None
        return [self.scalar(i, "an element index") for i in items]

    def window(
        self, tvar: Expr, target: ast.Subscript, runtime_ok: bool = False
    ) -> tuple[list[Expr], list[Any]]:
        """Offsets and extents of ``t[a:b, ...]`` (missing dims are whole; an index ``i`` is the
        one-wide slice ``i:i + 1``, so the window keeps the rank). With ``runtime_ok`` an extent
        that is not a constant is returned as its scalar expression."""
        tt = tvar.type
        assert isinstance(tt, (TensorType, TileType))
        what = "tensor" if isinstance(tt, TensorType) else "tile"
        items = self._subscripts(target)
        if len(items) > len(tt.shape):
            raise self.err(f"{len(items)} indices for a rank-{len(tt.shape)} {what}", target.slice)
        offsets: list[Expr] = []
        extents: list[Any] = []
        for axis in range(len(tt.shape)):
            item = items[axis] if axis < len(items) else None
            dim = tt.shape[axis]
            if item is None or (isinstance(item, ast.Slice) and item.lower is None and item.upper is None):
                offsets.append(Const(0, INDEX))
                extents.append(dim)
                continue
            if not isinstance(item, ast.Slice):
                offsets.append(self.scalar(item, f"a {what} index"))
                extents.append(1)
                continue
            if item.step is not None:
                raise self.err(
                    f"{what} windows are written with slices without a step, such as t[0:64, :]", item
                )
            lo = self.expr(item.lower) if item.lower is not None else Const(0, INDEX)
            if item.upper is None:
                if not isinstance(lo, Const) or not isinstance(dim, int):
                    hint = self.runtime_hint(lo, "its start")
                    raise self.err(f"an open-ended slice needs a constant start and a static dim{hint}", item)
                extents.append(dim - int(lo.value))
            else:
                hi = self.expr(item.upper)
                ext = extent(hi, lo)
                if runtime_ok and not isinstance(ext, Const):
                    extents.append(ext)
                    offsets.append(lo)
                    continue
                if not isinstance(ext, Const):
                    hint = self.runtime_hint(ext, "the extent")
                    raise self.err(f"a slice's extent (stop - start) must be a constant{hint}", item)
                extents.append(int(ext.value))
            offsets.append(lo)
        return offsets, extents

    def tensor_view(self, node: ast.Subscript) -> Expr:
        node = chained(self, node)  # C[i][j] is C[i, j]
        base = self.expr(node.value)
        if isinstance(base.type, ArrayType):
            return self.array_read(base, node)
        if isinstance(base.type, TileType):
            return tile_subscript(self, base, node)
        if not isinstance(base, Var) or not isinstance(base.type, TensorType):
            raise self.err(f"only tensors and tiles can be indexed with [...], got {base.type}", node)
        index = self.element_index(base, node)
        if index is not None:  # t[i, j]: one element, as pl.read(t, [i, j])
            return self.make_op("read", [base, tuple(index)], {}, node)
        offsets, extents = self.window(base, node)
        if any(not isinstance(e, int) for e in extents):
            raise self.err("a tensor window needs static extents; slice the dynamic dims explicitly", node)
        static = [o.value if isinstance(o, Const) else None for o in offsets]
        attrs = {"shape": tuple(extents), "static_offsets": static}
        return self.make_op("view", [base, tuple(offsets)], attrs, node)
