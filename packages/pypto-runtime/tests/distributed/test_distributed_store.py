"""The plan of a multi-chip program is an artifact-store entry, beside its per-rank artifacts.

Every test runs on a store of its own (``PYPTO_CACHE_DIR``), so that what it counts (compiles,
entries) is its own. The per-device compile is counted by wrapping ``compile_to_files``, the
single-chip compiler the store calls on a miss: a store hit calls it zero times. Two fresh
processes compile the same program at once into one empty store. No test here starts ranks: a
reloaded plan equals the compiled one, which the other distributed tests run.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torch.distributed")

import pypto.language as pl  # noqa: E402
import pypto.language.distributed as pld  # noqa: E402
import pypto.runtime.api as runtime_api  # noqa: E402
from pypto.ir import DistributedConfig  # noqa: E402
from pypto.runtime import RunConfig  # noqa: E402
from pypto.runtime.cli import main as cli_main  # noqa: E402
from pypto.runtime.distributed import DistributedCompiledProgram, MissingStoreEntry  # noqa: E402
from pypto.runtime.manifest import InvalidEntry  # noqa: E402
from pypto.runtime.store import ArtifactStore  # noqa: E402

N = 8


@pl.jit
def _per_rank(
    x: pl.Tensor[[1, N], pl.FP32],
    y: pl.Out[pl.Tensor[[1, N], pl.FP32]],
    w: pld.DistributedTensor[[1, N], pl.FP32],
    rank: pl.Scalar[pl.INT32],
):
    with pl.at(level=pl.Level.CORE_GROUP):
        w = pl.store(pl.load(x, [0, 0], [1, N]), [0, 0], w)
        back = pl.load(w, [0, 0], [1, N])
        y = pl.store(pl.add(pl.add(back, back), pl.cast(rank, target_type=pl.FP32)), [0, 0], y)
    return y


@pl.jit.host
def store_host(x: pl.Tensor, y: pl.Out[pl.Tensor]):
    buf = pld.alloc_window_buffer([1, N], dtype=pl.FP32)
    for r in pl.range(pld.world_size()):
        _per_rank(x[r], y[r], pld.window(buf, [1, N], dtype=pl.FP32), r, device=r)


def compile_store_host() -> DistributedCompiledProgram:
    """The program every test compiles (the fresh processes too)."""
    x = torch.zeros((2, 1, N))
    config = RunConfig(distributed_config=DistributedConfig(device_ids=[0, 1]))
    return store_host.compile(x, torch.zeros_like(x), config=config)


class _Compiles:
    """Counts the single-chip compiles (``compile_to_files`` calls); ``fail`` makes them raise."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, *, fail: bool = False) -> None:
        self.count = 0
        real = runtime_api.compile_to_files

        def counting(*args: object, **kwargs: object) -> object:
            self.count += 1
            if fail:
                raise AssertionError("a per-device program was compiled")
            return real(*args, **kwargs)

        monkeypatch.setattr(runtime_api, "compile_to_files", counting)


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ArtifactStore:
    root = tmp_path / "store"
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(root))
    return ArtifactStore(root)


