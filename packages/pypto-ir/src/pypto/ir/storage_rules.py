"""Storage rules for tensor arguments: the one implementation shared by both modes.

Program mode (``pypto.runtime``: numpy arrays, torch CPU tensors, buffer-protocol objects) and
kernel mode (``pypto.torch.interop.CallSignature.describe_call``: torch tensors) hand caller
storage to the chip without a copy. Before they do, both apply the rules below, from this
module and nowhere else, so that no argument can make the chip touch memory outside what the
caller gave it, and no written view can race with another view of the same bytes:

1. **Bounds** (:func:`view_bounds_problem`): a nonempty view lies inside its storage,
   ``offset * itemsize + extent <= storage nbytes`` with ``offset >= 0`` and a nonzero storage
   address. ``extent`` is the byte distance from the view's first element to one past its last
   (``numel * itemsize`` for a contiguous view). An empty view touches nothing and may start
   past the storage's capacity (torch allows that).
2. **Aliasing** (:func:`partial_overlap`, :func:`strided_alias_conflict`): the byte spans of
   the nonempty views are compared. Exact aliases (the same byte span) and disjoint views are
   accepted; overlapping read-only views are accepted; a partial overlap in which an Out/InOut
   view takes part is rejected. An exact alias means the same bytes in the same order: two
   contiguous views with the same span qualify whatever their shapes and dtypes; a strided
   view qualifies only beside a view of the same layout (byte strides, shape, itemsize).
   Strided views are judged by their byte span, so interleaved views that share no element
   but whose spans cross are rejected when one of them is written (conservative).

Pure Python: this module imports neither torch, numpy nor simpler. Callers extract the
storage facts from their own tensor types and word the errors (naming the parameters); the
verdicts come from here.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

__all__ = ["Span", "partial_overlap", "strided_alias_conflict", "view_bounds_problem"]

# (start address, end address (exclusive), position of the view among the caller's views,
# whether the kernel writes it): one nonempty view's byte span.
Span = tuple[int, int, int, bool]


def view_bounds_problem(
    storage_ptr: int, storage_nbytes: int, offset: int, itemsize: int, extent: int
) -> str | None:
    """None when a view lies inside its storage, else what is wrong (for an error message).

    Args:
        storage_ptr: Address of the storage's first byte (0: no storage).
        storage_nbytes: The storage's capacity in bytes.
        offset: The view's storage offset in elements (where its first element is).
        itemsize: Bytes per element.
        extent: Bytes from the view's first element to one past its last; 0 for an empty view,
            which is always accepted (it may start past the storage's capacity).
    """
    if not extent:
        return None
    end = offset * itemsize + extent
    if storage_ptr == 0 or offset < 0 or end > storage_nbytes:
        return (
            f"invalid storage bounds: the view reaches byte {end} (storage offset {offset} elements, "
            f"{extent} bytes) of a storage of {storage_nbytes} bytes at address {storage_ptr:#x}"
        )
    return None


def partial_overlap(spans: list[Span]) -> tuple[int, int] | None:
    """Positions ``(earlier, later)`` of two views that partially overlap with at least one of
    them written, or None. ``spans`` holds ``(start, end, position, writes)`` of the nonempty
    views; it is sorted in place.

    One sort, then one sweep: views with the same byte span (exact aliases) form a group;
    a member of a later group overlaps an earlier group exactly when that group ends after
    the member starts, and two groups are distinct spans, so such an overlap is partial. It
    is a conflict when either side writes, so the sweep keeps the furthest end of all
    earlier groups and of earlier groups with a writer.
    """
    spans.sort()
    reach = 0  # the common case first: each view starts at or after the end of the one before
    for start, end, _, _ in spans:
        if start < reach:
            break
        reach = end
    else:
        return None
    far_end = far_pos = -1  # over the earlier groups
    far_writer_end = far_writer_pos = -1  # over their written views
    group: tuple[int, int] | None = None
    pending: list[Span] = []  # the current group, folded in when it ends
    for span in spans:
        start, end, pos, writes = span
        if (start, end) != group:
            for _, p_end, p_pos, p_writes in pending:
                if p_end > far_end:
                    far_end, far_pos = p_end, p_pos
                if p_writes and p_end > far_writer_end:
                    far_writer_end, far_writer_pos = p_end, p_pos
            group = (start, end)
            pending.clear()
        if writes and far_end > start:
            return far_pos, pos
        if far_writer_end > start:
            return far_writer_pos, pos
        pending.append(span)
    return None


def strided_alias_conflict(
    spans: Sequence[Span], layouts: Sequence[Hashable | None]
) -> tuple[int, int] | None:
    """Positions ``(a, b)`` of two exact byte-span aliases, at least one written, whose
    layouts differ, or None. Run it after :func:`partial_overlap` found nothing.

    ``layouts[position]`` is None for a contiguous view (row-major, any shape and dtype: the
    same span means the same bytes in the same order) and a hashable description of the
    layout otherwise, e.g. ``(itemsize, shape, byte strides)`` with the dimensions of extent 1
    left out. Two views with the same span alias exactly only when their layouts are equal.
    """
    groups: dict[tuple[int, int], list[tuple[int, bool]]] = {}
    for start, end, pos, writes in spans:
        groups.setdefault((start, end), []).append((pos, writes))
    for members in groups.values():
        if len(members) < 2 or not any(w for _, w in members):
            continue
        for i, (p0, w0) in enumerate(members):
            for p1, w1 in members[i + 1 :]:
                if (w0 or w1) and layouts[p0] != layouts[p1]:
                    return (p0, p1) if p0 < p1 else (p1, p0)
    return None
