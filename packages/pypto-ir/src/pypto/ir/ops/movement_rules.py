"""The type rules of data movement: loads and stores between tensors and tiles (a window of
the tensor), moves between memory spaces, gathers within a tile, and tiles and tensors made
from nothing."""

from __future__ import annotations

from typing import Any

from pypto.ir.dtypes import DataType
from pypto.ir.ops.operand_checks import VEC, _describe, _tensor, _tensor_like, _tile, _tile_shape
from pypto.ir.ops.spec import OpError
from pypto.ir.types import DynDim, MemorySpace, ScalarType, TensorType, TileType, Type


def _check_window(tensor: TensorType, offsets: list[Any], shape: tuple[int, ...], op: str) -> None:
    if len(offsets) != len(tensor.shape):
        raise OpError(
            f"pl.{op}: {len(offsets)} offset(s) for a rank-{len(tensor.shape)} tensor; give one offset per dimension"
        )
    for axis, (off, ext, dim) in enumerate(zip(offsets, shape, tensor.shape, strict=True)):
        if isinstance(dim, int) and isinstance(off, int) and off + ext > dim:
            raise OpError(
                f"pl.{op}: the window [{off}, {off + ext}) on axis {axis} exceeds the tensor extent {dim}"
            )
        if isinstance(off, int) and off < 0:
            raise OpError(f"pl.{op}: offset {off} on axis {axis} is negative")


def tile_shape_for(tensor_rank: int, shape: tuple[int, ...], op: str) -> tuple[int, ...]:
    """The 2-D tile shape of a window: leading window dims must be 1."""
    if len(shape) != tensor_rank:
        raise OpError(
            f"pl.{op}: the shape {list(shape)} has rank {len(shape)} but the tensor has rank {tensor_rank}"
        )
    if any(not isinstance(d, int) or d <= 0 for d in shape):
        raise OpError(f"pl.{op}: tile shapes must be positive integer constants, got {list(shape)}")
    if len(shape) == 1:
        return (1, shape[0])
    if any(d != 1 for d in shape[:-2]):
        raise OpError(f"pl.{op}: a tile is 2-D; the leading dims of {list(shape)} must be 1")
    return (shape[-2], shape[-1])


def tile_load(args: list[Type], attrs: dict[str, Any]) -> Type:
    t = _tensor(args[0], "load", "the source")
    shape = tuple(attrs["shape"])
    tshape = tile_shape_for(len(t.shape), shape, "load")
    read = shape
    valid = attrs.get("static_valid")
    if valid is not None:  # only the valid region is read; a run-time extent is checked at run time
        rows, cols = (v if isinstance(v, int) else 0 for v in valid)
        read = (*shape[:-2], rows, cols) if len(shape) >= 2 else (cols,)
    _check_window(t, list(attrs.get("static_offsets", [None] * len(t.shape))), read, "load")
    mem = attrs.get("memory", MemorySpace.Vec)
    if mem not in (MemorySpace.Vec, MemorySpace.Mat):
        raise OpError(
            f"pl.load: target_memory must be Vec or Mat, got {mem.value}; load into Mat and then "
            f"pl.move(..., target_memory=pl.MemorySpace.{mem.value})"
        )
    return TileType(tshape, t.dtype, mem)


def tile_store(args: list[Type], attrs: dict[str, Any]) -> Type:
    tile = _tile(args[0], "store", "the value", (MemorySpace.Vec, MemorySpace.Acc))
    t = _tensor(args[1], "store", "the destination")
    if tile.dtype is not t.dtype:
        raise OpError(
            f"pl.store: the tile is {tile.dtype.value} but the tensor is {t.dtype.value}; use pl.cast first"
        )
    written = tuple(attrs.get("static_valid") or tile.shape)  # only the valid region is written
    shape = written if len(t.shape) >= 2 else (written[1],)
    if len(t.shape) > 2:
        shape = (1,) * (len(t.shape) - 2) + written
    _check_window(t, list(attrs.get("static_offsets", [None] * len(t.shape))), shape, "store")
    return t


