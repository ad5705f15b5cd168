"""The type rules of the cross-rank operations (``pld.*``; multi-chip programs).

A window operand is a tensor (a ``pld.DistributedTensor`` parameter or a name for one); that
it lies in a window buffer is checked when the kernel runs (the tile library reports a tensor
outside every window). Signals are INT32 windows. Peers, values and expected values are
integer scalars.
"""

from __future__ import annotations

from typing import Any

from pypto.ir.dtypes import DataType
from pypto.ir.ops.spec import OpError
from pypto.ir.types import (
    AtomicType,
    MemorySpace,
    NotifyOp,
    ReduceOp,
    ScalarType,
    TensorType,
    TileType,
    Type,
    WaitCmp,
)

ATOMIC_ADD_DTYPES = frozenset(
    {DataType.FP32, DataType.FP16, DataType.BF16, DataType.INT32, DataType.INT16, DataType.INT8}
)


def _window(t: Type, op: str, what: str) -> TensorType:
    if not isinstance(t, TensorType):
        raise OpError(f"{op}: {what} must be a window (a pld.DistributedTensor), got {t}")
    return t


def _signal(t: Type, op: str, what: str = "signal") -> TensorType:
    w = _window(t, op, what)
    if w.dtype is not DataType.INT32:
        raise OpError(f"{op}: {what} must be an INT32 window, got {w.dtype.value}")
    return w


def _int(t: Type, op: str, what: str) -> None:
    if not isinstance(t, ScalarType) or t.dtype.is_float or t.dtype is DataType.BOOL:
        raise OpError(f"{op}: {what} must be an integer scalar, got {t}")


def _atomic(attrs: dict[str, Any], op: str, dtype: DataType) -> None:
    atomic = attrs.get("atomic", AtomicType.None_)
    if not isinstance(atomic, AtomicType):
        raise OpError(f"{op}: atomic must be a pld.AtomicType (None_ or Add), got {atomic!r}")
    if atomic is AtomicType.Add and dtype not in ATOMIC_ADD_DTYPES:
        names = ", ".join(sorted(d.value for d in ATOMIC_ADD_DTYPES))
        raise OpError(f"{op}: atomic=pld.AtomicType.Add needs one of {names}, got {dtype.value}")


def comm_ctx(args: list[Type], attrs: dict[str, Any]) -> Type:
    return _window(args[0], "pld.get_comm_ctx", "dist_tensor")


def comm_query(op: str) -> Any:
    def rule(args: list[Type], attrs: dict[str, Any]) -> Type:
        _window(args[0], op, "ctx")
        return ScalarType(DataType.INT32)

    return rule


def notify(args: list[Type], attrs: dict[str, Any]) -> Type:
    op = "pld.system.notify"
    sig = _signal(args[0], op, "target")
    _int(args[1], op, "peer")
    _int(args[2], op, "value")
    if not isinstance(attrs.get("op"), NotifyOp):
        raise OpError(f"{op}: op must be a pld.NotifyOp (AtomicAdd or Set), got {attrs.get('op')!r}")
    return sig


def wait(args: list[Type], attrs: dict[str, Any]) -> Type:
    op = "pld.system.wait"
    sig = _signal(args[0], op)
    _int(args[1], op, "expected")
    if not isinstance(attrs.get("cmp"), WaitCmp):
        raise OpError(f"{op}: cmp must be a pld.WaitCmp (Eq or Ge), got {attrs.get('cmp')!r}")
    return sig


def barrier(args: list[Type], attrs: dict[str, Any]) -> Type:
    return _signal(args[0], "pld.tensor.barrier")


def remote_load(args: list[Type], attrs: dict[str, Any]) -> Type:
    op = "pld.tile.remote_load"
    w = _window(args[0], op, "target")
    _int(args[1], op, "peer")
    shape = tuple(attrs["shape"])
    rows_cols = (1, shape[0]) if len(shape) == 1 else shape[-2:]
    if len(shape) > len(w.shape) or any(d != 1 for d in shape[:-2]):
        raise OpError(
            f"{op}: shape {list(shape)} must be a 2-D tile shape (leading dims 1) of at most the window's "
            f"rank {len(w.shape)}"
        )
    return TileType(tuple(int(d) for d in rows_cols), w.dtype, MemorySpace.Vec)


def remote_store(args: list[Type], attrs: dict[str, Any]) -> Type:
    op = "pld.tile.remote_store"
    t = args[0]
    if not isinstance(t, TileType) or t.memory is not MemorySpace.Vec:
        raise OpError(f"{op}: src_tile must be a Vec tile, got {t}")
    w = _window(args[1], op, "target")
    _int(args[2], op, "peer")
    if t.dtype is not w.dtype:
        raise OpError(f"{op}: the tile is {t.dtype.value} but the window is {w.dtype.value}")
    _atomic(attrs, op, w.dtype)
    return w


