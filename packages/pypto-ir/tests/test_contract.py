"""The KERNEL contract's rejections one by one, platforms, and the lowered ABI check."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pypto_ir_test_helpers import HostArray
from pypto_ir_test_programs import returns_internal

import pypto.language as pl
from pypto.ir.compile import compile_to_files
from pypto.ir.contract import (
    Contract,
    ContractError,
    DeviceKind,
    check_lowered_abi,
    device_kind,
    validate_kernel_contract,
)
from pypto.ir.errors import PyptoCompileError
from pypto.ir.metadata import MetadataError, read_metadata
from pypto.ir.param_info import Layout, ParamInfo
from pypto_testing.forms import TwoEntries

P = (
    ParamInfo("a", "In", (16, 16), "FP32"),
    ParamInfo("s", "In", None, "FP32"),
    ParamInfo("o", "Out", (16, 16), "FP32"),
    ParamInfo("io", "InOut", (16, 16), "FP32"),
)


def ok(**over: object) -> tuple[int, ...]:
    args: dict[str, object] = {"entries": ["main"], "chips": 1, "params": P, "return_aliases": [2, 3, 2]}
    args.update(over)
    return validate_kernel_contract(**args)  # type: ignore[arg-type]


def test_valid_kernel_contract_keeps_order_and_duplicates() -> None:
    assert ok() == (2, 3, 2)


@pytest.mark.parametrize(
    ("over", "match"),
    [
        ({"entries": []}, "exactly one entry, got 0"),
        ({"entries": ["a", "b"]}, "exactly one entry, got 2"),
        ({"chips": 2}, "exactly one chip, got 2"),
        ({"supplied": [True, True, False, True]}, "'o' is Out but was not supplied"),
        ({"supplied": [True, True, True, False]}, "'io' is InOut but was not supplied"),
        ({"return_aliases": [None]}, "return value 0 does not alias a parameter"),
        ({"return_aliases": [1]}, "names scalar 's'"),
        ({"return_aliases": [9]}, "outside the signature"),
        ({"return_aliases": [0]}, "aliases read-only parameter 'a'"),
        (
            {"runtime": "host_build_graph", "host_tensor_access": ["read a[0]"]},
            "host_build_graph runtime cannot read",
        ),
        ({"params": (*P, ParamInfo("a", "In", (1,), "FP32"))}, "repeats"),
    ],
)
def test_kernel_rejections(over: dict[str, object], match: str) -> None:
    with pytest.raises((ContractError, ValueError), match=match):
        ok(**over)


def test_host_build_graph_without_host_access_is_fine() -> None:
    assert ok(runtime="host_build_graph") == (2, 3, 2)


@pytest.mark.parametrize(
    ("lowered", "match"),
    [
        (P[:3], "3 parameters, the signature has 4"),
        ((P[1], P[0], P[2], P[3]), "name changed"),
        ((P[0], P[1], ParamInfo("o", "InOut", (16, 16), "FP32"), P[3]), "direction changed"),
        ((P[0], P[1], ParamInfo("o", "Out", (16, 16), "FP16"), P[3]), "dtype changed"),
        ((P[0], P[1], ParamInfo("o", "Out", (16, 8), "FP32"), P[3]), "changed shape"),
        ((P[0], P[1], ParamInfo("o", "Out", (16, 16), "FP32", Layout.NZ), P[3]), "layout changed"),
        ((P[0], ParamInfo("s", "In", (1,), "FP32"), P[2], P[3]), "between scalar and tensor"),
    ],
)
def test_lowered_abi_check(lowered: tuple[ParamInfo, ...], match: str) -> None:
    with pytest.raises(ContractError, match=match):
        check_lowered_abi(P, lowered)


def test_nz_may_change_shape_only() -> None:
    logical = (ParamInfo("w", "In", (32, 32), "FP16", Layout.NZ),)
    blocked = (ParamInfo("w", "In", (2, 2, 16, 16), "FP16", Layout.NZ),)
    check_lowered_abi(logical, blocked)
    check_lowered_abi(
        (ParamInfo("q", "In", (-1, 32, 64), "INT8", Layout.NZ),),
        (ParamInfo("q", "In", (-1, 2, 2, 16, 32), "INT8", Layout.NZ),),
    )


def test_nz_must_lower_to_its_unpadded_blocked_shape() -> None:
    logical = (ParamInfo("w", "In", (32, 64), "FP16", Layout.NZ),)
    swapped = (ParamInfo("w", "In", (2, 4, 16, 16), "FP16", Layout.NZ),)
    with pytest.raises(ContractError, match=r"must lower to the unpadded blocked shape \[4, 2, 16, 16\]"):
        check_lowered_abi(logical, swapped)
    fp32 = (ParamInfo("a", "In", (32, 64), "FP32", Layout.NZ),)
    with pytest.raises(ContractError, match=r"\[8, 2, 16, 8\], got \[32, 64\]"):
        check_lowered_abi(fp32, fp32)  # not lowered at all


def test_platform_selects_device_kind_independently() -> None:
    assert device_kind("a2a3sim") is DeviceKind.SIM
    assert device_kind("a5sim") is DeviceKind.SIM
    assert device_kind("a2a3") is DeviceKind.ONBOARD
    assert device_kind("a5") is DeviceKind.ONBOARD
    with pytest.raises(ValueError, match="platform"):
        device_kind("gpu")
    with pytest.raises(ValueError, match="PROGRAM or KERNEL"):
        Contract.parse("BOTH")


def t(*shape: int) -> HostArray:
    return HostArray(shape)


def _compile_16x16(fn: pl.JITFunction, out: Path, contract: str, platform: str = "a2a3sim", **kw: Any) -> Any:
    """``fn`` specialised for two [16, 16] tensors, compiled into ``out`` under ``contract``."""
    return compile_to_files(
        fn.specialize(t(16, 16), t(16, 16)), out, contract=contract, platform=platform, **kw
    )


@pl.jit
def good_kernel(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        o[:] = pl.exp(a)
    return o


@pl.jit
def returns_input(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        o[:] = pl.exp(a)
    return a


def test_kernel_compile_records_the_contract(tmp_path: Path) -> None:
    r = _compile_16x16(good_kernel, tmp_path, "KERNEL")
    meta = read_metadata(tmp_path, require=Contract.KERNEL)
    assert meta == r.metadata
    assert meta.capabilities == ("KERNEL",)
    assert meta.return_aliases == (1,)
    with pytest.raises(MetadataError, match="lacks the PROGRAM capability"):
        read_metadata(tmp_path, require=Contract.PROGRAM)


def test_kernel_compile_rejects_read_only_return(tmp_path: Path) -> None:
    with pytest.raises(ContractError, match="aliases read-only parameter 'a'"):
        _compile_16x16(returns_input, tmp_path, "KERNEL")
    assert not any(tmp_path.iterdir())


def test_kernel_compile_rejects_internal_return(tmp_path: Path) -> None:
    with pytest.raises(ContractError, match="does not alias a parameter"):
        _compile_16x16(returns_internal, tmp_path, "KERNEL")
    with pytest.raises(PyptoCompileError, match="not one of the function's tensor parameters"):
        _compile_16x16(returns_internal, tmp_path, "PROGRAM")


def test_kernel_compile_rejects_unsupplied_output(tmp_path: Path) -> None:
    with pytest.raises(ContractError, match="'o' is Out but was not supplied"):
        _compile_16x16(good_kernel, tmp_path, "KERNEL", supplied=(True, False))


def test_compile_into_a_used_directory_is_refused(tmp_path: Path) -> None:
    _compile_16x16(good_kernel, tmp_path, "PROGRAM", platform="a5sim")
    with pytest.raises(FileExistsError, match="fresh directory"):
        _compile_16x16(good_kernel, tmp_path, "PROGRAM", platform="a5sim")


def test_multi_entry_program_compiles_one_child(tmp_path: Path) -> None:
    assert TwoEntries.entry == "negate"
    with pytest.raises(ContractError, match="exactly one entry, got 2"):
        compile_to_files(TwoEntries, tmp_path / "k", contract="KERNEL", platform="a2a3sim")
    r = compile_to_files(TwoEntries, tmp_path / "e", contract="KERNEL", platform="a2a3sim", entry="absolute")
    assert r.metadata.entry == "absolute"
    assert [k.name for k in r.metadata.kernels] == ["abs_k"]
    assert r.metadata.return_aliases == (1,)
    with pytest.raises(ValueError, match="entry: expected one of"):
        compile_to_files(TwoEntries, tmp_path / "x", contract="PROGRAM", platform="a2a3sim", entry="neg_k")


def test_a_failed_write_leaves_no_sources(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pypto.ir import compile as compile_mod

    def full_disk(directory: object, meta: object) -> Path:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(compile_mod, "write_metadata", full_disk)
    with pytest.raises(OSError, match="No space left"):
        _compile_16x16(good_kernel, tmp_path, "PROGRAM")
    assert not [p for p in tmp_path.rglob("*") if p.is_file()]
