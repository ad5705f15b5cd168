"""Blocked lowering of a tensor-level matmul too large for one set of cube tiles.

``tensor_to_tile`` lowers ``c = pl.matmul(a, b)`` on tensors to one Left, one Right and one Acc
tile when those fit the cube's buffers (L0A, L0B, L0C) of every platform. When they do not, the
product is computed by blocks here: the output ``[M, N]`` in ``[m, n]`` blocks (loops over the
block rows and columns), each block's reduction over ``K`` in ``k``-wide steps (the first step a
``matmul``, the others a ``matmul_acc`` into the same Acc tile). Block sizes are halved from the
full shape until every tile the nest declares fits its share of each buffer (the kernel's
blocked matmuls share equally what its single-tile matmuls leave; the first K step is peeled,
so each operand space holds two panels; L1 keeps three quarters for scratch tiles).

Operands come from device memory (a tensor or a window of one: each panel is a ``load`` of its
window into L1) or from an on-chip tile (moved to L1 once, each panel a ``slice`` of it).

Where each block goes depends on what consumes the product (a ``Sink``):

- ``Store``: an ``assemble`` / window write into a tensor. Each Acc block is stored straight to
  its window; with ``atomic=Add`` it is moved to Vec, added to the window's current contents
  and stored.
- ``Scratch``: anything on-chip (a cast, another matmul, ...). Each block is written (after an
  optional cast in Vec) into one tile of the whole product, which later ops read: an L1 (Mat)
  tile, or a Vec tile when a vector op reads the product (no platform moves L1 to Vec, so
  each Acc block goes to Vec, as the single-tile lowering does).

Accumulations into the Acc tile and block writes into the scratch are in-place statements
(``ExprStmt`` of an op whose table entry names an ``into`` operand): the lowered IR's one form
of mutation, produced only here and emitted by the kernel code generator as the library call
on the existing tile.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from pypto.ir.dtypes import DataType
from pypto.ir.errors import KernelError, Span
from pypto.ir.nodes import Arg, Assign, Call, Const, Expr, ExprStmt, For, Stmt, Var
from pypto.ir.ops import infer
from pypto.ir.param_info import Layout
from pypto.ir.passes import transposed_reads
from pypto.ir.passes._rewrite import add_index
from pypto.ir.platforms import PLATFORM_TABLE
from pypto.ir.types import MemorySpace, ScalarType, TensorType, TileType, Type

__all__ = ["CAPACITY", "Scratch", "Store", "budget", "emit_blocked_matmul", "needs_blocking"]

CAPACITY: dict[MemorySpace, int] = {
    space: min(p.capacity(space) for p in PLATFORM_TABLE.values())
    for space in (MemorySpace.Vec, MemorySpace.Mat, MemorySpace.Left, MemorySpace.Right, MemorySpace.Acc)
}
"""Bytes per on-chip buffer that every platform provides: a blocked nest fits all of them."""

MIN_BLOCK = 16
"""Blocks are not halved below this many rows or columns (the cube's fractal edge)."""

INDEX = DataType.INT64


class Lowerer(Protocol):
    """What the nest needs from ``tensor_to_tile``'s lowerer."""

    views: dict[str, Call]
    transposed: dict[str, Call]  # a transpose of a tensor the kernel only reads (transposed_reads)

    def fresh(self, base: str, ty: Type) -> Var: ...

    def emit(self, op: str, args: list[Arg], attrs: dict[str, object], out: list[Stmt], base: str) -> Var: ...

    def on_chip(self, e: Expr, out: list[Stmt], span: Span | None) -> Var | None: ...


@dataclass(frozen=True)
class Store:
    """Blocks go to ``target`` at ``offsets`` (+ the block's position), added when ``atomic``."""

    target: Var
    offsets: tuple[Expr, ...]
    atomic: bool
    rebase: Callable[[Call], Call]  # a load/store through a window becomes one on its base tensor


@dataclass(frozen=True)
class Scratch:
    """Blocks go into one tile of the whole product in ``memory`` (Mat or Vec), cast to
    ``dtype`` (``mode``) first."""

    dtype: DataType | None = None
    mode: Any = None
    memory: MemorySpace = MemorySpace.Mat


def _dims(t: Type) -> tuple[int, int] | None:
    if isinstance(t, TileType):
        return int(t.shape[0]), int(t.shape[1])
    if (
        isinstance(t, TensorType)
        and t.is_static
        and len(t.shape) >= 2
        and all(d == 1 for d in t.static_shape[:-2])
        and t.layout is not Layout.NZ
    ):  # a matrix: 2-D, or leading dims of 1 (one plane of a batched operand)
        r, c = t.static_shape[-2:]
        return int(r), int(c)
    return None


def needs_blocking(a: Type, b: Type) -> bool:
    """Whether ``a @ b`` (tensor-level) is too large for one Left, Right and Acc tile (or for
    the Vec tile the single-tile lowering moves the product to, or for L1)."""
    da, db = _dims(a), _dims(b)
    if da is None or db is None or not isinstance(a, (TensorType, TileType)):
        return False
    (m, k), (_, n) = da, db
    ea, eb = a.dtype.itemsize, b.dtype.itemsize  # type: ignore[union-attr]
    return (
        m * k * ea > CAPACITY[MemorySpace.Left]
        or k * n * eb > CAPACITY[MemorySpace.Right]
        or m * n * 4 > CAPACITY[MemorySpace.Acc]
        or m * n * 4 > CAPACITY[MemorySpace.Vec]
        or m * k * ea + k * n * eb > CAPACITY[MemorySpace.Mat]
    )


def budget(kernel_matmuls: list[tuple[Type, Type]]) -> dict[MemorySpace, int]:
    """The bytes per buffer each blocked matmul of a kernel may use: what every platform
    provides, less what the kernel's single-tile matmuls take, split equally between the
    blocked ones."""
    left = dict(CAPACITY)
    blocked = 0
    for a, b in kernel_matmuls:
        if needs_blocking(a, b):
            blocked += 1
            continue
        da, db = _dims(a), _dims(b)
        if da is None or db is None:
            continue
        (m, k), (_, n) = da, db
        ea, eb = a.dtype.itemsize, b.dtype.itemsize  # type: ignore[union-attr]
        for space, used in (
            (MemorySpace.Left, m * k * ea),
            (MemorySpace.Right, k * n * eb),
            (MemorySpace.Acc, m * n * 4),
            (MemorySpace.Vec, m * n * 4),
            (MemorySpace.Mat, m * k * ea + k * n * eb),
        ):
            left[space] = max(left[space] - used, 0)
    return {space: cap // max(blocked, 1) for space, cap in left.items()}


def _plan(
    mnk: tuple[int, int, int],
    ea: int,
    eb: int,
    *,
    caps: dict[MemorySpace, int],
    vec_tiles: int,
    span: Span | None,
) -> tuple[int, int, int]:
    """Block sizes ``(m, n, k)``, each the full extent halved until the nest's tiles fit ``caps``."""
    big_m, big_n, big_k = mnk
    m, n, k = big_m, big_n, big_k

    def can(x: int) -> bool:
        return x % 2 == 0 and x // 2 >= MIN_BLOCK

    acc_cap = caps[MemorySpace.Acc]
    vec_cap = caps[MemorySpace.Vec]
    while m * n * 4 > acc_cap or (vec_tiles and m * n * 4 * vec_tiles > vec_cap):
        if can(m) and (m >= n or not can(n)):
            m //= 2
        elif can(n):
            n //= 2
        else:
            break
    left_cap = caps[MemorySpace.Left] // 2
    right_cap = caps[MemorySpace.Right] // 2
    mat_cap = caps[MemorySpace.Mat] // 4
    while m * k * ea > left_cap or k * n * eb > right_cap or 2 * (m * k * ea + k * n * eb) > mat_cap:
        if can(k):
            k //= 2
        elif can(m) and m * k * ea > left_cap:
            m //= 2
        elif can(n) and k * n * eb > right_cap:
            n //= 2
        else:
            break
    fits = (
        m * n * 4 <= acc_cap
        and m * k * ea <= left_cap
        and k * n * eb <= right_cap
        and 2 * (m * k * ea + k * n * eb) <= mat_cap
    )
    if not fits:
        raise KernelError(
            f"pl.matmul of [{big_m}, {big_k}] x [{big_k}, {big_n}] cannot be split into blocks that fit the "
            f"cube buffers (smallest found: [{m}, {k}] x [{k}, {n}]); use shapes whose extents halve down "
            f"to multiples of {MIN_BLOCK}, or tile it by hand with pl.load / pl.matmul_acc",
            span,
        )
    return m, n, k


class _Operand:
    """Panels of one matmul operand: loads of windows of a tensor, or slices of an L1 tile."""

    def __init__(self, lw: Lowerer, e: Expr, out: list[Stmt], span: Span | None) -> None:
        self.lw = lw
        self.base: Var
        self.offsets: tuple[Expr, ...] = ()
        self.tile: Var | None = None
        self.transposed: Call | None = lw.transposed.get(e.name) if isinstance(e, Var) else None
        if self.transposed is not None:  # panels of the source, read in L1 as their transpose
            return
        if isinstance(e, Var) and e.name in lw.views:
            base, offs = lw.views[e.name].args
            assert isinstance(base, Var)
            assert isinstance(offs, tuple)
            self.base, self.offsets = base, offs
            return
        tile = lw.on_chip(e, out, span)
        if tile is not None:
            tt = tile.type
            assert isinstance(tt, TileType)
            if tt.memory is not MemorySpace.Mat:
                tile = lw.emit("tile.move", [tile], {"memory": MemorySpace.Mat}, out, "l1")
            self.tile = tile
            return
        assert isinstance(e, Var)
        assert isinstance(e.type, TensorType)
        self.base = e
        self.offsets = tuple(Const(0, INDEX) for _ in e.type.shape)

    def panel(self, row: Expr, col: Expr, shape: tuple[int, int], space: MemorySpace, out: list[Stmt]) -> Var:
        lw = self.lw
        if self.transposed is not None:
            l1 = transposed_reads.panel(lw, self.transposed, row, col, shape=shape, out=out)  # type: ignore[arg-type]
        elif self.tile is not None:
            l1 = lw.emit("tile.slice", [self.tile, (row, col)], {"shape": shape}, out, "pnl")
        else:
            offs = (*self.offsets[:-2], add_index(self.offsets[-2], row), add_index(self.offsets[-1], col))
            window = (*((1,) * (len(offs) - 2)), *shape)
            l1 = lw.emit(
                "tile.load", [self.base, offs], {"shape": window, "memory": MemorySpace.Mat}, out, "pnl"
            )
        return lw.emit("tile.move", [l1], {"memory": space}, out, "l0")


def emit_blocked_matmul(
    lw: Lowerer,
    call: Call,
    sink: Store | Scratch,
    *,
    caps: dict[MemorySpace, int],
    out: list[Stmt],
    base: str,
) -> Var | None:
    """Append the blocked nest of ``call`` (a ``tensor.matmul``) to ``out``; returns the L1
    scratch tile for a ``Scratch`` sink, None for a ``Store``."""
    a_e, b_e = call.args[0], call.args[1]
    assert not isinstance(a_e, tuple)
    assert not isinstance(b_e, tuple)
    da, db = _dims(a_e.type), _dims(b_e.type)
    assert da is not None
    assert db is not None
    (big_m, big_k), (_, big_n) = da, db
    ea, eb = a_e.type.dtype.itemsize, b_e.type.dtype.itemsize  # type: ignore[union-attr]
    if isinstance(sink, Store):
        vec_tiles = 3 if sink.atomic else 0
    else:
        vec_tiles = 2 if sink.dtype is not None or sink.memory is MemorySpace.Vec else 0
    m, n, k = _plan((big_m, big_n, big_k), ea, eb, caps=caps, vec_tiles=vec_tiles, span=call.span)
    lhs = _Operand(lw, a_e, out, call.span)
    rhs = _Operand(lw, b_e, out, call.span)
    scratch: Var | None = None
    if isinstance(sink, Scratch):
        acc_dtype = infer("tensor.matmul", [a_e.type, b_e.type], {}).dtype  # type: ignore[union-attr]
        dtype = sink.dtype or acc_dtype
        scratch = lw.emit(
            "tile.create", [], {"shape": (big_m, big_n), "dtype": dtype, "memory": sink.memory}, out, base
        )

    def loop(var: Var | Const, stop: int, step: int, body: list[Stmt], into: list[Stmt]) -> None:
        if isinstance(var, Const):
            into.extend(body)
        else:
            into.append(
                For(var, Const(0, INDEX), Const(stop, INDEX), Const(step, INDEX), tuple(body), span=call.span)
            )

    def index(name: str, extent: int, block: int) -> Var | Const:
        return Const(0, INDEX) if extent == block else lw.fresh(name, ScalarType(INDEX))

    mi = index("mi", big_m, m)
    ni = index("ni", big_n, n)
    block: list[Stmt] = []
    zero = Const(0, INDEX)
    left = lhs.panel(mi, zero, (m, k), MemorySpace.Left, block)
    right = rhs.panel(zero, ni, (k, n), MemorySpace.Right, block)
    acc = lw.emit("tile.matmul", [left, right], {}, block, "acc")
    if big_k > k:
        ki = lw.fresh("ki", ScalarType(INDEX))
        step: list[Stmt] = []
        left = lhs.panel(mi, ki, (m, k), MemorySpace.Left, step)
        right = rhs.panel(ki, ni, (k, n), MemorySpace.Right, step)
        step.append(ExprStmt(Call("tile.matmul_acc", (acc, left, right), (), acc.type, call.span), call.span))
        block.append(
            For(ki, Const(k, INDEX), Const(big_k, INDEX), Const(k, INDEX), tuple(step), span=call.span)
        )
    if isinstance(sink, Store):
        _store_block(lw, sink, acc=acc, mi=mi, ni=ni, shape=(m, n), out=block, span=call.span)
    else:
        assert scratch is not None
        value = acc
        if sink.dtype is not None or sink.memory is MemorySpace.Vec:
            value = lw.emit("tile.move", [acc], {"memory": MemorySpace.Vec}, block, "vec")
        if sink.dtype is not None:
            attrs: dict[str, object] = {"dtype": sink.dtype}
            if sink.mode is not None:
                attrs["mode"] = sink.mode
            value = lw.emit("tile.cast", [value], attrs, block, "cvt")
        infer("tile.assemble", [scratch.type, value.type], {})
        put = Call("tile.assemble", (scratch, value, (mi, ni)), (), scratch.type, call.span)
        block.append(ExprStmt(put, call.span))
    rows: list[Stmt] = []
    loop(ni, big_n, n, block, rows)
    loop(mi, big_m, m, rows, out)
    return scratch


def _store_block(
    lw: Lowerer,
    sink: Store,
    *,
    acc: Var,
    mi: Expr,
    ni: Expr,
    shape: tuple[int, int],
    out: list[Stmt],
    span: Span | None,
) -> None:
    offs = sink.offsets
    at = (*offs[:-2], add_index(offs[-2], mi), add_index(offs[-1], ni))
    value = acc
    if sink.atomic:
        value = lw.emit("tile.move", [acc], {"memory": MemorySpace.Vec}, out, "vec")
        window = (1,) * (len(offs) - 2) + shape
        attrs = {"shape": window, "memory": MemorySpace.Vec}
        load = Call(
            "tile.load",
            (sink.target, at),
            tuple(sorted(attrs.items())),
            infer("tile.load", [sink.target.type], dict(attrs)),
            span,
        )
        held = lw.fresh("held", load.type)
        out.append(Assign(held, sink.rebase(load), span))
        value = lw.emit("tile.add", [held, value], {}, out, "sum")
    infer("tile.store", [value.type, sink.target.type], {})
    store = Call("tile.store", (value, at, sink.target), (), sink.target.type, span)
    out.append(ExprStmt(sink.rebase(store), span))
