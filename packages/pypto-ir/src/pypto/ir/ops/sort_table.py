"""The op table's sorting entries: ``sort32`` (blocks of 32 values sorted into (value, index)
pairs), ``mrgsort`` (sorted runs of one row merged four at a time, or two to four sorted lists
merged into one) and ``gather_mask``
(the columns a fixed pattern keeps: the values or the indices of sorted pairs). Together they
sort a row: ``pl.sort32``, then ``pl.mrgsort`` with ``block_len`` 64, 256, 1024, ... until one
run is left, then ``gather_mask`` ``P0101`` for the values and ``P1010`` (``output_dtype=pl.UINT32``)
for the indices."""

from __future__ import annotations

from pypto.ir.ops import sort_rules
from pypto.ir.ops.entries import P, _both, _enter
from pypto.ir.ops.rules import VEC
from pypto.ir.ops.spec import Cpp, LangOp, OpSpec

__all__: list[str] = []

_enter(
    LangOp(
        "sort32",
        (P("src"), P("idx")),
        """``pl.sort32(src, idx)``: each row's blocks of 32 values sorted descending (PTO-ISA
    TSORT32), ``src`` FP32 ``[rows, n]`` (``n`` a multiple of 32), ``idx`` UINT32 of the same
    shape, the index carried with each value. The result is FP32 ``[rows, 2 n]``: each block's 32 (value, index) pairs in
    order, the value in the even column and the index's bits in the odd one after it (read them
    with ``pl.tile.gather_mask(..., pl.tile.MaskPattern.P1010, output_dtype=pl.UINT32)``, or
    ``.view(torch.int32)`` on the host). Equal values keep the order of their indices (the
    smaller index first). A tile's valid columns must be a whole number of blocks: the kernel
    fails otherwise.""",
        _both("sort32"),
        default="tensor.sort32",
        group="sorting",
    ),
    # dtypes: the values' (idx is UINT32)
    OpSpec(
        "tile.sort32",
        sort_rules.tile_sort32,
        2,
        2,
        Cpp("TSORT32", (0, 1), valid="pairs"),
        dtypes=sort_rules.SORT_DTYPES,
        spaces=VEC,
    ),
    OpSpec("tensor.sort32", sort_rules.tensor_sort32, 2, 2, dtypes=sort_rules.SORT_DTYPES),
)
_enter(
    LangOp(
        "mrgsort",
        (
            P("src0"),
            P("src1", None),
            P("src2", None),
            P("src3", None),
            P("tmp", None),
            P("exhausted", False),
            P("block_len", None),
        ),
        """Merge sorted runs of (value, index) pairs (PTO-ISA TMRGSORT, format 1):
    ``pl.mrgsort(src, block_len=n)``, ``src`` one FP32 row ``[1, m]`` of sorted runs of ``n`` slots
    each (``pl.sort32``'s result has runs of 64: 32 pairs), ``n`` a positive multiple of 64 (a
    constant, or an integer scalar such as ``1 << (6 + 2 * i)`` in a loop); each four consecutive
    runs become one run of ``4 n``, descending by value, the earlier run first among equal values.
    ``m`` must be 1 to 255 groups of ``4 n`` (checked when compiling a constant ``n``, in the
    kernel otherwise).

    The multi-list form (format 2) merges two to four sorted lists, each one FP32 row of pairs:
    of tensors, ``pl.mrgsort(src0, src1[, src2[, src3]])`` gives one row holding all their pairs;
    of tiles, ``pl.tile.mrgsort(src0, src1[, src2[, src3]], tmp=tmp)`` gives a row of ``tmp``'s
    shape (the instruction's scratch row; as many pairs as fit, the greatest first), and
    ``exhausted=True`` stops at the first list used up (the rest of the result keeps what its
    storage held). Among equal values the earlier list's pair comes first.""",
        _both("mrgsort"),
        default="tensor.mrgsort",
        group="sorting",
    ),
    OpSpec(
        "tile.mrgsort",
        sort_rules.tile_mrgsort,
        2,
        2,
        Cpp("TMRGSORT", (0,), tail="count"),
        attrs=("static_block_len",),
        dtypes=sort_rules.SORT_DTYPES,
        spaces=VEC,
    ),
    OpSpec(
        "tensor.mrgsort",
        sort_rules.tensor_mrgsort,
        2,
        2,
        attrs=("static_block_len",),
        dtypes=sort_rules.SORT_DTYPES,
    ),
)
_enter(
    LangOp(
        "mrgsort_lists",
        (P("src0"), P("src1"), P("src2", None), P("src3", None), P("tmp", None), P("exhausted", False)),
        """The multi-list form of ``pl.mrgsort`` whatever its inputs' level (TMRGSORT format 2).""",
        {"tile": "tile.mrgsort_lists", "tensor": "tensor.mrgsort_lists"},
        group="sorting",
        public=False,
        spelling="pl.mrgsort",
    ),
    OpSpec(
        "tile.mrgsort_lists",
        sort_rules.tile_mrgsort_lists,
        3,
        5,
        attrs=("exhausted",),
        dtypes=sort_rules.SORT_DTYPES,
        spaces=VEC,
    ),
    OpSpec(
        "tensor.mrgsort_lists",
        sort_rules.tensor_mrgsort_lists,
        2,
        4,
        attrs=("exhausted",),
        dtypes=sort_rules.SORT_DTYPES,
    ),
)
_enter(
    LangOp(
        "gather_mask",
        (P("src"), P("mask_pattern"), P("output_dtype", None)),
        """The columns of each row that ``mask_pattern`` keeps, side by side (PTO-ISA TGATHER's mask
    form): ``pl.tile.MaskPattern.P0101`` the even columns, ``P1010`` the odd ones, ``P0001`` to
    ``P1000`` one of every four (the first to the fourth), ``P1111`` all (or the numbers 1-7).
    ``src`` has 2- or 4-byte elements and a number of columns the pattern divides; the result has
    that fraction of them, as ``output_dtype`` (the same bits: a dtype of the same width, such as
    ``pl.UINT32`` for the indices of ``pl.sort32``'s pairs). ``pl.gather(input,
    mask_pattern=...)`` is the same op on a tensor or a tile.""",
        {"tile": "tile.gather_mask"},
        default="tile.gather_mask",
        group="sorting",
        in_pl=False,
    ),
    OpSpec(
        "tile.gather_mask",
        sort_rules.tile_gather_mask,
        1,
        1,
        Cpp("TGATHER", (0,), template="mask_pattern", valid="rows"),
        attrs=("mask_pattern", "output_dtype"),
        dtypes=sort_rules.MASK_DTYPES,
        spaces=VEC,
    ),
)
_enter(
    LangOp(
        "gather_by_mask",
        (P("input"), P("mask_pattern"), P("output_dtype", None)),
        """The mask form of ``pl.gather`` whatever its input's level (``tensor.gather_mask``).""",
        _both("gather_mask"),
        group="sorting",
        public=False,
        spelling="pl.gather",
    ),
    OpSpec(
        "tensor.gather_mask",
        sort_rules.tensor_gather_mask,
        1,
        1,
        attrs=("mask_pattern", "output_dtype"),
        dtypes=sort_rules.MASK_DTYPES,
    ),
)
