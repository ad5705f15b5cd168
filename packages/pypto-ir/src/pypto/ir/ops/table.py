"""The op table: every ``pl.*`` op once, with its signature, doc, IR forms, type rules and C++.

An entry here is the whole op for the compiler: ``pypto.language`` builds ``pl.<name>`` (and
``pl.tile.<name>`` for ops with a tile form) from it, the parser dispatches a call to the form
its first operand selects and checks it with the form's rule, and the kernel emitter writes the
tile form as the ``Cpp`` call recorded here. A new unary op is one ``_unary(...)`` line here plus
its function in the tile library (simpler/tile/elementwise.hpp); tests/test_op_table.py checks
the table against the ``pl`` exports, the builders and the tile headers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from pypto.ir.dtypes import DataType
from pypto.ir.ops import rules
from pypto.ir.ops.rules import FLOAT, INT, VEC
from pypto.ir.ops.spec import LANGUAGE, OPS, Cpp, LangOp, OpSpec, Param, Rule
from pypto.ir.types import AtomicType, MemorySpace, PadValue

__all__: list[str] = []

P = Param


def _enter(lang: LangOp, *specs: OpSpec) -> None:
    for spec in specs:
        if spec.name in OPS:
            raise ValueError(f"op table: {spec.name} entered twice")
        OPS[spec.name] = spec
    if lang.name in LANGUAGE:
        raise ValueError(f"op table: pl.{lang.name} entered twice")
    missing = [n for n in lang.ir_ops if n not in OPS]
    if missing:
        raise ValueError(f"op table: pl.{lang.name} names IR ops without an entry: {missing}")
    LANGUAGE[lang.name] = lang


def _both(name: str) -> dict[str, str]:
    return {"tile": f"tile.{name}", "tensor": f"tensor.{name}"}


def _leveled(
    name: str,
    make: Callable[[str], Rule],
    arity: tuple[int, int],
    cpp: Cpp,
    dtypes: frozenset[DataType] | None = None,
) -> tuple[OpSpec, OpSpec]:
    """The tile and tensor forms of an element-wise family op (the tile form reads Vec tiles)."""
    lo, hi = arity
    return (
        OpSpec(f"tile.{name}", make("tile"), lo, hi, cpp, dtypes=dtypes, spaces=VEC),
        OpSpec(f"tensor.{name}", make("tensor"), lo, hi, dtypes=dtypes),
    )


# ----------------------------------------------------------------------------- families


PRECISION = P("high_precision", False)
"""``high_precision=``: upstream's request for the device's more accurate (slower) algorithm of a
division, logarithm or reciprocal; the simulated chip computes every one of them in FP32 with the
C library, so the flag is checked and recorded (attribute ``high_precision``) and changes nothing."""


def _binary(name: str, doc: str, fn: str | None = None, precision: bool = False) -> None:
    """``pl.<name>(lhs, rhs)``: element-wise; ``pt::<fn>`` on two tiles, ``pt::<fn>s`` with a scalar.
    ``precision``: it takes ``high_precision=``."""
    lib = fn or name
    tile, tensor = _leveled(
        name, lambda kind: rules.binary(kind, name), (2, 2), Cpp(lib, (0, 1), scalar_fn=lib + "s")
    )
    params = (P("lhs"), P("rhs"), PRECISION) if precision else (P("lhs"), P("rhs"))
    if precision:
        tile = replace(tile, attrs=("high_precision",))
        tensor = replace(tensor, attrs=("high_precision",))
    _enter(LangOp(name, params, doc, _both(name), group="element-wise"), tile, tensor)


def _scalar_binary(name: str, pair: str, doc: str, *, fn: str, in_pl: bool, tensor: bool) -> None:
    """``pl.tile.<name>(lhs, rhs)``: a tile (op) a scalar, ``pt::<fn>(dst, tile, scalar)``; ``pair``
    is the op on two tiles. ``tensor``: it has a tensor form too (``pl.tensor.<name>``)."""
    specs = [
        OpSpec(
            f"tile.{name}",
            rules.scalar_binary("tile", name, pair),
            2,
            2,
            Cpp(fn, (0, 1), scalar_fn=fn),
            spaces=VEC,
        )
    ]
    forms = {"tile": f"tile.{name}"}
    if tensor:
        specs.append(OpSpec(f"tensor.{name}", rules.scalar_binary("tensor", name, pair), 2, 2))
        forms["tensor"] = f"tensor.{name}"
    _enter(LangOp(name, (P("lhs"), P("rhs")), doc, forms, group="element-wise", in_pl=in_pl), *specs)


def _unary(
    name: str,
    doc: str,
    *,
    float_only: bool = False,
    precision: bool = False,
    int_only: bool = False,
    scratch: bool = False,
) -> None:
    """``pl.<name>(input)``: element-wise, ``pt::<name>(dst, src)``. ``precision``: it takes
    ``high_precision=``; ``scratch``: its tile form takes upstream's scratch tile ``tmp``."""
    dtypes = FLOAT if float_only else INT if int_only else None
    tile, tensor = _leveled(
        name,
        lambda kind: rules.unary(kind, name, dtypes=dtypes),
        (1, 2 if scratch else 1),
        Cpp(name),
        dtypes=dtypes,
    )
    if precision:
        tile = replace(tile, attrs=("high_precision",))
        tensor = replace(tensor, attrs=("high_precision",))
    params: tuple[Param, ...] = (P("input"), PRECISION) if precision else (P("input"),)
    if scratch:
        params += (P("tmp", None),)
    _enter(LangOp(name, params, doc, _both(name), group="element-wise"), tile, tensor)


