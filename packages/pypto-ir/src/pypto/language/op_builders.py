"""How each ``pl.*`` call becomes an IR op: argument binding results -> operands and attributes.

Each builder receives the parser (for expressions, shapes, dtypes and positioned errors), the
op's language name, the call's bound arguments (AST nodes) and the call node; the parser's
``make_op`` dispatches to the tile or tensor form and type-checks it.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pypto.ir.dtypes import DataType
from pypto.ir.errors import KernelError
from pypto.ir.nodes import Arg, Const, Expr
from pypto.ir.ops.cast_modes import DEFAULT as CAST_DEFAULT
from pypto.ir.ops.cast_modes import cast_mode
from pypto.ir.ops.movement_rules import RANDOM_SEEDS
from pypto.ir.ops.spec import LANGUAGE, OpError
from pypto.ir.param_info import Layout
from pypto.ir.types import (
    AtomicType,
    MemorySpace,
    NotifyOp,
    PadValue,
    ScalarType,
    TensorType,
    TileType,
    WaitCmp,
)
from pypto.language.fold import INDEX, make_const

if TYPE_CHECKING:
    from pypto.language.parser.calls import _Calls as _Parser

__all__ = ["OP_BUILDERS", "build_generic", "tile_dims"]


_Builder = Callable[["_Parser", str, dict[str, Any], ast.Call], Expr]


def _value(p: _Parser, node: Any) -> Expr:
    if isinstance(node, ast.AST):
        return p.expr(node)  # type: ignore[arg-type]
    if isinstance(node, (int, float)):
        return Const(node, DataType.FP32 if isinstance(node, float) else INDEX)
    raise KernelError(f"unexpected argument {node!r}")


def build_generic(p: _Parser, opname: str, bound: dict[str, Any], node: ast.Call) -> Expr:
    args: list[Arg] = []
    for key, v in bound.items():
        if v is None:
            continue
        if key in ("axis1", "axis2"):
            continue
        args.append(_value(p, v))
    return p.make_op(opname, args, {}, node)


def _flag(p: _Parser, b: dict[str, Any], key: str, what: str, node: ast.Call) -> bool:
    """A keyword that must be ``True`` or ``False`` at compile time (``False`` when not given)."""
    if key not in b:
        return False
    v = p.static_value(b[key], f"{what} {key}", node)
    if not isinstance(v, bool):
        raise p.err(f"{what}: {key} must be True or False, got {v!r}", node)
    return v


def _build_precision(p: _Parser, opname: str, b: dict[str, Any], node: ast.Call) -> Expr:
    """``pl.div/log/recip/rsqrt(..., high_precision=...)``: the flag is recorded, the math is the same
    on the simulator (op table, ``PRECISION``)."""
    what = f"pl.{opname}"
    precise = _flag(p, b, "high_precision", what, node)
    operands = [_value(p, b[k]) for k in ("lhs", "rhs", "input", "tmp") if b.get(k) is not None]
    args: list[Arg] = list(operands)
    call = p.make_op(opname, args, {"high_precision": True} if precise else {}, node)
    if precise and opname == "div" and isinstance(operands[1].type, ScalarType):
        raise p.err(
            "pl.div: high_precision=True needs a tile or tensor divisor, got a scalar; divide by a "
            "scalar without it",
            node,
        )
    if precise and call.op == "tile.rsqrt":
        raise p.err(
            "pl.rsqrt: high_precision=True is taken at tensor level only; a tile rsqrt asks for "
            "it with a scratch tile of its shape and dtype: pl.tile.rsqrt(t, tmp=scratch)",
            node,
        )
    return call


_CMP_NAMES = ("EQ", "NE", "LT", "LE", "GT", "GE")


def _build_cmp(p: _Parser, opname: str, b: dict[str, Any], node: ast.Call) -> Expr:
    """``pl.cmp`` / ``pl.cmps(lhs, rhs, cmp_type=k)``: ``k`` a constant 0..5 (EQ, NE, LT, LE, GT, GE)."""
    mode = p.static_value(b.get("cmp_type", 0), f"pl.{opname} cmp_type", node)
    if isinstance(mode, bool) or not isinstance(mode, int) or not 0 <= mode < len(_CMP_NAMES):
        codes = ", ".join(f"{i} {n}" for i, n in enumerate(_CMP_NAMES))
        raise p.err(f"pl.{opname}: cmp_type must be one of {codes}, got {mode!r}", node)
    return p.make_op(opname, [_value(p, b["lhs"]), _value(p, b["rhs"])], {"cmp_type": mode}, node)


def _build_load(p: _Parser, opname: str, b: dict[str, Any], node: ast.Call) -> Expr:
    tensor = p.expr(b["tensor"])
    offs = p.offsets(b["offsets"], "pl.load offsets")
    shape = p.shape(b["shapes"], "pl.load shape")
    attrs: dict[str, Any] = {
        "shape": shape,
        "static_offsets": [o.value if isinstance(o, Const) else None for o in offs],
    }
    if "target_memory" in b:
        attrs["memory"] = p.memory(b["target_memory"], "pl.load target_memory")
    args: list[Arg] = [tensor, offs]
    if _flag(p, b, "clamp", "pl.load", node):
        _clamp(p, b, tensor=tensor, offs=offs, node=node)
    if b.get("valid_shape") is not None:
        valid = p.offsets(b["valid_shape"], "pl.load valid_shape")
        if len(valid) != 2:
            raise p.err(f"pl.load valid_shape needs [rows, cols], got {len(valid)} values", node)
        for v, full in zip(valid, tile_dims(tensor, shape), strict=True):
            if isinstance(v, Const) and not 0 <= int(v.value) <= full:
                raise p.err(f"pl.load valid_shape {int(v.value)} is outside [0, {full}]", node)
        args.append(valid)
        # only the valid region is read: the window check uses it (a run-time extent is checked
        # when the kernel runs)
        attrs["static_valid"] = [int(v.value) if isinstance(v, Const) else None for v in valid]
    if isinstance(tensor.type, TensorType) and tensor.type.layout is Layout.NZ:
        attrs["layout"] = Layout.NZ
    if len(shape) > 2 and any(d != 1 for d in shape[:-2]) and len(args) == 2:
        from pypto.language.parser.nd_tiles import nd_load

        return nd_load(p, tensor, offs=offs, shape=shape, attrs=attrs, node=node)  # type: ignore[arg-type]
    return p.make_op("load", args, attrs, node)


def _clamp(p: _Parser, b: dict[str, Any], *, tensor: Expr, offs: tuple[Expr, ...], node: ast.Call) -> None:
    """``pl.load(..., clamp=True)``: the valid region (``valid_shape``, else the window) cut back
    to the tensor's edge, written into ``b["valid_shape"]`` as constants."""
    tt = tensor.type
    dims = [d for d in tt.shape[-2:] if isinstance(d, int)] if isinstance(tt, TensorType) else []
    at = [int(o.value) for o in offs[-2:] if isinstance(o, Const)]
    want = p.offsets(b["valid_shape"], "pl.load valid_shape") if b.get("valid_shape") is not None else None
    shape = p.shape(b["shapes"], "pl.load shape")
    requested = (
        [int(v.value) for v in want if isinstance(v, Const)]
        if want is not None
        else list(tile_dims(tensor, shape))
    )
    if len(dims) != 2 or len(at) != 2 or len(requested) != 2:
        raise p.err(
            "pl.load clamp=True: needs constant offsets and valid_shape and a static 2-D tensor shape "
            "here (a run-time window is checked when the kernel runs instead)",
            node,
        )
    clamped = []
    for r, d, o in zip(requested, dims, at, strict=True):
        if o >= d:
            raise p.err(f"pl.load clamp=True: the window starts at {o}, past the tensor's extent {d}", node)
        clamped.append(min(r, d - o))
    b["valid_shape"] = ast.copy_location(
        ast.List(elts=[ast.Constant(v) for v in clamped], ctx=ast.Load()), node
    )


