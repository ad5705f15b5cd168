"""Calling contracts (PROGRAM, KERNEL), the device kind of a platform, and the KERNEL
contract's validation.

The platforms and their on-chip buffers are one table, :mod:`pypto.ir.platforms`; this module
re-exports its names (``PLATFORMS``, ``RUNTIMES``) and derives the device kind from it.

The contract selects calling rules; the platform independently selects the device kind: SIM
(the simulated chip) or ONBOARD (a real chip). "Mode" is not used for the device kind: a
process's PROGRAM/KERNEL mode (``pypto.runtime.mode_gate``, ``simpler.Worker(execution_mode=)``)
is a different thing. KERNEL validation is split into the checks on the original IR (before
lowering) and the ABI check after lowering; each raises ``ContractError`` naming what is wrong.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence

from pypto.ir.errors import PyptoCompileError
from pypto.ir.param_info import (
    ParamDirection,
    ParamInfo,
    blocked_shape,
    validate_param_names,
    validate_return_aliases,
)
from pypto.ir.platforms import DEFAULT_RUNTIME, HBG, PLATFORMS, RUNTIMES, get_platform

__all__ = [
    "BACKENDS",
    "PLATFORMS",
    "RUNTIMES",
    "Contract",
    "ContractError",
    "DeviceKind",
    "backend_of",
    "check_lowered_abi",
    "device_kind",
    "parse_platform",
    "validate_kernel_contract",
]


class ContractError(PyptoCompileError):
    """A program that breaks the requested calling contract."""


class Contract(enum.Enum):
    """PROGRAM: the runtime may allocate outputs and keeps host control.
    KERNEL: the caller supplies every Out/InOut and returns alias parameters."""

    PROGRAM = "PROGRAM"
    KERNEL = "KERNEL"

    @classmethod
    def parse(cls, value: object) -> Contract:
        if isinstance(value, Contract):
            return value
        if isinstance(value, str) and value.upper() in cls.__members__:
            return cls[value.upper()]
        raise ValueError(f"contract: expected PROGRAM or KERNEL, got {value!r}")


class DeviceKind(enum.Enum):
    """Where a platform's programs run: the simulated chip (SIM) or a real one (ONBOARD)."""

    SIM = "SIM"
    ONBOARD = "ONBOARD"


BACKENDS = {DeviceKind.SIM: "host_cpp", DeviceKind.ONBOARD: "cann"}


def parse_platform(platform: object) -> str:
    """The platform's name, checked against the platform table (pypto.ir.platforms)."""
    return get_platform(platform).name


def device_kind(platform: str) -> DeviceKind:
    """SIM for the simulated platforms (``*sim``), ONBOARD for real chips."""
    return DeviceKind.SIM if get_platform(platform).simulated else DeviceKind.ONBOARD


def backend_of(platform: str) -> str:
    return BACKENDS[device_kind(platform)]


def validate_kernel_contract(
    *,
    entries: Sequence[str],
    chips: int,
    params: Sequence[ParamInfo],
    return_aliases: Sequence[int | None],
    supplied: Sequence[bool] | None = None,
    runtime: str = DEFAULT_RUNTIME,
    host_tensor_access: Sequence[str] = (),
) -> tuple[int, ...]:
    """The KERNEL contract's checks on the original program; returns the validated aliases.

    Args:
        entries: Names of the orchestration entries (exactly one is allowed).
        chips: Number of chips the program spans (exactly one).
        params: The external (logical) signature.
        return_aliases: Per return value, the index of the parameter it aliases (None: it
            aliases no parameter).
        supplied: Per parameter, whether the caller supplies it (default: all).
        runtime: The runtime; HBG rejects ``host_tensor_access``.
        host_tensor_access: Descriptions of orchestration statements that read or write
            tensor data on the host.
    """
    if len(entries) != 1:
        raise ContractError(f"KERNEL contract: needs exactly one entry, got {len(entries)}: {list(entries)}")
    if chips != 1:
        raise ContractError(f"KERNEL contract: needs exactly one chip, got {chips}")
    validate_param_names(params)
    flags = list(supplied) if supplied is not None else [True] * len(params)
    if len(flags) != len(params):
        raise ContractError(f"KERNEL contract: {len(flags)} supplied flags for {len(params)} parameters")
    for p, given in zip(params, flags, strict=True):
        if p.direction is not ParamDirection.IN and not given:
            raise ContractError(
                f"KERNEL contract: parameter {p.name!r} is {p.direction.value} but was not supplied; "
                "the caller must pass every output buffer"
            )
    for k, a in enumerate(return_aliases):
        if a is None:
            raise ContractError(
                f"KERNEL contract: return value {k} does not alias a parameter; return one of the "
                "Out/InOut tensors the caller passed"
            )
    aliases = validate_return_aliases(params, [a for a in return_aliases if a is not None])
    for k, a in enumerate(aliases):
        if params[a].direction is ParamDirection.IN:
            raise ContractError(
                f"KERNEL contract: return value {k} aliases read-only parameter {params[a].name!r}; "
                "a kernel returns Out/InOut tensors"
            )
    if runtime == HBG and host_tensor_access:
        raise ContractError(
            "KERNEL contract: the host_build_graph runtime cannot read or write tensor data on the host, "
            f"but the orchestration does: {'; '.join(host_tensor_access)}"
        )
    return aliases


def check_lowered_abi(params: Sequence[ParamInfo], lowered: Sequence[ParamInfo]) -> None:
    """After lowering, the external ABI must still be the logical signature's: count, order,
    names, directions, dtypes and storage layout (NZ shapes become blocked, nothing else)."""
    if len(params) != len(lowered):
        raise ContractError(f"lowered ABI: {len(lowered)} parameters, the signature has {len(params)}")
    for i, (p, q) in enumerate(zip(params, lowered, strict=True)):
        for field in ("name", "direction", "dtype", "layout"):
            if getattr(p, field) != getattr(q, field):
                raise ContractError(
                    f"lowered ABI: parameter {i} {field} changed from {getattr(p, field)!r} to {getattr(q, field)!r}"
                )
        if p.is_scalar != q.is_scalar:
            raise ContractError(f"lowered ABI: parameter {i} ({p.name!r}) changed between scalar and tensor")
        if p.layout.value == "ND" and p.shape != q.shape:
            raise ContractError(f"lowered ABI: ND parameter {p.name!r} changed shape {p.shape} -> {q.shape}")
        if p.layout.value == "NZ" and p.shape is not None and not p.is_blocked:
            want = blocked_shape(p.shape, p.dtype, f"parameter {p.name!r}")
            if q.shape != want:
                raise ContractError(
                    f"lowered ABI: NZ parameter {p.name!r} {list(p.shape)} {p.dtype.value} must lower to the "
                    f"unpadded blocked shape {list(want)}, got {list(q.shape or ())}"
                )
