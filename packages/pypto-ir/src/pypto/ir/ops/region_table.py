"""The op table's sub-tile, window, padding and single-element entries, and ``pl.print``."""

from __future__ import annotations

from pypto.ir.dtypes import DataType
from pypto.ir.ops import rules
from pypto.ir.ops.entries import P, _enter, _tile_and_tensor
from pypto.ir.ops.rules import VEC
from pypto.ir.ops.spec import Cpp, LangOp, OpSpec
from pypto.ir.types import AtomicType, MemorySpace, PadValue

__all__: list[str] = []


_enter(
    LangOp(
        "read",
        (P("src"), P("offset")),
        """One element of a tensor as a scalar: ``pl.read(cfg, [0])``.""",
        {"tile": "tile.read", "tensor": "tensor.read"},
        default="tensor.read",
        group="scalar",
    ),
    OpSpec("tensor.read", rules.tensor_read, 1, 1, offsets_at=1, on_core=False),
    OpSpec("tile.read", rules.tile_read, 1, 1, offsets_at=1, spaces=VEC),
)
_enter(
    LangOp(
        "view",
        (),
        """A window ``t[a:b, ...]`` of a tensor: a descriptor in the orchestration, offsets in a kernel.""",
        default="tensor.view",
        group="memory",
        public=False,
    ),
    OpSpec(
        "tensor.view",
        rules.tensor_view,
        1,
        1,
        attrs=("shape", "static_offsets", "valid_shape", "pad"),
        offsets_at=1,
        on_core=False,
    ),
)

