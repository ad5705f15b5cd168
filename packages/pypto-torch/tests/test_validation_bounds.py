"""pypto.torch._validation called directly: every bound at its edge, the symbolic (SymInt,
SymFloat, SymBool) branch, ctypes admission, and the full text of every error.

describe_call has fast paths of its own for the common cases, so the interop tests do not
reach every line here; these tests pin check_scalar, check_tensor_signature and the SymInt
range check on their own. Symbolic values come from a ShapeEnv: an *unbacked* SymInt (no
value known, so a range check can only record bounds), a *backed* one (a symbol with a hint,
so a bound that the hint breaks fails at once) and a SymInt that is a constant.
"""

from __future__ import annotations

import ctypes
import fractions
import math
import types
from decimal import Decimal

import pytest
import sympy
import torch
from torch._dynamo.source import ConstantSource
from torch.fx.experimental.sym_node import SymNode
from torch.fx.experimental.symbolic_shapes import ShapeEnv

from pypto.ir.param_info import ParamInfo
from pypto.torch._validation import (
    _BF16_OVERFLOW,
    ArgumentError,
    _check_symint_range,
    check_scalar,
    check_tensor_signature,
)

CALLER = "ops.f"


def _scalar(dtype: str) -> ParamInfo:
    return ParamInfo("s", "In", None, dtype)


def _where(dtype: str, index: int = 2) -> str:
    return f"{CALLER}: parameter 's' (#{index}, In {dtype})"


def _check(dtype: str, value: object, *, symbolic: bool = False) -> object:
    return check_scalar(2, _scalar(dtype), value, caller=CALLER, symbolic=symbolic)


def _refused(dtype: str, value: object, *, symbolic: bool = False) -> str:
    with pytest.raises(ArgumentError) as info:
        _check(dtype, value, symbolic=symbolic)
    return str(info.value)


def _unbacked(env: ShapeEnv) -> torch.SymInt:
    return env.create_unbacked_symint()


def _backed(env: ShapeEnv, hint: int, name: str = "x") -> torch.SymInt:
    sym = env.create_symbol(hint, ConstantSource(name), positive=None)
    value = env.create_symintnode(sym, hint=hint)
    assert isinstance(value, torch.SymInt)
    assert value.node.maybe_as_int() is None
    return value


def _constant(env: ShapeEnv, value: int) -> torch.SymInt:
    sym = torch.SymInt(SymNode(sympy.Integer(value), env, int, hint=value))
    assert sym.node.maybe_as_int() == value
    return sym


def _range(value: torch.SymInt, env: ShapeEnv) -> tuple[object, object]:
    vr = env.var_to_range[value.node.expr]
    return vr.lower, vr.upper


def _unbounded(env: ShapeEnv) -> tuple[object, object]:
    """The range of a SymInt nothing is known about."""
    return _range(_unbacked(env), env)


# ---------------------------------------------------------------- integers


@pytest.mark.parametrize(
    ("dtype", "lo", "hi"),
    [
        ("INT8", -128, 127),
        ("INT16", -(2**15), 2**15 - 1),
        ("INT32", -(2**31), 2**31 - 1),
        ("INT64", -(2**63), 2**63 - 1),
        ("UINT8", 0, 255),
        ("UINT16", 0, 2**16 - 1),
        ("UINT32", 0, 2**32 - 1),
        ("UINT64", 0, 2**64 - 1),
    ],
)
def test_integer_bounds_are_inclusive(dtype: str, lo: int, hi: int) -> None:
    for value in (lo, hi, lo + 1, hi - 1):
        got = _check(dtype, value)
        assert got == value
        assert type(got) is int
    for value in (lo - 1, hi + 1):
        assert _refused(dtype, value) == f"{_where(dtype)}: {value} is outside the {dtype} range [{lo}, {hi}]"


def test_integer_like_values_take_the_index_path() -> None:
    class Index(int):
        pass

    got = _check("INT8", Index(-128))
    assert got == -128
    assert type(got) is int
    assert _refused("INT8", Index(-129)) == f"{_where('INT8')}: -129 is outside the INT8 range [-128, 127]"
    got = _check("UINT8", ctypes.c_uint8(255))
    assert got == 255
    assert type(got) is int


def test_integer_parameters_refuse_floats_bools_and_non_numbers() -> None:
    assert _refused("INT32", 1.0) == (
        f"{_where('INT32')}: expected an integer, got float 1.0; floats are not truncated into integers"
    )
    assert _refused("INT32", fractions.Fraction(3, 1)) == (
        f"{_where('INT32')}: expected an integer, got Fraction Fraction(3, 1); "
        "floats are not truncated into integers"
    )
    assert _refused("INT32", "5") == f"{_where('INT32')}: expected an integer, got str '5'"
    assert _refused("INT32", True) == f"{_where('INT32')}: expected a INT32 number, got bool True"
    assert _refused("FP32", False) == f"{_where('FP32')}: expected a FP32 number, got bool False"


