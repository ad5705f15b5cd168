"""``compiled_meta.json``: the build metadata of one compiled artifact directory.

Schema 3 carries the logical signature (``params``), the assembly signature
(``lowered_params``), return count and aliases, platform/backend/runtime, the requested
contract and the verified capabilities (exactly that contract), the orchestration and every
kernel child. It is written once, atomically; the reader validates every field and never
loads native code. Schemas 1 and 2 load as PROGRAM only. See docs/pypto-ir.md.

A kernel child may carry ``buffer_usage`` (optional, schema 3 readers before it ignore it): per
on-chip memory space, the peak bytes of its tiles live at the same time, ``{"Vec": n, "Mat": n,
"Left": n, "Right": n, "Acc": n, "Bias": n}`` (each space its kernel uses) (see pypto.ir.platforms for how they are counted; artifacts
of ``CODEGEN_VERSION`` 2 recorded the sum of every tile declared), and ``hints`` (optional,
the same way): the ``pl.at`` hints of the scope it was outlined from, ``{"split": "UP_DOWN",
"cross_core_slot": 4, "no_dep_args": ["t"]}`` (each key only when given).
"""

from __future__ import annotations

import enum
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from json.encoder import encode_basestring_ascii as _json_str
from pathlib import Path
from typing import Any

from pypto.ir.contract import Contract, backend_of, device_kind
from pypto.ir.files import atomic_write
from pypto.ir.param_info import ParamInfo, SignatureError, validate_param_names, validate_return_aliases
from pypto.ir.platforms import DEFAULT_RUNTIME, PLATFORMS, RUNTIMES
from pypto.ir.types import SplitMode

__all__ = [
    "BUFFER_SPACES",
    "META_FILE",
    "SCHEMA_VERSION",
    "ArtifactMetadata",
    "KernelInfo",
    "MetadataError",
    "OrchestrationInfo",
    "attr_json",
    "read_metadata",
    "write_metadata",
]

SCHEMA_VERSION = 3
META_FILE = "compiled_meta.json"
CORE_TYPES = ("AIV", "AIC")
_RECOMPILE = "; recompile the program to refresh the artifact"


class MetadataError(ValueError):
    """``compiled_meta.json`` is missing, malformed or does not allow the requested use."""


@dataclass(frozen=True)
class KernelInfo:
    """One kernel child: what the orchestration submits as ``func_id``."""

    name: str
    func_id: int
    core_type: str
    source: str
    entry: str
    params: tuple[ParamInfo, ...]
    # Peak bytes of tiles live at once per on-chip memory space ((space name, bytes) in
    # BUFFER_SPACES order); () when not recorded (metadata written before the field existed).
    buffer_usage: tuple[tuple[str, int], ...] = ()
    # The pl.at hints of the scope the kernel was outlined from ((key, value) in key order):
    # "split" (SplitMode name), "cross_core_slot" (int >= 1), "no_dep_args" (kernel parameter
    # names). Recorded for tools and hardware backends; the simulated chip does not read them.
    hints: tuple[tuple[str, Any], ...] = ()
    # The kernel's pl.func_attr attributes ((key, value) in key order): a JSON constant, or
    # {"param": name} for a parameter reference (an enum member is "Enum.MEMBER"). Recorded for
    # tools and device backends; the simulated chip does not read them.
    attrs: tuple[tuple[str, Any], ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "buffer_usage", _usage(self.buffer_usage, "KernelInfo.buffer_usage"))
        object.__setattr__(self, "hints", _hints(self.hints, "KernelInfo.hints"))
        object.__setattr__(self, "attrs", _attrs(self.attrs, "KernelInfo.attrs"))

    def buffer_bytes(self, space: str) -> int | None:
        """Peak bytes of ``space`` tiles live at once (``"Vec"``, ``"Mat"``, ``"Left"``,
        ``"Right"``, ``"Acc"``, ``"Bias"``); None when the metadata does not record buffer use."""
        if space not in BUFFER_SPACES:
            raise ValueError(
                f"buffer_bytes(space): expected one of {', '.join(BUFFER_SPACES)}, got {space!r}"
            )
        if not self.buffer_usage:
            return None
        return dict(self.buffer_usage).get(space, 0)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "func_id": self.func_id,
            "core_type": self.core_type,
            "source": self.source,
            "entry": self.entry,
            "params": [p.to_json() for p in self.params],
        }
        if self.buffer_usage:
            out["buffer_usage"] = dict(self.buffer_usage)
        if self.hints:
            out["hints"] = {k: list(v) if isinstance(v, tuple) else v for k, v in self.hints}
        if self.attrs:
            out["attrs"] = dict(self.attrs)
        return out


