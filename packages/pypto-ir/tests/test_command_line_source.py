"""Kernels defined by ``python -c CODE`` are read from CODE (``sys.orig_argv``); text run by
``exec`` whose source Python keeps nowhere is refused with an error saying so."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from pypto.ir.errors import KernelError

CODE = textwrap.dedent(
    """\
    import pypto.language as pl

    @pl.function
    def add_one(x: pl.Tensor[[64], pl.FP32]) -> pl.Tensor[[64], pl.FP32]:
        result: pl.Tensor[[64], pl.FP32] = pl.add(x, 1.0)
        return result

    @pl.program
    class P:
        @pl.function
        def twice(self, x: pl.Tensor[[64], pl.FP32]) -> pl.Tensor[[64], pl.FP32]:
            result: pl.Tensor[[64], pl.FP32] = pl.mul(x, 2.0)
            return result
    """
)


def _run_as_command_line(monkeypatch: pytest.MonkeyPatch, argv_code: str) -> dict[str, object]:
    monkeypatch.setattr(sys, "orig_argv", [sys.executable, "-c", argv_code])
    namespace: dict[str, object] = {}
    exec(compile(CODE, "<string>", "exec"), namespace)  # what `python -c` does
    return namespace


def test_python_c_kernels_are_read_from_the_command_line(monkeypatch: pytest.MonkeyPatch) -> None:
    ns = _run_as_command_line(monkeypatch, CODE)
    assert ns["add_one"].ir.name == "add_one"  # type: ignore[attr-defined]
    assert "twice" in {f.name for f in ns["P"].funcs}  # type: ignore[attr-defined]


def test_exec_text_that_is_not_the_command_line_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    other = "\n\n\nprint('another program')\n"
    with pytest.raises(KernelError, match=r"cannot read the source of 'P.twice'"):
        _run_as_command_line(monkeypatch, other)


def test_a_real_python_c_process() -> None:
    code = CODE + "print(add_one.ir.name, P.funcs[0].name)\n"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["add_one", "twice"]
