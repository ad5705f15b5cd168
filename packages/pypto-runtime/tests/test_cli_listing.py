"""``cache ls`` tells entries of one program apart; ``cache prune`` lists what it removed."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
from pathlib import Path

from pypto.runtime import settings
from pypto.runtime.artifact_runtime import ArtifactRuntime
from pypto.runtime.cli import main
from pypto.runtime.store import ArtifactStore


def _cli(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        try:
            code = main(["cache", *args])
        except SystemExit as exc:
            code = int(exc.code or 0)
    return code, out.getvalue()


def _meta(name: str, shape: list[int], dtype: str, contract: str) -> dict[str, object]:
    return {
        "name": name,
        "platform": "a2a3sim",
        "contract": contract,
        "params": [
            {"name": "a", "direction": "In", "shape": shape, "dtype": dtype},
            {"name": "alpha", "direction": "In", "shape": None, "dtype": "FP32", "runtime": True},
            {"name": "out", "direction": "Out", "shape": [-1, shape[1]], "dtype": dtype},
        ],
    }


def _store(entries: dict[str, dict[str, object]]) -> dict[str, str]:
    rt = ArtifactRuntime(ArtifactStore(settings.cache_dir()))
    keys = {}
    for label, meta in entries.items():
        key = hashlib.sha256(label.encode()).hexdigest()

        def gen(path: Path, meta: dict[str, object] = meta) -> None:
            (path / "compiled_meta.json").write_text(json.dumps(meta))

        rt.obtain(key, generate=gen)
        keys[label] = key
    return keys


def test_ls_shows_signature_and_contract_of_same_named_entries() -> None:
    keys = _store(
        {
            "small": _meta("scaled_add", [16, 32], "FP32", "PROGRAM"),
            "big": _meta("scaled_add", [64, 64], "FP16", "KERNEL"),
        }
    )
    code, out = _cli("ls")
    assert code == 0
    rows = {label: next(ln for ln in out.splitlines() if key[:24] in ln) for label, key in keys.items()}
    assert "a:16x32 FP32, alpha:FP32*, out:?x32 FP32" in rows["small"]
    assert "PROGRAM" in rows["small"]
    assert "a:64x64 FP16, alpha:FP32*, out:?x64 FP16" in rows["big"]
    assert "KERNEL" in rows["big"]


def test_prune_names_each_removed_entry() -> None:
    keys = _store(
        {
            "kept": _meta("kept_prog", [8, 8], "FP32", "PROGRAM"),
            "bad": _meta("bad_prog", [4, 4], "INT32", "PROGRAM"),
        }
    )
    store = ArtifactStore(settings.cache_dir())
    (store.entry_dir(keys["bad"], "GENERATED") / "compiled_meta.json").write_text("tampered")
    code, out = _cli("prune")
    assert code == 0
    assert "entries removed" in out
    removed = [ln for ln in out.splitlines() if keys["bad"][:24] in ln]
    assert len(removed) == 1
    assert "?" in removed[0]  # its metadata was the tampered text: unreadable, said as '?'
    assert keys["kept"][:24] not in out
    assert "1 entry removed" in out


def test_prune_lists_program_and_signature_of_a_removed_entry() -> None:
    keys = _store({"old": _meta("old_prog", [4, 4], "INT32", "PROGRAM")})
    code, out = _cli("prune", "--older-than", "0")
    assert code == 0
    row = next(ln for ln in out.splitlines() if keys["old"][:24] in ln)
    assert "old_prog" in row
    assert "a:4x4 INT32" in row
    assert "1 entry removed" in out
