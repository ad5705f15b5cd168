"""End to end on a2a3sim: PyPTO programs compiled, cached, run on caller numpy storage and
compared with numpy; reload from a directory and from the store in a fresh process."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import pypto.language as pl
import pypto.runtime as rt
from pypto.ir import RUNTIMES
from pypto.runtime import mode_gate
from pypto.runtime.compiled import CompiledArtifact, CompiledProgram
from pypto.runtime.mode_gate import ModeConflictError, ProcessMode
from pypto.runtime.store import ArtifactStore
from pypto_testing.forms import TwoEntries
from pypto_testing.programs import COLS, EXAMPLES, ROWS, Example, add_chunks, dynamic_rows, scalar_param, silu

pytestmark = pytest.mark.usefixtures("module_store")  # one store: each program compiles once

RNG = np.random.default_rng(7)


def r(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def z(*shape: int) -> np.ndarray:
    return np.zeros(shape, np.float32)


# case -> shared example (pypto_testing.programs): the programs with a numpy reference
_RUN = {
    "elementwise": "add_chunks",
    "scalar": "scalar_param",
    "activation": "silu",
    "softmax": "row_softmax",
    "normalisation": "rms_norm",
    "matmul": "cube_matmul",
    "matmul_acc": "split_k",
    "fused_linear": "fused_linear",
    "task_graph": "two_stages",
}


def _case(ex: Example) -> tuple[Any, tuple[Any, ...], tuple[tuple[int, ...], ...], Callable[..., Any]]:
    assert ex.reference is not None
    return ex.fn, tuple(r(*i) if isinstance(i, tuple) else i for i in ex.inputs), ex.outputs, ex.reference


# name -> (fn, inputs, outputs, numpy reference over inputs)
CASES = {case: _case(EXAMPLES[name]) for case, name in _RUN.items()}


def _check(got: Any, want: Any) -> None:
    got_t = got if isinstance(got, tuple) else (got,)
    want_t = want if isinstance(want, tuple) else (want,)
    assert len(got_t) == len(want_t)
    for g, w in zip(got_t, want_t, strict=True):
        np.testing.assert_allclose(g, w, rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("runtime", RUNTIMES)
@pytest.mark.parametrize("name", list(CASES))
def test_jit_call_runs_on_caller_storage(name: str, runtime: str) -> None:
    fn, inputs, out_shapes, ref = CASES[name]
    outs = tuple(np.full(s, np.nan, np.float32) for s in out_shapes)
    result = fn(*inputs, *outs, config=rt.RunConfig(runtime=runtime))
    want = ref(*inputs)
    _check(result, want)
    # Returned tensors are the caller's own Out arrays, written in place (no copies).
    got = result if isinstance(result, tuple) else (result,)
    assert all(g is o for g, o in zip(got, outs, strict=True))
    assert mode_gate.current() is ProcessMode.PROGRAM


@pytest.mark.parametrize("name", ["elementwise", "task_graph", "fused_linear"])
def test_compiled_program_allocates_omitted_outputs(name: str) -> None:
    fn, inputs, out_shapes, ref = CASES[name]
    outs = tuple(z(*s) for s in out_shapes)
    prog = rt.compile(fn, *inputs, *outs)
    assert isinstance(prog, CompiledProgram)
    assert Path(os.fspath(prog)).is_dir()
    assert prog.param_names == tuple(fn.param_names)
    _check(prog(*inputs), ref(*inputs))


def test_dynamic_shapes_share_one_artifact() -> None:
    for rows in (32, 64, 128):
        a = r(rows, 32)
        c = np.full((rows, 32), np.nan, np.float32)
        assert dynamic_rows(a, c) is c
        np.testing.assert_allclose(c, np.exp(a), rtol=1e-5)
    prog = rt.compile(dynamic_rows, r(16, 32), z(16, 32))
    assert prog.params[0].shape == (-1, 32)
    with pytest.raises(TypeError, match="dynamic shape"):
        prog(r(16, 32))  # a dynamic Out cannot be allocated by the runtime


def test_scalar_argument_value_and_errors() -> None:
    a = r(16, 16)
    prog = rt.compile(scalar_param, a, 0.5, z(16, 16))
    c = z(16, 16)
    prog(a, 0.5, c)
    np.testing.assert_allclose(c, a * 0.5, rtol=1e-6)
    with pytest.raises(TypeError, match="'alpha'"):
        prog(a, np.zeros(3), c)
    with pytest.raises(TypeError, match="unexpected keyword argument 'beta'"):
        prog(a, 0.5, c, beta=1)


def test_bad_tensor_arguments_name_the_parameter() -> None:
    fn, inputs, _, _ = CASES["elementwise"]
    prog = rt.compile(fn, *inputs, z(ROWS, COLS))
    with pytest.raises(TypeError, match=r"argument 'b': expected dtype FP32, got FP16"):
        prog(inputs[0], inputs[1].astype(np.float16))
    with pytest.raises(TypeError, match=r"argument 'a': dimension 0 must be 256"):
        prog(r(8, COLS), inputs[1])
    with pytest.raises(TypeError, match="expected 3 arguments"):
        prog(inputs[0])


def test_torch_cpu_tensors_run_without_copies() -> None:
    torch = pytest.importorskip("torch", reason="torch is optional for pypto-runtime")
    a, b = torch.randn(ROWS, COLS), torch.randn(ROWS, COLS)
    c = torch.empty(ROWS, COLS)
    assert add_chunks(a, b, c) is c
    torch.testing.assert_close(c, a + b)
    out = rt.compile(add_chunks, a, b, c)(a, b)
    assert isinstance(out, torch.Tensor)
    torch.testing.assert_close(out, a + b)


def test_compile_and_metadata_loading_never_claim(fresh_gate: None, tmp_path: Path) -> None:
    fn, inputs, out_shapes, ref = CASES["activation"]
    prog = rt.compile(fn, *inputs, z(*out_shapes[0]), output_dir=tmp_path / "silu")
    again = CompiledProgram.from_dir(tmp_path / "silu")
    again.artifact.chip_callable()  # native loading does not claim either
    assert mode_gate.current() is None
    _check(again(*inputs), ref(*inputs))
    assert mode_gate.current() is ProcessMode.PROGRAM
    assert prog.program is not None
    assert again.program is None


def test_kernel_process_refuses_program_run(fresh_gate: None) -> None:
    fn, inputs, out_shapes, _ = CASES["activation"]
    prog = rt.compile(fn, *inputs, z(*out_shapes[0]))
    mode_gate.claim_kernel("pypto.torch.init (test)")
    from pypto.runtime import worker

    with worker._shared.lock:
        worker._shared.workers.clear()
    with pytest.raises(ModeConflictError, match="kernel mode"):
        prog(*inputs)
    assert worker._shared.workers == {}  # refused before any Worker existed


def test_kernel_contract_artifact() -> None:
    fn, inputs, out_shapes, _ = CASES["activation"]
    art = rt.compile_artifact(fn, *inputs, z(*out_shapes[0]))
    assert isinstance(art, CompiledArtifact)
    assert art.capabilities == ("KERNEL",)
    prog_art = rt.compile(fn, *inputs, z(*out_shapes[0])).artifact
    assert prog_art.key != art.key  # the contract is part of the key
    with pytest.raises(RuntimeError, match="KERNEL contract only"):
        CompiledProgram(art)(*inputs, z(16, 64))
    restored = rt.load_cached(art.key, consumer="KERNEL")
    assert isinstance(restored, CompiledArtifact)
    assert restored.path == art.path


def test_artifact_runs_only_on_its_runtime() -> None:
    fn, inputs, out_shapes, ref = CASES["task_graph"]
    progs = {
        runtime: rt.compile(fn, *inputs, *(z(*s) for s in out_shapes), runtime=runtime)
        for runtime in RUNTIMES
    }
    tmr, hbg = progs["tensormap_and_ringbuffer"], progs["host_build_graph"]
    assert tmr.artifact.key != hbg.artifact.key  # the runtime is part of the key
    assert (tmr.artifact.runtime, hbg.artifact.runtime) == ("tensormap_and_ringbuffer", "host_build_graph")
    assert CompiledArtifact.from_dir(hbg.artifact.path).metadata.runtime == "host_build_graph"
    _check(hbg(*inputs), ref(*inputs))  # no config: the artifact's own runtime
    with pytest.raises(
        ValueError,
        match=r"compiled for runtime 'host_build_graph' but RunConfig.runtime is 'tensormap_and_ringbuffer'; "
        r".*recompile with runtime='tensormap_and_ringbuffer', or run with RunConfig\(runtime='host_build_graph'\)",
    ):
        hbg(*inputs, config=rt.RunConfig())
    with pytest.raises(
        ValueError,
        match=r"compiled for runtime 'tensormap_and_ringbuffer' but RunConfig\.runtime is 'host_build_graph'",
    ):
        tmr(*inputs, config=rt.RunConfig(runtime="host_build_graph"))
    with pytest.raises(ValueError, match=r"RunConfig\(runtime\): expected one of .*, got 'hbg'"):
        rt.RunConfig(runtime="hbg")


def test_platform_override_on_reload(tmp_path: Path) -> None:
    fn, inputs, out_shapes, ref = CASES["activation"]
    rt.compile(fn, *inputs, z(*out_shapes[0]), output_dir=tmp_path / "p")
    prog = CompiledProgram.from_dir(tmp_path / "p", platform="a5sim")
    assert prog.platform == "a5sim"
    assert prog.artifact.device_kind == "SIM"
    with pytest.raises(ValueError, match="compiled for platform 'a5sim'"):
        prog(*inputs, config=rt.RunConfig(platform="a2a3sim"))
    _check(prog(*inputs, config=rt.RunConfig(platform="a5sim")), ref(*inputs))


_FRESH = textwrap.dedent(
    """
    import sys
    import numpy as np
    import pypto.runtime as rt
    import pypto.runtime.api as api
    from pypto.runtime.compiled import CompiledProgram

    mode, where = sys.argv[1], sys.argv[2]
    x = np.linspace(-3, 3, 16 * 64, dtype=np.float32).reshape(16, 64)
    if mode == "dir":
        prog = CompiledProgram.from_dir(where)
    else:
        def refuse(*a, **k):
            raise AssertionError("compiled again: the store entry was not used")
        api.compile_to_files = refuse
        import tests_prog
        prog = rt.compile(tests_prog.silu, x, np.zeros_like(x))
    out = prog(x)
    np.testing.assert_allclose(out, x / (1 + np.exp(-x)), rtol=1e-5, atol=1e-6)
    print("ok", prog.artifact.loaded)
    """
)


def test_reload_from_dir_and_from_store_in_fresh_process(tmp_path: Path) -> None:
    x = np.linspace(-3, 3, 16 * 64, dtype=np.float32).reshape(16, 64)
    rt.compile(silu, x, z(16, 64), output_dir=tmp_path / "silu_dir")
    # A module defining the same kernel, importable by the child.
    src = Path(__file__).read_text()
    (tmp_path / "tests_prog.py").write_text(src)
    rt.compile(silu, x, z(16, 64))  # populate the store from this process
    for mode, where in (("dir", str(tmp_path / "silu_dir")), ("store", "")):
        assert _child(tmp_path, _FRESH, mode, where) == "ok True"


def _child(tmp_path: Path, code: str, *args: str) -> str:
    """What ``python -c code *args`` prints (stripped), run in ``tmp_path`` with it on PYTHONPATH;
    the child must exit 0."""
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    proc = subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def test_diagnostics_never_go_into_the_store(store_root: Path, tmp_path: Path) -> None:
    simpler = pytest.importorskip("simpler")
    with pytest.raises(ValueError, match="inside the artifact store"):
        rt.RunConfig(
            call_config=simpler.CallConfig(swimlane=True, output_prefix=str(store_root / "v1" / "x"))
        )
    fn, inputs, out_shapes, ref = CASES["activation"]
    cfg = rt.RunConfig(call_config=simpler.CallConfig(swimlane=True, output_prefix=str(tmp_path / "diag")))
    _check(fn(*inputs, z(*out_shapes[0]), config=cfg), ref(*inputs))
    assert list((tmp_path / "diag").rglob("*.json"))  # the trace was written outside the store


_ENTRY_POINT = textwrap.dedent(
    """
    import sys
    import numpy as np
    import tests_prog  # defines @pl.jit functions; pypto.runtime is not imported here
    assert "pypto.runtime" not in sys.modules
    x = np.linspace(-3, 3, 16 * 64, dtype=np.float32).reshape(16, 64)
    out = np.zeros_like(x)
    tests_prog.silu(x, out)
    np.testing.assert_allclose(out, x / (1 + np.exp(-x)), rtol=1e-5, atol=1e-6)
    print("ok")
    """
)


def test_jit_call_finds_the_runtime_through_its_entry_point(tmp_path: Path) -> None:
    src = Path(__file__).read_text().replace("import pypto.runtime as rt\n", "")
    src = src.replace("from pypto.runtime", "# from pypto.runtime")
    (tmp_path / "tests_prog.py").write_text(src)
    assert _child(tmp_path, _ENTRY_POINT) == "ok"


def test_multi_entry_program_selects_children(tmp_path: Path) -> None:
    from pypto.ir.nodes import Program
    from pypto.runtime import api

    a = r(16, 16)
    prog = rt.compile(TwoEntries, output_dir=tmp_path / "multi")
    assert prog.entry_names == ("negate", "absolute")
    np.testing.assert_array_equal(prog(a), -a)  # the parent runs the default (first) entry
    np.testing.assert_array_equal(prog.entry("absolute")(a), np.abs(a))
    assert prog.entry("negate").params == prog.entry("absolute").params
    with pytest.raises(KeyError, match="no entry 'square'"):
        prog.entry("square")
    again = CompiledProgram.from_dir(tmp_path / "multi")
    assert again.entry_names == ("negate", "absolute")
    np.testing.assert_array_equal(again.entry("absolute")(a), np.abs(a))
    with pytest.raises(TypeError, match="example arguments"):
        rt.compile(TwoEntries, a)
    # In the store, each entry is its own artifact: the entry is part of the key.
    keys = {
        api.artifact_key(
            api._specialize(Program(TwoEntries.name, TwoEntries.funcs, e), (), {})[1],
            contract=api.Contract.PROGRAM,
            platform="a2a3sim",
            runtime="tensormap_and_ringbuffer",
        ).digest
        for e in prog.entry_names
    }
    assert len(keys) == 2


def test_fork_child_of_program_process_runs_on_its_own_worker() -> None:
    fn, inputs, out_shapes, ref = CASES["activation"]
    _check(fn(*inputs, z(*out_shapes[0])), ref(*inputs))  # the parent holds PROGRAM and a Worker
    pid = os.fork()
    if pid == 0:  # child: the gate was reset, the parent's Worker is left alone
        code = 3
        try:
            fresh = mode_gate.current() is None
            out = z(*out_shapes[0])
            fn(*inputs, out, config=rt.RunConfig(timeout=30))  # never hang on a dead Worker
            good = bool(np.allclose(out, ref(*inputs), rtol=2e-5, atol=2e-5))
            code = 0 if fresh and good else 1
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    _check(fn(*inputs, z(*out_shapes[0])), ref(*inputs))  # the parent's Worker still works


@pl.jit
def add_one_no_return(a: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        c[:] = pl.add(a, 1.0)


def test_program_without_return_values_returns_none() -> None:
    a = r(16, 16)
    c = z(16, 16)
    assert add_one_no_return(a, c) is None
    np.testing.assert_allclose(c, a + 1.0, rtol=1e-6)


def test_concurrent_program_calls_from_threads() -> None:
    fn, inputs, out_shapes, _ref = CASES["elementwise"]
    prog = rt.compile(fn, *inputs, z(*out_shapes[0]))

    def worker(seed: int) -> None:
        rng = np.random.default_rng(seed)
        for _ in range(5):
            a = rng.standard_normal((ROWS, COLS)).astype(np.float32)
            b = rng.standard_normal((ROWS, COLS)).astype(np.float32)
            np.testing.assert_allclose(prog(a, b), a + b, rtol=1e-6)

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(worker, range(4)))  # four callers at once; a caller's failure is raised here


def test_a_device_platform_without_cann_keeps_sources_and_says_so(
    store_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pypto.runtime import DeviceBuildUnavailable

    monkeypatch.delenv("ASCEND_HOME_PATH", raising=False)
    fn, inputs, out_shapes, _ = CASES["activation"]
    with pytest.raises(DeviceBuildUnavailable, match=r"platform 'a2a3': the sources were written") as info:
        rt.compile(fn, *inputs, z(*out_shapes[0]), platform="a2a3")
    assert "ASCEND_HOME_PATH is not set" in str(info.value)
    assert (info.value.sources / "build.sh").is_file()
    states = [e.state for e in ArtifactStore(store_root).entries()]
    assert "GENERATED" in states  # the device sources are kept in the store
