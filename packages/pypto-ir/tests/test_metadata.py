"""compiled_meta.json: round trips, atomic single write, schema 1/2 reload and every rejection."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pypto.ir.contract import Contract
from pypto.ir.dtypes import DataType
from pypto.ir.metadata import (
    META_FILE,
    ArtifactMetadata,
    KernelInfo,
    MetadataError,
    OrchestrationInfo,
    json_text,
    read_metadata,
    write_metadata,
)
from pypto.ir.param_info import ParamDirection, ParamInfo

names = st.from_regex(r"[a-z][a-z0-9_]{0,6}", fullmatch=True)


@st.composite
def metadata(draw: st.DrawFn) -> ArtifactMetadata:
    n_tensors = draw(st.integers(1, 4))
    n_scalars = draw(st.integers(0, 2))
    pnames = draw(
        st.lists(names, min_size=n_tensors + n_scalars, max_size=n_tensors + n_scalars, unique=True)
    )
    dtypes = st.sampled_from(list(DataType))
    params = [
        ParamInfo(
            pnames[i],
            draw(st.sampled_from(list(ParamDirection))),
            draw(st.lists(st.integers(-1, 64), min_size=1, max_size=4)),
            draw(dtypes),
        )
        for i in range(n_tensors)
    ] + [ParamInfo(pnames[n_tensors + j], "In", None, draw(dtypes)) for j in range(n_scalars)]
    contract = draw(st.sampled_from(list(Contract)))
    aliases = tuple(draw(st.lists(st.integers(0, n_tensors - 1), max_size=3)))
    kernels = tuple(
        KernelInfo(
            f"k{i}",
            i,
            draw(st.sampled_from(["AIV", "AIC"])),
            f"kernels/k{i}.cpp",
            "kernel_entry",
            tuple(params[:n_tensors]),
        )
        for i in range(draw(st.integers(0, 3)))
    )
    return ArtifactMetadata(
        name="prog",
        entry="main",
        contract=contract,
        platform=draw(st.sampled_from(["a2a3sim", "a5sim", "a2a3", "a5"])),
        runtime=draw(st.sampled_from(["tensormap_and_ringbuffer", "host_build_graph"])),
        params=tuple(params),
        lowered_params=tuple(params),
        return_count=len(aliases),
        return_aliases=aliases,
        orchestration=OrchestrationInfo(
            "orchestration/main.cpp", "main_orch", "main_orch_needs", n_tensors, n_scalars
        ),
        kernels=kernels,
    )


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(meta=metadata())
def test_round_trip_through_the_file(
    meta: ArtifactMetadata, tmp_path_factory: pytest.TempPathFactory
) -> None:
    d = tmp_path_factory.mktemp("meta")
    write_metadata(d, meta)
    back = read_metadata(d)
    assert back == meta
    assert back.capabilities == (meta.contract.value,)
    assert read_metadata(d, require=meta.contract) == meta
    other = Contract.KERNEL if meta.contract is Contract.PROGRAM else Contract.PROGRAM
    with pytest.raises(MetadataError, match=r"lacks the .* capability"):
        read_metadata(d, require=other)
    data = json.loads((d / META_FILE).read_text())
    assert isinstance(data["params"][0]["shape"], list)


def _base() -> dict[str, Any]:
    params = [
        ParamInfo("a", "In", (16, 16), "FP32"),
        ParamInfo("alpha", "In", None, "FP32"),
        ParamInfo("c", "Out", (16, 16), "FP32"),
    ]
    meta = ArtifactMetadata(
        name="p",
        entry="p",
        contract=Contract.KERNEL,
        platform="a2a3sim",
        runtime="tensormap_and_ringbuffer",
        params=tuple(params),
        lowered_params=tuple(params),
        return_count=1,
        return_aliases=(2,),
        orchestration=OrchestrationInfo("orchestration/p.cpp", "p_orch", "p_orch_needs", 2, 1),
        kernels=(
            KernelInfo("k", 0, "AIV", "kernels/k.cpp", "kernel_entry", (params[0], params[2], params[1])),
        ),
    )
    return meta.to_json()


def test_write_is_once_and_leaves_no_temp(tmp_path: Path) -> None:
    meta = ArtifactMetadata.from_json(_base())
    write_metadata(tmp_path, meta)
    with pytest.raises(FileExistsError, match="written once"):
        write_metadata(tmp_path, meta)
    assert [p.name for p in tmp_path.iterdir()] == [META_FILE]


def test_writer_refuses_what_the_reader_would_reject(tmp_path: Path) -> None:
    bad = ArtifactMetadata.from_json(_base())
    object.__setattr__(bad, "capabilities", ("PROGRAM", "KERNEL"))
    with pytest.raises(MetadataError, match="capabilities"):
        write_metadata(tmp_path, bad)
    assert not (tmp_path / META_FILE).exists()


def _drop(key: str) -> Any:
    def f(d: dict[str, Any]) -> None:
        del d[key]

    return f


def _set(path: str, value: Any) -> Any:
    def f(d: dict[str, Any]) -> None:
        *head, last = path.split(".")
        cur: Any = d
        for h in head:
            cur = cur[int(h)] if h.isdigit() else cur[h]
        if last.isdigit():
            cur[int(last)] = value
        else:
            cur[last] = value

    return f


REJECTIONS = [
    ("no schema", _drop("schema"), "missing field 'schema'"),
    ("schema 4", _set("schema", 4), "schema 4 is not supported"),
    ("schema bool", _set("schema", True), "expected int"),
    ("no name", _drop("name"), "missing field 'name'"),
    ("empty entry", _set("entry", ""), "must not be empty"),
    ("platform", _set("platform", "tpu"), "platform"),
    ("no params", _drop("params"), "missing field 'params'"),
    ("bad param", _set("params.0.dtype", "FP33"), "dtype"),
    ("dup names", _set("params.1.name", "a"), "repeats"),
    ("no contract", _drop("contract"), "missing field 'contract'"),
    ("bad contract", _set("contract", "BOTH"), "contract"),
    ("dual capability", _set("capabilities", ["PROGRAM", "KERNEL"]), "must be exactly"),
    ("capability mismatch", _set("capabilities", ["PROGRAM"]), "must be exactly"),
    ("mode", _set("execution_mode", "ONBOARD"), "execution_mode"),
    ("backend", _set("backend", "cann"), "backend"),
    ("lowered count", _set("lowered_params", []), "lowered_params"),
    ("alias scalar", _set("return_aliases", [1]), "scalar"),
    ("alias range", _set("return_aliases", [7]), "outside the signature"),
    ("alias count", _set("return_aliases", []), "one alias per return value"),
    ("no aliases", _drop("return_aliases"), "missing field 'return_aliases'"),
    ("negative return count", _set("return_count", -1), ">= 0"),
    ("orch counts", _set("orchestration.tensor_count", 3), "orchestration expects"),
    ("orch path", _set("orchestration.source", "../x.cpp"), "relative path"),
    ("kernel core", _set("kernels.0.core_type", "GPU"), "AIV or AIC"),
    ("func ids", _set("kernels.0.func_id", 3), "func_ids"),
    (
        "kernel scalar order",
        _set(
            "kernels.0.params",
            [
                {"name": "s", "direction": "In", "shape": None, "dtype": "FP32", "layout": "ND"},
                {"name": "t", "direction": "In", "shape": [1], "dtype": "FP32", "layout": "ND"},
            ],
        ),
        "tensors must come before scalars",
    ),
    ("runtime", _set("runtime", "other"), "runtime"),
    ("unknown field", _set("extra", 1), "unknown field"),
]


def _drop_kernel(key: str) -> Any:
    def f(d: dict[str, Any]) -> None:
        del d["kernels"][0][key]

    return f


REJECTIONS += [
    (f"kernel {k}", _drop_kernel(k), f"missing field kernels[0].'{k}'")
    for k in ("name", "func_id", "source", "entry", "params")
]


@pytest.mark.parametrize(("what", "mutate", "match"), REJECTIONS, ids=[r[0] for r in REJECTIONS])
def test_every_rejection(what: str, mutate: Any, match: str, tmp_path: Path) -> None:
    data = _base()
    mutate(data)
    (tmp_path / META_FILE).write_text(json.dumps(data))
    with pytest.raises(MetadataError) as info:
        read_metadata(tmp_path)
    assert match in str(info.value)
    assert str(tmp_path) in str(info.value)


def test_missing_and_corrupt_files(tmp_path: Path) -> None:
    with pytest.raises(MetadataError, match="not found"):
        read_metadata(tmp_path)
    (tmp_path / META_FILE).write_text("{truncated")
    with pytest.raises(MetadataError, match=r"not valid JSON.*recompile"):
        read_metadata(tmp_path)


def _legacy(schema: int) -> dict[str, Any]:
    d = _base()
    keep = {"name", "entry", "platform", "params", "orchestration", "kernels"}
    if schema == 2:
        keep.add("return_count")
    out = {k: copy.deepcopy(v) for k, v in d.items() if k in keep}
    out["schema"] = schema
    return out


@pytest.mark.parametrize("schema", [1, 2])
def test_schema_1_and_2_load_as_program_only(schema: int, tmp_path: Path) -> None:
    (tmp_path / META_FILE).write_text(json.dumps(_legacy(schema)))
    meta = read_metadata(tmp_path)
    assert meta.contract is Contract.PROGRAM
    assert meta.capabilities == ("PROGRAM",)
    assert meta.lowered_params == meta.params
    assert meta.return_aliases == ()
    assert meta.return_count == (1 if schema == 2 else 0)
    assert read_metadata(tmp_path, require=Contract.PROGRAM) == meta
    with pytest.raises(MetadataError, match=f"schema {schema} metadata loads as PROGRAM only.*recompile"):
        read_metadata(tmp_path, require=Contract.KERNEL)


_json_leaf = st.none() | st.booleans() | st.integers() | st.floats() | st.text()
_json_data = st.recursive(
    _json_leaf,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@given(_json_data)
def test_json_text_is_json_dumps_text(data: object) -> None:
    # compiled_meta.json's writer: json.dumps(indent=2)'s text, or json.dumps itself
    assert json_text(data) == json.dumps(data, indent=2)


def test_json_text_leaves_other_values_to_json_dumps() -> None:
    data = {"a": (1, 2), 3: "int key"}
    assert json_text(data) == json.dumps(data, indent=2)
    with pytest.raises(TypeError):
        json_text({"x": object()})