def _bitwise(name: str, scalar: str, fn: str, doc: str, sdoc: str, *, tmp: bool = False) -> None:
    """``pl.<name>(lhs, rhs)`` on integer elements (``rhs`` a tile/tensor or an integer scalar:
    ``pt::<fn>`` / ``pt::<scalar>``) and ``pl.<scalar>(lhs, rhs)`` with a scalar rhs. ``tmp``: the
    tile forms take upstream's scratch tile as a third operand (not used by the simulator)."""
    params = (P("lhs"), P("rhs"), P("tmp", None)) if tmp else (P("lhs"), P("rhs"))
    hi = 3 if tmp else 2
    forms: tuple[tuple[str, bool, str, str, Cpp], ...] = (
        (name, False, "", doc, Cpp(fn, (0, 1), scalar_fn=scalar)),
        (scalar, True, name, sdoc, Cpp(scalar, (0, 1), scalar_fn=scalar)),
    )
    for op, scalar_only, pair, text, lib in forms:
        _enter(
            LangOp(op, params, text, _both(op), group="bitwise"),
            OpSpec(
                f"tile.{op}",
                rules.bitwise("tile", op, scalar_only=scalar_only, pair=pair),
                2,
                hi,
                lib,
                dtypes=INT,
                spaces=VEC,
            ),
            OpSpec(
                f"tensor.{op}",
                rules.bitwise("tensor", op, scalar_only=scalar_only, pair=pair),
                2,
                hi,
                dtypes=INT,
            ),
        )


def _reduction(name: str, doc: str, result: DataType | None = None) -> None:
    """``pl.<name>(input, tmp_tile=None)``: ``pt::<name>(dst, src)``; ``result``: the result dtype
    when it is not the operand's."""
    _enter(
        LangOp(name, (P("input"), P("tmp_tile", None)), doc, _both(name), group="reduction"),
        *_leveled(name, lambda kind: rules.reduction(kind, name, result=result), (1, 2), Cpp(name)),
    )


def _expand(name: str, doc: str, row: bool, float_only: bool = False, packed: bool = False) -> None:
    """``pl.<name>(lhs, rhs)``: a vector broadcast; the plain ``row_expand``/``col_expand`` write
    the broadcast vector alone (``pt::<name>(dst, vec)``), the others combine it with ``lhs``.
    ``packed``: the row vector may also be one 32-byte block a row, and the tile form takes
    upstream's scratch tile ``tmp`` (unused by the simulator)."""
    operands = (1,) if name in ("row_expand", "col_expand") else (0, 1)
    dtypes = FLOAT if float_only else None
    params = (P("lhs"), P("rhs"), P("tmp", None)) if packed else (P("lhs"), P("rhs"))
    _enter(
        LangOp(name, params, doc, _both(name), group="broadcast"),
        *_leveled(
            name,
            lambda kind: rules.expand(kind, name, row, dtypes=dtypes, packed=packed),
            (2, 3 if packed else 2),
            Cpp(name, operands),
            dtypes=dtypes,
        ),
    )


# ----------------------------------------------------------------------------- memory

