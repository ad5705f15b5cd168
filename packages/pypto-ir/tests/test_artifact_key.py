"""ArtifactKey and ToolchainIdentity: canonical JSON digests, stable across processes."""

from __future__ import annotations

import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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
