"""A call's argument error prints the user's call and the error, not pypto's frames (as a
compile error does); ``PYPTO_FULL_TRACEBACK=1`` keeps them. Each case runs a script in a fresh
interpreter and reads the traceback it prints."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from pypto_testing.scripts import ADD_PROGRAM_SOURCE, run_user_script, traceback_frames

PROGRAM = (
    "import numpy as np\nimport pypto.runtime as rt\n"
    + ADD_PROGRAM_SOURCE
    + "a = np.ones((16, 16), np.float32)\nCALL\n"
)

CALLS = {
    # the @pl.jit binder: a float64 array where FP32 is the only dtype it could be compiled for
    "jit_float64": ("add(a, a.astype(np.float64), np.empty_like(a))", "TypeError: add: parameter 'b': dtype"),
    "jit_missing": ("add(a)", "TypeError: add("),
    # a compiled program's binder: its parameters' dtypes are fixed
    "compiled_float64": (
        "rt.compile(add, a, a, a)(a, a.astype(np.float64), np.empty_like(a))",
        "TensorBindingError: add(): argument 'b'",
    ),
    "compiled_extra": ("rt.compile(add, a, a, a)(a, a, a, a)", "TypeError: add(): expected 3 arguments"),
}


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One store for the module's scripts: the program compiles once."""
    return tmp_path_factory.mktemp("store")


def _run(tmp_path: Path, store: Path, call: str, full: str | None) -> subprocess.CompletedProcess[str]:
    return run_user_script(tmp_path / "user_program.py", PROGRAM.replace("CALL", call), store, full)


@pytest.mark.parametrize("case", sorted(CALLS))
def test_argument_error_trimmed_to_the_users_call(tmp_path: Path, store: Path, case: str) -> None:
    call, message = CALLS[case]
    r = _run(tmp_path, store, call, None)
    assert r.returncode == 1, r.stderr
    frames = traceback_frames(r.stderr)
    assert len(frames) == 2, r.stderr
    assert "user_program.py" in frames[0]  # the user's call ...
    # ... and the entry point that re-raised (a @pl.jit function's general_call, which its
    # call reaches through no Python frame, or @user_facing's wrapper)
    assert frames[1].endswith(("in entry", "in general_call")), r.stderr
    assert message in r.stderr.strip().splitlines()[-1], r.stderr


def test_full_traceback_on_request(tmp_path: Path, store: Path) -> None:
    r = _run(tmp_path, store, CALLS["jit_float64"][0], "1")
    assert r.returncode == 1
    frames = traceback_frames(r.stderr)
    assert len(frames) > 4, r.stderr
    assert any("binding.py" in f for f in frames), r.stderr
