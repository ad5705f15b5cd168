"""The op table's data movement entries: load, store, move, gather, and tiles and tensors made
from nothing (create, full, tri, ci), a tensor repeated into another (``pl.expand_clone``), and a
tensor's extent (``pl.dim``)."""

from __future__ import annotations

from pypto.ir.dtypes import DataType
from pypto.ir.ops import rules
from pypto.ir.ops.entries import P, _enter
from pypto.ir.ops.rules import VEC
from pypto.ir.ops.spec import Cpp, LangOp, OpSpec
from pypto.ir.types import MemorySpace

__all__: list[str] = []


_enter(
    LangOp(
        "load",
        (
            P("tensor"),
            P("offsets"),
            P("shapes"),
            P("valid_shape", None),
            P("target_memory", MemorySpace.Vec),
            P("clamp", False),
        ),
        """Load the window ``tensor[offsets : offsets + shapes]`` into a tile (Vec or Mat).

    ``valid_shape=[rows, cols]`` (run-time values allowed) loads only that leading region;
    the rest of the tile is padding (see ``pl.tile.fillpad``). Only the valid region is read,
    so the window may run past the tensor's end where the valid region does not.
    ``clamp=True`` cuts the valid region back to the tensor's edge instead of refusing a
    region that runs past it (constant offsets and a static tensor shape).""",
        default="tile.load",
        group="memory",
    ),
    OpSpec(
        "tile.load",
        rules.tile_load,
        1,
        1,
        Cpp("TLOAD", nz_fn="gm_view_nz", valid="static"),
        attrs=("shape", "static_offsets", "memory", "layout"),
        offsets_at=1,
        spaces=(MemorySpace.Vec, MemorySpace.Mat),
    ),
)
_enter(
    LangOp(
        "store",
        (P("tile"), P("offsets"), P("output_tensor"), P("shapes", None)),
        """Store a tile into ``output_tensor`` at ``offsets``; returns the tensor. ``shapes``, when
    given, must be the tile's window shape.""",
        {"tile": "tile.store"},
        group="memory",
    ),
    OpSpec(
        "tile.store",
        rules.tile_store,
        2,
        2,
        Cpp("TSTORE", nz_fn="gm_view_nz"),
        attrs=("static_offsets",),
        offsets_at=1,
        spaces=(MemorySpace.Vec, MemorySpace.Acc),
    ),
)
_enter(
    LangOp(
        "move",
        (P("tile"), P("target_memory")),
        """Copy a tile to another memory space (Mat->Left/Right, Acc->Vec, ...).""",
        {"tile": "tile.move"},
        group="memory",
    ),
    OpSpec("tile.move", rules.tile_move, 1, 1, Cpp("TMOV"), attrs=("memory",)),
)
_enter(
    LangOp(
        "create_tile",
        (
            P("shape"),
            P("dtype"),
            P("target_memory", MemorySpace.Vec),
            P("transpose", None),
            P("flat_layout", None),
        ),
        """A scratch tile (contents undefined). ``pl.tile.create`` is the same function.
    ``transpose=True`` (a 2-D Mat tile only) asks the device for the layout of a transposed matmul
    operand; ``flat_layout=True`` (a Mat tile, not with ``transpose``) for a flat, non-fractal
    staging buffer. The simulator stores every tile row-major, so both are recorded and change
    nothing.""",
        default="tile.create",
        group="memory",
        alias="create",
    ),
    OpSpec(
        "tile.create", rules.tile_create, 0, 0, attrs=("shape", "dtype", "memory", "transpose", "flat_layout")
    ),
)
_enter(
    LangOp(
        "create_tensor",
        (P("shape"), P("dtype")),
        """An intermediate tensor in device memory, allocated by the runtime. ``pl.tensor.create``
    is the same function.""",
        default="tensor.create",
        group="memory",
        alias="create",
    ),
    OpSpec("tensor.create", rules.tensor_create, 0, 0, attrs=("shape", "dtype"), on_core=False),
)
_enter(
    LangOp(
        "full",
        (P("shape"), P("dtype"), P("value", 0.0)),
        """A Vec tile of ``shape`` and ``dtype`` filled with ``value``.""",
        default="tile.full",
        group="memory",
    ),
    OpSpec("tile.full", rules.tile_full, 1, 1, attrs=("shape", "dtype"), spaces=VEC),
)
_enter(
    LangOp(
        "tensor_full",
        (P("shape"), P("dtype"), P("value", 0.0)),
        """The tile of ``pl.full`` as a tensor-level value: ``shape`` and ``dtype`` filled with
    ``value`` (kernel work: inside ``pl.at`` or a kernel it becomes ``pl.full``). ``pl.full`` itself
    makes the tile, which mixes in wherever a tensor-level value is taken.""",
        default="tensor.full",
        group="memory",
        in_pl=False,
        exported="full",
    ),
    OpSpec("tensor.full", rules.tensor_full, 1, 1, attrs=("shape", "dtype")),
)
_enter(
    LangOp(
        "tri",
        (P("diagonal"), P("shape"), P("valid_shape", None), P("dtype", DataType.INT32), P("upper", False)),
        """A triangular mask: a Vec tile of ``shape`` and ``dtype`` (INT32 by default) holding 1 on
    and below the ``diagonal`` and 0 above it (``upper=True``: 1 on and above it), as
    ``torch.tril``/``torch.triu`` of ones; ``diagonal`` (a constant or an integer scalar) shifts
    the boundary right (positive) or left (negative). ``valid_shape=[rows, cols]`` (constants)
    writes only that leading region, which is then the tile's valid shape. Other dtypes: INT8,
    UINT8, INT16, UINT16, UINT32, FP16, BF16, FP32 (INT8, UINT8 and BF16 on a5 only).""",
        default="tile.tri",
        group="memory",
    ),
    OpSpec("tile.tri", rules.tile_tri, 1, 1, attrs=("shape", "valid_shape", "dtype", "upper"), spaces=VEC),
)
_SEEDS = tuple(P(name) for name in rules.RANDOM_SEEDS)  # pl.tile.random's and pl.random's
_enter(
    LangOp(
        "random",
        (
            *_SEEDS,
            P("shape"),
            P("valid_shape", None),
            P("dtype", DataType.UINT32),
            P("rounds", 10),
        ),
        """Counter-based random words (PTO-ISA TRANDOM, Philox-4x32 with ``rounds`` 7 or 10): a Vec
    tile of ``shape`` and ``dtype`` (UINT32 by default, or INT32) whose words are the cipher of
    the 64-bit key ``(key0, key1)`` and the 128-bit counter ``(counter0, .., counter3)`` (each a
    32-bit constant or integer scalar) advanced by the element's position in the instruction's
    schedule: the same seeds give the same tile, bit for bit as the official CPU backend.
    ``valid_shape=[rows, cols]`` (constants) fills only that leading region. The instruction
    exists on A5 only: a kernel for an a2a3 platform is refused.""",
        default="tile.random",
        group="memory",
        in_pl=False,
    ),
    OpSpec(
        "tile.random", rules.tile_random, 6, 6, attrs=("shape", "valid_shape", "dtype", "rounds"), spaces=VEC
    ),
)
_enter(
    LangOp(
        "gather",
        (
            P("input"),
            P("dim", None),
            P("index", None),
            P("indices", None),
            P("tmp", None),
            P("mask_pattern", None),
            P("output_dtype", None),
        ),
        """Elements picked by index. Two forms, and a third by pattern:

    - ``pl.gather(input, dim, index)`` / ``pl.tensor.gather`` (torch.gather's index form, 2-D
      tensors): a tensor of ``index``' shape with ``out[i, j] = input[index[i, j], j]`` for
      ``dim`` 0 (or -2) and ``input[i, index[i, j]]`` for ``dim`` 1 (or -1). ``input`` is FP16,
      FP32, INT16 or INT32 (a tile mixed in is taken as it is); ``index`` INT32, or INT16 with a
      16-bit ``input``, each entry within ``input``'s extent on ``dim`` (not checked: an entry
      outside it reads another element of ``input``, or 0 past its end).
    - ``pl.tile.gather(src, indices, tmp)`` (PTO-ISA TGATHER's index form): a Vec tile of
      ``indices``' shape whose element ``[i, j]`` is ``src``'s element at flat row-major position
      ``indices[i, j]`` of its whole (static) shape, 0 where that position lies outside it;
      ``tmp`` is a scratch Vec tile the instruction takes (any shape and dtype). Also spelled
      with keywords: ``pl.tile.gather(src, indices=..., tmp=...)``.

    - ``pl.gather(input, mask_pattern=..., output_dtype=None)``: the columns of each row a
      ``pl.tile.MaskPattern`` keeps (``pl.tile.gather_mask``, of a tensor or a tile).

    Upstream's compare form is not built here.""",
        {"tile": "tile.gather"},
        default="tensor.gather",
        group="memory",
    ),
    # dtypes: the source's (the indices' are INT32, or INT16 with a 16-bit source)
    OpSpec(
        "tile.gather",
        rules.tile_gather,
        3,
        3,
        Cpp("TGATHER", (0, 1, 2), valid="index"),
        dtypes=rules.GATHER_DTYPES,
        spaces=VEC,
    ),
    OpSpec("tensor.gather", rules.tensor_gather, 2, 2, attrs=("dim",), dtypes=rules.GATHER_DTYPES),
)
_enter(
    LangOp(
        "gather_index",
        (P("input"), P("dim"), P("index")),
        """The index form of ``pl.gather`` whatever its input's level (``tensor.gather``).""",
        default="tensor.gather",
        group="memory",
        public=False,
        spelling="pl.gather",
    ),
)
_enter(
    LangOp(
        "scatter",
        (
            P("input"),
            P("dim", None),
            P("index", None),
            P("src", None),
            P("indexes", None),
            P("mask_pattern", None),
        ),
        """Elements written at positions given by index. Two forms:

    - ``pl.scatter(input, dim, index, src)`` / ``pl.tensor.scatter`` (torch.Tensor.scatter's
      index form, 2-D tensors): ``input`` with ``src[i, j]`` written at ``[index[i, j], j]`` for
      ``dim`` 0 (or -2) and at ``[i, index[i, j]]`` for ``dim`` 1 (or -1), later elements of
      ``src`` (row-major) winning where two name one position. ``input`` is FP16, FP32, BF16,
      INT8, INT16 or INT32 (1- and 2-byte inputs of at most 32768 elements); ``src`` has its
      dtype and ``index``' shape; ``index`` is INT32 or INT16, each entry within ``input``'s
      extent on ``dim`` (not checked beyond the tile: an entry past it writes another element).
    - ``pl.tile.scatter(dst, src, indexes)`` (PTO-ISA TSCATTER's index form): ``dst`` with
      ``src[i, j]`` written at flat row-major position ``indexes[i, j]`` of its whole (static)
      shape; ``indexes`` has ``src``'s shape and is INT32 for a 4-byte ``dst``, INT16 otherwise.
      A position outside ``dst`` fails the kernel (the simulator checks it). Also spelled
      ``pl.tile.scatter(dst, src=..., indexes=...)``.

    Upstream's mask form (``mask_pattern=``) is not built here.""",
        {"tile": "tile.scatter"},
        default="tensor.scatter",
        group="memory",
    ),
    # dtypes: dst's and src's (the indexes' follow dst's width)
    OpSpec(
        "tile.scatter",
        rules.tile_scatter,
        3,
        3,
        Cpp("TSCATTER", (1, 2), into=0),
        dtypes=rules.SCATTER_DTYPES,
        spaces=VEC,
    ),
    OpSpec("tensor.scatter", rules.tensor_scatter, 3, 3, attrs=("dim",), dtypes=rules.SCATTER_DTYPES),
)
_enter(
    LangOp(
        "scatter_index",
        (P("input"), P("dim"), P("index"), P("src")),
        """The index form of ``pl.scatter`` whatever its input's level (``tensor.scatter``).""",
        default="tensor.scatter",
        group="memory",
        public=False,
        spelling="pl.scatter",
    ),
)
_enter(
    LangOp(
        "ci",
        (P("start"), P("shape"), P("dtype", DataType.INT32), P("descending", False)),
        """An index row: a Vec tile of ``shape`` ``[1, n]`` (n > 1) and ``dtype`` (INT32 by default;
    INT16, UINT16, UINT32) holding ``start, start + 1, ..., start + n - 1`` (``descending=True``:
    ``start, start - 1, ...``), as ``torch.arange``; ``start`` is a constant or an integer scalar.
    Values wrap in the dtype. ``pl.tile.arange`` is the same function.""",
        default="tile.ci",
        group="memory",
        in_pl=False,
        alias="arange",
    ),
    OpSpec("tile.ci", rules.tile_ci, 1, 1, attrs=("shape", "dtype", "descending"), spaces=VEC),
)
_enter(
    LangOp(
        "arange",
        (P("start"), P("shape"), P("dtype", DataType.INT32), P("descending", False)),
        """The index row of ``pl.tile.ci`` as a tensor-level value (kernel work: inside ``pl.at``
    or a kernel it becomes ``pl.tile.ci``): ``start, start + 1, ...`` over ``shape`` ``[1, n]``,
    ``descending=True`` counting down. ``pl.tensor.ci`` is the same function.""",
        default="tensor.ci",
        group="memory",
        alias="ci",
    ),
    OpSpec("tensor.ci", rules.tensor_ci, 1, 1, attrs=("shape", "dtype", "descending")),
)
_enter(
    LangOp(
        "tensor_random",
        (
            *_SEEDS,
            P("shape"),
            P("dtype", DataType.UINT32),
            P("rounds", 10),
        ),
        """The words of ``pl.tile.random`` as a tensor-level value (kernel work: inside ``pl.at`` or a
    kernel it becomes ``pl.tile.random`` of the whole shape): Philox-4x32 words of the 64-bit key
    ``(key0, key1)`` and the 128-bit counter ``(counter0, .., counter3)``, ``dtype`` UINT32 (the
    default) or INT32, ``rounds`` 7 or 10. A5 only, as the instruction.""",
        default="tensor.random",
        group="memory",
        exported="random",
    ),
    OpSpec("tensor.random", rules.tensor_random, 6, 6, attrs=("shape", "dtype", "rounds")),
)
_enter(
    LangOp(
        "expand_clone",
        (P("src"), P("target")),
        """Write ``src`` into ``target``, repeated along the one axis where ``src`` has extent 1 and
    ``target`` more (as ``target.copy_(src.expand_as(target))``; equal shapes copy); returns
    ``target`` after the write. Rank 2 or 3, static shapes, one dtype; kernel work (inside
    ``pl.at`` or a kernel). A rank-3 target is written a block of its first axis at a time.""",
        default="tensor.expand_clone",
        group="memory",
    ),
    OpSpec("tensor.expand_clone", rules.tensor_expand_clone, 2, 2),
)
_enter(
    LangOp(
        "dim",
        (P("tensor"), P("axis")),
        """The run-time extent of ``tensor`` along ``axis`` (an index scalar).""",
        default="tensor.dim",
        group="memory",
    ),
    OpSpec("tensor.dim", rules.tensor_dim, 1, 1, attrs=("axis",), on_core=False),
)
