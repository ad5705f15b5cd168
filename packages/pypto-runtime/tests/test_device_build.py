"""The device path for NPU platforms (a2a3, a5): sources written, built with CANN's compiler
where ASCEND_HOME_PATH provides one (a stub that records its argv here), else
DeviceBuildUnavailable naming what is missing and where the sources are. No CANN, no NPU."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from runtime_programs import SCALED_ADD_SOURCE

from pypto.runtime import DeviceBuildUnavailable, compile, device_build
from pypto.runtime.cli import main
from pypto.runtime.store import ArtifactStore

KERNEL = SCALED_ADD_SOURCE
ARGS = (
    "--arg",
    "a=16x16:FP32",
    "--arg",
    "b=16x16:FP32",
    "--arg",
    "alpha=RUNTIME:FP32",
    "--arg",
    "out=16x16:FP32",
)


@pytest.fixture(autouse=True)
def _no_cann(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ASCEND_HOME_PATH", "PTO_ISA_ROOT", "PTO_ISA_CXX"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def kernels(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    folder = tmp_path / "src"
    folder.mkdir()
    (folder / "kernels.py").write_text(KERNEL)
    monkeypatch.chdir(folder)
    return folder


def _cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(args))
        except SystemExit as exc:
            code = int(exc.code or 0)
    return code, out.getvalue(), err.getvalue()


def _jit(folder: Path) -> Any:
    spec = importlib.util.spec_from_file_location("device_build_kernels", folder / "kernels.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["device_build_kernels"] = module
    spec.loader.exec_module(module)
    return module.scaled_add


def _placeholders() -> tuple[Any, ...]:
    import numpy as np

    a = np.zeros((16, 16), np.float32)
    return a, a.copy(), np.float32(1.0), a.copy()


def _fake_cann(tmp_path: Path, rel: str = "compiler/ccec_compiler/bin/bisheng") -> tuple[Path, Path]:
    home = tmp_path / "Ascend"
    compiler = home / rel
    compiler.parent.mkdir(parents=True)
    log = tmp_path / "bisheng.argv"
    compiler.write_text(
        "#!/bin/sh\n"
        'if [ "$1" = --version ]; then echo "bisheng (stub) 0.0"; exit 0; fi\n'
        f"printf '%s\\n' \"$@\" >> '{log}'; printf '\\n' >> '{log}'\n"
        'out=""; prev=""\n'
        'for a in "$@"; do if [ "$prev" = -o ]; then out="$a"; fi; prev="$a"; done\n'
        'printf "device binary" > "$out"\n'
    )
    compiler.chmod(0o755)
    return home, log


def _fake_pto_isa(tmp_path: Path) -> Path:
    root = tmp_path / "pto-isa"
    (root / "include/pto").mkdir(parents=True)
    (root / "include/pto/pto-inst.hpp").write_text("#pragma once\n")
    return root


def test_emit_sources_writes_the_device_build_without_cann(kernels: Path, tmp_path: Path) -> None:
    dest = tmp_path / "dev"
    code, out, err = _cli(
        "compile", "kernels.py::scaled_add", *ARGS, "--platform", "a2a3", "--emit-sources", str(dest)
    )
    assert code == 0, err
    assert str(dest) in out
    (kernel,) = (dest / "kernels").glob("scaled_add*.cpp")
    assert list((dest / "orchestration").glob("*.cpp"))
    assert (dest / "include/simpler/kernel_abi.hpp").is_file()
    plan = json.loads((dest / "build.json").read_text())
    assert plan["platform"] == "a2a3"
    job = next(j for j in plan["jobs"] if j["source"] == f"kernels/{kernel.name}")
    assert "--cce-aicore-arch=dav-c220-vec" in job["flags"]
    script = (dest / "build.sh").read_text()
    assert "__CPU_SIM" not in script
    assert "__CPU_SIM" not in json.dumps(plan)
    assert "ASCEND_HOME_PATH" in script
    assert "PTO_ISA_ROOT" in script


def test_emit_sources_is_for_npu_platforms_and_fresh_directories(kernels: Path, tmp_path: Path) -> None:
    code, _, err = _cli("compile", "kernels.py::scaled_add", *ARGS, "--emit-sources", str(tmp_path / "d"))
    assert code == 2
    assert "NPU platform" in err
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "x").write_text("")
    code, _, err = _cli(
        "compile", "kernels.py::scaled_add", *ARGS, "--platform", "a5", "--emit-sources", str(busy)
    )
    assert code == 2
    assert "not an empty directory" in err


def test_compile_without_cann_names_what_is_missing_and_where(kernels: Path, tmp_path: Path) -> None:
    fn = _jit(kernels)
    with pytest.raises(DeviceBuildUnavailable) as info:
        compile(fn, *_placeholders(), platform="a2a3")
    msg = str(info.value)
    assert "ASCEND_HOME_PATH is not set" in msg
    assert "PTO_ISA_ROOT is not set" in msg
    assert str(info.value.sources) in msg
    assert (info.value.sources / "build.sh").is_file()
    assert list((info.value.sources / "kernels").glob("scaled_add*.cpp"))
    store = ArtifactStore(tmp_path / "store")
    assert [e.state for e in store.entries()] == ["GENERATED"]  # the sources are kept


def test_ascend_home_without_a_compiler(
    kernels: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "empty-cann").mkdir()
    monkeypatch.setenv("ASCEND_HOME_PATH", str(tmp_path / "empty-cann"))
    monkeypatch.setenv("PTO_ISA_ROOT", str(_fake_pto_isa(tmp_path)))
    with pytest.raises(
        DeviceBuildUnavailable, match=r"holds no CANN compiler.*ccec_compiler/bin/bisheng"
    ) as info:
        compile(_jit(kernels), *_placeholders(), platform="a5")
    assert "PTO_ISA_ROOT" not in info.value.missing


@pytest.mark.parametrize(("platform", "arch"), [("a2a3", "dav-c220-vec"), ("a5", "dav-c310-vec")])
def test_build_with_a_stub_cann_compiler(
    kernels: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, platform: str, arch: str
) -> None:
    home, log = _fake_cann(tmp_path)
    root = _fake_pto_isa(tmp_path)
    monkeypatch.setenv("ASCEND_HOME_PATH", str(home))
    monkeypatch.setenv("PTO_ISA_ROOT", str(root))
    prog = compile(_jit(kernels), *_placeholders(), platform=platform)
    art = prog.artifact
    (kernel_so,) = (art.path / "prebuilt/kernels").glob("scaled_add*.so")
    assert kernel_so.read_bytes() == b"device binary"
    assert (art.path / "prebuilt/orchestration.so").read_bytes() == b"device binary"
    assert (art.path / "device/build.sh").is_file()
    calls = [block.splitlines() for block in log.read_text().split("\n\n") if block.strip()]
    kernel = next(c for c in calls if any("/kernels/scaled_add" in a for a in c))
    assert "-xcce" in kernel
    assert f"--cce-aicore-arch={arch}" in kernel
    assert f"-I{root / 'include'}" in kernel
    assert not any("__CPU_SIM" in a for a in kernel)
    orch = next(c for c in calls if c is not kernel)
    assert "-xc++" in orch
    identity = json.loads((art.path / "prebuilt/toolchain.json").read_text())
    assert identity["backend"] == "cann"
    assert identity["compiler"] == str(home / "compiler/ccec_compiler/bin/bisheng")
    store = ArtifactStore(tmp_path / "store")
    assert [e.state for e in store.entries()] == ["READY"]


def test_core_types_map_to_aicore_archs() -> None:
    assert device_build.aicore_arch("a2a3", "AIC") == "dav-c220-cube"
    assert device_build.aicore_arch("a5", "AIV") == "dav-c310-vec"
    with pytest.raises(ValueError, match="expected core type AIV or AIC"):
        device_build.aicore_arch("a2a3", "GPU")


def test_compile_command_without_cann_points_at_emit_sources(kernels: Path) -> None:
    code, _, err = _cli("compile", "kernels.py::scaled_add", *ARGS, "--platform", "a2a3")
    assert code == 1
    assert "ASCEND_HOME_PATH is not set" in err
    assert "--emit-sources DIR" in err