BUFFER_SPACES = ("Vec", "Mat", "Left", "Right", "Acc", "Bias")
SPLIT_MODES = tuple(m.value for m in SplitMode)  # what a "split" hint may say


def _attrs(raw: object, where: str) -> tuple[tuple[str, Any], ...]:
    """Canonical function attributes: (key, value) pairs in key order; a value is a JSON
    constant or {"param": name}."""
    items = list(raw.items()) if isinstance(raw, Mapping) else [tuple(x) for x in raw]  # type: ignore[attr-defined]
    out: dict[str, Any] = {}
    for key, value in items:
        if not isinstance(key, str):
            raise MetadataError(f"{where}: keys must be strings, got {key!r}")
        ok = isinstance(value, (bool, int, float, str)) or (
            isinstance(value, Mapping) and list(value) == ["param"] and isinstance(value["param"], str)
        )
        if not ok:
            raise MetadataError(
                f"{where}[{key!r}]: expected a number, bool, string or {{'param': name}}, got {value!r}{_RECOMPILE}"
            )
        out[key] = dict(value) if isinstance(value, Mapping) else value
    return tuple(sorted(out.items()))


def attr_json(value: Any) -> Any:
    """A ``pl.func_attr`` value of the IR as metadata records it."""
    from pypto.ir.nodes import ParamRef

    if isinstance(value, ParamRef):
        return {"param": value.name}
    if isinstance(value, enum.Enum):
        return f"{type(value).__name__}.{value.name}"
    return value


def _hints(raw: object, where: str) -> tuple[tuple[str, Any], ...]:
    """Canonical kernel hints: (key, value) pairs in key order, each value checked."""
    if isinstance(raw, Mapping):
        items = list(raw.items())
    elif isinstance(raw, (tuple, list)):
        items = [tuple(x) for x in raw]
    else:
        raise MetadataError(f"{where}: expected a mapping of hint -> value, got {type(raw).__name__}")
    out: dict[str, Any] = {}
    for key, raw_value in items:
        value = raw_value
        if key == "split":
            if value not in SPLIT_MODES:
                raise MetadataError(
                    f"{where}['split']: expected one of {', '.join(SPLIT_MODES)}, got {value!r}"
                )
        elif key == "cross_core_slot":
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise MetadataError(f"{where}['cross_core_slot']: expected an int >= 1, got {value!r}")
        elif key == "no_dep_args":
            if not isinstance(value, (list, tuple)) or not all(isinstance(n, str) for n in value):
                raise MetadataError(
                    f"{where}['no_dep_args']: expected a list of parameter names, got {value!r}"
                )
            value = tuple(value)
        else:
            raise MetadataError(
                f"{where}: unknown hint {key!r}; expected split, cross_core_slot or no_dep_args{_RECOMPILE}"
            )
        out[str(key)] = value
    return tuple(sorted(out.items()))


def _usage(raw: object, where: str) -> tuple[tuple[str, int], ...]:
    """Canonical buffer usage: every space once, in BUFFER_SPACES order, bytes >= 0 (missing
    spaces are 0). Accepts a mapping or (space, bytes) pairs; () stays ()."""
    if isinstance(raw, Mapping):
        items = list(raw.items())
    elif isinstance(raw, (tuple, list)):
        items = []
        for pair in raw:
            if not isinstance(pair, (tuple, list)) or len(pair) != 2:
                raise MetadataError(f"{where}: expected (space, bytes) pairs, got {pair!r}")
            items.append((pair[0], pair[1]))
    else:
        raise MetadataError(
            f"{where}: expected an object of bytes per memory space, got {type(raw).__name__}"
        )
    if not items:
        return ()
    found: dict[str, int] = {}
    for space, n in items:
        if space not in BUFFER_SPACES:
            raise MetadataError(
                f"{where}: unknown memory space {space!r} (expected {', '.join(BUFFER_SPACES)})"
            )
        if space in found:
            raise MetadataError(f"{where}: memory space {space!r} given twice")
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise MetadataError(f"{where}[{space!r}]: expected an int >= 0, got {n!r}")
        found[space] = n
    return tuple((space, found.get(space, 0)) for space in BUFFER_SPACES)