def _cache(*args: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = cli_main(["cache", *args])
    assert code == 0, out.getvalue()
    return out.getvalue()


def test_the_plan_is_a_store_entry_naming_rank_artifacts_by_key(
    store: ArtifactStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    compiles = _Compiles(monkeypatch)
    compiled = compile_store_host()
    assert compiles.count == 1  # both ranks share one artifact (the rank is a runtime scalar)
    assert compiled.output_dir == store.entry_dir(compiled.key)
    assert os.fspath(compiled) == str(compiled.output_dir)
    assert sorted(p.name for p in compiled.output_dir.iterdir()) == ["manifest.json", "plan.json"]
    text = (compiled.output_dir / "plan.json").read_text()
    assert str(store.root) not in text  # keys, not paths
    plan = json.loads(text)
    assert (plan["schema"], plan["kind"], plan["world_size"], plan["device_ids"]) == (
        2,
        "distributed",
        2,
        [0, 1],
    )
    (rank_key,) = plan["program_keys"]
    assert [d["program"] for d in plan["dispatches"]] == [0, 0]
    assert compiled.plan.programs == (str(store.entry_dir(rank_key)),)
    assert store.lookup(rank_key) is not None
    manifest = json.loads((compiled.output_dir / "manifest.json").read_text())
    assert (manifest["key"], [f["path"] for f in manifest["files"]]) == (compiled.key, ["plan.json"])

    # the listing knows both entries; the plan's row says what it is
    rows = _cache("ls").splitlines()
    row = next(r for r in rows if compiled.key[:24] in r)
    assert "store_host" in row
    assert "distributed" in row
    assert "2 ranks" in row
    assert any(rank_key[:24] in r and "PROGRAM" in r for r in rows)

    # a second compile hits both entries: no per-device compile, the same entry
    monkeypatch.undo()
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(store.root))
    _Compiles(monkeypatch, fail=True)
    again = compile_store_host()
    assert (again.key, again.output_dir, again.plan) == (compiled.key, compiled.output_dir, compiled.plan)

    # reloaded from the entry (or by key): the same plan, its artifacts resolved in the store
    loaded = DistributedCompiledProgram.load(compiled.key)
    assert DistributedCompiledProgram.from_dir(compiled.output_dir).plan == loaded.plan == compiled.plan
    assert (loaded.key, loaded.output_dir) == (compiled.key, compiled.output_dir)


def test_a_missing_or_corrupt_part_is_named_or_rebuilt(
    store: ArtifactStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    compiled = compile_store_host()
    (rank_key,) = compiled.plan.program_keys
    rank_dir = store.entry_dir(rank_key)

    # a per-rank artifact corrupted in the store: loading names its key; compiling rebuilds it
    victim = next(p for p in sorted(rank_dir.rglob("*")) if p.is_file() and p.name != "manifest.json")
    victim.chmod(0o600)
    victim.write_bytes(victim.read_bytes() + b"\0")
    with pytest.raises(MissingStoreEntry, match=rf"program 0 \(ranks \[0, 1\]\), key {rank_key}, is invalid"):
        DistributedCompiledProgram.from_dir(compiled.output_dir)
    compiles = _Compiles(monkeypatch)
    rebuilt = compile_store_host()
    assert compiles.count == 1
    assert rebuilt.key == compiled.key
    assert store.lookup(rank_key) is not None

    # the same when the per-rank entry is gone (pruned, cleared by hand)
    with store.lock(rank_key):
        store.discard(rank_key, "READY")
    with pytest.raises(MissingStoreEntry, match=rf"key {rank_key}, is not in the store"):
        DistributedCompiledProgram.load(compiled.key)

    # a corrupted plan.json: the entry is invalid (a load names why); prune removes it; a compile
    # writes it again
    plan_file = compiled.output_dir / "plan.json"
    plan_file.chmod(0o600)
    plan_file.write_text(plan_file.read_text().replace('"store_host"', '"other_host"'))
    with pytest.raises(InvalidEntry, match=r"plan.json: SHA-256 does not match the manifest"):
        DistributedCompiledProgram.from_dir(compiled.output_dir)
    with pytest.raises(
        MissingStoreEntry, match=rf"distributed entry {compiled.key}: invalid \(plan.json: SHA-256"
    ):
        DistributedCompiledProgram.load(compiled.key)
    assert store.prune()["invalid"] == 1
    assert store.lookup(compiled.key) is None
    again = compile_store_host()
    assert again.key == compiled.key
    assert store.lookup(compiled.key) is not None

    # clear removes distributed entries like any other
    assert store.clear() == 2
    assert list(store.entries()) == []


_FRESH = textwrap.dedent(
    """
    import importlib.util, json, sys
    import pypto.runtime.api as api
    calls = []
    real = api.compile_to_files
    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)
    api.compile_to_files = counting
    spec = importlib.util.spec_from_file_location("dstore_program", sys.argv[1])
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    compiled = module.compile_store_host()
    print(json.dumps({"key": compiled.key, "compiles": len(calls), "dir": str(compiled.output_dir)}))
    """
)


def test_two_fresh_processes_compiling_at_once_publish_one_entry(store: ArtifactStore) -> None:
    env = {**os.environ, "PYPTO_CACHE_DIR": str(store.root), "PYTHONPATH": os.pathsep.join(sys.path)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _FRESH, __file__],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    results = []
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
        results.append(json.loads(out.strip().splitlines()[-1]))
    assert results[0]["key"] == results[1]["key"]
    assert results[0]["dir"] == results[1]["dir"] == str(store.entry_dir(results[0]["key"]))
    # one process compiled the per-device program; the other found it in the store
    assert sorted(r["compiles"] for r in results) == [0, 1]
    assert len(list(store.entries())) == 2  # the plan and its one per-rank artifact
    assert store.staging_leftovers() == []
