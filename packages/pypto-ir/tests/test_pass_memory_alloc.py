"""The memory-allocation pass (pypto.ir.passes.memory_alloc): byte offsets of a kernel's tiles in
their on-chip buffers, from the tiles' live ranges."""

from __future__ import annotations

import pytest
from pypto_ir_test_helpers import HostArray, scope_kernel

from pypto.ir.dtypes import DataType
from pypto.ir.nodes import Function
from pypto.ir.passes.memory_alloc import OverlapError, Slot, allocate_kernel, check_no_overlap
from pypto.ir.pipeline import lower
from pypto.ir.platforms import TileAlloc, get_platform
from pypto.ir.pto_layout import pto_tile
from pypto.ir.types import MemorySpace, TileType


def _kernel(fn: object, *arrays: HostArray) -> Function:
    prog = lower(fn.specialize(*arrays).program).program  # type: ignore[attr-defined]
    (k,) = [f for f in prog.functions.values() if f.func_type.is_kernel]
    return k


# kernels k(a, out) (scope_kernel): a chain of tiles live at once, ending in a [16, 1] column
# vector with its own storage; a loop-carried tile; a narrow tile padded to a 32-byte row
chain = scope_kernel(
    [
        "t = pl.load(a, [0, 0], [16, 16])",
        "u = pl.exp(t)",
        "v = pl.mul(u, t)  # t, u, v live together",
        "w = pl.row_sum(v)",
        "pl.store(w, [0, 0], out)",
    ],
    "<chain>",
)
carried = scope_kernel(
    [
        "acc = pl.load(a, [0, 0], [16, 16])",
        "for _i in pl.range(4):",
        "    x = pl.load(a, [0, 0], [16, 16])",
        "    acc = pl.add(acc, x)",
        "pl.store(acc, [0, 0], out)",
    ],
    "<carried>",
)
# the row normalisation of a softmax: which results may be made over which operands
normalise = scope_kernel(
    [
        "t = pl.load(a, [0, 0], [16, 16])",
        "tmp = pl.create_tile([16, 16], dtype=pl.FP32, target_memory=pl.MemorySpace.Vec)",
        "s = pl.row_sum(t, tmp)",
        "e = pl.exp(t)  # t is read again below",
        "r = pl.recip(s)",
        "y = pl.row_expand_mul(t, r)",
        "pl.store(pl.add(y, e), [0, 0], out)",
    ],
    "<normalise>",
)
carried_first = scope_kernel(
    [
        "acc = pl.load(a, [0, 0], [16, 16])",
        "for _i in pl.range(4):",
        "    x = pl.load(a, [0, 0], [16, 16])",
        "    acc = pl.add(x, acc)  # x read for the last time, first",
        "pl.store(acc, [0, 0], out)",
    ],
    "<carried_first>",
)
narrow = scope_kernel(["t = pl.load(a, [0, 0], [16, 5])", "pl.store(pl.exp(t), [0, 0], out)"], "<narrow>")
# an into op (pl.tile.assemble: TINSERT into its target): over its target when nothing reads the
# target afterwards; in a storage of its own when something does
assembled = scope_kernel(
    [
        "t = pl.load(a, [0, 0], [16, 16])",
        "s = pl.load(a, [0, 0], [8, 16])",
        "u = pl.tile.assemble(t, s, [8, 0])",
        "pl.store(u, [0, 0], out)",
    ],
    "<assembled>",
)
assembled_kept = scope_kernel(
    [
        "t = pl.load(a, [0, 0], [16, 16])",
        "s = pl.load(a, [0, 0], [8, 16])",
        "u = pl.tile.assemble(t, s, [8, 0])",
        "pl.store(pl.add(u, t), [0, 0], out)  # t is read after the assemble",
    ],
    "<assembled_kept>",
)


def _live_together(a: Slot, b: Slot) -> bool:
    return a.live[0] <= b.live[1] and b.live[0] <= a.live[1]


def test_no_two_live_tiles_overlap_and_offsets_are_aligned() -> None:
    k = _kernel(chain, HostArray((16, 16)), HostArray((16, 1)))
    mem = allocate_kernel(k, "a2a3sim")
    align = get_platform("a2a3sim").alignment(MemorySpace.Vec)
    slots = mem.slots
    assert len(slots) >= 4
    for s in slots:
        assert s.offset % align == 0
    pairs = [(a, b) for i, a in enumerate(slots) for b in slots[i + 1 :] if _live_together(a, b)]
    assert pairs, "the chain has tiles live at once"
    for a, b in pairs:
        assert not a.overlaps(b), (a, b)
    # t and u are live at v's definition, v is made over u (read there for the last time)
    assert mem.slot("t").offset != mem.slot("u").offset
    assert mem.shares("u", "v")


def test_a_loop_carried_value_shares_one_storage() -> None:
    k = _kernel(carried, HostArray((16, 16)), HostArray((16, 16)))
    mem = allocate_kernel(k, "a2a3sim")
    names = [n for n in mem.slot_of if n.startswith("acc")]
    assert len(names) >= 3  # the init, the holder, the yielded value (and the loop's result)
    assert len({mem.slot_of[n] for n in names}) == 1, {n: mem.slot_of[n] for n in names}
    x = next(n for n in mem.slot_of if n.startswith("x"))
    assert not mem.shares(x, names[0])