def tile_dims(tensor: Expr, shape: tuple[int, ...]) -> tuple[int, int]:
    return (1, shape[0]) if len(shape) == 1 else (shape[-2], shape[-1])


def _element_at(p: _Parser, b: dict[str, Any], operand: str, what: str, node: ast.Call) -> tuple[Expr, Any]:
    """The tensor or tile ``b[operand]`` of ``pl.read``/``pl.write`` and its element index
    (``b["offset"]``: a list, or one index for a 1-D tensor), one index per tensor dimension."""
    t = p.expr(b[operand])
    node_idx = b["offset"]
    if not isinstance(node_idx, (ast.List, ast.Tuple)):
        node_idx = ast.copy_location(ast.List(elts=[node_idx], ctx=ast.Load()), node_idx)
    idx = p.offsets(node_idx, f"{what} offset")
    if isinstance(t.type, TensorType) and len(idx) != len(t.type.shape):
        raise p.err(f"{what}: {len(idx)} indices for a rank-{len(t.type.shape)} tensor", node)
    return t, idx


def _build_read(p: _Parser, opname: str, b: dict[str, Any], node: ast.Call) -> Expr:
    t, idx = _element_at(p, b, "src", "pl.read", node)
    if isinstance(t.type, TileType) and len(idx) != 2:
        raise p.err(f"pl.read: a tile is read at [row, col], got {len(idx)} indices", node)
    return p.make_op("read", [t, idx], {}, node)