@dataclass(frozen=True)
class OrchestrationInfo:
    source: str
    func_name: str
    needs_name: str
    tensor_count: int
    scalar_count: int

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "func_name": self.func_name,
            "needs_name": self.needs_name,
            "tensor_count": self.tensor_count,
            "scalar_count": self.scalar_count,
        }


@dataclass(frozen=True)
class ArtifactMetadata:
    """The parsed, validated contents of ``compiled_meta.json``."""

    name: str
    entry: str
    contract: Contract
    platform: str
    runtime: str
    params: tuple[ParamInfo, ...]
    lowered_params: tuple[ParamInfo, ...]
    return_count: int
    return_aliases: tuple[int, ...]
    orchestration: OrchestrationInfo
    kernels: tuple[KernelInfo, ...]
    capabilities: tuple[str, ...] = ()
    schema: int = SCHEMA_VERSION
    producer: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        if not self.capabilities:
            object.__setattr__(self, "capabilities", (self.contract.value,))

    @property
    def device_kind(self) -> str:
        """``SIM`` or ``ONBOARD`` (:func:`pypto.ir.contract.device_kind`); stored under the
        JSON key ``execution_mode``, the name schema 3 files carry."""
        return device_kind(self.platform).value

    @property
    def backend(self) -> str:
        return backend_of(self.platform)

    def to_json(self) -> dict[str, Any]:
        from pypto.ir import __version__

        return {
            "schema": SCHEMA_VERSION,
            "producer": self.producer or f"pypto-ir {__version__}",
            "name": self.name,
            "entry": self.entry,
            "contract": self.contract.value,
            "capabilities": list(self.capabilities),
            "platform": self.platform,
            "execution_mode": self.device_kind,
            "backend": self.backend,
            "runtime": self.runtime,
            "params": [p.to_json() for p in self.params],
            "lowered_params": [p.to_json() for p in self.lowered_params],
            "return_count": self.return_count,
            "return_aliases": list(self.return_aliases),
            "orchestration": self.orchestration.to_json(),
            "kernels": [k.to_json() for k in self.kernels],
        }

    @classmethod
    def from_json(cls, data: Any, *, require: Contract | None = None) -> ArtifactMetadata:
        """Validate and parse; ``require`` rejects metadata that lacks that capability."""
        return _parse(data, require)


class _NotPlain(Exception):
    """A value :func:`json_text` leaves to ``json.dumps``."""


def json_text(data: Any) -> str:
    """``json.dumps(data, indent=2)``, the same text, for the plain data ``to_json`` gives
    (dicts with string keys, lists, strings, numbers, booleans, None); the json module's own
    encoder is pure Python when indenting, this is about twice as fast. Anything else is
    encoded by ``json.dumps``."""
    try:
        return _json_plain(data, "")
    except _NotPlain:
        return json.dumps(data, indent=2)


def _json_plain(o: Any, pad: str) -> str:
    if isinstance(o, str):
        return _json_str(o)
    if o is None:
        return "null"
    if o is True:
        return "true"
    if o is False:
        return "false"
    if isinstance(o, int):
        return int.__repr__(o)
    if isinstance(o, float):
        return json.dumps(o)  # NaN and the infinities as json spells them
    inner = pad + "  "
    sep = ",\n" + inner
    if isinstance(o, list | tuple):
        if not o:
            return "[]"
        return "[\n" + inner + sep.join([_json_plain(x, inner) for x in o]) + "\n" + pad + "]"
    if isinstance(o, dict):
        if not o:
            return "{}"
        parts = []
        for k, v in o.items():
            if not isinstance(k, str):
                raise _NotPlain
            parts.append(_json_str(k) + ": " + _json_plain(v, inner))
        return "{\n" + inner + sep.join(parts) + "\n" + pad + "}"
    raise _NotPlain


def write_metadata(directory: str | os.PathLike[str], meta: ArtifactMetadata) -> Path:
    """Write ``compiled_meta.json`` once, atomically and durably (:func:`atomic_write`).

    Refuses to overwrite an existing file: a compiled directory's sidecar never changes.
    """
    d = Path(directory)
    target = d / META_FILE
    if target.exists():
        raise FileExistsError(f"{target} already exists; metadata is written once per compiled directory")
    text = json_text(meta.to_json()) + "\n"
    _parse(json.loads(text), None)  # never write what the reader would reject
    try:
        atomic_write(target, text, replace=False, sync_dir=True)
    except FileExistsError:
        raise FileExistsError(f"{target} appeared while writing; metadata is written once") from None
    return target


