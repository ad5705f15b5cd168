"""``pl.system``: task-graph helpers (``task_dummy``), pipe and core synchronisation, barriers,
cache and pipe set-up, and the chip's core counts.

The functions are the op table's ``pl.system`` entries (pypto/ir/ops/system_ops.py); this module
also holds the builders the parser uses for them: keyword arguments known when compiling become
the op's attributes, checked here with messages that name the argument. What each does on the
simulated chip is in docs/language.md ("System operations").
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

from pypto.ir.dtypes import DataType
from pypto.ir.nodes import Arg, Const, Expr
from pypto.ir.ops import LANGUAGE
from pypto.ir.ops.system_ops import (
    PIPE_SETUP_KEYS,
    SIM_AIV_PER_CLUSTER,
    SIM_CLUSTERS,
    SYNCALL_CORE_TYPES,
    SYNCALL_MODES,
)
from pypto.ir.types import PipeType, TensorType
from pypto.language import ops as _ops
from pypto.language.op_builders import OP_BUILDERS

if TYPE_CHECKING:
    from pypto.language.parser.calls import _Calls as _Parser

__all__ = [
    "AUTO",
    "aic_initialize_pipe",
    "aiv_initialize_pipe",
    "available_aiv_count",
    "available_cluster_count",
    "bar_all",
    "bar_m",
    "bar_v",
    "cacheinvalid",
    "fence",
    "import_peer_buffer",
    "reserve_buffer",
    "set_ffts",
    "sync_dst",
    "sync_set",
    "sync_src",
    "sync_wait",
    "syncall",
    "task_dummy",
    "task_invalid",
]

AUTO = -1
"""``reserve_buffer(..., base=pl.AUTO)``: the compiler places the buffer (upstream's sentinel; the
same as leaving ``base`` out)."""

aic_initialize_pipe = _ops.make_op(LANGUAGE["aic_initialize_pipe"])
aiv_initialize_pipe = _ops.make_op(LANGUAGE["aiv_initialize_pipe"])
available_aiv_count = _ops.make_op(LANGUAGE["available_aiv_count"])
available_cluster_count = _ops.make_op(LANGUAGE["available_cluster_count"])
bar_all = _ops.make_op(LANGUAGE["bar_all"])
bar_m = _ops.make_op(LANGUAGE["bar_m"])
bar_v = _ops.make_op(LANGUAGE["bar_v"])
cacheinvalid = _ops.make_op(LANGUAGE["cacheinvalid"])
fence = _ops.make_op(LANGUAGE["fence"])
import_peer_buffer = _ops.make_op(LANGUAGE["import_peer_buffer"])
reserve_buffer = _ops.make_op(LANGUAGE["reserve_buffer"])
set_ffts = _ops.make_op(LANGUAGE["set_ffts"])
sync_dst = _ops.make_op(LANGUAGE["sync_dst"])
sync_src = _ops.make_op(LANGUAGE["sync_src"])
sync_set = _ops.make_op(LANGUAGE["sync_set"])
sync_wait = _ops.make_op(LANGUAGE["sync_wait"])
syncall = _ops.make_op(LANGUAGE["syncall"])
task_dummy = _ops.make_op(LANGUAGE["task_dummy"])
task_invalid = _ops.make_op(LANGUAGE["task_invalid"])
for _fn in (
    aic_initialize_pipe,
    aiv_initialize_pipe,
    available_aiv_count,
    available_cluster_count,
    bar_all,
    bar_m,
    bar_v,
    cacheinvalid,
    fence,
    import_peer_buffer,
    reserve_buffer,
    set_ffts,
    sync_dst,
    sync_src,
    sync_set,
    sync_wait,
    syncall,
    task_dummy,
    task_invalid,
):
    _fn.__module__ = __name__


def __getattr__(name: str) -> Any:
    raise AttributeError(
        f"module {__name__!r} has no attribute {name!r}; pl.system has: {', '.join(__all__)}"
    )


# ----------------------------------------------------------------------------- builders

_INT32_MAX = (1 << 31) - 1


def _static(p: _Parser, b: dict[str, Any], key: str, what: str) -> Any:
    """The compile-time value of argument ``key`` (None when not given)."""
    node = b.get(key)
    if not isinstance(node, ast.AST):
        return node
    return p.static_value(node, f"{what} {key}", node)


def _int(p: _Parser, b: dict[str, Any], key: str, what: str, node: ast.Call) -> int | None:
    v = _static(p, b, key, what)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise p.err(f"{what}({key}): expected an int >= 0 known when compiling, got {v!r}", node)
    return v


def _pipe(p: _Parser, b: dict[str, Any], key: str, what: str, node: ast.Call) -> PipeType:
    v = _static(p, b, key, what)
    if not isinstance(v, PipeType):
        raise p.err(f"{what}({key}): expected a pl.PipeType such as pl.PipeType.MTE2, got {v!r}", node)
    return v


def _build_pipe_pair(p: _Parser, opname: str, b: dict[str, Any], node: ast.Call) -> Expr:
    what = f"pl.system.{opname}"
    attrs = {
        "set_pipe": _pipe(p, b, "set_pipe", what, node),
        "wait_pipe": _pipe(p, b, "wait_pipe", what, node),
        "event_id": _int(p, b, "event_id", what, node),
    }
    return p.make_op(opname, [], attrs, node)


def _core_type(p: _Parser, b: dict[str, Any], what: str, node: ast.Call) -> str | None:
    v = _static(p, b, "core_type", what)
    if v is not None and v not in SYNCALL_CORE_TYPES:
        raise p.err(f"{what}(core_type): expected one of {', '.join(SYNCALL_CORE_TYPES)}, got {v!r}", node)
    return None if v is None else str(v)


def _build_cross_core(p: _Parser, opname: str, b: dict[str, Any], node: ast.Call) -> Expr:
    """``sync_set(event_id, pipe=...)`` / ``sync_wait``: a constant event id is an attribute, an
    index scalar one is the operand."""
    what = f"pl.system.{opname}"
    attrs: dict[str, Any] = {"pipe": _pipe(p, b, "pipe", what, node)}
    args: list[Arg] = []
    event = p.expr(b["event_id"])
    if isinstance(event, Const):
        if isinstance(event.value, bool) or not isinstance(event.value, int) or event.value < 0:
            raise p.err(
                f"{what}(event_id): expected an int >= 0 or an index scalar, got {event.value!r}", node
            )
        attrs["event_id"] = int(event.value)
    else:
        args.append(event)
    if opname == "sync_set":
        attrs["ffts_mode"] = _int(p, b, "ffts_mode", what, node)
    attrs["core_type"] = _core_type(p, b, what, node)
    return p.make_op(opname, args, {k: v for k, v in attrs.items() if v is not None}, node)


def _build_operands(p: _Parser, opname: str, b: dict[str, Any], node: ast.Call) -> Expr:
    return p.make_op(opname, [p.expr(v) for v in b.values() if v is not None], {}, node)


def _build_cacheinvalid(p: _Parser, opname: str, b: dict[str, Any], node: ast.Call) -> Expr:
    what = "pl.system.cacheinvalid"
    tensor_node = b.get("tensor")
    if tensor_node is None or (isinstance(tensor_node, ast.Constant) and tensor_node.value is None):
        if b.get("shapes") is not None or b.get("offsets") is not None:
            raise p.err(
                f"{what}: shapes/offsets need the tensor they describe; the whole-GM form takes no "
                "shapes/offsets: pl.system.cacheinvalid()",
                node,
            )
        return p.make_op(opname, [], {}, node)
    tensor = p.expr(tensor_node)
    if not isinstance(tensor.type, TensorType):
        raise p.err(f"{what}(tensor): expected a tensor, got {tensor.type}", node)
    rank = len(tensor.type.shape)
    region: list[Arg] = [tensor]
    for key in ("shapes", "offsets"):
        if b.get(key) is None:
            raise p.err(f"{what}: a tensor region needs {key}=[...] with {rank} entries", node)
        values = p.offsets(b[key], f"{what} {key}")
        if len(values) != rank:
            raise p.err(
                f"{what}({key}): expected {rank} entries (the tensor's rank), got {len(values)}", node
            )
        for v in values:
            if isinstance(v, Const) and (
                isinstance(v.value, bool) or not isinstance(v.value, int) or v.value < 0
            ):
                raise p.err(f"{what}({key}): entries must be integers >= 0, got {v.value!r}", node)
        region.append(values)
    return p.make_op(opname, region, {}, node)


def _build_syncall(p: _Parser, opname: str, b: dict[str, Any], node: ast.Call) -> Expr:
    what = "pl.system.syncall"
    mode = _static(p, b, "mode", what)
    mode = "hard" if mode is None else mode
    if mode not in SYNCALL_MODES:
        raise p.err(f"{what}(mode): expected one of {', '.join(SYNCALL_MODES)}, got {mode!r}", node)
    core_type = _core_type(p, b, what, node) or "mix"
    args: list[Arg] = []
    if mode == "soft":
        if b.get("gm_workspace") is None:
            raise p.err(f"{what}(mode='soft'): gm_workspace=<an INT32 tensor> is required", node)
        if b.get("used_cores") is None:
            raise p.err(
                f"{what}(mode='soft'): explicit used_cores= is required (0: the launch's block count)", node
            )
        args.append(p.expr(b["gm_workspace"]))
        used = p.expr(b["used_cores"])
        if isinstance(used, Const) and (
            isinstance(used.value, bool)
            or not isinstance(used.value, int)
            or not 0 <= used.value <= _INT32_MAX
        ):
            raise p.err(
                f"{what}(used_cores): expected an int in the INT32 range [0, {_INT32_MAX}], got {used.value!r}",
                node,
            )
        if not (isinstance(used, Const) and used.value == 0):
            args.append(used)
    elif b.get("gm_workspace") is not None or b.get("used_cores") is not None:
        raise p.err(f"{what}: gm_workspace and used_cores belong to mode='soft'", node)
    attrs: dict[str, Any] = {"core_type": core_type, "mode": mode}
    if p.st.func_type.is_kernel:
        p.spmd_params(node)  # the barrier counts the launch's blocks
    elif p.st.in_scope and p.st.spmd is not None:  # an inline pl.spmd body: n blocks
        attrs["blocks"] = p.st.spmd[1]
    return p.make_op(opname, args, attrs, node)


def _build_named(keys: tuple[str, ...], required: tuple[str, ...] = ()) -> Any:
    """A builder for calls whose arguments are all attributes: ``name``/``peer_func`` non-empty
    strings, the others ints >= 0, each known when compiling; ``required`` must be given."""

    def build(p: _Parser, opname: str, b: dict[str, Any], node: ast.Call) -> Expr:
        what = f"pl.system.{opname}"
        attrs: dict[str, Any] = {}
        for key in keys:
            v = _static(p, b, key, what)
            if v is None or (key == "base" and v == AUTO and not isinstance(v, bool)):
                continue
            if key in ("name", "peer_func"):
                if not isinstance(v, str) or not v:
                    raise p.err(f"{what}({key}): expected a non-empty string, got {v!r}", node)
            elif isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise p.err(f"{what}({key}): expected an int >= 0 known when compiling, got {v!r}", node)
            attrs[key] = v
        missing = [k for k in required if k not in attrs]
        if missing:
            raise p.err(f"{what}: {missing[0]}= is required", node)
        return p.make_op(opname, [], attrs, node)

    return build


def _build_count(p: _Parser, opname: str, b: dict[str, Any], node: ast.Call) -> Expr:
    """The simulated chip's geometry, known when compiling (so it may size a pl.spmd launch)."""
    n = SIM_CLUSTERS if opname == "available_cluster_count" else SIM_CLUSTERS * SIM_AIV_PER_CLUSTER
    return Const(n, DataType.INT32, p.src.span(node))


OP_BUILDERS.update(
    {
        "sync_src": _build_pipe_pair,
        "sync_dst": _build_pipe_pair,
        "sync_set": _build_cross_core,
        "sync_wait": _build_cross_core,
        "set_ffts": _build_operands,
        "bar_v": _build_operands,
        "bar_m": _build_operands,
        "bar_all": _build_operands,
        "fence": _build_operands,
        "cacheinvalid": _build_cacheinvalid,
        "syncall": _build_syncall,
        "aic_initialize_pipe": _build_named(PIPE_SETUP_KEYS, ("dir_mask", "slot_size")),
        "aiv_initialize_pipe": _build_named(PIPE_SETUP_KEYS, ("dir_mask", "slot_size")),
        "reserve_buffer": _build_named(("name", "size", "base")),
        "import_peer_buffer": _build_named(("name", "peer_func")),
        "available_cluster_count": _build_count,
        "available_aiv_count": _build_count,
    }
)