def _build_write(p: _Parser, opname: str, b: dict[str, Any], node: ast.Call) -> Expr:
    t, idx = _element_at(p, b, "dst", "pl.write", node)
    attrs: dict[str, Any] = {}
    if isinstance(t.type, TileType):
        if len(idx) != 2:
            raise p.err(f"pl.write: a tile is written at [row, col], got {len(idx)} indices", node)
        attrs["static_offsets"] = [int(i.value) if isinstance(i, Const) else None for i in idx]
    return p.make_op("write", [t, idx, p.scalar(b["value"], "pl.write value")], attrs, node)


def _build_assemble(p: _Parser, opname: str, b: dict[str, Any], node: ast.Call) -> Expr:
    target = p.expr(b["target"])
    atomic = p.static_value(b.get("atomic", AtomicType.None_), "pl.assemble atomic", node)
    if not isinstance(atomic, AtomicType):
        raise p.err(f"pl.assemble: atomic must be a pl.AtomicType (None_ or Add), got {atomic!r}", node)
    if isinstance(target.type, TensorType):
        offs = p.offsets(b["offset"], "pl.assemble offset")
        attrs: dict[str, Any] = {
            "static_offsets": [o.value if isinstance(o, Const) else None for o in offs],
            "atomic": atomic,
        }
        return p.make_op("assemble", [target, p.expr(b["source"]), offs], attrs, node)
    if atomic is not AtomicType.None_:
        raise p.err(
            "pl.assemble: atomic=pl.AtomicType.Add needs a tensor target (an accumulation in device "
            "memory); a tile target takes only atomic=pl.AtomicType.None_",
            node,
        )
    offs = p.offsets(b["offset"], "pl.tile.assemble offset")
    if len(offs) != 2:
        raise p.err("pl.tile.assemble offsets are [row, col]", node)
    attrs = {"static_offsets": [o.value if isinstance(o, Const) else None for o in offs]}
    return p.make_op("assemble", [target, p.expr(b["source"]), offs], attrs, node)


def _build_slice(p: _Parser, opname: str, b: dict[str, Any], node: ast.Call) -> Expr:
    offs = p.offsets(b["offset"], "pl.slice offset")
    src = p.expr(b["input"])
    if isinstance(src.type, TensorType) and len(offs) != len(src.type.shape):
        raise p.err(
            f"pl.slice of a rank-{len(src.type.shape)} tensor takes {len(src.type.shape)} offsets", node
        )
    if not isinstance(src.type, TensorType) and len(offs) != 2:
        raise p.err("pl.slice offsets are [row, col]", node)
    pad = pad_value(p, b["pad_value"], "pl.slice pad_value", node) if b.get("pad_value") is not None else None
    drop = p.static_value(b.get("drop_dims"), "pl.slice drop_dims", node)
    if drop not in (None, []):
        raise p.err(f"pl.slice: drop_dims is not available (got {drop!r}); slice, then pl.reshape", node)
    if _flag(p, b, "clamp", "pl.slice", node):
        raise p.err("pl.slice: clamp=True is not available; give a window inside the source", node)
    valid_node = b.get("valid_shape")
    if valid_node is not None and isinstance(valid_node, ast.Constant) and valid_node.value is None:
        valid_node = None
    if isinstance(src.type, TensorType):  # a window of a tensor; its extents may be run-time scalars
        shape, extents = p.extents(b["shape"], "pl.slice shape")
        attrs: dict[str, Any] = {
            "shape": shape,
            "static_offsets": [o.value if isinstance(o, Const) else None for o in offs],
        }
        if valid_node is not None:
            valid = p.offsets(valid_node, "pl.slice valid_shape")
            if len(valid) != len(shape):
                raise p.err(f"pl.slice valid_shape needs {len(shape)} extents, got {len(valid)}", node)
            if all(isinstance(v, Const) for v in valid):
                fixed = [int(v.value) for v in valid]  # type: ignore[union-attr]
                for axis, (n, full) in enumerate(zip(fixed, shape, strict=True)):
                    if isinstance(full, int) and not 0 <= n <= full:
                        raise p.err(f"pl.slice valid_shape {n} on axis {axis} is outside [0, {full}]", node)
                attrs["valid_shape"] = fixed
            elif pad is not None:
                raise p.err(
                    "pl.slice: pad_value needs a valid_shape of constants here; a run-time valid "
                    "shape is read by pl.load(..., valid_shape=...) in the kernel",
                    node,
                )
        if pad is not None:
            attrs["pad"] = pad
        return p.make_op("slice", [src, offs] + ([extents] if extents is not None else []), attrs, node)
    attrs = {
        "shape": p.shape(b["shape"], "pl.slice shape"),
        "static_offsets": [o.value if isinstance(o, Const) else None for o in offs],
    }
    sub = p.make_op("slice", [src, offs], attrs, node)
    if valid_node is None:
        if pad is not None:
            raise p.err("pl.slice: pad_value fills the part outside valid_shape; give valid_shape too", node)
        return sub
    valid = p.offsets(valid_node, "pl.slice valid_shape")
    if len(valid) != 2:
        raise p.err(f"pl.slice valid_shape of a tile is [rows, cols], got {len(valid)} values", node)
    for what, v, full in zip(("rows", "cols"), valid, attrs["shape"], strict=True):
        if isinstance(v, Const) and not 0 <= int(v.value) <= full:
            raise p.err(f"pl.slice valid_shape {what} {int(v.value)} is outside [0, {full}]", node)
    narrowed = p.make_op("set_validshape", [sub, *valid], {}, node)
    if pad is None:
        return narrowed
    filled = p.make_op("fillpad", [narrowed], {"pad": pad}, node)
    return p.make_op("set_validshape", [filled, *valid], {}, node)