def read_metadata(directory: str | os.PathLike[str], *, require: Contract | None = None) -> ArtifactMetadata:
    """Read and validate ``<directory>/compiled_meta.json``. Loads no native code."""
    path = Path(directory) / META_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise MetadataError(f"{path}: not found; the directory is not a compiled artifact") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise MetadataError(f"{path}: not valid JSON ({exc}){_RECOMPILE}") from None
    try:
        return _parse(data, require)
    except MetadataError as exc:
        raise MetadataError(f"{path}: {exc}") from None


# ----------------------------------------------------------------------------- validation


def _get(data: Mapping[str, Any], key: str, kind: type | tuple[type, ...], where: str = "") -> Any:
    if key not in data:
        raise MetadataError(f"missing field {where}{key!r}{_RECOMPILE}")
    value = data[key]
    if isinstance(value, bool) and kind is int:
        raise MetadataError(f"field {where}{key!r}: expected int, got {value!r}")
    if not isinstance(value, kind):
        names = kind.__name__ if isinstance(kind, type) else "/".join(k.__name__ for k in kind)
        raise MetadataError(f"field {where}{key!r}: expected {names}, got {type(value).__name__}")
    return value


def _params(data: Mapping[str, Any], key: str, where: str = "") -> tuple[ParamInfo, ...]:
    raw = _get(data, key, list, where)
    try:
        params = tuple(ParamInfo.from_json(p) for p in raw)
        validate_param_names(params)
    except SignatureError as exc:
        raise MetadataError(f"field {where}{key!r}: {exc}") from None
    return params


def _str(data: Mapping[str, Any], key: str, where: str = "") -> str:
    value = _get(data, key, str, where)
    if not value:
        raise MetadataError(f"field {where}{key!r}: must not be empty")
    return str(value)


def _rel_path(data: Mapping[str, Any], key: str, where: str) -> str:
    value = _str(data, key, where)
    p = Path(value)
    if p.is_absolute() or ".." in p.parts:
        raise MetadataError(f"field {where}{key!r}: {value!r} must be a relative path inside the artifact")
    return value


def _count(data: Mapping[str, Any], key: str, where: str = "") -> int:
    value = int(_get(data, key, int, where))
    if value < 0:
        raise MetadataError(f"field {where}{key!r}: must be >= 0, got {value}")
    return value


