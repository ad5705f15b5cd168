"""The type rules of the matmuls: operands in Left/Right, the accumulator in Acc, and the
accumulator dtype of each operand dtype. ``tile.matmul_acc`` takes an optional fourth operand,
``init_cond`` (a BOOL scalar): where it holds, the accumulator is overwritten with the product."""

from __future__ import annotations

from typing import Any

from pypto.ir.dtypes import DataType
from pypto.ir.ops.operand_checks import _same_dtype, _tensor_like, _tile
from pypto.ir.ops.spec import OpError
from pypto.ir.types import MemorySpace, ScalarType, TensorType, TileType, Type

MATMUL_ACC = {
    DataType.FP32: DataType.FP32,
    DataType.FP16: DataType.FP32,
    DataType.BF16: DataType.FP32,
    DataType.INT8: DataType.INT32,
}


def acc_dtype(operand: DataType, op: str) -> DataType:
    """The accumulator type of a matmul on ``operand`` elements."""
    try:
        return MATMUL_ACC[operand]
    except KeyError:
        names = ", ".join(d.value for d in MATMUL_ACC)
        raise OpError(f"pl.{op}: operands must be one of {names}, got {operand.value}") from None


def _check_matmul(left: TileType, right: TileType, op: str) -> None:
    if left.shape[1] != right.shape[0]:
        raise OpError(
            f"pl.{op}: inner dimensions differ: left is {list(left.shape)}, right is {list(right.shape)}"
        )
    _same_dtype(left.dtype, right.dtype, op)
    acc_dtype(left.dtype, op)


def tile_matmul(args: list[Type], attrs: dict[str, Any]) -> Type:
    a = _tile(args[0], "matmul", "the left operand", (MemorySpace.Left,))
    b = _tile(args[1], "matmul", "the right operand", (MemorySpace.Right,))
    _check_matmul(a, b, "matmul")
    return TileType((a.shape[0], b.shape[1]), acc_dtype(a.dtype, "matmul"), MemorySpace.Acc)


def tile_matmul_acc(args: list[Type], attrs: dict[str, Any]) -> Type:
    acc = _tile(args[0], "matmul_acc", "the accumulator", (MemorySpace.Acc,))
    a = _tile(args[1], "matmul_acc", "the left operand", (MemorySpace.Left,))
    b = _tile(args[2], "matmul_acc", "the right operand", (MemorySpace.Right,))
    _check_matmul(a, b, "matmul_acc")
    if acc.dtype is not acc_dtype(a.dtype, "matmul_acc"):
        raise OpError(
            f"pl.matmul_acc: the accumulator is {acc.dtype.value} but {a.dtype.value} operands accumulate in "
            f"{acc_dtype(a.dtype, 'matmul_acc').value}"
        )
    if acc.shape != (a.shape[0], b.shape[1]):
        raise OpError(
            f"pl.matmul_acc: the accumulator is {list(acc.shape)} but the product is {[a.shape[0], b.shape[1]]}"
        )
    if len(args) > 3 and args[3] != ScalarType(DataType.BOOL):
        raise OpError(
            f"pl.matmul_acc: init_cond must be a BOOL scalar (a comparison such as k == 0), got {args[3]}"
        )
    return acc


def _bias(t: Type, n: int, acc: DataType, op: str) -> None:
    """A bias operand: a [1, n] Bias tile in the accumulator type."""
    b = _tile(t, op, "the bias", (MemorySpace.Bias,))
    if tuple(b.shape) != (1, n):
        raise OpError(f"pl.{op}: the bias is [1, N] for the product's N = {n} columns, got {list(b.shape)}")
    if b.dtype is not acc:
        raise OpError(f"pl.{op}: the bias is {b.dtype.value} but the product accumulates in {acc.value}")


def tile_matmul_bias(args: list[Type], attrs: dict[str, Any]) -> Type:
    a = _tile(args[0], "matmul_bias", "the left operand", (MemorySpace.Left,))
    b = _tile(args[1], "matmul_bias", "the right operand", (MemorySpace.Right,))
    _check_matmul(a, b, "matmul_bias")
    acc = acc_dtype(a.dtype, "matmul_bias")
    _bias(args[2], b.shape[1], acc, "matmul_bias")
    return TileType((a.shape[0], b.shape[1]), acc, MemorySpace.Acc)


_GEMV_PHASES = ("unspecified", "partial", "final")
"""The accumulation phases of a GEMV (PTO-ISA ``AccPhase``): when the device may let the result
leave L0C. A hint to the device; the result is the same in every phase."""


