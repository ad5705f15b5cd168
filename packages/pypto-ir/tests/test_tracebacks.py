"""A compile error prints the user's call and the error, not the compiler's frames."""

from __future__ import annotations

import subprocess
import textwrap
from pathlib import Path

import pytest

from pypto_testing.scripts import run_user_script, traceback_frames

PROGRAM = textwrap.dedent(
    """
    import numpy as np
    import pypto.language as pl

    @pl.jit
    def f(a: pl.Tensor, c: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(a, [0, 0], [16, 16])
            c[:] = pl.softmax(t)
        return c

    a = np.ones((16, 16), np.float32)
    f.{entry}(a, np.zeros_like(a))
    """
)


def _run(tmp_path: Path, entry: str, full: str | None) -> subprocess.CompletedProcess[str]:
    text = PROGRAM.replace("f.{entry}", "f" if entry == "__call__" else f"f.{entry}")
    return run_user_script(tmp_path / "user_kernel.py", text, tmp_path / "store", full, timeout=120)


@pytest.mark.parametrize("entry", ["specialize", "lower"])
def test_trimmed_to_the_users_call(tmp_path: Path, entry: str) -> None:
    r = _run(tmp_path, entry, None)
    assert r.returncode == 1
    frames = traceback_frames(r.stderr)
    assert len(frames) == 2, r.stderr
    assert "user_kernel.py" in frames[0]  # the user's call ...
    assert frames[1].endswith("in entry")  # ... and the entry point that re-raised
    last = r.stderr.strip().splitlines()
    assert any("user_kernel.py:9:" in ln and "pl has no attribute 'softmax'" in ln for ln in last)
    assert "^" in last[-1]  # the caret under the mistake ends the output


@pytest.mark.parametrize("full", ["1", "yes"])
def test_full_traceback_on_request(tmp_path: Path, full: str) -> None:
    r = _run(tmp_path, "specialize", full)
    assert r.returncode == 1
    frames = traceback_frames(r.stderr)
    assert len(frames) > 5, r.stderr
    assert any("parser" in f for f in frames)


def test_zero_means_trimmed(tmp_path: Path) -> None:
    assert len(traceback_frames(_run(tmp_path, "specialize", "0").stderr)) == 2


def test_only_user_errors_are_trimmed() -> None:
    """A marked argument error loses pypto's frames; any other exception keeps them all."""
    import traceback

    from pypto.language.tracebacks import marks_user_errors, user_facing

    @marks_user_errors
    def binder(kind: str) -> None:
        if kind == "argument":
            raise TypeError("f: parameter 'a': expected a tensor, got str")
        raise KeyError("an internal bug")

    @user_facing
    def call(kind: str) -> None:
        binder(kind)

    with pytest.raises(TypeError) as argument:
        call("argument")
    assert [f.name for f in traceback.extract_tb(argument.value.__traceback__)] == [
        "test_only_user_errors_are_trimmed",
        "entry",
    ]
    with pytest.raises(KeyError) as internal:
        call("internal")
    assert "binder" in [f.name for f in traceback.extract_tb(internal.value.__traceback__)]