_enter(
    LangOp(
        "load",
        (
            P("tensor"),
            P("offsets"),
            P("shapes"),
            P("valid_shape", None),
            P("target_memory", MemorySpace.Vec),
        ),
        """Load the window ``tensor[offsets : offsets + shapes]`` into a tile (Vec or Mat).

    ``valid_shape=[rows, cols]`` (run-time values allowed) loads only that leading region;
    the rest of the tile is padding (see ``pl.tile.fillpad``).""",
        default="tile.load",
        group="memory",
    ),
    OpSpec(
        "tile.load",
        rules.tile_load,
        1,
        1,
        Cpp("load", nz_fn="load_nz"),
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
        Cpp("store", nz_fn="store_nz"),
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
    OpSpec("tile.move", rules.tile_move, 1, 1, Cpp("move"), attrs=("memory",)),
)
_enter(
    LangOp(
        "create_tile",
        (P("shape"), P("dtype"), P("target_memory", MemorySpace.Vec), P("transpose", None)),
        """A scratch tile (contents undefined). ``pl.tile.create`` is the same function.
    ``transpose=True`` (a 2-D Mat tile only) asks the device for the layout of a transposed matmul
    operand; the simulator stores every tile row-major, so it is recorded and changes nothing.""",
        default="tile.create",
        group="memory",
        alias="create",
    ),
    OpSpec("tile.create", rules.tile_create, 0, 0, attrs=("shape", "dtype", "memory", "transpose")),
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
        "dim",
        (P("tensor"), P("axis")),
        """The run-time extent of ``tensor`` along ``axis`` (an index scalar).""",
        default="tensor.dim",
        group="memory",
    ),
    OpSpec("tensor.dim", rules.tensor_dim, 1, 1, attrs=("axis",), on_core=False),
)

# ----------------------------------------------------------------------------- element-wise

_binary("add", """Element-wise ``lhs + rhs`` (tile or tensor; ``rhs`` may be a scalar).""")
_binary("sub", """Element-wise ``lhs - rhs``.""")
_binary("mul", """Element-wise ``lhs * rhs``.""")
_binary(
    "div",
    """Element-wise ``lhs / rhs``. ``high_precision=True`` (tile or tensor divisor) asks the device
    for its more accurate division; the simulator divides in FP32 either way.""",
    precision=True,
)
_binary("maximum", """Element-wise maximum.""", fn="max")
_binary("minimum", """Element-wise minimum.""", fn="min")

_scalar_binary(
    "adds",
    "add",
    """Element-wise ``lhs + rhs`` of a tile and a scalar: ``pl.tile.adds(t, 1.0)``.""",
    fn="adds",
    in_pl=False,
    tensor=True,
)
_scalar_binary(
    "subs",
    "sub",
    """Element-wise ``lhs - rhs`` of a tile and a scalar.""",
    fn="subs",
    in_pl=False,
    tensor=True,
)
_scalar_binary(
    "muls",
    "mul",
    """Element-wise ``lhs * rhs`` of a tile and a scalar.""",
    fn="muls",
    in_pl=False,
    tensor=True,
)
_scalar_binary(
    "divs",
    "div",
    """Element-wise ``lhs / rhs`` of a tile and a scalar (an integer tile divides toward zero; an
    integer zero divisor gives 0 and fails the task).""",
    fn="divs",
    in_pl=False,
    tensor=True,
)
_enter(
    LangOp(
        "fmod",
        (P("lhs"), P("rhs")),
        """Element-wise remainder of ``lhs / rhs`` with the sign of ``lhs`` (C's ``fmod``, as
    ``torch.fmod``); ``rhs`` a tile/tensor or a scalar; floating point.""",
        _both("fmod"),
        group="element-wise",
    ),
    OpSpec(
        "tile.fmod",
        rules.float_only(rules.binary("tile", "fmod"), "fmod"),
        2,
        2,
        Cpp("fmod", (0, 1), scalar_fn="fmods"),
        dtypes=FLOAT,
        spaces=VEC,
    ),
    OpSpec("tensor.fmod", rules.float_only(rules.binary("tensor", "fmod"), "fmod"), 2, 2, dtypes=FLOAT),
)
_enter(
    LangOp(
        "fmods",
        (P("lhs"), P("rhs")),
        """``pl.fmod`` with a scalar ``rhs``.""",
        _both("fmods"),
        group="element-wise",
    ),
    OpSpec(
        "tile.fmods",
        rules.float_only(rules.scalar_binary("tile", "fmods", "fmod"), "fmods"),
        2,
        2,
        Cpp("fmods", (0, 1), scalar_fn="fmods"),
        dtypes=FLOAT,
        spaces=VEC,
    ),
    OpSpec(
        "tensor.fmods",
        rules.float_only(rules.scalar_binary("tensor", "fmods", "fmod"), "fmods"),
        2,
        2,
        dtypes=FLOAT,
    ),
)
_scalar_binary(
    "maximums",
    "maximum",
    """Element-wise ``max(lhs, rhs)`` of a tile and a scalar.""",
    fn="maxs",
    in_pl=True,
    tensor=False,
)
_scalar_binary(
    "minimums",
    "minimum",
    """Element-wise ``min(lhs, rhs)`` of a tile and a scalar.""",
    fn="mins",
    in_pl=True,
    tensor=False,
)