def test_bool_parameters_take_only_bools() -> None:
    assert _check("BOOL", True) is True
    assert _check("BOOL", False) is False
    assert _check("BOOL", ctypes.c_bool(True)) is True
    assert _refused("BOOL", 1) == f"{_where('BOOL')}: expected a bool, got int 1"


# ---------------------------------------------------------------- floats


def test_bf16_overflow_threshold_is_exclusive_of_finite_values() -> None:
    below = math.nextafter(_BF16_OVERFLOW, 0.0)
    for value in (below, -below):
        assert _check("BF16", value) == value
    for value in (_BF16_OVERFLOW, -_BF16_OVERFLOW):
        assert _refused("BF16", value) == f"{_where('BF16')}: finite value {value!r} overflows BF16"
    for value in (math.inf, -math.inf):
        assert _check("BF16", value) == value
    # The threshold is the midpoint between the largest finite BF16, (2 - 2**-7) * 2**127 (odd
    # mantissa 0x7f), and 2**128: round to nearest, ties to even, takes it to inf.
    assert _BF16_OVERFLOW == ((2 - 2**-7) * 2.0**127 + 2.0**128) / 2


@pytest.mark.parametrize(("dtype", "top"), [("FP32", float.fromhex("0x1.fffffep127")), ("FP16", 65504.0)])
def test_fp32_and_fp16_overflow(dtype: str, top: float) -> None:
    assert _check(dtype, top) == top
    assert _check(dtype, -top) == -top
    big = top * 2
    assert _refused(dtype, big) == f"{_where(dtype)}: finite value {big!r} overflows {dtype}"
    assert math.isnan(_check(dtype, math.nan))  # type: ignore[arg-type]


def test_float_parameters_convert_reals_and_refuse_the_rest() -> None:
    got = _check("FP32", 3)
    assert got == 3.0
    assert type(got) is float
    got = _check("FP16", fractions.Fraction(1, 4))
    assert got == 0.25
    assert type(got) is float
    huge = fractions.Fraction(10**400)
    assert _refused("FP32", huge) == f"{_where('FP32')}: {huge!r} overflows FP32"
    assert _refused("FP32", Decimal(1)) == f"{_where('FP32')}: expected a float, got Decimal Decimal('1')"
    assert _refused("FP32", "1.0") == f"{_where('FP32')}: expected a float, got str '1.0'"
    got = _check("FP32", ctypes.c_double(0.5))
    assert got == 0.5
    assert type(got) is float


def test_float8_and_float4_have_no_scalar_argument_type() -> None:
    for dtype in ("FP8E4M3FN", "FP4E2M1"):
        assert _refused(dtype, 1.0) == f"{_where(dtype)}: {dtype} has no scalar argument type"


# ---------------------------------------------------------------- ctypes


@pytest.mark.parametrize(
    ("dtype", "value", "expected"),
    [
        ("INT8", ctypes.c_int8(-5), -5),
        ("INT16", ctypes.c_int16(-300), -300),
        ("INT32", ctypes.c_int32(-7), -7),
        ("INT64", ctypes.c_int64(-(2**40)), -(2**40)),
        ("UINT8", ctypes.c_uint8(200), 200),
        ("UINT32", ctypes.c_uint32(2**32 - 1), 2**32 - 1),
        ("UINT64", ctypes.c_uint64(2**64 - 1), 2**64 - 1),
        ("FP32", ctypes.c_float(0.5), 0.5),
        ("FP16", ctypes.c_double(0.25), 0.25),
        ("BOOL", ctypes.c_bool(False), False),
    ],
)
def test_ctypes_of_the_declared_kind_are_copied(
    dtype: str, value: ctypes._SimpleCData, expected: object
) -> None:
    got = _check(dtype, value)
    assert got == expected
    assert type(got) is type(expected)
    assert not isinstance(got, ctypes._SimpleCData)


@pytest.mark.parametrize(
    ("dtype", "value"),
    [
        ("INT32", ctypes.c_uint32(1)),  # signedness
        ("UINT32", ctypes.c_int32(1)),
        ("INT32", ctypes.c_int16(1)),  # width
        ("INT32", ctypes.c_int64(1)),
        ("UINT8", ctypes.c_uint16(1)),
        ("INT8", ctypes.c_char(b"a")),  # not an integer code
        ("INT8", ctypes.c_bool(True)),
        ("BOOL", ctypes.c_int8(1)),
        ("FP32", ctypes.c_int32(1)),
        ("FP32", ctypes.c_bool(True)),
    ],
)
def test_ctypes_of_another_kind_are_refused(dtype: str, value: ctypes._SimpleCData) -> None:
    assert _refused(dtype, value) == (
        f"{_where(dtype)}: ctypes.{type(value).__name__} does not carry {dtype}; "
        "pass a Python value or a ctypes value of the declared width and signedness"
    )


