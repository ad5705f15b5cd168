"""The parser's builders of the collectives (``pld.tensor.allreduce`` ...),
``pld.tile.remote_load``/``remote_store``, ``pld.system.defer_wait`` and the region/chunk forms of ``pld.tensor.put``/``get``; registered in ``OP_BUILDERS`` when
``pypto.language.distributed`` is imported."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

from pypto.ir.nodes import Arg, Const, Expr
from pypto.ir.types import AtomicType, ReduceOp, TensorType, WaitCmp
from pypto.language.op_builders import OP_BUILDERS, _enum, _peer_window, _wait_operands, _window_offsets

if TYPE_CHECKING:
    from pypto.language.parser.calls import _Calls as _Parser

__all__ = ["remote_load_valid"]


def remote_load_valid(p: _Parser, shape: Any, node: Any, at: ast.Call) -> tuple[Expr, ...]:
    """``pld.tile.remote_load(valid_shape=[rows, cols])``: the tile's valid shape, within ``shape``."""
    valid = p.offsets(node, "pld.tile.remote_load valid_shape")
    dims = list(shape)[-2:] if len(shape) >= 2 else [1, *shape]
    if len(valid) != 2:
        raise p.err(f"pld.tile.remote_load valid_shape needs [rows, cols], got {len(valid)} values", at)
    for v, full in zip(valid, dims, strict=True):
        if isinstance(v, Const) and not 0 <= int(v.value) <= int(full):
            raise p.err(
                f"pld.tile.remote_load valid_shape {int(v.value)} is outside [0, {full}] (shape {dims})", at
            )
    return valid


def _static_int(p: _Parser, b: dict[str, Any], key: str, default: Any, node: ast.Call, *, what: str) -> Any:
    if key not in b:
        return default
    return p.static_value(b[key], f"{what} {key}", node)


def _build_transfer(p: _Parser, opname: str, b: dict[str, Any], node: ast.Call) -> Expr:
    what = f"pld.tensor.{opname}"
    dst, src = p.expr(b["dst"]), p.expr(b["src"])
    args: list[Arg] = [dst, p.scalar(b["peer"], f"{what} peer"), src]
    attrs: dict[str, Any] = {}
    if opname == "put":
        attrs["atomic"] = _enum(p, b.get("atomic", AtomicType.None_), AtomicType, f"{what} atomic", node)
    for key in ("chunk_rows", "chunk_cols"):
        v = _static_int(p, b, key, 0, node, what=what)
        if not isinstance(v, int) or isinstance(v, bool):
            raise p.err(f"{what}: {key} must be an int (static), got {type(v).__name__}", node)
        if v < 0:
            raise p.err(f"{what}: {key} must be non-negative (0 = the whole extent), got {v}", node)
        attrs[key] = v
    pipeline = _static_int(p, b, "pipeline", False, node, what=what)
    if not isinstance(pipeline, bool):
        raise p.err(f"{what}: pipeline must be True or False, got {pipeline!r}", node)
    attrs["pipeline"] = pipeline
    region = [b.get(k) for k in ("dst_offsets", "src_offsets", "shape")]
    given = [r is not None for r in region]
    if any(given) and not all(given):
        raise p.err(f"{what}: dst_offsets, src_offsets and shape must be provided together", node)
    if all(given):
        args.append(_window_offsets(p, dst, region[0], f"{what} dst_offsets", node))
        args.append(_window_offsets(p, src, region[1], f"{what} src_offsets", node))
        shape = p.offsets(region[2], f"{what} shape")
        ranks = {len(t.type.shape) for t in (dst, src) if isinstance(t.type, TensorType)}
        if ranks and ranks != {len(shape)}:
            raise p.err(f"{what}: shape has {len(shape)} extents, expected one per dst and src dim", node)
        args.append(shape)
        attrs["region"] = True
    return p.make_op(opname, args, attrs, node)


def _reduce(p: _Parser, b: dict[str, Any], what: str, node: ast.Call) -> ReduceOp:
    op: ReduceOp = _enum(p, b.get("op", ReduceOp.Sum), ReduceOp, f"{what} op", node)
    return op