_MOVES = {
    (MemorySpace.Mat, MemorySpace.Left),
    (MemorySpace.Mat, MemorySpace.Right),
    (MemorySpace.Mat, MemorySpace.Bias),
    (MemorySpace.Mat, MemorySpace.Vec),
    (MemorySpace.Vec, MemorySpace.Mat),
    (MemorySpace.Acc, MemorySpace.Vec),
    (MemorySpace.Acc, MemorySpace.Mat),
    (MemorySpace.Vec, MemorySpace.Vec),
}


def tile_move(args: list[Type], attrs: dict[str, Any]) -> Type:
    t = _tile(args[0], "move", "the source")
    mem = attrs["memory"]
    if (t.memory, mem) not in _MOVES:
        allowed = ", ".join(
            f"{a.value}->{b.value}" for a, b in sorted(_MOVES, key=lambda m: (m[0].value, m[1].value))
        )
        raise OpError(f"pl.move: cannot move a tile from {t.memory.value} to {mem.value}; allowed: {allowed}")
    if mem is MemorySpace.Bias and (len(t.shape) != 2 or t.shape[0] != 1):
        raise OpError(f"pl.move: a Bias tile is one row [1, N] (the bias table), got {list(t.shape)}")
    return TileType(t.shape, t.dtype, mem)


def tile_create(args: list[Type], attrs: dict[str, Any]) -> Type:
    shape = _tile_shape(attrs["shape"], "create_tile")
    return TileType(shape, attrs["dtype"], attrs.get("memory", MemorySpace.Vec))


def tile_full(args: list[Type], attrs: dict[str, Any]) -> Type:
    if not isinstance(args[0], ScalarType):
        raise OpError(f"pl.full: the fill value must be a scalar, got {args[0]}")
    shape = _tile_shape(attrs["shape"], "full")
    return TileType(shape, attrs["dtype"], MemorySpace.Vec)


def tensor_full(args: list[Type], attrs: dict[str, Any]) -> Type:
    """``pl.tensor.full(shape, dtype, value)``: the tile of ``pl.full`` as a tensor-level value
    (kernel work, lowered to ``tile.full``)."""
    if not isinstance(args[0], ScalarType):
        raise OpError(f"pl.tensor.full: the fill value must be a scalar, got {args[0]}")
    shape = _tile_shape(attrs["shape"], "tensor.full")
    return TensorType(shape, attrs["dtype"])


# The element types of a triangular mask (PTO-ISA TTRI): INT8, UINT8 and BF16 only on a5, which
# the kernel generator checks, as it knows the target.
TRI_DTYPES = frozenset(
    {
        DataType.INT8,
        DataType.UINT8,
        DataType.INT16,
        DataType.UINT16,
        DataType.INT32,
        DataType.UINT32,
        DataType.FP16,
        DataType.BF16,
        DataType.FP32,
    }
)


def _generated(
    op: str, what: str, args: list[Type], attrs: dict[str, Any], dtypes: frozenset[DataType]
) -> TileType:
    """The Vec tile a generator op (``pl.tri``, ``pl.tile.ci``) makes from an integer scalar
    operand ``what`` and the ``shape`` and ``dtype`` attributes, each checked."""
    s = args[0]
    if not isinstance(s, ScalarType) or not (s.dtype.is_signed_int or s.dtype.is_unsigned_int):
        raise OpError(f"pl.{op}: {what} must be an integer (a constant or a scalar), got {s}")
    shape = _tile_shape(attrs["shape"], op)
    dtype = attrs["dtype"]
    if dtype not in dtypes:
        names = ", ".join(sorted(t.name for t in dtypes))
        raise OpError(f"pl.{op}: dtype must be one of {names}, got {dtype.name}")
    return TileType(shape, dtype, MemorySpace.Vec)


def _check_static_valid(op: str, valid: Any, t: TileType) -> None:
    """A generator's ``valid_shape`` attribute: absent, or two integer constants within ``t``'s shape."""
    if valid is not None and (
        len(valid) != 2
        or any(not isinstance(v, int) or not 0 < v <= n for v, n in zip(valid, t.shape, strict=False))
    ):
        raise OpError(
            f"pl.{op}: valid_shape must be two integer constants in [1, shape] (shape {list(t.shape)}), "
            f"got {list(valid)}"
        )


def tile_tri(args: list[Type], attrs: dict[str, Any]) -> Type:
    """``pl.tri(diagonal, shape, valid_shape=None, dtype=INT32, upper=False)``: a Vec mask tile."""
    t = _generated("tri", "diagonal", args, attrs, TRI_DTYPES)
    _check_static_valid("tri", attrs.get("valid_shape"), t)
    return t


