"""What exists for upstream programs only is gathered in one marked module per package
(``pypto.runtime.upstream``, ``pypto.ir.upstream``), and it stays importable."""

from __future__ import annotations

import dataclasses
import importlib

import pytest

from pypto.runtime import RunConfig, upstream

ir_upstream = importlib.import_module("pypto.ir.upstream")  # pypto-ir's counterpart (not on its face)


def test_the_upstream_only_fields_are_run_config_fields_that_change_no_run() -> None:
    fields = {f.name for f in dataclasses.fields(RunConfig)}
    assert set(upstream.CHECKED_ONLY_FIELDS) <= fields
    plain = RunConfig()
    changed = RunConfig(dump_passes=True, compile_profiling=True, rtol=0.5, atol=0.5)
    compared = fields - set(upstream.CHECKED_ONLY_FIELDS) - {"effective_call_config"}
    assert all(getattr(plain, n) == getattr(changed, n) for n in compared)


@pytest.mark.parametrize(
    ("field", "bad"),
    [("compile_profiling", 1), ("rtol", -1.0), ("atol", True), ("strategy", "Fastest"), ("dump_passes", "x")],
)
def test_each_upstream_only_field_is_checked_naming_it(field: str, bad: object) -> None:
    with pytest.raises((ValueError, TypeError)) as caught:
        RunConfig(**{field: bad})  # type: ignore[arg-type]
    assert field in str(caught.value) or repr(bad) in str(caught.value), caught.value


def test_the_upstream_modules_and_face_names_resolve() -> None:
    import pypto.ir

    for name in (*upstream.UPSTREAM_MODULES, *ir_upstream.UPSTREAM_MODULES):
        importlib.import_module(name)
    for name in ir_upstream.FACE_NAMES:
        assert name in pypto.ir.__all__, name
