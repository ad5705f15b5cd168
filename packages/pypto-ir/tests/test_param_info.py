"""ParamInfo: immutability, normalisation, JSON round trips and every rejection."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pypto.ir import Layout, ParamDirection, ParamInfo, SignatureError
from pypto.ir.dtypes import DataType
from pypto.ir.param_info import bind_complete_args, validate_param_names, validate_return_aliases

tensor_params = st.builds(
    ParamInfo,
    name=st.from_regex(r"[a-z_][a-z0-9_]{0,8}", fullmatch=True),
    direction=st.sampled_from(list(ParamDirection)),
    shape=st.lists(st.integers(-1, 4096), min_size=1, max_size=5),
    dtype=st.sampled_from(list(DataType)),
)
scalar_params = st.builds(
    ParamInfo,
    name=st.from_regex(r"[a-z_][a-z0-9_]{0,8}", fullmatch=True),
    direction=st.just(ParamDirection.IN),
    shape=st.none(),
    dtype=st.sampled_from(list(DataType)),
)


@given(st.one_of(tensor_params, scalar_params))
def test_json_round_trip(p: ParamInfo) -> None:
    data = p.to_json()
    assert isinstance(data["shape"], (list, type(None)))
    assert ParamInfo.from_json(data) == p


def test_shape_list_becomes_tuple_and_is_frozen() -> None:
    p = ParamInfo("x", "Out", [2, -1], "fp32")
    assert p.shape == (2, -1)
    assert p.direction is ParamDirection.OUT
    assert p.dtype is DataType.FP32
    assert p.is_dynamic
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.name = "y"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"name": "1x"}, "identifier"),
        ({"direction": "Sideways"}, "direction"),
        ({"dtype": "FP33"}, "dtype"),
        ({"shape": []}, "rank"),
        ({"shape": [2, -2]}, "shape entries"),
        ({"shape": [2, 1.5]}, "shape entries"),
        ({"shape": [True]}, "shape entries"),
        ({"shape": "ab"}, "sequence"),
        ({"shape": None, "direction": "Out"}, "scalar must be In"),
        ({"shape": None, "layout": "NZ"}, "no NZ"),
        ({"shape": [4], "layout": "NZ"}, "NZ layout"),
        ({"layout": "XY"}, "layout"),
    ],
)
def test_rejections(kwargs: dict[str, object], match: str) -> None:
    base: dict[str, object] = {"name": "x", "direction": "In", "shape": [4, 4], "dtype": "FP16"}
    base.update(kwargs)
    with pytest.raises(SignatureError, match=match):
        ParamInfo(**base)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("data", "match"),
    [
        ([], "expected an object"),
        ({"name": "x", "direction": "In", "dtype": "FP32"}, "missing"),
        ({"name": "x", "direction": "In", "dtype": "FP32", "shape": [1], "extra": 1}, "unknown"),
        ({"name": "x", "direction": "In", "dtype": "FP32", "shape": 3}, "array or null"),
    ],
)
def test_from_json_rejections(data: object, match: str) -> None:
    with pytest.raises(SignatureError, match=match):
        ParamInfo.from_json(data)  # type: ignore[arg-type]


SIG = (
    ParamInfo("a", "In", (4,), "FP32"),
    ParamInfo("alpha", "In", None, "FP32"),
    ParamInfo("out", "Out", (4,), "FP32", Layout.ND),
)


def test_names_must_be_unique() -> None:
    with pytest.raises(SignatureError, match="repeats"):
        validate_param_names((*SIG, ParamInfo("a", "In", (1,), "FP16")))


def test_return_aliases_may_repeat_and_index_full_signature() -> None:
    assert validate_return_aliases(SIG, [2, 0, 2]) == (2, 0, 2)


@pytest.mark.parametrize(
    ("aliases", "match"), [([1], "scalar"), ([3], "outside"), ([-1], "outside"), (["0"], "int")]
)
def test_return_alias_rejections(aliases: list[object], match: str) -> None:
    with pytest.raises(SignatureError, match=match):
        validate_return_aliases(SIG, aliases)  # type: ignore[arg-type]


def test_bind_complete_args() -> None:
    bound = bind_complete_args(SIG, ["A", 1.0, "O"])
    assert [(p.name, v) for p, v in bound] == [("a", "A"), ("alpha", 1.0), ("out", "O")]
    with pytest.raises(SignatureError, match="'out' is Out but was not supplied"):
        bind_complete_args(SIG, ["A", 1.0])
    with pytest.raises(SignatureError, match="passed None"):
        bind_complete_args(SIG, ["A", 1.0, None])


def test_wire_codes_follow_wire_md() -> None:
    codes = {d.value: d.wire_code for d in DataType}
    assert codes["FP32"] == 0
    assert codes["BF16"] == 6
    assert codes["FP4E2M1"] == 14
    assert sorted(codes.values()) == list(range(15))


def test_array_names_round_trip_and_aliases() -> None:
    for dt in DataType:
        assert DataType.from_array_name(dt.array_name) is dt
        assert DataType.from_array_name("torch." + dt.array_name) is dt
    assert DataType.from_array_name("half") is DataType.FP16
    assert DataType.from_array_name("long") is DataType.INT64
    assert DataType.from_array_name("float64") is None