RANDOM_DTYPES = frozenset({DataType.INT32, DataType.UINT32})
RANDOM_ROUNDS = (7, 10)
RANDOM_SEEDS = ("key0", "key1", "counter0", "counter1", "counter2", "counter3")
"""The 32-bit words of a random op's 64-bit key and 128-bit counter: its operands, in order."""


def tile_random(args: list[Type], attrs: dict[str, Any]) -> Type:
    """``pl.tile.random(key0, key1, counter0, .., counter3, shape, valid_shape=None,
    dtype=UINT32, rounds=10)``: a Vec tile of Philox-4x32 words (PTO-ISA TRANDOM)."""
    return _random("tile.random", args, attrs)


def tensor_random(args: list[Type], attrs: dict[str, Any]) -> Type:
    """``pl.random(key0, key1, counter0, .., counter3, shape, dtype=UINT32, rounds=10)``: the
    words of ``pl.tile.random`` as a tensor-level value (kernel work, lowered to ``tile.random``)."""
    t = _random("random", args, attrs)
    return TensorType(t.shape, t.dtype)


def _random(op: str, args: list[Type], attrs: dict[str, Any]) -> TileType:
    for what, s in zip(RANDOM_SEEDS, args, strict=True):
        if not isinstance(s, ScalarType) or not (s.dtype.is_signed_int or s.dtype.is_unsigned_int):
            raise OpError(f"pl.{op}: {what} must be an integer (a constant or a scalar), got {s}")
    t = _generated(op, "key0", args, attrs, RANDOM_DTYPES)
    if attrs.get("rounds", 10) not in RANDOM_ROUNDS:
        raise OpError(
            f"pl.{op}: rounds must be 7 or 10 (TRANDOM's cipher rounds), got {attrs.get('rounds')!r}"
        )
    _check_static_valid(op, attrs.get("valid_shape"), t)
    return t


CI_DTYPES = frozenset({DataType.INT16, DataType.UINT16, DataType.INT32, DataType.UINT32})


def _index_row(op: str, args: list[Type], attrs: dict[str, Any]) -> TileType:
    t = _generated(op, "start", args, attrs, CI_DTYPES)
    if t.shape[0] != 1 or t.shape[1] == 1:
        raise OpError(
            f"pl.{op}: shape must be [1, n] with n > 1 (TCI writes one row, along the columns), got {list(t.shape)}"
        )
    return t


def tile_ci(args: list[Type], attrs: dict[str, Any]) -> Type:
    """``pl.tile.ci(start, shape, dtype=INT32, descending=False)``: a one-row Vec index tile."""
    return _index_row("tile.ci", args, attrs)


def tensor_ci(args: list[Type], attrs: dict[str, Any]) -> Type:
    """``pl.arange`` / ``pl.tensor.ci``: the same index row as a tensor-level value (kernel work,
    lowered to ``tile.ci``)."""
    t = _index_row("arange (pl.tensor.ci)", args, attrs)
    return TensorType(t.shape, t.dtype)


GATHER_DTYPES = frozenset({DataType.FP16, DataType.FP32, DataType.INT16, DataType.INT32})


def tile_gather(args: list[Type], attrs: dict[str, Any]) -> Type:
    """``pl.tile.gather(src, indices, tmp)`` (TGATHER's index form): a tile of ``indices``'
    shape holding src's elements at the flat positions ``indices`` names."""
    op = "tile.gather"
    src = _tile(args[0], op, "src", VEC)
    idx = _tile(args[1], op, "indices", VEC)
    _tile(args[2], op, "tmp (a scratch tile)", VEC)
    if len(src.shape) != 2 or len(idx.shape) != 2:
        raise OpError(f"pl.{op}: needs 2-D tiles, got src {list(src.shape)} and indices {list(idx.shape)}")
    if src.dtype not in GATHER_DTYPES:
        raise OpError(f"pl.{op}: src must be {_describe(GATHER_DTYPES)}, got {src.dtype.value}")
    if not _index_dtype_ok(idx.dtype, src.dtype):
        raise OpError(
            f"pl.{op}: indices must be INT32 (or INT16 with a 16-bit src), got {idx.dtype.value} "
            f"with a {src.dtype.value} src"
        )
    return TileType(idx.shape, src.dtype, MemorySpace.Vec)