def test_ctypes_values_are_range_checked_after_the_copy() -> None:
    assert _check("INT64", ctypes.c_int64(2**40)) == 2**40
    # A ctypes value that fits its own type is still checked against the parameter's kind.
    value = ctypes.c_int64(-1)
    assert _refused("UINT64", value) == (
        f"{_where('UINT64')}: ctypes.{type(value).__name__} does not carry UINT64; "
        "pass a Python value or a ctypes value of the declared width and signedness"
    )


# ---------------------------------------------------------------- symbolic scalars


def test_symbolic_off_refuses_symbolic_values() -> None:
    env = ShapeEnv()
    flag = torch.SymBool(SymNode(sympy.true, env, bool, hint=True))
    assert _refused("BOOL", flag) == f"{_where('BOOL')}: expected a bool, got SymBool {flag!r}"
    real = torch.SymFloat(SymNode(sympy.Float(1.5), env, float, hint=1.5))
    assert _refused("FP32", real) == f"{_where('FP32')}: expected a float, got SymFloat {real!r}"


def test_symbolic_values_are_refused_by_default() -> None:
    env = ShapeEnv()
    flag = torch.SymBool(SymNode(sympy.true, env, bool, hint=True))
    with pytest.raises(ArgumentError) as info:
        check_scalar(0, _scalar("BOOL"), flag, caller=CALLER)
    assert str(info.value) == f"{_where('BOOL', 0)}: expected a bool, got SymBool {flag!r}"


def test_symbolic_on_still_checks_plain_values() -> None:
    assert _check("INT32", 5, symbolic=True) == 5
    assert _check("FP32", 0.5, symbolic=True) == 0.5
    assert _check("BOOL", True, symbolic=True) is True
    assert (
        _refused("INT8", 128, symbolic=True) == f"{_where('INT8')}: 128 is outside the INT8 range [-128, 127]"
    )


def test_unbacked_symint_gets_the_type_bounds_without_a_value() -> None:
    env = ShapeEnv()
    for dtype, lo, hi in (("INT32", -(2**31), 2**31 - 1), ("UINT8", 0, 255), ("INT16", -(2**15), 2**15 - 1)):
        n = _unbacked(env)
        assert _check(dtype, n, symbolic=True) is n
        assert _range(n, env) == (lo, hi)
    n = _unbacked(env)
    assert _check("INT64", n, symbolic=True) is n
    assert _range(n, env) == _unbounded(env)  # every SymInt already fits INT64: no bound recorded


def test_constant_symint_is_checked_at_once() -> None:
    env = ShapeEnv()
    for dtype, lo, hi in (("INT32", -(2**31), 2**31 - 1), ("UINT16", 0, 2**16 - 1)):
        for value in (lo, hi):
            n = _constant(env, value)
            assert _check(dtype, n, symbolic=True) is n
        for value in (lo - 1, hi + 1, 2**40):
            n = _constant(env, value)
            assert _refused(dtype, n, symbolic=True) == (
                f"{_where(dtype)}: {value} is outside the {dtype} range [{lo}, {hi}]"
            )
    big = _constant(env, 2**40)
    assert _check("INT64", big, symbolic=True) is big


def test_backed_symint_out_of_range_fails_its_recorded_bound() -> None:
    env = ShapeEnv()
    with pytest.raises(RuntimeError) as info:
        _check("INT32", _backed(env, 2**40, "high"), symbolic=True)
    assert str(info.value) == f"{_where('INT32')}: the value must be <= {2**31 - 1} (INT32)"
    with pytest.raises(RuntimeError) as info:
        _check("UINT8", _backed(env, -3, "low"), symbolic=True)
    assert str(info.value) == f"{_where('UINT8')}: the value must be >= 0 (UINT8)"
    inside = _backed(env, 255, "edge")
    assert _check("UINT8", inside, symbolic=True) is inside
    low_edge = _backed(env, -128, "low_edge")
    assert _check("INT8", low_edge, symbolic=True) is low_edge


def test_check_symint_range_directly() -> None:
    env = ShapeEnv()

    def where() -> str:
        return "w"

    n = _unbacked(env)
    _check_symint_range(n, _scalar("INT8").dtype, where)
    assert _range(n, env) == (-128, 127)
    with pytest.raises(ArgumentError) as info:
        _check_symint_range(_constant(env, -129), _scalar("INT8").dtype, where)
    assert str(info.value) == "w: -129 is outside the INT8 range [-128, 127]"