_unary("exp", """Element-wise e**x.""", float_only=True)
_unary(
    "log",
    """Element-wise natural logarithm. ``high_precision=True`` asks the device for its more accurate
    algorithm; the simulator computes FP32 ``log`` either way.""",
    float_only=True,
    precision=True,
)
_unary("sin", """Element-wise sine (radians).""", float_only=True)
_unary("cos", """Element-wise cosine (radians).""", float_only=True)
_unary("sqrt", """Element-wise square root.""", float_only=True)
_unary(
    "rsqrt",
    """Element-wise 1 / sqrt(x). ``high_precision=True`` (tensor level only, as upstream) asks the
    device for its more accurate algorithm; a tile rsqrt asks for it with a scratch tile ``tmp``
    of the operand's shape and dtype. The simulator computes FP32 ``1 / sqrt`` either way.""",
    float_only=True,
    precision=True,
    scratch=True,
)
_unary(
    "recip",
    """Element-wise 1 / x. ``high_precision=True`` asks the device for its more accurate algorithm;
    the simulator computes it in FP32 either way.""",
    float_only=True,
    precision=True,
)
_unary("abs", """Element-wise absolute value.""")
_unary("neg", """Element-wise negation.""")
_unary("relu", """Element-wise max(x, 0).""")
_enter(
    LangOp(
        "lrelu",
        (P("tile"), P("slope")),
        """Leaky ReLU with a scalar slope: ``x if x > 0 else slope * x`` (floating-point tiles).""",
        {"tile": "tile.lrelu"},
        group="element-wise",
    ),
    OpSpec("tile.lrelu", rules.leaky("lrelu"), 2, 2, Cpp("lrelu", (0, 1), scalar_fn="lrelu"), spaces=VEC),
)
_enter(
    LangOp(
        "prelu",
        (P("tile"), P("slope"), P("tmp")),
        """Parametric ReLU: ``x if x > 0 else slope * x`` with a slope tile of the tile's shape
    (floating point). ``tmp`` is upstream's scratch tile (the simulator does not use it).""",
        {"tile": "tile.prelu"},
        group="element-wise",
    ),
    OpSpec("tile.prelu", rules.leaky("prelu"), 3, 3, Cpp("prelu", (0, 1)), spaces=VEC),
)
_unary("not_", """Element-wise bitwise NOT (``~x``) of an integer tile or tensor.""", int_only=True)

# ----------------------------------------------------------------------------- bitwise

_bitwise(
    "and_",
    "ands",
    "and_",
    """Element-wise bitwise AND of integer values; ``rhs`` a tile/tensor or an integer scalar.""",
    """Element-wise bitwise AND with an integer scalar.""",
)
_bitwise(
    "or_",
    "ors",
    "or_",
    """Element-wise bitwise OR of integer values; ``rhs`` a tile/tensor or an integer scalar.""",
    """Element-wise bitwise OR with an integer scalar.""",
)
_bitwise(
    "xor",
    "xors",
    "xor_",
    """Element-wise bitwise XOR of integer values; ``rhs`` a tile/tensor or an integer scalar.
    Of tiles it takes upstream's scratch tile ``tmp`` (optional here: the simulator needs none).""",
    """Element-wise bitwise XOR with an integer scalar (``tmp`` as for ``pl.xor``).""",
    tmp=True,
)
_bitwise(
    "shl",
    "shls",
    "shl",
    """Element-wise left shift ``lhs << rhs`` of integer values (zeros shifted in). A shift amount
    outside [0, bits of the type) fails the task (that element becomes 0).""",
    """Element-wise left shift by an integer scalar.""",
)
_bitwise(
    "shr",
    "shrs",
    "shr",
    """Element-wise right shift ``lhs >> rhs`` of integer values: arithmetic for signed types (the
    sign copied in), logical for unsigned ones. A shift amount outside [0, bits of the type)
    fails the task (that element becomes 0).""",
    """Element-wise right shift by an integer scalar.""",
)

# ----------------------------------------------------------------------------- compare, select

