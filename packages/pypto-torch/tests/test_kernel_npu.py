"""The NPU side of kernel mode, with only torch_npu's queries stubbed (no NPU is here).

What runs for real: preflight ordering (graph capture, current device), the lifecycle owner
thread binding the borrowed device context before Worker init, and the native Worker init,
which fails on this machine because simpler has no CANN build (the failure keeps its type,
the Worker and the mode). What does not run here: a launch on an NPU stream.
"""

from __future__ import annotations

import sys
import types
from typing import Any

import pytest

import pypto.torch as pt
import simpler
from pypto.runtime import mode_gate
from pypto.torch._kernel import context
from pypto.torch._platform import npu as npu_module

pytestmark = pytest.mark.usefixtures("kernel_mode")


@pytest.fixture
def emulated(make_npu: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    platform = make_npu("a2a3")
    real = context.platform_for
    monkeypatch.setattr(context, "platform_for", lambda name: platform if name == "a2a3" else real(name))
    return platform


def test_graph_capture_refuses_init_before_any_claim(emulated: Any) -> None:
    emulated.capturing = True
    with pytest.raises(NotImplementedError, match="capturing a graph"):
        pt.init(platform="a2a3")
    assert mode_gate.current() is None
    assert not any(entry.startswith("bind") for entry in emulated.log)


def test_an_explicit_device_must_be_the_current_one(emulated: Any) -> None:
    emulated.device = 1
    with pytest.raises(ValueError, match="current npu device npu:1, got npu:0"):
        pt.init("npu:0", platform="a2a3")
    assert mode_gate.current() is None
    assert "bind:0" not in " ".join(emulated.log)  # init never selects a device


def test_the_owner_thread_binds_the_current_device_then_the_native_init_fails_here(emulated: Any) -> None:
    emulated.device = 1
    with pytest.raises(simpler.UnsupportedPlatformError, match="CANN"):
        pt.init(platform="a2a3", runtime="host_build_graph")
    assert "bind:1:pypto-kernel-owner" in emulated.log
    assert pt.state() is pt.KernelState.FAILED
    assert mode_gate.current() is mode_gate.ProcessMode.KERNEL  # kept for cleanup
    worker = context.current().worker
    assert isinstance(worker, simpler.Worker)
    assert worker.platform == "a2a3"
    assert worker.device_id == 1
    assert worker.runtime == "host_build_graph"
    pt.shutdown()
    assert pt.state() is pt.KernelState.CLOSED


@pytest.fixture
def stub_torch_npu(monkeypatch: pytest.MonkeyPatch) -> types.SimpleNamespace:
    calls: list[Any] = []
    npu_ns = types.SimpleNamespace(
        is_current_stream_capturing=lambda: calls.append("capturing?") or True,
        set_device=lambda index: calls.append(("set_device", index)),
    )
    stub = types.ModuleType("torch_npu")
    stub.npu = npu_ns  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "torch_npu", stub)
    monkeypatch.setitem(npu_module._loaded, "torch_npu", stub)
    return types.SimpleNamespace(module=stub, calls=calls)