def _transfer(op: str, args: list[Type], attrs: dict[str, Any]) -> TensorType:
    dst = _window(args[0], op, "dst")
    _int(args[1], op, "peer")
    src = _window(args[2], op, "src")
    if dst.dtype is not src.dtype:
        raise OpError(f"{op}: dst is {dst.dtype.value} but src is {src.dtype.value}")
    for key in ("chunk_rows", "chunk_cols"):
        v = attrs.get(key, 0)
        if not isinstance(v, int) or isinstance(v, bool) or v < 0:
            raise OpError(f"{op}: {key} must be a non-negative int (0: the whole extent), got {v!r}")
    if attrs.get("pipeline", False) and not (
        attrs.get("chunk_rows", 0) > 0 and attrs.get("chunk_cols", 0) > 0
    ):
        raise OpError(
            f"{op}: pipeline=True needs chunk_rows > 0 and chunk_cols > 0, got chunk_rows="
            f"{attrs.get('chunk_rows', 0)}, chunk_cols={attrs.get('chunk_cols', 0)}"
        )
    if attrs.get("region", False):
        return dst
    static = [d for d in (*dst.shape, *src.shape) if not isinstance(d, int)]
    if not static and tuple(dst.shape) != tuple(src.shape):
        raise OpError(f"{op}: dst shape {list(dst.shape)} differs from src shape {list(src.shape)}")
    return dst


def put(args: list[Type], attrs: dict[str, Any]) -> Type:
    dst = _transfer("pld.tensor.put", args, attrs)
    _atomic(attrs, "pld.tensor.put", dst.dtype)
    return dst


def get(args: list[Type], attrs: dict[str, Any]) -> Type:
    return _transfer("pld.tensor.get", args, attrs)


# ----------------------------------------------------------------------------- collectives

COLLECTIVE_DTYPES = ATOMIC_ADD_DTYPES
"""The dtypes allreduce and reduce_scatter combine (the tile library's reducible dtypes)."""


def _reduce_op(attrs: dict[str, Any], op: str, dtype: DataType) -> None:
    if not isinstance(attrs.get("op"), ReduceOp):
        raise OpError(f"{op}: op must be a pld.ReduceOp (Sum, Max, Min or Prod), got {attrs.get('op')!r}")
    if dtype not in COLLECTIVE_DTYPES:
        names = ", ".join(sorted(d.value for d in COLLECTIVE_DTYPES))
        raise OpError(f"{op}: target must be one of {names}, got {dtype.value}")


def allreduce(args: list[Type], attrs: dict[str, Any]) -> Type:
    op = "pld.tensor.allreduce"
    target = _window(args[0], op, "target")
    sig = _signal(args[1], op)
    _reduce_op(attrs, op, target.dtype)
    mode = attrs.get("mode", "mesh")
    if mode not in ("mesh", "ring"):
        raise OpError(f'{op}: mode must be "mesh" or "ring", got {mode!r}')
    if mode == "ring" and (len(sig.shape) != 2):
        raise OpError(
            f"{op}: mode ring needs a [2 * (nranks - 1), nranks] signal, got shape {list(sig.shape)}"
        )
    return target


def broadcast(args: list[Type], attrs: dict[str, Any]) -> Type:
    op = "pld.tensor.broadcast"
    target = _window(args[0], op, "target")
    _signal(args[1], op)
    _int(args[2], op, "root")
    return target


def _gather_like(op: str, first: str, args: list[Type]) -> TensorType:
    src = _window(args[0], op, first)
    target = _window(args[1], op, "target")
    _signal(args[2], op)
    if src.dtype is not target.dtype:
        raise OpError(f"{op}: {first} is {src.dtype.value} but target is {target.dtype.value}")
    return target


def allgather(args: list[Type], attrs: dict[str, Any]) -> Type:
    return _gather_like("pld.tensor.allgather", "local_data", args)


def reduce_scatter(args: list[Type], attrs: dict[str, Any]) -> Type:
    op = "pld.tensor.reduce_scatter"
    target = _window(args[0], op, "target")
    _signal(args[1], op)
    _reduce_op(attrs, op, target.dtype)
    return target


def all_to_all(args: list[Type], attrs: dict[str, Any]) -> Type:
    return _gather_like("pld.tensor.all_to_all", "input", args)


def all_to_all_v(args: list[Type], attrs: dict[str, Any]) -> Type:
    op = "pld.tensor.all_to_all_v"
    target = _gather_like(op, "input", args[:3])
    _signal(args[3], op, "send_counts")
    _signal(args[4], op, "recv_counts")
    return target


def defer_wait(args: list[Type], attrs: dict[str, Any]) -> Type:
    op = "pld.system.defer_wait"
    sig = _signal(args[0], op)
    _int(args[1], op, "expected")
    if attrs.get("cmp") is not WaitCmp.Ge:
        raise OpError(f"{op}: cmp must be pld.WaitCmp.Ge, got {attrs.get('cmp')!r}")
    return sig