_CMP_DOC = """``cmp_type`` is upstream's code: 0 EQ, 1 NE, 2 LT, 3 LE, 4 GT, 5 GE (NaN is unequal to
    everything)."""
_enter(
    LangOp(
        "cmp",
        (P("lhs"), P("rhs"), P("cmp_type", 0)),
        """Compare element by element: ``lhs (cmp_type) rhs``, ``rhs`` a tile/tensor or a scalar.
    Of tiles the result is a packed predicate mask: a UINT8 tile [R, ceil(C / 8) rounded up to
    32] whose byte (r, c // 8) holds bit c % 8 for element (r, c), read by ``pl.sel`` /
    ``pl.sels``. Of tensors it is 0/1 in lhs's dtype and shape. """
        + _CMP_DOC,
        _both("cmp"),
        group="compare",
    ),
    OpSpec(
        "tile.cmp",
        rules.compare("tile", "cmp"),
        2,
        2,
        Cpp("cmp", (0, 1), scalar_fn="cmps", tail="cmp", scalar_like=0),
        attrs=("cmp_type",),
        spaces=VEC,
    ),
    OpSpec("tensor.cmp", rules.compare("tensor", "cmp"), 2, 2, attrs=("cmp_type",)),
)
_enter(
    LangOp(
        "cmps",
        (P("lhs"), P("rhs"), P("cmp_type", 0)),
        """``pl.cmp`` of a tile and a scalar: the packed UINT8 predicate mask of ``lhs (cmp_type) rhs``. """
        + _CMP_DOC,
        {"tile": "tile.cmps"},
        group="compare",
    ),
    OpSpec(
        "tile.cmps",
        rules.compare("tile", "cmps", scalar_only=True),
        2,
        2,
        Cpp("cmps", (0, 1), scalar_fn="cmps", tail="cmp", scalar_like=0),
        attrs=("cmp_type",),
        spaces=VEC,
    ),
)
_enter(
    LangOp(
        "sel",
        (P("mask"), P("lhs"), P("rhs"), P("tmp", None)),
        """Per element, ``lhs`` where the mask bit is 1, else ``rhs`` (equal-shaped Vec tiles; the mask
    from ``pl.cmp``). ``tmp`` is upstream's scratch tile (optional here: the simulator needs none).""",
        {"tile": "tile.sel"},
        group="compare",
    ),
    OpSpec("tile.sel", rules.select("sel"), 3, 4, Cpp("sel", (0, 1, 2)), spaces=VEC),
)
_enter(
    LangOp(
        "sels",
        (P("mask"), P("src"), P("tmp"), P("scalar")),
        """Per element, ``src`` where the mask bit is 1, else ``scalar``. ``tmp`` is upstream's scratch
    tile (the simulator does not use it).""",
        {"tile": "tile.sels"},
        group="compare",
    ),
    OpSpec("tile.sels", rules.select("sels"), 4, 4, Cpp("sels", (0, 1, 3), scalar_fn="sels"), spaces=VEC),
)

# ----------------------------------------------------------------------------- reductions, broadcasts

_reduction("row_sum", """Sum of each row: [R, C] -> [R, 1]. ``tmp_tile`` is an optional scratch tile.""")
_reduction("row_max", """Maximum of each row: [R, C] -> [R, 1].""")
_reduction("row_min", """Minimum of each row: [R, C] -> [R, 1].""")
_reduction("col_sum", """Sum of each column: [R, C] -> [1, C].""")
_reduction("col_max", """Maximum of each column: [R, C] -> [1, C].""")
_reduction("col_min", """Minimum of each column: [R, C] -> [1, C].""")
_reduction("row_prod", """Product of each row: [R, C] -> [R, 1] (FP32 products for float tiles).""")
_reduction("col_prod", """Product of each column: [R, C] -> [1, C].""")
_reduction(
    "row_argmax",
    """Column index of each row's first maximum: [R, C] -> [R, 1] INT32 (a NaN counts as the
    maximum, as torch.argmax).""",
    result=DataType.INT32,
)
_reduction(
    "row_argmin",
    """Column index of each row's first minimum: [R, C] -> [R, 1] INT32 (a NaN counts as the
    minimum, as torch.argmin).""",
    result=DataType.INT32,
)
_reduction(
    "col_argmax",
    """Row index of each column's first maximum: [R, C] -> [1, C] INT32.""",
    result=DataType.INT32,
)
_reduction(
    "col_argmin",
    """Row index of each column's first minimum: [R, C] -> [1, C] INT32.""",
    result=DataType.INT32,
)