@pytest.fixture
def no_adapter(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pypto._torch_npu", None)  # an import of it fails
    monkeypatch.delitem(npu_module._loaded, "pypto._torch_npu", raising=False)


def test_the_npu_platform_asks_torch_npu(stub_torch_npu: types.SimpleNamespace, no_adapter: None) -> None:
    platform = npu_module.NpuPlatform("a2a3")
    assert platform.is_capturing() is True
    platform.bind_context(3)
    assert stub_torch_npu.calls == ["capturing?", ("set_device", 3)]


def test_a_torch_npu_without_the_capture_query_is_not_capturing(
    stub_torch_npu: types.SimpleNamespace,
) -> None:
    del stub_torch_npu.module.npu.is_current_stream_capturing
    assert npu_module.NpuPlatform("a2a3").is_capturing() is False


def test_without_torch_npu_the_npu_platform_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch_npu", None)  # an import of it fails
    monkeypatch.delitem(npu_module._loaded, "torch_npu", raising=False)
    with pytest.raises(npu_module.NpuRuntimeUnavailable, match=r"pypto-torch\[npu\]"):
        npu_module.NpuPlatform("a2a3").bind_context(0)


def test_with_the_native_adapter_the_context_is_bound_through_it(
    stub_torch_npu: types.SimpleNamespace, monkeypatch: pytest.MonkeyPatch
) -> None:
    adapter = types.ModuleType("pypto._torch_npu")
    adapter.bind_context = lambda index: stub_torch_npu.calls.append(("adapter bind", index)) or 0x1000  # type: ignore[attr-defined]
    monkeypatch.setitem(npu_module._loaded, "pypto._torch_npu", adapter)
    npu_module.NpuPlatform("a2a3").bind_context(2)
    assert stub_torch_npu.calls == [("adapter bind", 2)]  # not torch_npu's set_device as well


def test_an_adapter_that_fails_to_bind_fails_the_binding(
    stub_torch_npu: types.SimpleNamespace, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(index: int) -> int:
        raise RuntimeError(f"bind_context({index}): torch_npu SetDevice failed with aclError 107001")

    adapter = types.ModuleType("pypto._torch_npu")
    adapter.bind_context = refuse  # type: ignore[attr-defined]
    monkeypatch.setitem(npu_module._loaded, "pypto._torch_npu", adapter)
    with pytest.raises(RuntimeError, match="aclError 107001"):
        npu_module.NpuPlatform("a2a3").bind_context(0)
    assert stub_torch_npu.calls == []  # no silent fallback to set_device


# -- what a failed torch_npu import means ------------------------------------------------------


@pytest.fixture
def broken_torch_npu(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """An installed torch_npu (a stand-in on sys.path) whose import fails with ``error``."""

    def install(error: str) -> None:
        (tmp_path / "torch_npu.py").write_text(f"raise ImportError({error!r})\n")
        monkeypatch.syspath_prepend(str(tmp_path))
        monkeypatch.delitem(sys.modules, "torch_npu", raising=False)
        monkeypatch.delitem(npu_module._loaded, "torch_npu", raising=False)

    return install


def test_an_installed_torch_npu_without_cann_libraries_names_cann(
    broken_torch_npu: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ASCEND_HOME_PATH", "/nowhere")
    broken_torch_npu("libascendcl.so: cannot open shared object file: No such file or directory")
    with pytest.raises(npu_module.NpuRuntimeUnavailable) as info:
        npu_module.NpuPlatform("a2a3").current_device()
    message = str(info.value)
    assert "CANN's environment is missing" in message
    assert "libascendcl.so" in message
    assert "set_env.sh" in message
    assert "pypto-torch[npu]" not in message  # the extra is installed; reinstalling it helps nothing


def test_an_installed_torch_npu_without_ascend_home_names_cann(
    broken_torch_npu: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME"):
        monkeypatch.delenv(name, raising=False)
    broken_torch_npu("cannot import name '_C' from partially initialized module 'torch_npu'")
    with pytest.raises(
        npu_module.NpuRuntimeUnavailable, match=r"CANN's environment is missing \(ASCEND_HOME_PATH"
    ):
        npu_module.NpuPlatform("a2a3").current_device()


def test_torch_backend_autoload_failure_is_explained_with_the_fix(tmp_path: Any) -> None:
    """torch imports every installed device backend (entry point group ``torch.backends``); an
    installed torch_npu without CANN then breaks ``import torch``, and so ``import pypto.torch``.
    A stand-in distribution registers such a backend in a child interpreter."""
    import os
    import subprocess

    site = tmp_path / "site"
    (site / "fake_npu_backend-1.0.dist-info").mkdir(parents=True)
    (site / "fake_npu_backend-1.0.dist-info" / "METADATA").write_text(
        "Name: fake-npu-backend\nVersion: 1.0\n"
    )
    (site / "fake_npu_backend-1.0.dist-info" / "entry_points.txt").write_text(
        "[torch.backends]\ntorch_npu = torch_npu:_autoload\n"
    )
    (site / "torch_npu.py").write_text(
        "raise ImportError('libhccl.so: cannot open shared object file: No such file or directory')\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}
    env.pop("TORCH_DEVICE_BACKEND_AUTOLOAD", None)

    def child(code: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120, check=False
        )

    r = child("import pypto.torch")
    assert r.returncode != 0
    assert "TORCH_DEVICE_BACKEND_AUTOLOAD=0" in r.stderr
    assert "CANN's environment is missing" in r.stderr
    assert "libhccl.so" in r.stderr
    env["TORCH_DEVICE_BACKEND_AUTOLOAD"] = "0"  # the fix it names
    r = child("import pypto.torch; print('imported')")
    assert r.returncode == 0, r.stderr
    assert "imported" in r.stdout