def _parse(data: Any, require: Contract | None) -> ArtifactMetadata:
    if not isinstance(data, dict):
        raise MetadataError(f"expected a JSON object, got {type(data).__name__}")
    schema = _get(data, "schema", int)
    if schema not in (1, 2, 3):
        raise MetadataError(f"schema {schema} is not supported (this reader knows 1, 2 and 3){_RECOMPILE}")
    legacy = schema < 3
    name = _str(data, "name")
    entry = _str(data, "entry")
    platform = _str(data, "platform")
    if platform not in PLATFORMS:
        raise MetadataError(f"field 'platform': expected one of {', '.join(PLATFORMS)}, got {platform!r}")
    params = _params(data, "params")
    orch_raw = _get(data, "orchestration", dict)
    orch = OrchestrationInfo(
        _rel_path(orch_raw, "source", "orchestration."),
        _str(orch_raw, "func_name", "orchestration."),
        _str(orch_raw, "needs_name", "orchestration."),
        _count(orch_raw, "tensor_count", "orchestration."),
        _count(orch_raw, "scalar_count", "orchestration."),
    )
    n_tensors = sum(1 for p in params if p.is_tensor)
    if (orch.tensor_count, orch.scalar_count) != (n_tensors, len(params) - n_tensors):
        raise MetadataError(
            f"orchestration expects {orch.tensor_count} tensors and {orch.scalar_count} scalars but params "
            f"has {n_tensors} and {len(params) - n_tensors}{_RECOMPILE}"
        )
    kernels = []
    for i, k in enumerate(_get(data, "kernels", list)):
        where = f"kernels[{i}]."
        if not isinstance(k, dict):
            raise MetadataError(f"field 'kernels[{i}]': expected an object{_RECOMPILE}")
        core = _str(k, "core_type", where)
        if core not in CORE_TYPES:
            raise MetadataError(f"field {where}'core_type': expected AIV or AIC, got {core!r}")
        kp = _params(k, "params", where)
        seen_scalar = False
        for p in kp:
            if p.is_scalar:
                seen_scalar = True
            elif seen_scalar:
                raise MetadataError(f"field {where}'params': tensors must come before scalars ({p.name!r})")
        kernels.append(
            KernelInfo(
                _str(k, "name", where),
                _count(k, "func_id", where),
                core,
                _rel_path(k, "source", where),
                _str(k, "entry", where),
                kp,
                (
                    _usage(_get(k, "buffer_usage", dict, where), f"field {where}'buffer_usage'")
                    if "buffer_usage" in k
                    else ()
                ),
                _hints(_get(k, "hints", dict, where), f"field {where}'hints'") if "hints" in k else (),
                _attrs(_get(k, "attrs", dict, where), f"field {where}'attrs'") if "attrs" in k else (),
            )
        )
    ids = sorted(k.func_id for k in kernels)
    if ids != list(range(len(kernels))):
        raise MetadataError(
            f"kernel func_ids must be 0..{len(kernels) - 1} without gaps, got {ids}{_RECOMPILE}"
        )
    runtime = str(data.get("runtime", DEFAULT_RUNTIME))
    if runtime not in RUNTIMES:
        raise MetadataError(f"field 'runtime': expected one of {', '.join(RUNTIMES)}, got {runtime!r}")

    if legacy:
        return_count = _count(data, "return_count") if schema == 2 else 0
        meta = ArtifactMetadata(
            name,
            entry,
            Contract.PROGRAM,
            platform,
            runtime,
            params,
            params,
            return_count,
            (),
            orch,
            tuple(kernels),
            (Contract.PROGRAM.value,),
            schema,
            str(data.get("producer", "")),
        )
        if require is Contract.KERNEL:
            raise MetadataError(
                f"schema {schema} metadata loads as PROGRAM only and does not establish a KERNEL contract{_RECOMPILE}"
            )
        return meta

    try:
        contract = Contract.parse(_str(data, "contract"))
    except ValueError as exc:
        raise MetadataError(f"field 'contract': {exc}") from None
    caps = _get(data, "capabilities", list)
    if caps != [contract.value]:
        raise MetadataError(
            f"field 'capabilities': must be exactly [{contract.value!r}] for a {contract.value} artifact, "
            f"got {caps!r}{_RECOMPILE}"
        )
    for key, want in (("execution_mode", device_kind(platform).value), ("backend", backend_of(platform))):
        got = _str(data, key)
        if got != want:
            raise MetadataError(f"field {key!r}: platform {platform} means {want!r}, got {got!r}{_RECOMPILE}")
    lowered = _params(data, "lowered_params")
    if len(lowered) != len(params):
        raise MetadataError(
            f"field 'lowered_params': {len(lowered)} entries but 'params' has {len(params)}{_RECOMPILE}"
        )
    return_count = _count(data, "return_count")
    raw_aliases = _get(data, "return_aliases", list)
    try:
        aliases = validate_return_aliases(params, raw_aliases)
    except SignatureError as exc:
        raise MetadataError(f"field 'return_aliases': {exc}{_RECOMPILE}") from None
    if contract is Contract.KERNEL and len(aliases) != return_count:
        raise MetadataError(
            f"field 'return_aliases': a KERNEL artifact needs one alias per return value "
            f"({return_count}), got {len(aliases)}{_RECOMPILE}"
        )
    if len(aliases) not in (0, return_count):
        raise MetadataError(
            f"field 'return_aliases': {len(aliases)} aliases for {return_count} return values"
        )
    if require is not None and require.value not in caps:
        raise MetadataError(
            f"the artifact was compiled for {contract.value} and lacks the {require.value} capability{_RECOMPILE} "
            f"with contract={require.value}"
        )
    unknown = set(data) - _SCHEMA3_KEYS
    if unknown:
        raise MetadataError(f"unknown field(s) {sorted(unknown)}{_RECOMPILE}")
    return ArtifactMetadata(
        name,
        entry,
        contract,
        platform,
        runtime,
        params,
        lowered,
        return_count,
        aliases,
        orch,
        tuple(kernels),
        (contract.value,),
        schema,
        str(data.get("producer", "")),
    )


_SCHEMA3_KEYS = {
    "schema",
    "producer",
    "name",
    "entry",
    "contract",
    "capabilities",
    "platform",
    "execution_mode",
    "backend",
    "runtime",
    "params",
    "lowered_params",
    "return_count",
    "return_aliases",
    "orchestration",
    "kernels",
}