_enter(
    LangOp(
        "slice",
        (
            P("input"),
            P("shape"),
            P("offset"),
            P("valid_shape", None),
            P("drop_dims", None),
            P("pad_value", None),
            P("clamp", False),
        ),
        """The sub-tile of ``shape`` at ``offsets`` (a copy); of a tensor, the window of
        ``shape`` at ``offset`` (a descriptor, no copy; in an orchestration its extents and
        offsets may be index scalars: ``pl.slice(q, [16, d], [row, 0])``).

        ``valid_shape`` names the part that holds data. A sub-tile gets that valid shape. A
        window keeps ``shape``; a kernel reads its valid part with ``pl.load(...,
        valid_shape=...)``, and a tensor-level op in a kernel reads a window whose valid_shape
        is constant as a tile with that valid shape. ``pad_value`` (a ``pl.PadValue``, or 0,
        ``math.inf``, ``-math.inf``) is what the elements outside the valid shape hold when the
        sub-tile or window is read (it needs a constant valid_shape for a window).
        ``drop_dims`` and ``clamp=True`` are not available.""",
        {"tile": "tile.slice", "tensor": "tensor.view"},
        group="sub-tile",
    ),
    OpSpec(
        "tile.slice",
        rules.tile_slice,
        1,
        1,
        Cpp("TEXTRACT", tail="row_col", valid="static"),
        attrs=("shape", "static_offsets"),
        offsets_at=1,
    ),
)
_enter(
    LangOp(
        "assemble",
        (P("target"), P("source"), P("offset"), P("atomic", AtomicType.None_)),
        """``target`` with ``source`` written into it at ``offset``; returns the updated target.

    A tile target (``pl.tile.assemble``) takes a tile source. A tensor target (in a ``pl.at``
    scope or a kernel) takes a tile or a tensor-level value and stores it into the window at
    ``offset`` (one offset per tensor dim). ``atomic=pl.AtomicType.Add`` (tensor targets only)
    adds the source into the window instead: tasks that accumulate into one tensor this way
    get the exact sum (the runtime orders them; docs/pypto-ir.md).""",
        {"tile": "tile.assemble", "tensor": "tensor.assemble"},
        group="sub-tile",
    ),
    OpSpec(
        "tile.assemble",
        rules.tile_assemble,
        2,
        2,
        Cpp("TINSERT", (1,), into=0, tail="row_col"),
        attrs=("static_offsets",),
        offsets_at=2,
        spaces=(MemorySpace.Vec, MemorySpace.Mat),
    ),
    OpSpec("tensor.assemble", rules.tensor_assemble, 2, 2, attrs=("static_offsets", "atomic"), offsets_at=2),
)
_tile_and_tensor(
    "fillpad",
    (P("value"), P("pad_value", PadValue.zero)),
    """The tile with everything outside its valid region set to ``pad_value`` (a
    ``pl.PadValue``, or 0, ``math.inf``, ``-math.inf`` for zero, max, min); the result is fully
    valid. Of a tensor (in a kernel): the same on the tile that holds it; a tensor parameter is
    all valid, a ``pl.slice`` window with a constant ``valid_shape`` is valid only there.""",
    group="sub-tile",
    rules_of=(rules.tile_fillpad, rules.tensor_fillpad),
    arity=(1, 1),
    cpp=Cpp("TFILLPAD", (), into=0, tail="pad"),
    attrs=("pad",),
)
_enter(
    LangOp(
        "extract",
        (P("src"), P("index_row"), P("index_col"), P("shape"), P("target_memory")),
        """The ``shape`` window of ``src`` at ``(index_row, index_col)`` moved to
    ``target_memory`` (PTO-ISA TEXTRACT): from a Mat tile into Left or Right (a K slice of a
    cube operand held in L1), from an Acc tile into Mat, from a Vec tile into Vec. The window
    must lie inside ``src``; the offsets are constants or index scalars.""",
        {"tile": "tile.extract"},
        group="sub-tile",
        in_pl=False,
    ),
    OpSpec(
        "tile.extract",
        rules.tile_extract,
        1,
        1,
        Cpp("TEXTRACT", tail="row_col", valid="static"),
        attrs=("shape", "static_offsets", "memory"),
        offsets_at=1,
    ),
)
_enter(
    LangOp(
        "fillpad_inplace",
        (P("tile"), P("pad_value", PadValue.zero)),
        """``pl.fillpad`` of a tile, spelled as upstream's in-place form: the result is the tile with
    everything outside its valid region set to ``pad_value``, fully valid (it takes the tile's
    storage where the tile is not read afterwards, a copy otherwise).""",
        {"tile": "tile.fillpad"},
        group="sub-tile",
        in_pl=False,
    ),
)
_tile_and_tensor(
    "fillpad_expand",
    (P("tile"), P("shape"), P("pad_value", PadValue.zero)),
    """A larger tile of ``shape`` (each dimension at least the source's): the source's valid
    region copied to its top-left corner, every other element ``pad_value`` (a ``pl.PadValue``,
    or 0, ``math.inf``, ``-math.inf``); the result is fully valid. Of a tensor (in a kernel): the
    same on the tile that holds it.""",
    group="sub-tile",
    rules_of=(rules.tile_fillpad_expand, rules.tensor_fillpad_expand),
    arity=(1, 1),
    cpp=Cpp("TFILLPAD_EXPAND", (), into=0, tail="pad"),
    attrs=("shape", "pad"),
)
_enter(
    LangOp(
        "set_validshape",
        (P("input"), P("valid_rows"), P("valid_cols")),
        """The tile with its valid shape set to ``valid_rows`` x ``valid_cols`` (constants or index
    scalars, each at most the static extent): ``pl.set_validshape(t, 16, n)``. The elements keep
    their values (on the chip only the tile's metadata changes; the simulator copies the tile);
    later ops read and write only the new valid region, and elements that were padding keep
    whatever they held (``pl.tile.fillpad`` sets them). A shape outside the static one fails
    the task. Of a tensor (``pl.tensor.set_validshape``): the window of its whole shape whose
    valid part is ``valid_rows`` x ``valid_cols`` (read with ``pl.load(..., valid_shape=...)``).""",
        {"tile": "tile.set_validshape", "tensor": "tensor.view"},
        group="sub-tile",
    ),
    OpSpec("tile.set_validshape", rules.tile_set_validshape, 3, 3, dtypes=frozenset(DataType)),
)
_enter(
    LangOp(
        "write",
        (P("dst"), P("offset"), P("value")),
        """Write one element of a tensor: ``pl.write(t, [i, j], v)``; returns the tensor. Of a Vec
    tile (``pl.tile.write``, in a kernel): the tile with element ``[i, j]`` set to ``v``
    (converted to its dtype); as a statement, ``pl.tile.write(t, [i, j], v)`` rebinds ``t`` to
    the written tile. A position outside the tile fails the task (a constant one is refused).""",
        {"tile": "tile.write", "tensor": "tensor.write"},
        default="tensor.write",
        group="scalar",
    ),
    OpSpec("tensor.write", rules.tensor_write, 2, 2, offsets_at=1, on_core=False),
    OpSpec(
        "tile.write",
        rules.tile_write,
        2,
        2,
        Cpp("write_elem", (2,), into=0, scalar_fn="write_elem", tail="position", helper=True),
        attrs=("static_offsets",),
        offsets_at=1,
        spaces=VEC,
    ),
)
# ----------------------------------------------------------------------------- debug

_enter(
    LangOp(
        "print",
        (P("value"), P("label", None)),
        """Print a tile (its valid region) or a scalar from a kernel while it runs on the simulated
    chip, tagged with the task and core: ``pl.print(t)``, ``pl.print(s, label="sum")``. Each call
    is one block of stdout; tiles larger than 8 rows or columns are summarised (first and last
    3). The label defaults to the value's source text. Simulator platforms only: compiling a
    kernel that prints for a device platform is an error.""",
        {"tile": "tile.print", "scalar": "scalar.print"},
        group="debug",
    ),
    OpSpec("tile.print", rules.debug_print, 1, 1, Cpp("TPRINT"), attrs=("label",)),
    OpSpec("scalar.print", rules.debug_print, 1, 1, attrs=("label",)),
)