def _gemv(args: list[Type], attrs: dict[str, Any], op: str) -> TileType:
    """The result of a GEMV of ``args`` (a [1, K] Left row and a [K, N] Right tile): [1, N] in Acc."""
    phase = attrs.get("acc_phase", "unspecified")
    if phase not in _GEMV_PHASES:
        raise OpError(f"pl.{op}: acc_phase must be one of {', '.join(_GEMV_PHASES)}, got {phase!r}")
    a = _tile(args[0], op, "the left operand", (MemorySpace.Left,))
    b = _tile(args[1], op, "the right operand", (MemorySpace.Right,))
    if a.shape[0] != 1:
        raise OpError(
            f"pl.{op}: the left operand is one row [1, K], got {list(a.shape)} (pl.matmul takes more rows)"
        )
    _check_matmul(a, b, op)
    return TileType((1, b.shape[1]), acc_dtype(a.dtype, op), MemorySpace.Acc)


def tile_gemv(args: list[Type], attrs: dict[str, Any]) -> Type:
    return _gemv(args, attrs, "gemv")


def tile_gemv_acc(args: list[Type], attrs: dict[str, Any]) -> Type:
    acc = _tile(args[0], "gemv_acc", "the accumulator", (MemorySpace.Acc,))
    want = _gemv(args[1:], attrs, "gemv_acc")
    if acc != want:
        raise OpError(f"pl.gemv_acc: the accumulator must be {want} (the product's), got {acc}")
    return acc


def tile_gemv_bias(args: list[Type], attrs: dict[str, Any]) -> Type:
    out = _gemv(args, attrs, "gemv_bias")
    _bias(args[2], out.shape[1], out.dtype, "gemv_bias")
    return out


def tensor_matmul(args: list[Type], attrs: dict[str, Any]) -> Type:
    """``[.., M, K] @ [.., K, N] -> [.., M, N]``: 2-D operands, or batched ones whose batch dims
    broadcast as numpy does (a 2-D operand serves every batch)."""
    a = _tensor_like(args[0], "matmul", "the left operand")
    b = _tensor_like(args[1], "matmul", "the right operand")
    if len(a.shape) < 2 or len(b.shape) < 2 or a.shape[-1] != b.shape[-2]:
        raise OpError(f"pl.matmul: cannot multiply {list(a.shape)} by {list(b.shape)}")
    _same_dtype(a.dtype, b.dtype, "matmul")
    batch = broadcast_batch(tuple(a.shape[:-2]), tuple(b.shape[:-2]))
    return TensorType((*batch, a.shape[-2], b.shape[-1]), acc_dtype(a.dtype, "matmul"))


def broadcast_batch(a: tuple[Any, ...], b: tuple[Any, ...], op: str = "matmul") -> tuple[Any, ...]:
    """The batch dims of ``a`` and ``b`` broadcast as numpy does (trailing dims aligned, 1 stretches)."""
    n = max(len(a), len(b))
    pa, pb = (1,) * (n - len(a)) + a, (1,) * (n - len(b)) + b
    out = []
    for x, y in zip(pa, pb, strict=True):
        if x != y and 1 not in (x, y):
            raise OpError(f"pl.{op}: batch dims {list(a)} and {list(b)} do not broadcast")
        out.append(y if x == 1 else x)
    return tuple(out)


def batch_plane(index: tuple[int, ...], lead: tuple[int, ...]) -> int:
    """The row-major plane of an operand of batch dims ``lead`` that output batch ``index`` reads
    (its trailing dims; a dim of 1 is read at 0)."""
    own = index[len(index) - len(lead) :] if lead else ()
    flat = 0
    for i, d in zip(own, lead, strict=True):
        flat = flat * d + (0 if d == 1 else i)
    return flat


def tensor_matmul_acc(args: list[Type], attrs: dict[str, Any]) -> Type:
    acc = _tensor_like(args[0], "matmul_acc", "the accumulator")
    prod = tensor_matmul(args[1:], attrs)
    assert isinstance(prod, TensorType)
    if acc.dtype is not prod.dtype:
        raise OpError(
            f"pl.matmul_acc: the accumulator is {acc.dtype.value} but the operands accumulate in {prod.dtype.value}"
        )
    if tuple(acc.shape) != tuple(prod.shape):
        raise OpError(
            f"pl.matmul_acc: the accumulator is {list(acc.shape)} but the product is {list(prod.shape)}"
        )
    return TensorType(acc.shape, acc.dtype)
