"""RunSettings: a run's settings as one bound C++ struct with named fields (no chip needed)."""

from __future__ import annotations

import pytest

from simpler import CallConfig, _native
from simpler.worker import _run_settings


def test_a_call_config_becomes_named_fields() -> None:
    cfg = CallConfig(
        aicpu_thread_num=3,
        dep_graph=True,
        output_prefix="/tmp/diag",
        task_window=(4, 8, 16, 32),
        heap=4096,
        dep_pool=64,
        workspace_budget_bytes=1 << 20,
    ).validate()
    s = _run_settings(cfg)
    assert isinstance(s, _native.RunSettings)
    assert s.task_window == [4, 8, 16, 32]
    assert s.heap == [4096] * 4
    assert s.dep_pool == [64] * 4
    assert s.workspace_budget_bytes == 1 << 20
    assert (s.swimlane, s.dep_graph, s.writes_diagnostics) == (False, True, True)
    assert s.output_prefix == "/tmp/diag"
    assert s.aicpu_thread_num == 3


def test_defaults_match_call_config() -> None:
    s, d = _run_settings(CallConfig().validate()), _native.RunSettings()
    fields = ("task_window", "heap", "dep_pool", "workspace_budget_bytes", "swimlane", "dep_graph")
    for name in (*fields, "output_prefix", "aicpu_thread_num", "orchestrate_on_caller", "writes_diagnostics"):
        assert getattr(s, name) == getattr(d, name), name
    assert d.writes_diagnostics is False


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"task_window": [4, 4, 6, 4]},
            r"task_window\[2\]: expected a power of two in \[4, 2\^31-1\], got 6",
        ),
        ({"heap": [1024, 1024, 1024]}, "heap: expected 4 ring values, got 3"),
        ({"dep_pool": [4, 4, 4, 1 << 40]}, r"dep_pool\[3\]: value 1099511627776 is too large"),
        ({"aicpu_thread_num": 5}, r"aicpu_thread_num: expected a value in \[1, 4\], got 5"),
        ({"workspace_budget_bytes": 10}, "workspace_budget_bytes: expected at least 1024"),
        ({"swimlane": True}, "output_prefix: swimlane and dependency-graph output need an output_prefix"),
    ],
)
def test_construction_checks_every_field_in_cpp(kwargs: dict[str, object], message: str) -> None:
    # Bypasses CallConfig.validate: the C++ check of chip::validate_run_config still applies.
    with pytest.raises(ValueError, match=message):
        _native.RunSettings(**kwargs)


def test_fields_are_read_only() -> None:
    s = _native.RunSettings()
    with pytest.raises(AttributeError):
        s.swimlane = True  # type: ignore[misc]
    with pytest.raises(TypeError):
        _native.RunSettings([256] * 4)  # type: ignore[misc]  # keyword-only: no field by position