def test_symbolic_values_of_each_kind() -> None:
    env = ShapeEnv()
    real = torch.SymFloat(SymNode(sympy.Float(1.5), env, float, hint=1.5))
    flag = torch.SymBool(SymNode(sympy.true, env, bool, hint=True))
    n = _unbacked(env)
    for dtype in ("FP32", "FP16", "BF16", "FP8E4M3FN"):
        assert _check(dtype, real, symbolic=True) is real
        assert _check(dtype, n, symbolic=True) is n  # an integer is a valid float
        assert (
            _refused(dtype, flag, symbolic=True) == f"{_where(dtype)}: expected a {dtype} scalar, got SymBool"
        )
    assert _range(n, env) == _unbounded(env)  # no integer bound for a float parameter
    assert _check("BOOL", flag, symbolic=True) is flag
    for value, kind in ((n, "SymInt"), (real, "SymFloat")):
        assert (
            _refused("BOOL", value, symbolic=True) == f"{_where('BOOL')}: expected a BOOL scalar, got {kind}"
        )
    for value, kind in ((real, "SymFloat"), (flag, "SymBool")):
        assert (
            _refused("INT32", value, symbolic=True)
            == f"{_where('INT32')}: expected a INT32 scalar, got {kind}"
        )


# ---------------------------------------------------------------- tensor signatures


def _tensor(dtype: torch.dtype, *shape: object) -> types.SimpleNamespace:
    """What check_tensor_signature reads of a tensor: its dtype and shape (a real tensor, a
    FakeTensor with symbolic sizes)."""
    return types.SimpleNamespace(dtype=dtype, shape=tuple(shape))


def _tparam(shape: list[int], dtype: str = "FP32") -> ParamInfo:
    return ParamInfo("x", "In", shape, dtype)


def _tcheck(param: ParamInfo, tensor: object, torch_dtype: torch.dtype = torch.float32) -> None:
    check_tensor_signature(1, param, tensor, torch_dtype, caller=CALLER)


def _twhere(dtype: str = "FP32") -> str:
    return f"{CALLER}: parameter 'x' (#1, In {dtype})"


def _trefused(param: ParamInfo, tensor: object, torch_dtype: torch.dtype = torch.float32) -> str:
    with pytest.raises(ArgumentError) as info:
        _tcheck(param, tensor, torch_dtype)
    return str(info.value)


def test_tensor_dtype_rank_and_dimensions_with_their_messages() -> None:
    _tcheck(_tparam([2, -1, 0]), torch.zeros(2, 5, 0))
    _tcheck(_tparam([2, -1, 0]), torch.zeros(2, 1, 0))
    assert _trefused(_tparam([2]), torch.zeros(2, dtype=torch.int32)) == (
        f"{_twhere()}: expected dtype torch.float32, got torch.int32"
    )
    assert _trefused(_tparam([2, -1]), torch.zeros(2)) == (
        f"{_twhere()}: expected rank 2 (shape [2, -1]), got rank 1 (shape [2])"
    )
    assert _trefused(_tparam([2, -1]), torch.zeros(2, 3, 1)) == (
        f"{_twhere()}: expected rank 2 (shape [2, -1]), got rank 3 (shape [2, 3, 1])"
    )
    assert _trefused(_tparam([-1, 4]), torch.zeros(7, 5)) == (
        f"{_twhere()}: dimension 1 must be 4 (shape [-1, 4]), got 5 (shape [7, 5])"
    )
    # A static 0 is a dimension like any other (only -1 is dynamic).
    assert _trefused(_tparam([3, 0]), torch.zeros(3, 2)) == (
        f"{_twhere()}: dimension 1 must be 0 (shape [3, 0]), got 2 (shape [3, 2])"
    )


def test_symbolic_extent_facing_a_static_dimension() -> None:
    env = ShapeEnv()
    fits = _backed(env, 4, "fits")
    _tcheck(_tparam([2, 4]), _tensor(torch.float32, 2, fits))
    free = _unbacked(env)
    _tcheck(_tparam([-1, 4]), _tensor(torch.float32, free, 4))
    assert _range(free, env) == _unbounded(env)  # a dynamic dimension: no requirement
    pinned = _unbacked(env)
    _tcheck(_tparam([3, 6]), _tensor(torch.float32, 3, pinned))
    assert pinned.node.expr == 6  # the requirement pins the unbacked symbol
    with pytest.raises(RuntimeError) as info:
        _tcheck(_tparam([2, 4, 8]), _tensor(torch.float32, 2, 4, _backed(env, 9, "wrong")))
    assert str(info.value) == f"{_twhere()}: dimension 2 must be 8"