def _build_allreduce(p: _Parser, opname: str, b: dict[str, Any], node: ast.Call) -> Expr:
    what = "pld.tensor.allreduce"
    core_num = _static_int(p, b, "core_num", 1, node, what=what)
    if not isinstance(core_num, int) or isinstance(core_num, bool):
        raise p.err(
            f"{what}: core_num must be a positive compile-time int, got {type(core_num).__name__}", node
        )
    if core_num <= 0:
        raise p.err(f"{what}: core_num must be positive, got {core_num}", node)
    mode = _static_int(p, b, "mode", "mesh", node, what=what)
    if mode not in ("mesh", "ring"):
        raise p.err(f'{what}: mode must be "mesh" or "ring", got {mode!r}', node)
    if mode == "ring" and core_num != 1:
        raise p.err(f'{what}: mode="ring" requires core_num == 1, got core_num={core_num}', node)
    if b.get("signal") is None:
        raise p.err(
            f"{what}: a kernel passes its signal: pld.tensor.allreduce(target, signal, op=...); only a host "
            "orchestrator may omit it",
            node,
        )
    if core_num != 1:
        raise p.err(
            f"{what}: core_num={core_num} in a kernel; a kernel keeps core_num=1 (spread the work with an "
            "enclosing pl.spmd), a host orchestrator may set it",
            node,
        )
    args: list[Arg] = [p.expr(b["target"]), p.expr(b["signal"])]
    attrs = {"op": _reduce(p, b, what, node), "mode": mode, "core_num": core_num}
    return p.make_op(opname, args, attrs, node)


def _build_broadcast(p: _Parser, opname: str, b: dict[str, Any], node: ast.Call) -> Expr:
    what = "pld.tensor.broadcast"
    root = p.scalar(b["root"], f"{what} root")
    if isinstance(root, Const) and int(root.value) < 0:
        raise p.err(f"{what}: root must be non-negative, got {int(root.value)}", node)
    return p.make_op(opname, [p.expr(b["target"]), p.expr(b["signal"]), root], {}, node)


def _build_operands(p: _Parser, opname: str, b: dict[str, Any], node: ast.Call) -> Expr:
    return p.make_op(opname, [p.expr(v) for v in b.values()], {}, node)


def _build_reduce_scatter(p: _Parser, opname: str, b: dict[str, Any], node: ast.Call) -> Expr:
    what = "pld.tensor.reduce_scatter"
    args: list[Arg] = [p.expr(b["target"]), p.expr(b["signal"])]
    return p.make_op(opname, args, {"op": _reduce(p, b, what, node)}, node)


def _build_defer_wait(p: _Parser, opname: str, b: dict[str, Any], node: ast.Call) -> Expr:
    what = "pld.system.defer_wait"
    args, cmp = _wait_operands(p, b, what, node)
    if cmp is not WaitCmp.Ge:
        raise p.err(f"{what}: cmp must be pld.WaitCmp.Ge, got {cmp!r}", node)
    return p.make_op(opname, args, {"cmp": cmp}, node)


def _build_remote_load(p: _Parser, opname: str, b: dict[str, Any], node: ast.Call) -> Expr:
    what = "pld.tile.remote_load"
    args = _peer_window(p, b, what, node)
    shape = p.shape(b["shape"], f"{what} shape")
    if b.get("valid_shape") is not None:
        args.append(remote_load_valid(p, shape, b["valid_shape"], node))
    return p.make_op(opname, args, {"shape": shape}, node)


def _build_remote_store(p: _Parser, opname: str, b: dict[str, Any], node: ast.Call) -> Expr:
    what = "pld.tile.remote_store"
    args = [p.expr(b["src_tile"]), *_peer_window(p, b, what, node)]
    atomic = _enum(p, b.get("atomic", AtomicType.None_), AtomicType, f"{what} atomic", node)
    return p.make_op(opname, args, {"atomic": atomic}, node)


OP_BUILDERS.update(
    {
        "remote_load": _build_remote_load,
        "remote_store": _build_remote_store,
        "put": _build_transfer,
        "get": _build_transfer,
        "allreduce": _build_allreduce,
        "broadcast": _build_broadcast,
        "allgather": _build_operands,
        "reduce_scatter": _build_reduce_scatter,
        "all_to_all": _build_operands,
        "all_to_all_v": _build_operands,
        "defer_wait": _build_defer_wait,
    }
)