def test_a_result_is_made_over_an_operand_of_its_type_that_dies_there() -> None:
    k = _kernel(normalise, HostArray((16, 16)), HostArray((16, 16)))
    mem = allocate_kernel(k, "a2a3sim")
    assert not mem.shares("t", "e")  # t is read after the exp
    assert mem.shares("s", "r")  # the reciprocal over the sum
    assert mem.shares("t", "y")  # y over t, whose last read it is ...
    assert not mem.shares("r", "y")  # ... not over r, of another type, which also dies there
    assert not mem.shares("t", "tmp")  # row_sum does not work in place
    final = [n for n in mem.slot_of if n.startswith("_t")]
    assert final
    assert all(mem.shares(n, "y") for n in final)  # the sum over y (its first operand)
    check_no_overlap("normalise", mem.slots)


def test_an_into_op_updates_its_target_in_place_unless_the_target_is_read_later() -> None:
    mem = allocate_kernel(_kernel(assembled, HostArray((16, 16)), HostArray((16, 16))), "a2a3sim")
    assert mem.shares("t", "u")  # TINSERT into t's storage: no copy of t first
    kept = allocate_kernel(_kernel(assembled_kept, HostArray((16, 16)), HostArray((16, 16))), "a2a3sim")
    assert not kept.shares("t", "u")  # t is read afterwards: u has its own storage (a TMOV copy)


def test_a_loop_carried_storage_takes_no_operands_storage() -> None:
    # x dies at the add whose result is yielded: that result lives in the loop's holder, which
    # is live before the add, so it cannot be made over x (x is loaded while the holder is live)
    k = _kernel(carried_first, HostArray((16, 16)), HostArray((16, 16)))
    mem = allocate_kernel(k, "a2a3sim")
    x = next(n for n in mem.slot_of if n.startswith("x"))
    assert not any(mem.shares(x, n) for n in mem.slot_of if n.startswith("acc"))


def test_the_padded_size_is_allocated_and_counted() -> None:
    k = _kernel(narrow, HostArray((16, 5)), HostArray((16, 5)))
    mem = allocate_kernel(k, "a2a3sim")
    t = mem.slot("t")
    # a row of 5 FP32 values is padded to one 32-byte block (8 values)
    assert pto_tile(TileType((16, 5), DataType.FP32, MemorySpace.Vec)).cols == 8
    assert t.nbytes == 16 * 8 * 4
    assert t.alloc.shape == (16, 8)  # what the capacity check sees
    assert t.alloc.nbytes == 16 * 8 * 4


def test_a_column_vector_is_column_major_padded_in_rows() -> None:
    p = pto_tile(TileType((4, 1), DataType.FP32, MemorySpace.Vec))
    assert (p.rows, p.cols, p.col_major) == (8, 1, True)
    p = pto_tile(TileType((16, 16), DataType.FP16, MemorySpace.Left))
    assert (p.rows, p.cols) == (16, 16)
    p = pto_tile(TileType((20, 40), DataType.INT8, MemorySpace.Mat))
    assert (p.rows, p.cols) == (32, 64)  # boxes of 16 rows by 32 one-byte columns
    p = pto_tile(TileType((1, 40), DataType.INT8, MemorySpace.Left))
    assert (p.rows, p.cols) == (16, 64)  # M to 16 as the INT32 Acc tile's, K to 32
    p = pto_tile(TileType((40, 20), DataType.INT8, MemorySpace.Right))
    assert (p.rows, p.cols) == (64, 32)
    p = pto_tile(TileType((1, 20), DataType.INT32, MemorySpace.Acc))
    assert (p.rows, p.cols) == (16, 32)


def test_the_overlap_check_refuses_two_live_tiles_sharing_bytes() -> None:
    def slot(name: str, offset: int, live: tuple[int, int]) -> Slot:
        alloc = TileAlloc(name, MemorySpace.Vec, DataType.FP32, (16, 16), None, live)
        return Slot(MemorySpace.Vec, offset, 1024, live, (name,), alloc)

    check_no_overlap("k", [slot("a", 0, (0, 3)), slot("b", 1024, (1, 2)), slot("c", 0, (4, 5))])
    with pytest.raises(OverlapError, match=r"tiles a and b are live together .* overlap in the Vec buffer"):
        check_no_overlap("k", [slot("a", 0, (0, 3)), slot("b", 512, (2, 5))])
    # the same bytes in another buffer do not overlap
    other = Slot(
        MemorySpace.Mat, 0, 1024, (0, 3), ("m",), TileAlloc("m", MemorySpace.Mat, DataType.FP32, (16, 16))
    )
    check_no_overlap("k", [slot("a", 0, (0, 3)), other])


def test_a_placement_past_the_buffer_is_refused_when_the_peak_fits(monkeypatch: pytest.MonkeyPatch) -> None:
    from pypto.ir.passes import memory_alloc
    from pypto.ir.platforms import BufferCapacityError

    k = _kernel(chain, HostArray((16, 16)), HostArray((16, 1)))
    allocate_kernel(k, "a2a3sim")  # the real placement fits
    far = lambda busy, nbytes, align: max([1 << 30, *(b for _, b in busy)])  # noqa: E731
    monkeypatch.setattr(memory_alloc, "_place", far)
    with pytest.raises(BufferCapacityError, match=r"fit .* at their peak .* but placing them"):
        allocate_kernel(k, "a2a3sim")