def _index_dtype_ok(index: DataType, src: DataType) -> bool:
    return index is DataType.INT32 or (index is DataType.INT16 and src.itemsize == 2)


def _check_index_axis(op: str, dim: Any, operands: dict[str, TensorType]) -> None:
    """The index form's operands (``input``, ``index``, ...) are 2-D, and torch's rules for
    ``dim``: a constant axis, and an index no larger than the input on the other axis."""
    if any(len(t.shape) != 2 for t in operands.values()):
        shapes = ", ".join(f"{name} {list(t.shape)}" for name, t in operands.items())
        raise OpError(
            f"pl.{op}: the index form takes 2-D tensors here, got {shapes}; {op} a tensor of higher "
            "rank one 2-D slice at a time"
        )
    x, idx = operands["input"], operands["index"]
    if isinstance(dim, bool) or not isinstance(dim, int) or not -2 <= dim <= 1:
        raise OpError(f"pl.{op}: dim must be a constant axis of a 2-D tensor (-2, -1, 0 or 1), got {dim!r}")
    other = 1 - dim % 2
    a, b = idx.shape[other], x.shape[other]
    if isinstance(a, int) and isinstance(b, int) and a > b:
        raise OpError(
            f"pl.{op}: index has {a} entries on axis {other}, input only {b} (as in torch, index may "
            "not be larger than input on any axis but dim)"
        )


def tensor_gather(args: list[Type], attrs: dict[str, Any]) -> Type:
    """``pl.gather(input, dim, index)`` (torch.gather): ``out[i, j] = input[index[i, j], j]``
    (dim 0) or ``input[i, index[i, j]]`` (dim 1), a tensor of ``index``' shape."""
    op = "gather"
    x = _tensor_like(args[0], op, "input")
    idx = _tensor_like(args[1], op, "index")
    _check_index_axis(op, attrs["dim"], {"input": x, "index": idx})
    if x.dtype not in GATHER_DTYPES:
        raise OpError(f"pl.{op}: input must be {_describe(GATHER_DTYPES)}, got {x.dtype.value}")
    if not _index_dtype_ok(idx.dtype, x.dtype):
        raise OpError(
            f"pl.{op}: index must be INT32 (or INT16 with a 16-bit input), got {idx.dtype.value} "
            f"with a {x.dtype.value} input"
        )
    return TensorType(idx.shape, x.dtype)


SCATTER_DTYPES = frozenset(
    {DataType.FP16, DataType.FP32, DataType.BF16, DataType.INT8, DataType.INT16, DataType.INT32}
)


def scatter_index_dtype(dst: DataType) -> DataType:
    """The index dtype TSCATTER takes for a destination of ``dst``: as wide as its elements (INT32
    for 4-byte ones, INT16 otherwise)."""
    return DataType.INT32 if dst.itemsize == 4 else DataType.INT16


def tile_scatter(args: list[Type], attrs: dict[str, Any]) -> Type:
    """``pl.tile.scatter(dst, src, indexes)`` (TSCATTER's index form): ``dst`` with ``src[i, j]``
    written at the flat position ``indexes[i, j]``."""
    op = "tile.scatter"
    dst = _tile(args[0], op, "dst", VEC)
    src = _tile(args[1], op, "src", VEC)
    idx = _tile(args[2], op, "indexes", VEC)
    if len(dst.shape) != 2 or len(src.shape) != 2 or len(idx.shape) != 2:
        raise OpError(f"pl.{op}: needs 2-D tiles, got dst {list(dst.shape)}, src {list(src.shape)}")
    if dst.dtype not in SCATTER_DTYPES:
        raise OpError(f"pl.{op}: dst must be {_describe(SCATTER_DTYPES)}, got {dst.dtype.value}")
    if src.dtype is not dst.dtype:
        raise OpError(f"pl.{op}: src must have dst's dtype {dst.dtype.value}, got {src.dtype.value}")
    want = scatter_index_dtype(dst.dtype)
    if idx.dtype is not want:
        raise OpError(
            f"pl.{op}: indexes must be {want.value} for a {dst.dtype.value} dst (as wide as its "
            f"elements, INT16 for 1- and 2-byte ones), got {idx.dtype.value}"
        )
    if tuple(idx.shape) != tuple(src.shape):
        raise OpError(
            f"pl.{op}: indexes must have src's shape {list(src.shape)} (one position per element), "
            f"got {list(idx.shape)}"
        )
    return dst


