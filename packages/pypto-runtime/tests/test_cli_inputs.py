"""``pypto-runtime`` given hostile or careless inputs: a .npy header declaring a huge shape, a
5,000-character argument, nonsensical numbers. Each is a usage error (exit status 2) whose
message names the argument, never a traceback (exit 1) and never a large allocation; the
command runs in this process (fast) and the store is never touched."""

from __future__ import annotations

import contextlib
import io
import math
import os
import shutil
import subprocess
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from store_test_helpers import no_hang

import pypto.language as pl
import pypto.runtime as rt
from pypto.ir import DataType
from pypto.runtime.cli import main
from pypto.runtime.cli.run import _scalar

LONG = "a" * 5000  # hexadecimal: tried as a store key prefix too


@pl.jit
def scaled(a: pl.Tensor, alpha: pl.FP32, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="scaled"):
        out[:] = pl.mul(a, alpha)
    return out


@pytest.fixture(scope="module")
def shipped_once(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = tmp_path_factory.mktemp("inputs") / "scaled"
    a = np.ones((16, 16), np.float32)
    rt.compile(scaled, a, pl.RUNTIME, np.empty_like(a), output_dir=where)
    return where


@pytest.fixture
def work(shipped_once: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A directory holding the artifact (``scaled``) and a good input ``a.npy``; the cwd."""
    shutil.copytree(shipped_once, tmp_path / "scaled")
    np.save(tmp_path / "a.npy", np.ones((16, 16), np.float32))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), no_hang(60):
        try:
            code = main(list(args))
        except SystemExit as exc:  # argparse's own usage errors
            code = int(exc.code or 0)
    return subprocess.CompletedProcess(list(args), code, out.getvalue(), err.getvalue())


def _usage(proc: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
    assert "Traceback" not in proc.stderr
    for needle in needles:
        assert needle in proc.stderr, (needle, proc.stderr[-2000:])
    assert LONG not in proc.stderr  # a long argument is named, not echoed whole


def _npy_header(path: Path, shape: tuple[int, ...], descr: str = "<f4", data: bytes = b"") -> None:
    with path.open("wb") as f:
        np.lib.format.write_array_header_1_0(f, {"descr": descr, "fortran_order": False, "shape": shape})
        f.write(data)


def _run(*extra: str) -> subprocess.CompletedProcess[str]:
    return cli("run", "scaled", "-q", *extra)


# -- .npy inputs -------------------------------------------------------------------------------


def test_good_inputs_run(work: Path) -> None:
    proc = _run("--arg", "a=a.npy", "--arg", "alpha=3", "--timeout", "60")
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_allclose(np.load(work / "out.npy"), np.full((16, 16), 3, np.float32))


@pytest.mark.parametrize("shape", [(1 << 40, 1 << 20), (1 << 62, 1 << 62), (16, 16, 1 << 50)])
def test_npy_header_declaring_a_huge_shape_is_a_usage_error(work: Path, shape: tuple[int, ...]) -> None:
    _npy_header(work / "huge.npy", shape)
    proc = _run("--arg", "a=huge.npy", "--arg", "alpha=1")
    dims = ", ".join(map(str, shape))
    _usage(
        proc,
        "--arg a=huge.npy:",
        "expects FP32 (float32) of shape [16, 16]",
        f"holds float32 of shape [{dims}]",
    )


def test_npy_header_promising_more_data_than_the_file_holds(work: Path) -> None:
    _npy_header(work / "short.npy", (16, 16), data=b"\0" * 100)
    _usage(
        _run("--arg", "a=short.npy", "--arg", "alpha=1"),
        "--arg a=short.npy: the header declares float32 of shape [16, 16] (1024 bytes of data), "
        "but the file holds 100 bytes after the header",
    )


def test_malformed_npy_headers(work: Path) -> None:
    _npy_header(work / "negative.npy", (-16, 16))
    _usage(_run("--arg", "a=negative.npy", "--arg", "alpha=1"), "--arg a=negative.npy:")
    (work / "garbage.npy").write_bytes(b"\x93NUMPY\x01\x00\x10\x00{not a dict}    \n")
    _usage(
        _run("--arg", "a=garbage.npy", "--arg", "alpha=1"), "--arg a=garbage.npy: not a readable .npy file"
    )
    (work / "v9.npy").write_bytes(b"\x93NUMPY\x09\x00" + b"\0" * 100)
    _usage(_run("--arg", "a=v9.npy", "--arg", "alpha=1"), "--arg a=v9.npy: not a readable .npy file")
    _npy_header(work / "object.npy", (16, 16), descr="|O")
    _usage(_run("--arg", "a=object.npy", "--arg", "alpha=1"), "holds object of shape [16, 16]")


def test_fifo_or_directory_input_is_refused_without_hanging(work: Path) -> None:
    os.mkfifo(work / "fifo.npy")
    _usage(_run("--arg", "a=fifo.npy", "--arg", "alpha=1"), "--arg a=fifo.npy: not a regular file")
    (work / "dir.npy").mkdir()
    _usage(_run("--arg", "a=dir.npy", "--arg", "alpha=1"), "--arg a=dir.npy: not a regular file")


# -- long arguments ------------------------------------------------------------------------------


def test_a_5000_character_key_or_path_is_a_usage_error(work: Path) -> None:
    for spec in (LONG, "z" * 5000, f"{work}/{LONG}"):
        for command in ("inspect", "run"):
            proc = cli(command, spec)
            _usage(proc, "ARTIFACT", "characters)")


def test_5000_character_option_values_are_usage_errors(work: Path) -> None:
    good = ("--arg", "a=a.npy", "--arg", "alpha=1")
    cases = {
        ("--arg", f"{LONG}=1", *good): "no parameter",
        ("--arg", f"a={LONG}", "--arg", "alpha=1"): f"--arg a={LONG[:20]}",
        ("--arg", "a=a.npy", "--arg", f"alpha={LONG}"): "is not a number",
        (*good, "--out", f"out={LONG}/x.npy"): "--out out:",
        (*good, "--out-dir", LONG): "--out-dir:",
        (*good, "--entry", LONG): "a single-entry artifact",
        (*good, "--trace", LONG): "--trace",
        (*good, "--runtime", LONG): "--runtime",
        (*good, "--platform", LONG): "--platform",
    }
    for extra, needle in cases.items():
        _usage(_run(*extra), needle)
    assert not (work / "out.npy").exists()


# -- numbers -----------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["-1", "nan", "inf", "-inf", "0", "-0.0", "1e999", "x", ""])
def test_timeout_must_be_a_finite_positive_number(work: Path, value: str) -> None:
    proc = _run("--arg", "a=a.npy", "--arg", "alpha=1", f"--timeout={value}")
    _usage(proc, "argument --timeout:")
    assert not (work / "out.npy").exists()


@pytest.mark.parametrize("value", ["-1", str(2**31), "1.5", "x", LONG])
def test_device_id_must_be_a_c_int_ordinal(work: Path, value: str) -> None:
    _usage(_run("--arg", "a=a.npy", "--arg", "alpha=1", f"--device-id={value}"), "argument --device-id:")


@pytest.mark.parametrize("bad", [-1, 0, -0.5, math.nan, math.inf, True, "5"])
def test_run_config_refuses_a_timeout_that_is_not_a_positive_number(bad: object) -> None:
    with pytest.raises(ValueError, match=r"RunConfig\(timeout\): expected None \(no limit\) or a finite"):
        rt.RunConfig(timeout=bad)  # type: ignore[arg-type]
    assert rt.RunConfig(timeout=0.25).timeout == 0.25
    assert rt.RunConfig().timeout is None


def test_integer_scalars_are_range_checked() -> None:
    def param(dtype: DataType) -> SimpleNamespace:
        return SimpleNamespace(name="n", dtype=dtype)

    assert _scalar(param(DataType.INT32), "-2147483648") == -(2**31)
    assert _scalar(param(DataType.UINT8), "0xff") == 255
    for dtype, text in (
        (DataType.INT32, "2147483648"),
        (DataType.UINT8, "-1"),
        (DataType.INT64, "1" + "0" * 30),
    ):
        with pytest.raises(
            Exception, match=f"--arg n={text}: parameter 'n' .* is outside the range of"
        ) as info:
            _scalar(param(dtype), text)
        assert type(info.value).__name__ == "UsageError"
    with pytest.raises(Exception, match="is not an integer"):
        _scalar(param(DataType.INT32), "9" * 5000)  # beyond int()'s digit limit: not a traceback


@pytest.mark.parametrize("value", ["-1", "nan", "inf", "x"])
def test_cache_prune_older_than_must_be_finite_and_not_negative(value: str) -> None:
    proc = cli("cache", "prune", f"--older-than={value}")
    _usage(proc, "argument --older-than:")


def test_cache_prune_older_than_zero_is_accepted() -> None:
    assert cli("cache", "prune", "--older-than", "0").returncode == 0


def test_cache_root_too_long_is_a_usage_error(tmp_path: Path) -> None:
    _usage(cli("cache", "--root", f"{tmp_path}/{LONG}", "ls"), "--root", "not a usable path")


# -- compile -----------------------------------------------------------------------------------

KERNELS = """
import pypto.language as pl


@pl.jit
def twice(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="twice"):
        out[:] = pl.add(a, a)
    return out
"""


def test_compile_long_arguments_are_usage_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "kernels.py").write_text(KERNELS)
    monkeypatch.chdir(tmp_path)
    good = ("--arg", "a=16x16:FP32", "--arg", "out=16x16:FP32")
    cases = {
        (f"{LONG}.py::twice", *good): "not a usable path",
        (f"kernels.py::{LONG}", *good): "kernels.py: no 'aaaa",
        ("kernels.py::twice", "--arg", f"{LONG}=1", *good): "no parameter 'aaaa",
        ("kernels.py::twice", "--arg", f"a=16x16:{LONG}", "--arg", "out=16x16:FP32"): "--arg a=16x16:aaaa",
        ("kernels.py::twice", "--arg", f"a={LONG}x16:FP32", "--arg", "out=16x16:FP32"): "--arg a=",
        ("kernels.py::twice", *good, "-o", str(tmp_path / LONG)): "--output-dir",
    }
    for extra, needle in cases.items():
        _usage(cli("compile", *extra), needle)
