"""Bytes of an IR Program or Function, and the IR back from them.

The encoding is JSON (UTF-8) of the node tree, tagged so that it decodes to equal nodes: a
dataclass is ``{"N": class name, "f": {field: value}}``, an enum ``{"E": class name, "v":
value}``, a tuple ``{"T": [...]}`` and a list ``{"L": [...]}``; ``None``, bools, ints,
floats and strings are themselves. Source spans are left out (they take no part in equality),
so ``deserialize(serialize(x)) == x``. The first key names the format and its version; a
decoder refuses other versions.
"""

from __future__ import annotations

import dataclasses
import enum
import json
from typing import Any

from pypto.ir import nodes, types
from pypto.ir.dtypes import DataType
from pypto.ir.param_info import Layout, ParamDirection

__all__ = ["ENUM_TYPES", "FORMAT", "deserialize", "serialize"]

FORMAT = "pypto-ir/1"

_NODES: dict[str, type] = {
    c.__name__: c
    for c in (
        nodes.Var,
        nodes.Const,
        nodes.BinOp,
        nodes.Call,
        nodes.CallFunc,
        nodes.Assign,
        nodes.ExprStmt,
        nodes.TensorWrite,
        nodes.IterArg,
        nodes.Yield,
        nodes.For,
        nodes.While,
        nodes.Break,
        nodes.Continue,
        nodes.If,
        nodes.Scope,
        nodes.Return,
        nodes.Param,
        nodes.Function,
        nodes.Program,
        nodes.ParamRef,
        types.DynDim,
        types.TensorType,
        types.TileType,
        types.ScalarType,
        types.TaskIdType,
        types.TupleType,
    )
}
_ENUMS: dict[str, type[enum.Enum]] = {
    c.__name__: c
    for c in (
        DataType,
        Layout,
        ParamDirection,
        types.MemorySpace,
        types.Level,
        types.FunctionType,
        types.PadValue,
        types.CoreType,
        types.AtomicType,
        types.NotifyOp,
        types.WaitCmp,
        types.ReduceOp,
        types.SplitMode,
        types.PipeType,
    )
}
ENUM_TYPES: tuple[type[enum.Enum], ...] = tuple(_ENUMS.values())
"""The enums an IR node may hold (a ``pl.func_attr`` value may be a member of one)."""


def _enc(v: Any) -> Any:
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, enum.Enum):
        name = type(v).__name__
        if _ENUMS.get(name) is not type(v):
            raise TypeError(f"serialize: the enum {name} is not part of the IR")
        return {"E": name, "v": v.value}
    if isinstance(v, tuple):
        return {"T": [_enc(x) for x in v]}
    if isinstance(v, list):
        return {"L": [_enc(x) for x in v]}
    name = type(v).__name__
    if _NODES.get(name) is type(v) and dataclasses.is_dataclass(v):
        fields = {f.name: _enc(getattr(v, f.name)) for f in dataclasses.fields(v) if f.compare}
        return {"N": name, "f": fields}
    raise TypeError(f"serialize: {type(v).__name__} value {v!r} is not part of the IR")


def _dec(v: Any) -> Any:
    if not isinstance(v, dict):
        if isinstance(v, list):
            raise ValueError("deserialize: a bare JSON list is not an IR value")
        return v
    if "T" in v:
        return tuple(_dec(x) for x in v["T"])
    if "L" in v:
        return [_dec(x) for x in v["L"]]
    if "E" in v:
        cls = _ENUMS.get(v["E"])
        if cls is None:
            raise ValueError(f"deserialize: unknown enum {v['E']!r}")
        return cls(v["v"])
    if "N" in v:
        node = _NODES.get(v["N"])
        if node is None:
            raise ValueError(f"deserialize: unknown node {v['N']!r}")
        return node(**{k: _dec(x) for k, x in v["f"].items()})
    raise ValueError(f"deserialize: unexpected object with keys {sorted(v)}")


def serialize(node: nodes.Program | nodes.Function) -> bytes:
    """The bytes of ``node`` (a Program or a Function); :func:`deserialize` reads them back."""
    if not isinstance(node, (nodes.Program, nodes.Function)):
        raise TypeError(
            f"serialize(node): expected a pypto.ir Program or Function, got {type(node).__name__}"
        )
    return json.dumps({"format": FORMAT, "ir": _enc(node)}, separators=(",", ":")).encode()


def deserialize(data: bytes | bytearray | memoryview) -> nodes.Program | nodes.Function:
    """The Program or Function that :func:`serialize` wrote into ``data``.

    Raises:
        TypeError: ``data`` is not bytes.
        ValueError: ``data`` is not the output of :func:`serialize` of this format version.
    """
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"deserialize(data): expected bytes, got {type(data).__name__}")
    try:
        doc = json.loads(bytes(data))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"deserialize(data): not serialized IR ({exc})") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        got = doc.get("format") if isinstance(doc, dict) else type(doc).__name__
        raise ValueError(f"deserialize(data): expected format {FORMAT!r}, got {got!r}")
    try:
        out = _dec(doc["ir"])
    except (KeyError, TypeError) as exc:
        raise ValueError(f"deserialize(data): malformed IR ({exc})") from None
    if not isinstance(out, (nodes.Program, nodes.Function)):
        raise ValueError(f"deserialize(data): expected a Program or Function, got {type(out).__name__}")
    return out