def tensor_scatter(args: list[Type], attrs: dict[str, Any]) -> Type:
    """``pl.scatter(input, dim, index, src)`` (torch.Tensor.scatter): ``input`` with
    ``src[i, j]`` written at ``[index[i, j], j]`` (dim 0) or ``[i, index[i, j]]`` (dim 1)."""
    op = "scatter"
    x = _tensor_like(args[0], op, "input")
    idx = _tensor_like(args[1], op, "index")
    src = _tensor_like(args[2], op, "src")
    _check_index_axis(op, attrs["dim"], {"input": x, "index": idx, "src": src})
    if x.dtype not in SCATTER_DTYPES:
        raise OpError(f"pl.{op}: input must be {_describe(SCATTER_DTYPES)}, got {x.dtype.value}")
    if src.dtype is not x.dtype:
        raise OpError(f"pl.{op}: src must have input's dtype {x.dtype.value}, got {src.dtype.value}")
    if idx.dtype not in (DataType.INT32, DataType.INT16):
        raise OpError(f"pl.{op}: index must be INT32 or INT16, got {idx.dtype.value}")
    if tuple(idx.shape) != tuple(src.shape):
        raise OpError(f"pl.{op}: index must have src's shape {list(src.shape)}, got {list(idx.shape)}")
    if x.is_static and x.dtype.itemsize < 4:
        rows, cols = x.static_shape
        if rows * cols > 2**15:
            raise OpError(
                f"pl.{op}: a {x.dtype.value} input of {rows * cols} elements is too large: TSCATTER "
                "addresses 1- and 2-byte elements with INT16 positions (at most 32768 elements)"
            )
    return TensorType(x.shape, x.dtype)


def tensor_create(args: list[Type], attrs: dict[str, Any]) -> Type:
    shape = tuple(attrs["shape"])
    if not shape or any(not isinstance(d, DynDim) and (not isinstance(d, int) or d <= 0) for d in shape):
        raise OpError(
            f"pl.create_tensor: shape must be positive integer constants or index scalars, got {list(shape)}"
        )
    return TensorType(shape, attrs["dtype"])


def tensor_dim(args: list[Type], attrs: dict[str, Any]) -> Type:
    t = _tensor(args[0], "dim", "the operand")
    axis = attrs["axis"]
    if not 0 <= axis < len(t.shape):
        raise OpError(f"pl.dim: axis {axis} is outside a rank-{len(t.shape)} tensor")
    return ScalarType(DataType.INT64)


def tensor_expand_clone(args: list[Type], attrs: dict[str, Any]) -> Type:
    """``pl.expand_clone(src, target)``: ``target`` written with ``src`` repeated along the one axis
    where src has extent 1 and target more (``target.copy_(src.expand_as(target))``); rank 2 or 3,
    static shapes, one dtype. The result is target after the write."""
    op = "expand_clone"
    src = _tensor_like(args[0], op, "src")
    dst = _tensor(args[1], op, "target")
    if len(dst.shape) not in (2, 3) or len(src.shape) != len(dst.shape):
        raise OpError(
            f"pl.{op}: src and target must be tensors of one rank, 2 or 3, got {list(src.shape)} and {list(dst.shape)}"
        )
    if not src.is_static or not dst.is_static:
        raise OpError(f"pl.{op}: needs static shapes, got src {list(src.shape)} and target {list(dst.shape)}")
    if src.dtype is not dst.dtype:
        raise OpError(f"pl.{op}: src must have target's dtype {dst.dtype.value}, got {src.dtype.value}")
    repeated = [i for i, (s, d) in enumerate(zip(src.static_shape, dst.static_shape, strict=True)) if s != d]
    if len(repeated) > 1 or any(src.static_shape[i] != 1 for i in repeated):
        raise OpError(
            f"pl.{op}: src must have target's shape {list(dst.shape)} but on at most one axis, where its "
            f"extent is 1 (the axis it is repeated along), got {list(src.shape)}"
        )
    return dst