_expand("row_expand", """Broadcast a [R, 1] vector over the columns of a [R, C] shape.""", row=True)
_expand(
    "row_expand_add",
    """``tile + row_vec`` with the [R, 1] vector broadcast over columns. ``row_vec`` may also be
    upstream's packed carrier, one 32-byte block a row ([R, 32 / element size]), repeated
    across the columns: ``tile[r, c] + row_vec[r, c % k]``. ``tmp`` is upstream's scratch tile
    (tile form; unused by the simulator).""",
    row=True,
    packed=True,
)
_expand("row_expand_sub", """``tile - row_vec`` with the [R, 1] vector broadcast over columns.""", row=True)
_expand("row_expand_mul", """``tile * row_vec`` with the [R, 1] vector broadcast over columns.""", row=True)
_expand("row_expand_div", """``tile / row_vec`` with the [R, 1] vector broadcast over columns.""", row=True)
_expand(
    "row_expand_max", """``max(tile, row_vec)`` with the [R, 1] vector broadcast over columns.""", row=True
)
_expand(
    "row_expand_min", """``min(tile, row_vec)`` with the [R, 1] vector broadcast over columns.""", row=True
)
_expand(
    "row_expand_expdif",
    """``exp(tile - row_vec)`` with the [R, 1] vector broadcast over columns (floating point).""",
    row=True,
    float_only=True,
)
_expand("col_expand", """Broadcast a [1, C] vector over the rows of a [R, C] shape.""", row=False)
_expand("col_expand_add", """``tile + col_vec`` with the [1, C] vector broadcast over rows.""", row=False)
_expand("col_expand_sub", """``tile - col_vec`` with the [1, C] vector broadcast over rows.""", row=False)
_expand("col_expand_mul", """``tile * col_vec`` with the [1, C] vector broadcast over rows.""", row=False)
_expand("col_expand_div", """``tile / col_vec`` with the [1, C] vector broadcast over rows.""", row=False)
_expand("col_expand_max", """``max(tile, col_vec)`` with the [1, C] vector broadcast over rows.""", row=False)
_expand("col_expand_min", """``min(tile, col_vec)`` with the [1, C] vector broadcast over rows.""", row=False)
_expand(
    "col_expand_expdif",
    """``exp(tile - col_vec)`` with the [1, C] vector broadcast over rows (floating point).""",
    row=False,
    float_only=True,
)

_enter(
    LangOp(
        "expands",
        (P("target"), P("scalar")),
        """A value shaped and typed like ``target`` with ``scalar`` in every element:
    ``pl.expands(t, 0.5)``. ``target`` gives the shape, dtype and (for a tile) the valid shape;
    its elements are not read.""",
        _both("expands"),
        group="broadcast",
    ),
    OpSpec("tile.expands", rules.expands("tile"), 2, 2, spaces=VEC),
    OpSpec("tensor.expands", rules.expands("tensor"), 2, 2),
)

# ----------------------------------------------------------------------------- shape, type, matmul