def pad_value(p: _Parser, node: Any, what: str, at: ast.Call) -> PadValue:
    """A ``pad_value=`` argument: a ``pl.PadValue`` or one of the numbers that name one (``0``,
    ``math.inf``, ``-math.inf``), as upstream accepts."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):  # -math.inf
        inner = p.static_value(node.operand, what, at)
        v: Any = -inner if isinstance(inner, (int, float)) and not isinstance(inner, bool) else node
    else:
        v = p.static_value(node, what, at)
    if isinstance(v, PadValue):
        return v
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        if v == 0:
            return PadValue.zero
        if v == math.inf:
            return PadValue.max
        if v == -math.inf:
            return PadValue.min
    raise p.err(
        f"{what} must be a pl.PadValue (zero, min, max) or 0, math.inf, -math.inf, got "
        f"{ast.unparse(node) if isinstance(node, ast.AST) else repr(v)}",
        at,
    )


def _build_fillpad(p: _Parser, opname: str, b: dict[str, Any], node: ast.Call) -> Expr:
    """``pl.fillpad(value, pad_value)`` and ``pl.tile.fillpad_inplace(tile, pad_value)``."""
    what = f"pl.{opname}" if opname == "fillpad" else f"pl.tile.{opname}"
    pad = pad_value(p, b["pad_value"], f"{what} pad_value", node) if "pad_value" in b else PadValue.zero
    return p.make_op(opname, [p.expr(b["value" if opname == "fillpad" else "tile"])], {"pad": pad}, node)


def _build_store(p: _Parser, opname: str, b: dict[str, Any], node: ast.Call) -> Expr:
    tile = p.expr(b["tile"])
    offs = p.offsets(b["offsets"], "pl.store offsets")
    out = p.expr(b["output_tensor"])
    if b.get("shapes") is not None and isinstance(tile.type, TileType) and isinstance(out.type, TensorType):
        shape = p.shape(b["shapes"], "pl.store shapes")
        if tile_dims(out, shape) != tile.type.shape:
            raise p.err(
                f"pl.store shapes {list(shape)} do not match the tile {list(tile.type.shape)}; store the whole tile",
                node,
            )
    from pypto.language.parser.nd_tiles import nd_shape_of, nd_store

    planes = p.st.planes_of(tile)
    if planes is not None:  # a pl.batch_matmul result: its planes
        return nd_store(p, tile, planes, offs=offs, out=out, node=node)  # type: ignore[arg-type]
    nd = nd_shape_of(p, tile)  # type: ignore[arg-type]
    if nd is not None:
        return nd_store(p, tile, nd, offs=offs, out=out, node=node)  # type: ignore[arg-type]
    attrs: dict[str, Any] = {"static_offsets": [o.value if isinstance(o, Const) else None for o in offs]}
    from pypto.language.parser.subscripts import valid_shape_of

    valid = valid_shape_of(p, tile)  # type: ignore[arg-type]
    if valid is not None and len(valid) == 2 and all(isinstance(v, Const) for v in valid):
        # only the valid region is written: the window check uses it
        attrs["static_valid"] = [int(v.value) for v in valid]  # type: ignore[union-attr]
    return p.make_op("store", [tile, offs, out], attrs, node)


def _build_move(p: _Parser, opname: str, b: dict[str, Any], node: ast.Call) -> Expr:
    return p.make_op(
        "move", [p.expr(b["tile"])], {"memory": p.memory(b["target_memory"], "pl.move target_memory")}, node
    )


def _build_fillpad_expand(p: _Parser, opname: str, b: dict[str, Any], node: ast.Call) -> Expr:
    pad = (
        pad_value(p, b["pad_value"], "pl.fillpad_expand pad_value", node)
        if "pad_value" in b
        else PadValue.zero
    )
    attrs = {"shape": p.shape(b["shape"], "pl.fillpad_expand shape"), "pad": pad}
    return p.make_op("fillpad_expand", [p.expr(b["tile"])], attrs, node)


def _build_create_tile(p: _Parser, opname: str, b: dict[str, Any], node: ast.Call) -> Expr:
    attrs: dict[str, Any] = {
        "shape": p.shape(b["shape"], "pl.create_tile shape"),
        "dtype": p.dtype(b["dtype"], "pl.create_tile dtype"),
    }
    if "target_memory" in b:
        attrs["memory"] = p.memory(b["target_memory"], "pl.create_tile target_memory")
    if _flag(p, b, "transpose", "pl.create_tile", node):
        if attrs.get("memory") is not MemorySpace.Mat or len(attrs["shape"]) != 2:
            raise p.err(
                "pl.create_tile: transpose=True describes a 2-D Mat (L1) tile laid out for a transposed "
                f"matmul operand; got shape {list(attrs['shape'])} in "
                f"{attrs.get('memory', MemorySpace.Vec).value} memory",
                node,
            )
        attrs["transpose"] = True
    if _flag(p, b, "flat_layout", "pl.create_tile", node):
        if attrs.get("memory") is not MemorySpace.Mat or attrs.get("transpose"):
            raise p.err(
                "pl.create_tile: flat_layout=True describes a flat (non-fractal) Mat (L1) staging tile, "
                "not transposed; got "
                + (
                    "transpose=True"
                    if attrs.get("transpose")
                    else f"{attrs.get('memory', MemorySpace.Vec).value} memory"
                ),
                node,
            )
        attrs["flat_layout"] = True
    return p.make_op("create_tile", [], attrs, node)


def _build_create_tensor(p: _Parser, opname: str, b: dict[str, Any], node: ast.Call) -> Expr:
    shape, extents = p.extents(b["shape"], "pl.create_tensor shape")
    attrs = {"shape": shape, "dtype": p.dtype(b["dtype"], "pl.create_tensor dtype")}
    return p.make_op("create_tensor", [extents] if extents is not None else [], attrs, node)


def _build_full(p: _Parser, opname: str, b: dict[str, Any], node: ast.Call) -> Expr:
    """``pl.full`` (opname ``full``) and its tensor form ``pl.tensor.full`` (``tensor_full``)."""
    what = LANGUAGE[opname].spelled
    dtype = p.dtype(b["dtype"], f"{what} dtype")
    value = p.scalar(b["value"], f"{what} value") if "value" in b else Const(0.0, DataType.FP32)
    return p.make_op(opname, [value], {"shape": p.shape(b["shape"], f"{what} shape"), "dtype": dtype}, node)


def _build_tri(p: _Parser, opname: str, b: dict[str, Any], node: ast.Call) -> Expr:
    attrs: dict[str, Any] = {
        "shape": p.shape(b["shape"], "pl.tri shape"),
        "dtype": p.dtype(b["dtype"], "pl.tri dtype") if "dtype" in b else DataType.INT32,
        "upper": _flag(p, b, "upper", "pl.tri", node),
    }
    if "valid_shape" in b and p.static_value(b["valid_shape"], "pl.tri valid_shape", node) is not None:
        attrs["valid_shape"] = p.shape(b["valid_shape"], "pl.tri valid_shape")
    return p.make_op("tri", [p.scalar(b["diagonal"], "pl.tri diagonal")], attrs, node)


def _build_random(p: _Parser, opname: str, b: dict[str, Any], node: ast.Call) -> Expr:
    """``pl.tile.random`` (opname ``random``) and its tensor form ``pl.random`` (``tensor_random``)."""
    what = LANGUAGE[opname].spelled
    rounds = p.static_value(b.get("rounds", 10), f"{what} rounds", node)
    attrs: dict[str, Any] = {
        "shape": p.shape(b["shape"], f"{what} shape"),
        "dtype": p.dtype(b["dtype"], f"{what} dtype") if "dtype" in b else DataType.UINT32,
        "rounds": rounds,
    }
    if "valid_shape" in b and p.static_value(b["valid_shape"], f"{what} valid_shape", node) is not None:
        attrs["valid_shape"] = p.shape(b["valid_shape"], f"{what} valid_shape")
    return p.make_op(opname, [p.scalar(b[k], f"{what} {k}") for k in RANDOM_SEEDS], attrs, node)


def _build_ci(p: _Parser, opname: str, b: dict[str, Any], node: ast.Call) -> Expr:
    """``pl.tile.ci`` (opname ``ci``) and its tensor form ``pl.arange`` (opname ``arange``)."""
    what = "pl.tile.ci" if opname == "ci" else "pl.arange"
    attrs: dict[str, Any] = {
        "shape": p.shape(b["shape"], f"{what} shape"),
        "dtype": p.dtype(b["dtype"], f"{what} dtype") if "dtype" in b else DataType.INT32,
        "descending": _flag(p, b, "descending", what, node),
    }
    return p.make_op(opname, [p.scalar(b["start"], f"{what} start")], attrs, node)


def _no_mask_form(p: _Parser, b: dict[str, Any], index_forms: str, node: ast.Call) -> None:
    """Upstream's mask form of scatter (``mask_pattern=``) is not built: say so, and what is
    (``index_forms``)."""
    if b.get("mask_pattern") is not None:
        op = index_forms.split("(", 1)[0]
        raise p.err(
            f"{op}: the mask form (mask_pattern=...) is not built here; by index: {index_forms}", node
        )


def _build_gather(p: _Parser, opname: str, b: dict[str, Any], node: ast.Call) -> Expr:
    """``pl.gather``: the index form ``(input, dim, index)`` of tensors, or the tile form
    ``pl.tile.gather(src, indices, tmp)``, which binds positionally as ``(input, dim, index)``:
    a tile where ``dim`` stands makes it the tile form. (The mask form, ``mask_pattern=``, is
    built by ``sort_builders``, which calls this for the others.)"""
    src = _value(p, b["input"])
    second = b.get("indices", b.get("dim"))
    picked = _value(p, second) if second is not None else None
    if (
        isinstance(src.type, TileType)
        and picked is not None
        and isinstance(picked.type, (TileType, TensorType))
    ):
        tmp = b.get("tmp", b.get("index") if "indices" not in b else None)
        if tmp is None:
            raise p.err(
                "pl.tile.gather: takes (src, indices, tmp); tmp, a scratch Vec tile, is missing", node
            )
        return p.make_op(opname, [src, picked, _value(p, tmp)], {}, node)
    if "indices" in b or "tmp" in b:
        raise p.err(
            "pl.gather: indices= and tmp= belong to the tile form pl.tile.gather(src, indices, tmp), "
            f"whose src is a tile; got {src.type}",
            node,
        )
    if b.get("dim") is None or b.get("index") is None:
        raise p.err("pl.gather: the index form takes (input, dim, index); give dim and index", node)
    dim = p.static_value(b["dim"], "pl.gather dim", node)
    return p.make_op("gather_index", [src, _value(p, b["index"])], {"dim": dim}, node)


def _build_scatter(p: _Parser, opname: str, b: dict[str, Any], node: ast.Call) -> Expr:
    """``pl.scatter``: the index form ``(input, dim, index, src)``, or the tile form
    ``pl.tile.scatter(dst, src, indexes)``, which binds positionally as ``(input, dim, index)``:
    a tile where ``dim`` stands makes it the tile form."""
    _no_mask_form(p, b, "pl.scatter(input, dim, index, src) or pl.tile.scatter(dst, src, indexes)", node)
    dst = _value(p, b["input"])
    second = b.get("dim", b.get("src") if "indexes" in b else None)
    values = _value(p, second) if second is not None else None
    if isinstance(dst.type, TileType) and values is not None and isinstance(values.type, TileType):
        at = b.get("indexes", b.get("index"))
        if at is None:
            raise p.err("pl.tile.scatter: takes (dst, src, indexes); indexes is missing", node)
        return p.make_op(opname, [dst, values, _value(p, at)], {}, node)
    if "indexes" in b:
        raise p.err(
            "pl.scatter: indexes= belongs to the tile form pl.tile.scatter(dst, src, indexes), whose dst "
            f"is a tile; got {dst.type}",
            node,
        )
    if any(b.get(k) is None for k in ("dim", "index", "src")):
        raise p.err("pl.scatter: the index form takes (input, dim, index, src); give all four", node)
    dim = p.static_value(b["dim"], "pl.scatter dim", node)
    return p.make_op("scatter_index", [dst, _value(p, b["index"]), _value(p, b["src"])], {"dim": dim}, node)


def _build_extract(p: _Parser, opname: str, b: dict[str, Any], node: ast.Call) -> Expr:
    """``pl.tile.extract(src, index_row, index_col, shape, target_memory=...)``: a sub-tile
    window (its offsets an offsets tuple, as ``pl.slice``) in another memory."""
    offs = (
        p.scalar(b["index_row"], "pl.tile.extract index_row"),
        p.scalar(b["index_col"], "pl.tile.extract index_col"),
    )
    attrs: dict[str, Any] = {
        "shape": p.shape(b["shape"], "pl.tile.extract shape"),
        "static_offsets": [o.value if isinstance(o, Const) else None for o in offs],
        "memory": p.memory(b["target_memory"], "pl.tile.extract target_memory"),
    }
    return p.make_op(opname, [p.expr(b["src"]), offs], attrs, node)


def _build_dim(p: _Parser, opname: str, b: dict[str, Any], node: ast.Call) -> Expr:
    axis = p.static_value(b["axis"], "pl.dim axis", node)
    if not isinstance(axis, int):
        raise p.err("pl.dim axis must be an integer constant", node)
    t = p.expr(b["tensor"])
    if isinstance(t.type, TensorType) and 0 <= axis < len(t.type.shape):
        d = t.type.shape[axis]
        if isinstance(d, int):
            return Const(d, INDEX, p.src.span(node))
    return p.make_op("dim", [t], {"axis": axis}, node)


def _build_shape_op(p: _Parser, opname: str, b: dict[str, Any], node: ast.Call) -> Expr:
    return p.make_op(opname, [p.expr(b["input"])], {"shape": p.shape(b["shape"], f"pl.{opname} shape")}, node)


def _build_cast(p: _Parser, opname: str, b: dict[str, Any], node: ast.Call) -> Expr:
    attrs: dict[str, Any] = {"dtype": p.dtype(b["target_type"], "pl.cast target_type")}
    if b.get("mode") is not None:
        try:
            attrs["mode"] = cast_mode(p.static_value(b["mode"], "pl.cast mode", node))
        except OpError as e:
            raise p.err(str(e), node) from None
    x = p.expr(b["input"])
    if isinstance(x, Const):
        if attrs.get("mode", CAST_DEFAULT) != CAST_DEFAULT:
            raise p.err(
                f"pl.cast: a scalar takes the default mode {CAST_DEFAULT!r} only, got mode={attrs['mode']!r}",
                node,
            )
        return make_const(x.value, attrs["dtype"], p.src.span(node))
    return p.make_op("cast", [x], attrs, node)


def _build_const(p: _Parser, opname: str, b: dict[str, Any], node: ast.Call) -> Expr:
    value = p.static_value(b["value"], "pl.const value", node)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise p.err(f"pl.const: value must be a number known when compiling, got {value!r}", node)
    return make_const(value, p.dtype(b["dtype"], "pl.const dtype"), p.src.span(node))


def _build_transpose(p: _Parser, opname: str, b: dict[str, Any], node: ast.Call) -> Expr:
    """``pl.transpose(x, axis1, axis2)``: the last two axes (0 and 1 of a 2-D operand; a tensor of
    rank 3 or more swaps the axes of every plane and keeps its leading dims)."""
    x = p.expr(b["input"])
    rank = len(x.type.shape) if isinstance(x.type, (TensorType, TileType)) else 2
    axes = [p.static_value(b.get(k, d), k, node) for k, d in (("axis1", rank - 2), ("axis2", rank - 1))]
    if not all(isinstance(a, int) and -rank <= a < rank for a in axes) or sorted(a % rank for a in axes) != [
        rank - 2,
        rank - 1,
    ]:
        raise p.err(
            f"pl.transpose swaps the last two axes ({rank - 2} and {rank - 1}) of a rank-{rank} operand, "
            f"got axes {axes}",
            node,
        )
    return p.make_op("transpose", [x], {}, node)


def _build_print(p: _Parser, opname: str, b: dict[str, Any], node: ast.Call) -> Expr:
    label_node = b.get("label")
    if label_node is None:
        label = ast.unparse(node.args[0]) if node.args else "value"
    else:
        label = p.static_value(label_node, "pl.print label", node)
        if not isinstance(label, str):
            raise p.err(f"pl.print(label): expected a string known at compile time, got {label!r}", node)
    return p.make_op("print", [p.expr(b["value"])], {"label": label}, node)


def _build_array_create(p: _Parser, opname: str, b: dict[str, Any], node: ast.Call) -> Expr:
    p.check_orchestration("pl.array.create", node)
    extent = p.static_value(b["extent"], "pl.array.create extent", node)
    elem = p.static_value(b["dtype"], "pl.array.create dtype", node)
    return p.make_op(opname, [], {"extent": extent, "elem": elem}, node)


def _build_task_dummy(p: _Parser, opname: str, b: dict[str, Any], node: ast.Call) -> Expr:
    p.check_orchestration("pl.system.task_dummy", node)
    return p.make_op(opname, list(p.deps_list(b["deps"], "pl.system.task_dummy")), {}, node)


def _build_set_validshape(p: _Parser, opname: str, b: dict[str, Any], node: ast.Call) -> Expr:
    tile = p.expr(b["input"])
    valid = [p.scalar(b[k], f"pl.set_validshape {k}") for k in ("valid_rows", "valid_cols")]
    if isinstance(tile.type, TensorType):
        from pypto.language.parser.subscripts import tensor_set_validshape

        return tensor_set_validshape(p, tile, valid, node)  # type: ignore[arg-type]
    if isinstance(tile.type, TileType) and len(tile.type.shape) == 2:
        for what, v, full in zip(("valid_rows", "valid_cols"), valid, tile.type.shape, strict=True):
            if isinstance(v, Const) and not 0 <= int(v.value) <= full:
                raise p.err(
                    f"pl.set_validshape: {what} {int(v.value)} is outside [0, {full}] (the tile is "
                    f"{list(tile.type.shape)})",
                    node,
                )
    return p.make_op(opname, [tile, *valid], {}, node)


# ----------------------------------------------------------------------------- distributed (pld)


def _window_offsets(p: _Parser, window: Expr, node: Any, what: str, at: ast.Call) -> tuple[Expr, ...]:
    offs = p.offsets(node, what)
    if isinstance(window.type, TensorType) and len(offs) != len(window.type.shape):
        raise p.err(f"{what}: {len(offs)} offsets for a rank-{len(window.type.shape)} window", at)
    return offs


def _enum(p: _Parser, node: Any, kind: type, what: str, at: ast.Call) -> Any:
    v = p.static_value(node, what, at)
    if not isinstance(v, kind):
        names = " or ".join(f"pld.{kind.__name__}.{m.name}" for m in kind)  # type: ignore[attr-defined]
        raise p.err(f"{what} must be {names}, got {v!r}", at)
    return v


def _build_comm_query(p: _Parser, opname: str, b: dict[str, Any], node: ast.Call) -> Expr:
    (arg,) = b.values()
    return p.make_op(opname, [p.expr(arg)], {}, node)


def _peer_window(p: _Parser, b: dict[str, Any], what: str, node: ast.Call) -> list[Arg]:
    """``[target, peer, offsets]``: a window of a peer's copy of the distributed tensor
    ``b["target"]``, the operands pld.system.notify and the pld.tile remote accesses share."""
    target = p.expr(b["target"])
    return [
        target,
        p.scalar(b["peer"], f"{what} peer"),
        _window_offsets(p, target, b["offsets"], f"{what} offsets", node),
    ]


def _build_notify(p: _Parser, opname: str, b: dict[str, Any], node: ast.Call) -> Expr:
    what = "pld.system.notify"
    args = [*_peer_window(p, b, what, node), p.scalar(b["value"], f"{what} value")]
    return p.make_op(opname, args, {"op": _enum(p, b["op"], NotifyOp, f"{what} op", node)}, node)


def _wait_operands(p: _Parser, b: dict[str, Any], what: str, node: ast.Call) -> tuple[list[Arg], WaitCmp]:
    """The operands of a wait on a signal (the signal window, its offsets, the expected value)
    and its comparison: shared by ``pld.system.wait`` and ``defer_wait``."""
    signal = p.expr(b["signal"])
    args: list[Arg] = [
        signal,
        _window_offsets(p, signal, b["offsets"], f"{what} offsets", node),
        p.scalar(b["expected"], f"{what} expected"),
    ]
    return args, _enum(p, b["cmp"], WaitCmp, f"{what} cmp", node)


def _build_wait(p: _Parser, opname: str, b: dict[str, Any], node: ast.Call) -> Expr:
    args, cmp = _wait_operands(p, b, "pld.system.wait", node)
    return p.make_op(opname, args, {"cmp": cmp}, node)


OP_BUILDERS: dict[str, _Builder] = {
    "get_comm_ctx": _build_comm_query,
    "comm_rank": _build_comm_query,
    "comm_nranks": _build_comm_query,
    "barrier": _build_comm_query,
    "notify": _build_notify,
    "wait": _build_wait,
    "array_create": _build_array_create,
    "task_dummy": _build_task_dummy,
    "cmp": _build_cmp,
    "cmps": _build_cmp,
    "div": _build_precision,
    "log": _build_precision,
    "recip": _build_precision,
    "rsqrt": _build_precision,
    "load": _build_load,
    "store": _build_store,
    "move": _build_move,
    "create_tile": _build_create_tile,
    "create_tensor": _build_create_tensor,
    "full": _build_full,
    "tensor_full": _build_full,
    "tri": _build_tri,
    "random": _build_random,
    "tensor_random": _build_random,
    "ci": _build_ci,
    "gather": _build_gather,
    "extract": _build_extract,
    "scatter": _build_scatter,
    "arange": _build_ci,
    "dim": _build_dim,
    "reshape": _build_shape_op,
    "cast": _build_cast,
    "const": _build_const,
    "transpose": _build_transpose,
    "read": _build_read,
    "write": _build_write,
    "assemble": _build_assemble,
    "slice": _build_slice,
    "fillpad": _build_fillpad,
    "fillpad_inplace": _build_fillpad,
    "fillpad_expand": _build_fillpad_expand,
    "set_validshape": _build_set_validshape,
    "print": _build_print,
}

# the collectives, remote_load/remote_store, defer_wait and the region forms of put/get (they
# use the helpers above)
from pypto.language import comm_builders as _comm_builders  # noqa: E402, F401

# the matmuls: transposed tensor operands, init_cond, Mat operands of the bias and GEMV forms
from pypto.language import cube_builders as _cube_builders  # noqa: E402, F401

# pl.gelu's and pl.softplus's compile-time keywords
from pypto.language import math_builders as _math_builders  # noqa: E402, F401

# the cross-core pipes' side checks and popped tile types
from pypto.language import pipe_builders as _pipe_builders  # noqa: E402, F401

# pl.mrgsort's block_len, pl.tile.gather_mask's pattern and pl.gather's mask form
from pypto.language import sort_builders as _sort_builders  # noqa: E402, F401
