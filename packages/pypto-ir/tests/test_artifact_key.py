"""Every key of the stack (pypto/ir/artifact_key.py): canonical JSON digests, stable across
processes, each changing with each of its ingredients."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pypto.ir import artifact_key
from pypto.ir.artifact_key import ArtifactKey, ToolchainIdentity, canonical_json
from pypto.ir.contract import Contract

TC = ToolchainIdentity({"compiler": "sha256:abc", "flags": "-O2 -fPIC", "headers": "sha256:def"})


def key(**over: object) -> ArtifactKey:
    args: dict[str, object] = {
        "toolchain": TC,
        "source": {"add": "sha256:1"},
        "specialization": {"shapes": [[16, 16]], "dtype": "FP32"},
        "contract": Contract.PROGRAM,
        "platform": "a2a3sim",
    }
    args.update(over)
    return ArtifactKey.compute(**args)  # type: ignore[arg-type]


def test_key_is_a_sha256_of_canonical_json() -> None:
    k = key()
    assert len(k.hexdigest()) == 64
    assert k == key()
    assert '"contract":"PROGRAM"' in k.material


@pytest.mark.parametrize(
    "change",
    [
        {"contract": Contract.KERNEL},
        {"platform": "a5sim"},
        {"source": {"add": "sha256:2"}},
        {"specialization": {"shapes": [[16, 32]], "dtype": "FP32"}},
        {"toolchain": TC.extended(compiler="sha256:other")},
        {"extra": {"runtime": "host_build_graph"}},
    ],
)
def test_every_input_changes_the_key(change: dict[str, object]) -> None:
    assert key(**change) != key()


@settings(max_examples=30, deadline=None)
@given(
    st.dictionaries(
        st.text(min_size=1, max_size=5),
        st.one_of(st.integers(), st.text(max_size=5), st.booleans()),
        max_size=6,
    )
)
def test_canonical_json_ignores_insertion_order(d: dict[str, object]) -> None:
    reordered = dict(reversed(list(d.items())))
    assert canonical_json(d) == canonical_json(reordered)


def test_unstable_values_are_refused() -> None:
    with pytest.raises(TypeError, match="no canonical form"):
        canonical_json({"fn": object()})
    with pytest.raises(ValueError, match="non-finite"):
        canonical_json({"x": float("nan")})
    with pytest.raises(TypeError, match="digest/version string"):
        ToolchainIdentity({"compiler": 1.5})


def test_key_is_stable_across_processes() -> None:
    code = (
        "from pypto.ir.artifact_key import ArtifactKey, ToolchainIdentity\n"
        "tc = ToolchainIdentity({'compiler': 'sha256:abc', 'flags': '-O2 -fPIC', 'headers': 'sha256:def'})\n"
        "print(ArtifactKey.compute(toolchain=tc, source={'add': 'sha256:1'},"
        " specialization={'shapes': [[16, 16]], 'dtype': 'FP32'}, contract='PROGRAM', platform='a2a3sim').digest)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONHASHSEED": "123"},
    )
    k = ArtifactKey.compute(
        toolchain=TC,
        source={"add": "sha256:1"},
        specialization={"shapes": [[16, 16]], "dtype": "FP32"},
        contract="PROGRAM",
        platform="a2a3sim",
    )
    assert out.stdout.strip() == k.digest


def test_default_identity_names_pypto_ir_and_codegen() -> None:
    comps = dict(ToolchainIdentity.default().components)
    assert set(comps) == {"pypto_ir", "codegen"}


# -- every key of the stack comes from this module: each changes with each of its ingredients --


def _program(**over: object) -> str:
    material = artifact_key.program_material(
        over.pop("program", "program text"),
        kind=str(over.pop("kind", "jit")),
        entry=str(over.pop("entry", "main")),
        sources=over.pop("sources", {"main": "d1"}),  # type: ignore[arg-type]
        call_key=over.pop("call_key", [["T", [16], "FP32"]]),
        captured=over.pop("captured", {"f.ROWS": "16"}),  # type: ignore[arg-type]
    )
    args: dict[str, object] = {
        "toolchain": TC,
        "contract": Contract.PROGRAM,
        "platform": "a2a3sim",
        "runtime": "host_build_graph",
        "settings": {"PYPTO_X": "1"},
    }
    args.update(over)
    return artifact_key.program_key(material, **args).digest  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "change",
    [
        {"program": "other program text"},
        {"kind": "ir"},
        {"entry": "other"},
        {"sources": {"main": "d2"}},
        {"call_key": [["T", [32], "FP32"]]},
        {"captured": {"f.ROWS": "32"}},
        {"toolchain": TC.extended(codegen="99")},
        {"contract": Contract.KERNEL},
        {"platform": "a5sim"},
        {"runtime": "tensormap_and_ringbuffer"},
        {"settings": {"PYPTO_X": "2"}},
    ],
)
def test_a_program_key_changes_with_each_ingredient(change: dict[str, object]) -> None:
    assert _program(**change) != _program()
    assert _program() == _program()


def test_a_binary_key_changes_with_its_toolchain_and_each_source() -> None:
    base = artifact_key.binary_key("tc1", {"k.cpp": "int x;", "k.h": ""})
    assert base == artifact_key.binary_key("tc1", {"k.h": "", "k.cpp": "int x;"})
    assert base != artifact_key.binary_key("tc2", {"k.cpp": "int x;", "k.h": ""})
    assert base != artifact_key.binary_key("tc1", {"k.cpp": "int y;", "k.h": ""})
    assert base != artifact_key.binary_key("tc1", {"k.cpp": "int x;", "k2.h": ""})


def test_a_plan_key_changes_with_the_plan_and_its_per_rank_keys() -> None:
    plan = {"kind": "distributed", "world_size": 2, "program_keys": ["a" * 64, "b" * 64]}
    base = artifact_key.plan_key(plan)
    assert base == artifact_key.plan_key(dict(reversed(list(plan.items()))))
    assert base != artifact_key.plan_key({**plan, "world_size": 4})
    assert base != artifact_key.plan_key({**plan, "program_keys": ["a" * 64, "c" * 64]})
    assert (
        base
        != artifact_key.program_key(  # a plan key is never a program's key
            plan, toolchain=TC, contract=Contract.PROGRAM, platform="a2a3sim", runtime="r", settings={}
        ).digest
    )


def test_ingredient_digests_follow_their_content(tmp_path: Path) -> None:
    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "a.hpp").write_text("A")
    before = artifact_key.tree_digest(tmp_path)
    (tmp_path / "inc" / "a.hpp").write_text("B")
    changed = artifact_key.tree_digest(tmp_path)
    (tmp_path / "inc" / "a.hpp").rename(tmp_path / "inc" / "b.hpp")
    renamed = artifact_key.tree_digest(tmp_path)
    assert len({before, changed, renamed}) == 3

    def one() -> int:
        return 1

    def two() -> int:
        return 2

    assert artifact_key.source_digest(one) != artifact_key.source_digest(two)
    assert TC.digest != TC.extended(flags="-O3").digest


def test_no_other_module_hashes_key_material() -> None:
    """Keys are built in pypto/ir/artifact_key.py only. What else may call hashlib: file integrity
    (the store's manifest), message MACs (the distributed channel), and simpler-native and the
    native describe_call build, below or beside pypto-ir, digesting their own binaries."""
    allowed = {
        "pypto-ir/src/pypto/ir/artifact_key.py",
        "pypto-runtime/src/pypto/runtime/manifest.py",
        "pypto-runtime/src/pypto/runtime/distributed/channel.py",
        "pypto-torch/src/pypto/torch/_native_describe.py",
    }
    packages = Path(__file__).resolve().parents[2]
    found = {
        path.relative_to(packages).as_posix()
        for path in packages.glob("*/src/pypto/**/*.py")
        if "hashlib" in path.read_text(encoding="utf-8")
    }
    assert found <= allowed, sorted(found - allowed)
