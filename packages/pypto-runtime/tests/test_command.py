"""The ``pypto-runtime`` command, run as a subprocess (``python -m pypto.runtime``, the same
program as the installed script): compile -> inspect -> run -> compare with numpy, bad inputs,
missing artifacts, exit codes. No torch."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from runtime_programs import SCALED_ADD_SOURCE
from store_test_helpers import pypto_runtime

from pypto.runtime import settings
from pypto.runtime.artifact_runtime import ArtifactRuntime
from pypto.runtime.cli import main
from pypto.runtime.store import ArtifactStore

KERNEL = (
    SCALED_ADD_SOURCE
    + """

@pl.jit
def broken(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.no_such_op(a)
    return out
"""
)
ARGS = (
    "--arg",
    "a=64x64:FP32",
    "--arg",
    "b=64x64:FP32",
    "--arg",
    "alpha=RUNTIME:FP32",
    "--arg",
    "out=64x64:FP32",
)
RNG = np.random.default_rng(18)


class Compiled:
    def __init__(self, root: Path, store: Path, key: str) -> None:
        self.root, self.store, self.key = root, store, key

    def run(self, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        return pypto_runtime(*args, store=self.store, cwd=cwd or self.root)


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> Compiled:
    """scaled_add compiled once into a module store by the command itself."""
    root = tmp_path_factory.mktemp("command")
    (root / "kernels.py").write_text(KERNEL)
    store = root / "store"
    proc = pypto_runtime("compile", "kernels.py::scaled_add", *ARGS, "-q", store=store, cwd=root)
    assert proc.returncode == 0, proc.stderr
    key = proc.stdout.strip()
    assert len(key) == 64, proc.stdout
    assert int(key, 16) >= 0
    return Compiled(root, store, key)


def _inputs(where: Path) -> tuple[np.ndarray, np.ndarray]:
    a = RNG.standard_normal((64, 64)).astype(np.float32)
    b = RNG.standard_normal((64, 64)).astype(np.float32)
    np.save(where / "a.npy", a)
    np.save(where / "b.npy", b)
    return a, b


# -- compile -> inspect -> run ------------------------------------------------------------


def test_round_trip_compile_inspect_run(compiled: Compiled, tmp_path: Path) -> None:
    # compile again (a store hit): the same key, and the path of the READY entry
    proc = compiled.run("compile", "kernels.py::scaled_add", *ARGS)
    assert proc.returncode == 0, proc.stderr
    assert f"key: {compiled.key}" in proc.stdout
    entry = compiled.store / "v1" / "ready" / compiled.key
    assert f"path: {entry}" in proc.stdout

    proc = compiled.run("inspect", compiled.key[:10], "--json")
    assert proc.returncode == 0, proc.stderr
    meta = json.loads(proc.stdout)
    assert meta["key"] == compiled.key
    assert meta["name"] == "scaled_add"
    assert meta["capabilities"] == ["PROGRAM"]
    assert meta["found_in"] == "store (READY)"
    assert [(p["name"], p["direction"], p["dtype"], p["shape"]) for p in meta["params"]] == [
        ("a", "In", "FP32", [64, 64]),
        ("b", "In", "FP32", [64, 64]),
        ("alpha", "In", "FP32", None),
        ("out", "Out", "FP32", [64, 64]),
    ]
    assert meta["return_aliases"] == [3]
    assert [k["core_type"] for k in meta["kernels"]] == ["AIV"]
    assert meta["toolchain"]["backend"] == "host_cpp"

    proc = compiled.run("inspect", compiled.key)
    assert proc.returncode == 0, proc.stderr
    for text in ("scaled_add", "PROGRAM", "a2a3sim", "lowered parameters", "AIV", "[64, 64]", "host_cpp"):
        assert text in proc.stdout

    a, b = _inputs(tmp_path)
    trace = tmp_path / "trace"
    proc = compiled.run(
        "run",
        compiled.key[:12],
        "--arg",
        f"a={tmp_path / 'a.npy'}",
        "--arg",
        f"b={tmp_path / 'b.npy'}",
        "--arg",
        "alpha=0.5",
        "--out",
        f"out={tmp_path / 'result.bin'}",  # written as .npy data to exactly this name
        "--trace",
        str(trace),
    )
    assert proc.returncode == 0, proc.stderr
    assert "ran scaled_add on a2a3sim" in proc.stdout
    result = np.load(tmp_path / "result.bin", allow_pickle=False)
    np.testing.assert_allclose(result, a + 0.5 * b, rtol=1e-6, atol=1e-6)
    traces = sorted(trace.glob("*.swimlane.json"))
    assert all(t.name.startswith("scaled_add") for t in traces), traces
    assert all("_call" in t.name for t in traces), traces
    assert len(traces) == 1, proc.stdout
    assert f"trace: {traces[0]}" in proc.stdout
    assert json.loads(traces[0].read_text())  # a Chrome/Perfetto trace-event file


def test_run_a_directory_out_written_to_cwd(compiled: Compiled, tmp_path: Path) -> None:
    """A directory shipped elsewhere (no manifest): the omitted Out is allocated from the
    metadata and written to ./out.npy; -q prints nothing."""
    shipped = tmp_path / "shipped"
    shutil.copytree(compiled.store / "v1" / "ready" / compiled.key, shipped)
    (shipped / "manifest.json").unlink()
    a, b = _inputs(tmp_path)
    proc = compiled.run(
        "run", str(shipped), "--arg", "a=a.npy", "--arg", "b=b.npy", "--arg", "alpha=-2", "-q", cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ""
    np.testing.assert_allclose(np.load(tmp_path / "out.npy"), a - 2 * b, rtol=1e-6, atol=1e-6)

    proc = compiled.run("inspect", str(shipped))
    assert proc.returncode == 0, proc.stderr
    assert "found in" in proc.stdout
    assert "directory" in proc.stdout


def test_run_failure_exits_1(compiled: Compiled, tmp_path: Path) -> None:
    damaged = tmp_path / "damaged"
    shutil.copytree(compiled.store / "v1" / "ready" / compiled.key, damaged)
    (damaged / "manifest.json").unlink()
    (damaged / "prebuilt" / "orchestration.so").write_bytes(b"not a shared object")
    _inputs(tmp_path)
    proc = compiled.run(
        "run", str(damaged), "--arg", "a=a.npy", "--arg", "b=b.npy", "--arg", "alpha=1", cwd=tmp_path
    )
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    assert "scaled_add" in proc.stderr
    assert not (tmp_path / "out.npy").exists()


# -- bad inputs: exit 2, the parameter and what was expected named --------------------------


def test_bad_npy_files(compiled: Compiled, tmp_path: Path) -> None:
    _inputs(tmp_path)
    np.save(tmp_path / "f64.npy", np.zeros((64, 64), np.float64))
    np.save(tmp_path / "small.npy", np.zeros((32, 64), np.float32))
    (tmp_path / "text.npy").write_text("1 2 3\n")
    np.savez(tmp_path / "arch.npz", a=np.zeros((64, 64), np.float32))

    def run_with(a: str, *extra: str) -> subprocess.CompletedProcess[str]:
        return compiled.run(
            "run",
            compiled.key,
            "--arg",
            f"a={a}",
            "--arg",
            "b=b.npy",
            "--arg",
            "alpha=1",
            *extra,
            cwd=tmp_path,
        )

    proc = run_with("f64.npy")
    assert proc.returncode == 2, proc.stderr
    assert (
        "parameter 'a' (In) expects FP32 (float32) of shape [64, 64]; f64.npy holds float64 of shape [64, 64]"
        in proc.stderr
    )
    proc = run_with("small.npy")
    assert proc.returncode == 2
    assert (
        "expects FP32 (float32) of shape [64, 64]; small.npy holds float32 of shape [32, 64]" in proc.stderr
    )
    for bad in ("text.npy", "arch.npz"):
        proc = run_with(bad)
        assert proc.returncode == 2
        assert f"--arg a={bad}: not a .npy file" in proc.stderr
    proc = run_with("missing.npy")
    assert proc.returncode == 2
    assert "--arg a=missing.npy: cannot read the file" in proc.stderr
    assert not (tmp_path / "out.npy").exists()


def test_bad_command_lines(compiled: Compiled, tmp_path: Path) -> None:
    _inputs(tmp_path)
    cases = {
        ("--arg", "a=a.npy", "--arg", "alpha=1"): "missing --arg for b (In FP32 (float32) of shape [64, 64])",
        ("--arg", "a=a.npy", "--arg", "b=b.npy"): "missing --arg for alpha (FP32 scalar)",
        ("--arg", "a=a.npy", "--arg", "b=b.npy", "--arg", "alpha=x"): "'x' is not a number",
        ("--arg", "a=a.npy", "--arg", "b=b.npy", "--arg", "alpha=1", "--arg", "c=1"): "no parameter 'c'",
        ("--arg", "a=a.npy", "--arg", "a=b.npy"): "--arg a: given twice",
        ("--arg", "a=a.npy", "--arg", "b=b.npy", "--arg", "alpha=1", "--out", "a=x.npy"): (
            "parameter 'a' is not an Out or InOut tensor"
        ),
        ("--arg", "a=a.npy", "--arg", "b=b.npy", "--arg", "alpha=1", "--trace", str(compiled.store / "t")): (
            "inside the artifact store"
        ),
    }
    for extra, message in cases.items():
        proc = compiled.run("run", compiled.key, *extra, cwd=tmp_path)
        assert proc.returncode == 2, (extra, proc.stderr)
        assert message in proc.stderr, (extra, proc.stderr)
    assert not (compiled.store / "t").exists()
    proc = compiled.run("run", compiled.key, "--bogus")
    assert proc.returncode == 2
    assert "unrecognized arguments: --bogus" in proc.stderr


def test_missing_artifact(compiled: Compiled, tmp_path: Path) -> None:
    proc = compiled.run("run", "0123456789abcdef", "--arg", "a=a.npy")
    assert proc.returncode == 2
    assert "no store entry whose key starts with it" in proc.stderr
    proc = compiled.run("inspect", str(tmp_path / "nowhere"))
    assert proc.returncode == 2
    assert "no such directory" in proc.stderr
    proc = compiled.run("inspect", str(tmp_path))
    assert proc.returncode == 2
    assert "not a compiled artifact" in proc.stderr


def _fake_entries(keys: list[str]) -> None:
    rt = ArtifactRuntime(ArtifactStore(settings.cache_dir()))
    for k in keys:

        def gen(path: Path, k: str = k) -> None:
            (path / "compiled_meta.json").write_text(
                json.dumps({"name": f"fake{k[:4]}", "platform": "a2a3sim"})
            )

        rt.obtain(k, generate=gen)


def test_key_prefix_must_be_unique() -> None:
    digest = hashlib.sha256(b"x").hexdigest()
    keys = ["abcd0" + digest[5:], "abcd1" + digest[5:]]
    _fake_entries(keys)
    proc = pypto_runtime("inspect", "abcd")
    assert proc.returncode == 2
    assert "2 store entries match" in proc.stderr
    assert all(k in proc.stderr for k in keys)
    # unique, but its metadata is not an artifact's: the command fails (1), naming the entry
    proc = pypto_runtime("inspect", "abcd1")
    assert proc.returncode == 1, proc.stderr
    assert keys[1] in proc.stderr


# -- compile errors ------------------------------------------------------------------------


def test_compile_errors(compiled: Compiled) -> None:
    cases = {
        ("kernels.py",): (2, "expected FILE.py::FUNCTION"),
        ("nowhere.py::f",): (2, "nowhere.py: no such file"),
        ("kernels.py::nope",): (2, "no 'nope'; @pl.jit functions in it: scaled_add, broken"),
        ("kernels.py::scaled_add", "--arg", "a=64x64:FP32"): (2, "missing --arg for b, alpha, out"),
        ("kernels.py::scaled_add", "--arg", "a=64by64:FP32"): (2, "expected SHAPE:DTYPE"),
        ("kernels.py::scaled_add", "--arg", "a=64x64:FP99"): (2, "got 'FP99'"),
        ("kernels.py::scaled_add", "--arg", "z=1"): (2, "no parameter 'z'"),
        ("kernels.py::scaled_add", *ARGS, "--platform", "gpu"): (2, "--platform"),
        ("kernels.py::broken", "--arg", "a=16x16:FP32", "--arg", "out=16x16:FP32"): (1, "no_such_op"),
    }
    for args, (code, message) in cases.items():
        proc = compiled.run("compile", *args)
        assert proc.returncode == code, (args, proc.stderr)
        assert message in proc.stderr, (args, proc.stderr)


def test_compile_into_a_directory(compiled: Compiled, tmp_path: Path) -> None:
    out = tmp_path / "built"
    proc = compiled.run("compile", "kernels.py::scaled_add", *ARGS, "-o", str(out), "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["path"] == str(out)
    assert (out / "compiled_meta.json").is_file()
    proc = compiled.run("inspect", str(out), "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["toolchain"] is None  # sources only: built at the first run


def test_compile_without_pypto_ir(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pypto.language", None)
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = main(["compile", "kernels.py::f"])
    assert code == 1
    assert "`compile` needs pypto-ir" in err.getvalue()


# -- one program, two names ----------------------------------------------------------------


def test_help_and_installed_script() -> None:
    proc = pypto_runtime("--help")
    assert proc.returncode == 0
    for sub in ("run", "inspect", "compile", "cache"):
        assert sub in proc.stdout
    assert pypto_runtime().returncode == 2  # a subcommand is required
    script = shutil.which("pypto-runtime", path=str(Path(sys.executable).parent))
    if script is None:
        pytest.skip("no pypto-runtime script next to this interpreter (package not installed)")
    env = {**os.environ, "COLUMNS": "200"}
    proc = subprocess.run([script, "cache", "stat"], capture_output=True, text=True, env=env, check=False)
    assert proc.returncode == 0, proc.stderr
    assert str(settings.cache_dir()) in proc.stdout
    version = subprocess.run([script, "--version"], capture_output=True, text=True, check=False)
    assert version.stdout.startswith("pypto-runtime ")