_enter(
    LangOp(
        "reshape",
        (P("input"), P("shape")),
        """Same elements, new 2-D shape.""",
        _both("reshape"),
        group="layout",
    ),
    OpSpec("tile.reshape", rules.tile_reshape, 1, 1, Cpp("reshape"), attrs=("shape",), spaces=VEC),
    OpSpec("tensor.reshape", rules.tensor_reshape, 1, 1, attrs=("shape",)),
)
_enter(
    LangOp(
        "transpose",
        (P("input"), P("axis1", 0), P("axis2", 1)),
        """Swap the two axes of a 2-D tile.""",
        _both("transpose"),
        group="layout",
    ),
    OpSpec("tile.transpose", rules.tile_transpose, 1, 1, Cpp("transpose"), spaces=VEC),
    OpSpec("tensor.transpose", rules.tensor_transpose, 1, 1),
)
_enter(
    LangOp(
        "transpose_view",
        (P("tile"),),
        """A 2-D Mat or Vec tile read as its transpose (``[r, c]`` -> ``[c, r]``), e.g. a key block
        on L1 used as the right operand of ``q @ k.T``. On the chip a layout reinterpretation;
        the simulator writes the transposed copy (the same values).""",
        {"tile": "tile.transpose_view"},
        group="layout",
    ),
    OpSpec(
        "tile.transpose_view",
        rules.tile_transpose_view,
        1,
        1,
        Cpp("transpose"),
        spaces=(MemorySpace.Mat, MemorySpace.Vec),
    ),
)
_enter(
    LangOp(
        "concat",
        (P("src0"), P("src1")),
        """Join two tiles with equal row counts column-wise.""",
        _both("concat"),
        group="layout",
    ),
    OpSpec("tile.concat", rules.tile_concat, 2, 2, Cpp("concat", (0, 1)), spaces=VEC),
    OpSpec("tensor.concat", rules.tensor_concat, 2, 2),
)
_enter(
    LangOp(
        "cast",
        (P("input"), P("target_type"), P("mode", None)),
        """Convert the elements to another dtype (FP32/FP16/BF16, INT8/INT16/INT32,
    UINT8/UINT16/UINT32). ``mode`` rounds every narrowing float conversion (float -> integer,
    FP32 -> FP16/BF16, FP16 <-> BF16), by name or code: ``"none"`` (0) and ``"rint"`` (1) nearest,
    ties to even; ``"round"`` (2, the default) nearest, ties away from zero; ``"floor"`` (3);
    ``"ceil"`` (4); ``"trunc"`` (5) toward zero; ``"odd"`` (6) round to odd. Out-of-range
    integers saturate. A scalar cast takes the default mode only (float -> integer truncates).""",
        {**_both("cast"), "scalar": "scalar.cast"},
        group="layout",
    ),
    OpSpec(
        "tile.cast",
        rules.tile_cast,
        1,
        1,
        Cpp("cast", tail="round"),
        attrs=("dtype", "mode"),
        dtypes=frozenset(rules.CASTABLE),
        spaces=VEC,
    ),
    OpSpec("tensor.cast", rules.tensor_cast, 1, 1, attrs=("dtype", "mode")),
    OpSpec("scalar.cast", rules.scalar_cast, 1, 1, attrs=("dtype", "mode"), on_core=False),
)
_enter(
    LangOp(
        "const",
        (P("value"), P("dtype")),
        """A scalar constant of ``dtype``: ``pl.const(1.5, pl.BF16)`` (the value rounded or saturated
    to the dtype, as ``pl.cast`` of a constant does). ``value`` must be a number known when
    compiling.""",
        default="scalar.cast",
        group="layout",
    ),
)
_enter(
    LangOp(
        "matmul",
        (
            P("lhs"),
            P("rhs"),
            P("out_dtype", None),
            P("a_trans", False),
            P("b_trans", False),
            P("c_matrix_nz", False),
        ),
        """Left [M, K] x Right [K, N] -> Acc [M, N] (FP32 accumulation, INT32 for INT8 operands).

    Of tiles, ``out_dtype`` may only name the accumulator type. Of tensors (in a ``pl.at`` scope
    or a kernel), ``out_dtype`` may name any castable dtype: the product is accumulated, then
    cast once; ``a_trans=True`` / ``b_trans=True`` multiply by the transposed operand (an [K, M]
    lhs, an [N, K] rhs). A tile operand is transposed with ``pl.tile.transpose_view`` instead.
    ``c_matrix_nz=True`` (an NZ-laid-out result) is not available.""",
        _both("matmul"),
        group="matmul",
    ),
    OpSpec(
        "tile.matmul",
        rules.tile_matmul,
        2,
        2,
        Cpp("matmul", (0, 1)),
        dtypes=frozenset(rules.MATMUL_ACC),
        spaces=(MemorySpace.Left, MemorySpace.Right),
    ),
    OpSpec("tensor.matmul", rules.tensor_matmul, 2, 2, dtypes=frozenset(rules.MATMUL_ACC)),
)
_enter(
    LangOp(
        "matmul_acc",
        (P("acc"), P("lhs"), P("rhs"), P("a_trans", False), P("b_trans", False)),
        """``acc + lhs @ rhs`` into the Acc tile; with a tensor-level operand (in a ``pl.at``
    scope) it is tensor-level: the product added to ``acc`` in FP32. ``a_trans``/``b_trans`` as
    for ``pl.matmul`` (tensor operands only).""",
        _both("matmul_acc"),
        group="matmul",
    ),
    OpSpec(
        "tile.matmul_acc",
        rules.tile_matmul_acc,
        3,
        3,
        Cpp("matmul_acc", (1, 2), into=0),
        dtypes=frozenset(rules.MATMUL_ACC),
        spaces=(MemorySpace.Acc, MemorySpace.Left, MemorySpace.Right),
    ),
    OpSpec("tensor.matmul_acc", rules.tensor_matmul_acc, 3, 3, dtypes=frozenset(rules.MATMUL_ACC)),
)

