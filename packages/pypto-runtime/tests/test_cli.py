"""The cache CLI, run as a real subprocess against a populated store."""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import subprocess
import sys
from pathlib import Path

from pypto.runtime import settings
from pypto.runtime.artifact_runtime import ArtifactRuntime
from pypto.runtime.cli import main
from pypto.runtime.store import ArtifactStore


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    """Run the CLI in this process (fast); the `python -m` path is tested once below."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(["cache", *args])
        except SystemExit as exc:
            code = int(exc.code or 0)
    return subprocess.CompletedProcess(["cache", *args], code, out.getvalue(), err.getvalue())


def _populate(n: int) -> list[str]:
    keys = [hashlib.sha256(str(i).encode()).hexdigest() for i in range(n)]
    rt = ArtifactRuntime(ArtifactStore(settings.cache_dir()))
    for k in keys:

        def gen(path: Path, k: str = k) -> None:
            (path / "compiled_meta.json").write_text(k)

        rt.obtain(k, generate=gen)
    return keys


def test_stat_ls_verify_prune_clear() -> None:
    keys = _populate(3)
    out = _cli("stat")
    assert out.returncode == 0, out.stderr
    assert str(settings.cache_dir()) in out.stdout
    assert "GENERATED entries" in out.stdout
    assert "3 (" in out.stdout
    out = _cli("ls")
    assert out.returncode == 0
    assert all(k[:24] in out.stdout for k in keys)

    assert _cli("verify").returncode == 0
    store = ArtifactStore(settings.cache_dir())
    damaged = store.entry_dir(keys[1], "GENERATED") / "compiled_meta.json"
    damaged.write_text("tampered")
    out = _cli("verify")
    assert out.returncode == 1
    assert "1 invalid entry" in out.stdout
    (store.staging / f"{keys[0]}.1.deadbeef").mkdir(parents=True)  # a name the store gives
    out = _cli("prune")
    assert out.returncode == 0, out.stderr
    assert not damaged.exists()
    assert store.staging_leftovers() == []
    assert _cli("verify").returncode == 0
    out = _cli("clear")
    assert "removed 2 entries" in out.stdout
    assert list(store.entries()) == []


def test_usage_error() -> None:
    out = _cli("explode")
    assert out.returncode == 2
    assert "invalid choice" in out.stderr


def test_python_dash_m_entry_point() -> None:
    _populate(1)
    proc = subprocess.run(
        [sys.executable, "-m", "pypto.runtime", "cache", "ls"],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "160"},
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "GENERATED" in proc.stdout
