"""pypto.ir.storage_rules: the bounds and alias rules both modes apply, against their
definitions (the alias sweep against a brute-force pairwise check)."""

from __future__ import annotations

import ast
import itertools
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pypto.ir import storage_rules
from pypto.ir.storage_rules import Span, partial_overlap, strided_alias_conflict, view_bounds_problem

# ---------------------------------------------------------------- bounds


def test_a_view_inside_its_storage_passes() -> None:
    assert view_bounds_problem(0x1000, 64, 0, 4, 64) is None
    assert view_bounds_problem(0x1000, 64, 8, 4, 32) is None  # ends exactly at the capacity


@pytest.mark.parametrize(
    ("ptr", "nbytes", "offset", "extent", "reach"),
    [
        (0x1000, 40, 0, 64, 64),  # the view is longer than the storage (a shrunk torch storage)
        (0x1000, 64, 9, 32, 68),  # it starts inside but runs one element past the end
        (0, 64, 0, 4, 4),  # no storage at all
        (0x1000, 64, -1, 4, 0),  # it starts before the storage
    ],
)
def test_a_view_outside_its_storage_is_named(
    ptr: int, nbytes: int, offset: int, extent: int, reach: int
) -> None:
    problem = view_bounds_problem(ptr, nbytes, offset, 4, extent)
    assert problem is not None
    assert problem.startswith(
        f"invalid storage bounds: the view reaches byte {reach} (storage offset {offset} "
    )
    assert f"a storage of {nbytes} bytes at address {ptr:#x}" in problem


def test_empty_views_may_start_past_the_capacity() -> None:
    assert view_bounds_problem(0x1000, 64, 1000, 4, 0) is None
    assert view_bounds_problem(0, 0, 0, 4, 0) is None


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 256), st.integers(0, 80), st.sampled_from([1, 2, 4, 8]), st.integers(0, 128))
def test_bounds_rule_is_the_byte_inequality(nbytes: int, offset: int, itemsize: int, extent: int) -> None:
    ok = view_bounds_problem(0x1000, nbytes, offset, itemsize, extent) is None
    assert ok == (extent == 0 or offset * itemsize + extent <= nbytes)


# ---------------------------------------------------------------- aliasing


def _pairwise_conflicts(spans: list[Span]) -> set[tuple[int, int]]:
    """The definition: every pair of views that overlap, are not the same span, and of which
    at least one is written."""
    found = set()
    for (s0, e0, p0, w0), (s1, e1, p1, w1) in itertools.combinations(spans, 2):
        if s0 < e1 and s1 < e0 and (s0, e0) != (s1, e1) and (w0 or w1):
            found.add((min(p0, p1), max(p0, p1)))
    return found


_span = st.tuples(st.integers(0, 40), st.integers(1, 12), st.booleans())


@settings(max_examples=500, deadline=None)
@given(st.lists(_span, min_size=0, max_size=10))
def test_sweep_agrees_with_the_pairwise_definition(raw: list[tuple[int, int, bool]]) -> None:
    spans = [(start, start + size, pos, writes) for pos, (start, size, writes) in enumerate(raw)]
    expected = _pairwise_conflicts(spans)
    found = partial_overlap(list(spans))
    if not expected:
        assert found is None
    else:
        assert found is not None
        assert (min(found), max(found)) in expected


def test_alias_rule_cases() -> None:
    assert partial_overlap([(0, 32, 0, True), (0, 32, 1, True)]) is None  # exact alias
    assert partial_overlap([(0, 32, 0, True), (32, 64, 1, True)]) is None  # disjoint, touching
    assert partial_overlap([(0, 32, 0, False), (16, 48, 1, False)]) is None  # read-only overlap
    assert partial_overlap([(0, 32, 0, False), (16, 48, 1, True)]) == (0, 1)
    assert partial_overlap([(16, 48, 0, True), (0, 32, 1, False)]) == (1, 0)  # (earlier, later) by address
    # an exact-alias group with a writer, partially overlapped by a reader further on
    assert partial_overlap([(0, 32, 0, False), (0, 32, 1, True), (8, 16, 2, False)]) == (1, 2)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 3), st.booleans(), st.sampled_from([None, "a", "b"])), min_size=0, max_size=8
    )
)
def test_strided_alias_conflict_is_the_pairwise_definition(raw: list[tuple[int, bool, str | None]]) -> None:
    spans = [(start * 16, start * 16 + 16, pos, writes) for pos, (start, writes, _) in enumerate(raw)]
    layouts = [layout for _, _, layout in raw]
    expected = {
        (p0, p1)
        for (s0, _, p0, w0), (s1, _, p1, w1) in itertools.combinations(spans, 2)
        if s0 == s1 and (w0 or w1) and layouts[p0] != layouts[p1]
    }
    found = strided_alias_conflict(spans, layouts)
    assert (found is None) == (not expected)
    if found is not None:
        assert found in expected


# ---------------------------------------------------------------- one pure-Python implementation


def test_module_imports_no_tensor_library_and_is_the_one_implementation() -> None:
    tree = ast.parse(Path(storage_rules.__file__).read_text())
    imported = {
        alias.name.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    } | {
        node.module.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module
    }
    assert imported <= {"__future__", "collections"}
    assert "one implementation" in (storage_rules.__doc__ or "")