# ----------------------------------------------------------------------------- sub-tiles, scalars

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
        Cpp("slice", tail="row_col"),
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
        Cpp("assemble", (1,), into=0, tail="row_col"),
        attrs=("static_offsets",),
        offsets_at=2,
        spaces=(MemorySpace.Vec, MemorySpace.Mat),
    ),
    OpSpec("tensor.assemble", rules.tensor_assemble, 2, 2, attrs=("static_offsets", "atomic"), offsets_at=2),
)
_enter(
    LangOp(
        "fillpad",
        (P("value"), P("pad_value", PadValue.zero)),
        """The tile with everything outside its valid region set to ``pad_value`` (a
    ``pl.PadValue``, or 0, ``math.inf``, ``-math.inf`` for zero, max, min); the result is fully
    valid. Of a tensor (in a kernel): the same on the tile that holds it; a tensor parameter is
    all valid, a ``pl.slice`` window with a constant ``valid_shape`` is valid only there.""",
        _both("fillpad"),
        group="sub-tile",
    ),
    OpSpec(
        "tile.fillpad",
        rules.tile_fillpad,
        1,
        1,
        Cpp("fillpad", (), into=0, tail="pad"),
        attrs=("pad",),
        spaces=VEC,
    ),
    OpSpec("tensor.fillpad", rules.tensor_fillpad, 1, 1, attrs=("pad",)),
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
    the task.""",
        {"tile": "tile.set_validshape"},
        group="sub-tile",
    ),
    OpSpec("tile.set_validshape", rules.tile_set_validshape, 3, 3, dtypes=frozenset(DataType)),
)
_enter(
    LangOp(
        "write",
        (P("dst"), P("offset"), P("value")),
        """Write one element of a tensor: ``pl.write(t, [i, j], v)``; returns the tensor.""",
        default="tensor.write",
        group="scalar",
    ),
    OpSpec("tensor.write", rules.tensor_write, 2, 2, offsets_at=1, on_core=False),
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
    OpSpec("tile.print", rules.debug_print, 1, 1, Cpp("print"), attrs=("label",)),
    OpSpec("scalar.print", rules.debug_print, 1, 1, attrs=("label",)),
)

# ----------------------------------------------------------------------------- task graph
# Orchestration-only ops: task-id arrays, dependency barriers and manual runtime scopes.

_enter(
    LangOp(
        "array_create",
        (P("extent"), P("dtype")),
        """``pl.array.create(n, pl.TASK_ID)``: an array of ``n`` task ids held by the orchestration,
    none set yet. ``arr[i] = tid`` sets an entry, ``arr[i]`` reads one; an array in ``deps=[...]``
    stands for every entry that has been set.""",
        default="array.create",
        group="task graph",
        public=False,
    ),
    OpSpec("array.create", rules.array_create, 0, 0, attrs=("extent", "elem"), on_core=False),
)
_enter(
    LangOp(
        "array_read",
        (),
        """``arr[i]``: entry ``i`` of a task-id array (-1, no task, when never set).""",
        default="array.get",
        group="task graph",
        public=False,
    ),
    OpSpec("array.get", rules.array_get, 2, 2, on_core=False),
)
_enter(
    LangOp(
        "array_update",
        (),
        """``arr[i] = tid``: the array with entry ``i`` set (the name is rebound to the new value).""",
        default="array.set",
        group="task graph",
        public=False,
    ),
    OpSpec("array.set", rules.array_set, 3, 3, on_core=False),
)
_enter(
    LangOp(
        "task_dummy",
        (P("deps"),),
        """``pl.system.task_dummy(deps=[...])``: a task that does no work and finishes once every
    dependency has; its id stands for the whole set in later ``deps=`` lists.""",
        default="system.task_dummy",
        group="task graph",
        public=False,
    ),
    OpSpec("system.task_dummy", rules.task_dummy, 0, 1 << 16, on_core=False),
)
_enter(
    LangOp(
        "manual_scope_begin",
        (),
        """The start of ``with pl.manual_scope():`` (a nested runtime scope of the orchestration).""",
        default="system.scope_begin",
        group="task graph",
        public=False,
    ),
    OpSpec("system.scope_begin", rules.runtime_scope_mark, 0, 0, attrs=("mode",), on_core=False),
)
_enter(
    LangOp(
        "manual_scope_end",
        (),
        """The end of ``with pl.manual_scope():``.""",
        default="system.scope_end",
        group="task graph",
        public=False,
    ),
    OpSpec("system.scope_end", rules.runtime_scope_mark, 0, 0, attrs=("mode",), on_core=False),
)
