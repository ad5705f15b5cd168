"""The op reference (``docs/reference/ops.md``), rendered from the op table.

Everything on the page is read from ``LANGUAGE`` and ``OPS`` or computed by the ops' own type
rules, so the page cannot say something the compiler does not do: the signature and doc are the
``LangOp``'s (what ``help(pl.<name>)`` shows), the operand kinds and counts are the forms' arity,
the dtypes and memory spaces are the ``OpSpec``'s where the table records them and otherwise the
ones the type rule accepts when asked about each, and the typing line is the rule applied to a
sample operand list (``SAMPLES``). Examples are the ``pl.<name>(...)`` calls the doc itself
writes and, with ``--examples``, the first line of the given programs (the tutorial's steps,
which CI runs and checks against numpy/torch) that calls the op; none is written for the page.
``python -m pypto.ir.ops.reference docs/reference/ops.md --examples docs/tutorial`` writes the
page, ``--check`` fails when it differs; tests/test_op_reference.py and ``nox -s docs`` fail when
the committed page differs from a fresh render.
"""

from __future__ import annotations

import argparse
import inspect
import os
import re
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from pypto.ir.dtypes import DataType
from pypto.ir.ops.spec import LANGUAGE, OPS, REQUIRED, LangOp, OpError, OpSpec, infer
from pypto.ir.types import (
    ArrayType,
    AtomicType,
    MemorySpace,
    NotifyOp,
    PadValue,
    PipeType,
    ReduceOp,
    ScalarType,
    TaskIdType,
    TensorType,
    TileType,
    Type,
    WaitCmp,
)

__all__ = ["COMMAND", "SAMPLES", "main", "render", "sample", "usages"]

COMMAND = "python -m pypto.ir.ops.reference docs/reference/ops.md --examples docs/tutorial"
"""The command that writes the committed page, from the repository root."""

_FP32 = DataType.FP32
_FP16 = DataType.FP16
_T = TileType((16, 64), _FP32, MemorySpace.Vec)
_X = TensorType((128, 64), _FP32)
_S = ScalarType(_FP32)
_W = TensorType((1, 64), _FP32)
_SIG = TensorType((4, 1), DataType.INT32)
_I = ScalarType(DataType.INT32)
_TI = TileType((16, 64), DataType.INT32, MemorySpace.Vec)
_XI = TensorType((128, 64), DataType.INT32)
_MASK = TileType((16, 32), DataType.UINT8, MemorySpace.Vec)  # pl.cmp's mask of a [16, 64] tile
_ROW256: Type = TileType((1, 256), _FP32, MemorySpace.Vec)  # a row of 128 sorted pairs

Sample = tuple[list[Type], dict[str, Any]]

SAMPLES: dict[str, Sample] = {
    "tile.load": ([_X], {"shape": (16, 64), "static_offsets": [32, 0], "memory": MemorySpace.Vec}),
    "tile.store": ([_T, _X], {"static_offsets": [32, 0]}),
    "tile.move": ([TileType((16, 64), _FP16, MemorySpace.Mat)], {"memory": MemorySpace.Left}),
    "tile.create": ([], {"shape": (16, 64), "dtype": _FP32, "memory": MemorySpace.Vec}),
    "tensor.create": ([], {"shape": (128, 64), "dtype": _FP32}),
    "tile.full": ([_S], {"shape": (16, 64), "dtype": _FP32}),
    "tile.tri": ([_I], {"shape": (16, 64), "dtype": _FP32}),
    "tile.ci": ([_I], {"shape": (1, 64), "dtype": DataType.INT32}),
    "tile.gather": ([_T, _TI, _TI], {}),
    "tile.extract": (
        [TileType((16, 64), _FP16, MemorySpace.Mat)],
        {"shape": (16, 32), "static_offsets": [0, 32], "memory": MemorySpace.Left},
    ),
    "tile.rem": ([_T, _T, _T], {}),
    "tile.addc": ([_T, _T, _T], {}),
    "tile.subc": ([_T, _T, _T], {}),
    "tile.addsc": ([_T, _S, _T], {}),
    "tile.subsc": ([_T, _S, _T], {}),
    "tile.rems": ([_T, _S, _T], {}),
    "tensor.gather": ([_X, _XI], {"dim": 1}),
    "tensor.expand_clone": ([_W, _X], {}),
    "tensor.full": ([_S], {"shape": (16, 64), "dtype": _FP32}),
    "tensor.random": ([_I] * 6, {"shape": (4, 256), "dtype": DataType.UINT32, "rounds": 10}),
    "tile.random": ([_I] * 6, {"shape": (4, 256), "dtype": DataType.UINT32, "rounds": 10}),
    "tile.sort32": ([_T, TileType((16, 64), DataType.UINT32, MemorySpace.Vec)], {}),
    "tensor.sort32": ([_X, TensorType((128, 64), DataType.UINT32)], {}),
    "tile.mrgsort": ([TileType((1, 256), _FP32, MemorySpace.Vec), _I], {"static_block_len": 64}),
    "tensor.mrgsort": ([TensorType((1, 256), _FP32), _I], {"static_block_len": 64}),
    "tile.mrgsort_lists": (
        [TileType((1, 128), _FP32, MemorySpace.Vec), TileType((1, 128), _FP32, MemorySpace.Vec), _ROW256],
        {},
    ),
    "tensor.mrgsort_lists": ([TensorType((1, 128), _FP32)] * 2, {}),
    "tile.gather_mask": ([_T], {"mask_pattern": 1}),
    "tensor.gather_mask": ([_X], {"mask_pattern": 1}),
    "tile.scatter": ([_T, _T, _TI], {}),
    "tensor.scatter": ([_X, _XI, _X], {"dim": 1}),
    "tensor.ci": ([_I], {"shape": (1, 64), "dtype": DataType.INT32}),
    "tensor.dim": ([_X], {"axis": 0}),
    "tile.reshape": ([_T], {"shape": (32, 32)}),
    "tensor.reshape": ([_X], {"shape": (64, 128)}),
    "tile.transpose": ([_T], {}),
    "tile.transpose_view": ([TileType((64, 16), _FP16, MemorySpace.Mat)], {}),
    "tensor.transpose": ([_X], {}),
    "tile.concat": ([_T, _T], {}),
    "tensor.concat": ([_X, _X], {}),
    "tile.cast": ([_T], {"dtype": _FP16, "mode": None}),
    "tensor.cast": ([_X], {"dtype": _FP16, "mode": None}),
    "scalar.cast": ([_S], {"dtype": DataType.INT32, "mode": None}),
    "tile.matmul": (
        [TileType((16, 32), _FP16, MemorySpace.Left), TileType((32, 64), _FP16, MemorySpace.Right)],
        {},
    ),
    "tensor.matmul": ([TensorType((16, 32), _FP16), TensorType((32, 64), _FP16)], {}),
    "tensor.matmul_acc": (
        [TensorType((16, 64), _FP32), TensorType((16, 32), _FP16), TensorType((32, 64), _FP16)],
        {},
    ),
    "tile.matmul_acc": (
        [
            TileType((16, 64), _FP32, MemorySpace.Acc),
            TileType((16, 32), _FP16, MemorySpace.Left),
            TileType((32, 64), _FP16, MemorySpace.Right),
        ],
        {},
    ),
    "tile.matmul_bias": (
        [
            TileType((16, 32), _FP16, MemorySpace.Left),
            TileType((32, 64), _FP16, MemorySpace.Right),
            TileType((1, 64), _FP32, MemorySpace.Bias),
        ],
        {},
    ),
    "tile.gemv": (
        [TileType((1, 32), _FP16, MemorySpace.Left), TileType((32, 64), _FP16, MemorySpace.Right)],
        {"acc_phase": "partial"},
    ),
    "tile.gemv_acc": (
        [
            TileType((1, 64), _FP32, MemorySpace.Acc),
            TileType((1, 32), _FP16, MemorySpace.Left),
            TileType((32, 64), _FP16, MemorySpace.Right),
        ],
        {"acc_phase": "final"},
    ),
    "tile.gemv_bias": (
        [
            TileType((1, 32), _FP16, MemorySpace.Left),
            TileType((32, 64), _FP16, MemorySpace.Right),
            TileType((1, 64), _FP32, MemorySpace.Bias),
        ],
        {},
    ),
    "tensor.read": ([_X], {}),
    "tile.read": ([_T], {}),
    "tile.slice": ([_T], {"shape": (16, 32), "static_offsets": [0, 32]}),
    "tile.assemble": ([_T, TileType((16, 32), _FP32)], {"static_offsets": [0, 32]}),
    "tensor.assemble": ([_X, _T], {"static_offsets": [16, 0], "atomic": AtomicType.Add}),
    "tile.fillpad": ([_T], {"pad": PadValue.zero}),
    "tensor.fillpad": ([_X], {"pad": PadValue.zero}),
    "system.task_invalid": ([], {}),
    "tile.tpush_to_aiv": ([_T], {"split": 0}),
    "tile.tpush_to_aic": ([_T], {"split": 0}),
    "tile.tpop_from_aic": ([], {"shape": (16, 64), "dtype": _FP32, "split": 0}),
    "tile.tpop_from_aiv": ([], {"shape": (16, 64), "dtype": _FP32, "split": 0}),
    "tile.tfree_to_aic": ([_T], {}),
    "tile.tfree_to_aiv": ([_T], {}),
    "tile.fillpad_expand": ([_T], {"shape": (32, 64), "pad": PadValue.zero}),
    "tensor.fillpad_expand": ([_X], {"shape": (128, 128), "pad": PadValue.zero}),
    "tile.not_": ([_TI], {}),
    "tile.lrelu": ([_T, _S], {}),
    "tile.fmods": ([_T, _S], {}),
    "tensor.fmods": ([_X, _S], {}),
    "tile.prelu": ([_T, _T, _T], {}),
    "tensor.not_": ([_XI], {}),
    **{f"tile.{n}": ([_TI, _TI], {}) for n in ("and_", "or_", "xor", "shl", "shr")},
    **{f"tensor.{n}": ([_XI, _XI], {}) for n in ("and_", "or_", "xor", "shl", "shr")},
    **{f"tile.{n}": ([_TI, _I], {}) for n in ("ands", "ors", "xors", "shls", "shrs")},
    **{f"tensor.{n}": ([_XI, _I], {}) for n in ("ands", "ors", "xors", "shls", "shrs")},
    "tile.cmp": ([_T, _T], {"cmp_type": 2}),
    "tensor.cmp": ([_X, _X], {"cmp_type": 2}),
    "tile.cmps": ([_T, _S], {"cmp_type": 5}),
    "tile.sel": ([_MASK, _T, _T], {}),
    "tile.sels": ([_MASK, _T, TileType((1, 32), DataType.UINT8), _S], {}),
    "tile.set_validshape": ([_T, ScalarType(DataType.INT64), ScalarType(DataType.INT64)], {}),
    "tile.expands": ([_T, _S], {}),
    "tensor.expands": ([_X, _S], {}),
    **{f"tile.{n}": ([_T, _S], {}) for n in ("adds", "subs", "muls", "divs", "maximums", "minimums")},
    **{f"tensor.{n}": ([_X, _S], {}) for n in ("adds", "subs", "muls", "divs")},
    "tensor.write": ([_X, _S], {}),
    "tile.write": ([_T, _S], {"static_offsets": [1, 2]}),
    "tensor.view": ([_X], {"shape": (16, 64), "static_offsets": [32, 0]}),
    "tile.print": ([_T], {"label": "t"}),
    "scalar.print": ([_S], {"label": "s"}),
    "array.create": ([], {"extent": 4, "elem": TaskIdType()}),
    "array.get": ([ArrayType(4), ScalarType(DataType.INT64)], {}),
    "array.set": ([ArrayType(4), ScalarType(DataType.INT64), TaskIdType()], {}),
    "system.task_dummy": ([ArrayType(4), TaskIdType()], {}),
    "system.scope_begin": ([], {"mode": "manual"}),
    "system.scope_end": ([], {"mode": "manual"}),
    # pl.system statements (pypto/ir/ops/system_ops.py)
    **{
        f"system.{n}": ([], {})
        for n in ("bar_v", "bar_m", "bar_all", "fence", "available_cluster_count", "available_aiv_count")
    },
    **{
        f"system.{n}": ([], {"set_pipe": PipeType.MTE2, "wait_pipe": PipeType.V, "event_id": 0})
        for n in ("sync_src", "sync_dst")
    },
    "system.sync_set": ([], {"pipe": PipeType.MTE3, "event_id": 3}),
    "system.sync_wait": ([_I], {"pipe": PipeType.MTE2}),
    "system.set_ffts": ([TensorType((256,), DataType.INT64)], {}),
    "system.cacheinvalid": ([_X], {}),
    "system.syncall": ([_SIG, _I], {"core_type": "aiv_only", "mode": "soft"}),
    **{
        f"system.{n}": ([], {"dir_mask": 1, "slot_size": 256})
        for n in ("aic_initialize_pipe", "aiv_initialize_pipe")
    },
    "system.reserve_buffer": ([], {"name": "buf", "size": 1024}),
    "system.import_peer_buffer": ([], {"name": "buf", "peer_func": "producer"}),
    # cross-rank operations (pld): a [1, 64] FP32 data window and a [4, 1] INT32 signal window
    "comm.ctx": ([_W], {}),
    "comm.rank": ([_W], {}),
    "comm.nranks": ([_W], {}),
    "comm.notify": ([_SIG, _I, _I], {"op": NotifyOp.AtomicAdd}),
    "comm.wait": ([_SIG, _I], {"cmp": WaitCmp.Ge}),
    "comm.barrier": ([_SIG], {}),
    "comm.remote_load": ([_W, _I], {"shape": (1, 64)}),
    "comm.remote_store": ([TileType((1, 64), _FP32, MemorySpace.Vec), _W, _I], {"atomic": AtomicType.None_}),
    "comm.put": ([_W, _I, _W], {"atomic": AtomicType.None_}),
    "comm.get": ([_W, _I, _W], {}),
    "comm.allreduce": ([_W, _SIG], {"op": ReduceOp.Sum, "mode": "mesh", "core_num": 1}),
    "comm.broadcast": ([_W, _SIG, _I], {}),
    "comm.allgather": ([_W, TensorType((4, 64), _FP32), _SIG], {}),
    "comm.reduce_scatter": ([TensorType((4, 64), _FP32), _SIG], {"op": ReduceOp.Max}),
    "comm.all_to_all": ([TensorType((4, 64), _FP32), TensorType((4, 64), _FP32), _SIG], {}),
    "comm.all_to_all_v": ([TensorType((4, 64), _FP32), TensorType((4, 64), _FP32), _SIG, _SIG, _SIG], {}),
    "comm.defer_wait": ([_SIG, _I], {"cmp": WaitCmp.Ge}),
}
"""Operand types and attributes for each IR op that is not one of the element-wise, reduction or
broadcast families (those get theirs from ``sample``)."""


def sample(spec: OpSpec, group: str) -> Sample | None:
    """Operand types and attributes that ``spec``'s type rule accepts (``None``: none known)."""
    if spec.name in SAMPLES:
        return SAMPLES[spec.name]
    short = spec.name.split(".", 1)[1]
    a: Type = _T if spec.kind == "tile" else _X
    if group == "element-wise":
        return ([a] * spec.min_args, {})
    if group == "reduction":
        return ([a], {})
    if group == "broadcast":
        rows, cols = (16, 64) if spec.kind == "tile" else (128, 64)  # the shapes of _T and _X
        vec = (rows, 1) if short.startswith("row_") else (1, cols)
        b: Type = TileType(vec, _FP32) if spec.kind == "tile" else TensorType(vec, _FP32)
        return ([a, b], {})
    return None


def _with(t: Type, dtype: DataType | None = None, memory: MemorySpace | None = None) -> Type:
    if isinstance(t, TileType):
        return TileType(t.shape, dtype or t.dtype, memory or t.memory)
    if isinstance(t, TensorType) and dtype is not None:
        return TensorType(t.shape, dtype, t.layout)
    if isinstance(t, ScalarType) and dtype is not None:
        return ScalarType(dtype)
    return t


def _accepts(name: str, args: list[Type], attrs: dict[str, Any]) -> bool:
    try:
        infer(name, args, attrs)
    except OpError:
        return False
    return True


def _probe_dtypes(spec: OpSpec, smp: Sample) -> list[DataType]:
    """The element types the rule accepts when every operand has that type."""
    args, attrs = smp
    return [d for d in DataType if _accepts(spec.name, [_with(t, dtype=d) for t in args], attrs)]


def _probe_spaces(spec: OpSpec, smp: Sample) -> list[MemorySpace] | None:
    """The memory spaces the rule accepts for the first tile operand, or, for an op without one,
    for the ``memory`` attribute (the tile it makes); ``None``: neither. A space counts for an
    operand when some ``memory`` attribute (a move's target) makes the rule accept it."""
    args, attrs = smp
    at = next((i for i, t in enumerate(args) if isinstance(t, TileType)), None)
    spaces: list[MemorySpace] = [m for m in MemorySpace if m is not MemorySpace.DDR]
    if at is None:
        if "memory" not in attrs:
            return None
        return [m for m in spaces if _accepts(spec.name, args, {**attrs, "memory": m})]
    targets: list[MemorySpace | None] = list(spaces) if "memory" in attrs else [None]
    accepted: list[MemorySpace] = []
    for m in spaces:
        trial = list(args)
        trial[at] = _with(args[at], memory=m)
        if any(_accepts(spec.name, trial, attrs if t is None else {**attrs, "memory": t}) for t in targets):
            accepted.append(m)
    return accepted


def _names(items: list[Any], every: list[Any]) -> str:
    if items == every:
        return "any"
    return ", ".join(i.value for i in items) if items else "none"


def _signature(op: LangOp) -> str:
    parts = [p.name if p.default is REQUIRED else f"{p.name}={p.default!r}" for p in op.params]
    return f"{op.spelled}({', '.join(parts)})"


_CALL = re.compile(r"``(pl\.[A-Za-z_][\w.]*\([^`]*\))``")


def _examples(doc: str) -> list[str]:
    """The ``pl.<name>(...)`` calls the doc writes."""
    return _CALL.findall(doc)


def _programs(sources: Iterable[Path]) -> list[Path]:
    files: list[Path] = []
    for src in sources:
        files += sorted(src.glob("*.py")) if src.is_dir() else [src]
    return files


def usages(sources: Iterable[Path]) -> dict[str, tuple[Path, str]]:
    """Per op name, the first line of the ``sources`` (``.py`` files, or folders of them, in the
    order given) that calls ``pl.<name>(`` or ``pl.tile.<name>(``: ``(file, the line)``."""
    found: dict[str, tuple[Path, str]] = {}
    call = re.compile(r"\bpl\.(tile\.)?(\w+)\(")
    ops = [op for op in LANGUAGE.values() if op.public]
    in_pl = {op.public_name: op.name for op in ops if op.in_pl}
    in_tile = {op.public_name: op.name for op in ops if op.tile_level}
    for path in _programs(sources):
        for line in path.read_text(encoding="utf-8").splitlines():
            code = line.strip()
            if code.startswith("#"):
                continue
            for tile, name in call.findall(code):
                op = (in_tile if tile else in_pl).get(name)
                if op is not None:
                    found.setdefault(op, (path, code))
    return found


def _attr(value: Any) -> str:
    if isinstance(value, DataType | MemorySpace | PadValue):
        return str(value.value)
    if isinstance(value, tuple | list):
        return "[" + ", ".join(_attr(v) for v in value) + "]"
    return repr(value)


def _operands(spec: OpSpec, smp: Sample | None) -> str:
    n = str(spec.min_args) if spec.min_args == spec.max_args else f"{spec.min_args} to {spec.max_args}"
    kinds = [type(t).__name__.removesuffix("Type").lower() for t in smp[0]] if smp else []
    return n + (f" ({', '.join(kinds)})" if kinds else "")


def _form(op: LangOp, ir: str) -> list[str]:
    """One IR form of ``op`` as a list item: what selects it, its operands, dtypes, memory
    spaces, where it runs, and its type rule on a sample."""
    spec = OPS[ir]
    smp = sample(spec, op.group)
    selected = {ir: kind for kind, ir in op.forms.items()}
    first = f"first operand a {selected[ir]}" if ir in selected else "any first operand"
    where = "in a kernel" if spec.on_core else "in the orchestration"
    if spec.dtypes is not None:
        dtypes = _names([d for d in DataType if d in spec.dtypes], list(DataType))
    elif smp is not None:
        dtypes = _names(_probe_dtypes(spec, smp), list(DataType))
    else:
        dtypes = "see above"
    if spec.spaces is not None:
        spaces: str | None = ", ".join(m.value for m in spec.spaces)
    elif spec.kind == "tensor":
        spaces = "DDR (tensors)"
    elif spec.kind == "tile" and smp is not None:
        probed = _probe_spaces(spec, smp)
        spaces = (
            None if probed is None else _names(probed, [m for m in MemorySpace if m is not MemorySpace.DDR])
        )
    else:
        spaces = None
    facts = [f"operands: {_operands(spec, smp)}", f"dtypes: {dtypes}"]
    if spaces is not None:
        facts.append(f"memory spaces: {spaces}")
    item = f"- `{ir}` ({first}; runs {where}): " + "; ".join(facts)
    if smp is None:
        return [item]
    args, attrs = smp
    call = [str(t) for t in args] + [f"{k}={_attr(v)}" for k, v in attrs.items() if v is not None]
    return [item + "<br>", f"  e.g. `{ir}({', '.join(call)}) -> {infer(ir, args, attrs)}`"]


def _op_section(op: LangOp, used: tuple[Path, str] | None, relative_to: Path) -> list[str]:
    # a text fence: the signature is not a runnable snippet
    out = [f"### `{op.spelled}`", "", "```text", _signature(op), "```", ""]
    out += [inspect.cleandoc(op.doc), ""]
    tile = f"yes, `pl.tile.{op.public_name}`" if op.tile_level else "no"
    if op.tile_level and op.alias:
        tile += f" (also `pl.tile.{op.alias}`)"
    out += [f"**`pl.tile` form:** {tile}", ""]
    if op.tensor_level:
        tensor = f"`pl.tensor.{op.public_name}`" + (
            f" (also `pl.tensor.{op.alias}`)" if op.alias and not op.tile_level else ""
        )
        out += [f"**`pl.tensor` form:** {tensor}", ""]
    examples = _examples(op.doc)
    if examples:
        out += [f"**Example:** {', '.join(f'`{e}`' for e in examples)}", ""]
    if used is not None:
        path, code = used
        link = Path(os.path.relpath(path.resolve(), relative_to.resolve())).as_posix()
        out += [f"**Example** ([{path.name}]({link})): `{code}`", ""]
    out += ["**Forms:**", ""]
    for ir in op.ir_ops:
        out += _form(op, ir)
    return [*out, ""]


def _groups() -> dict[str, list[LangOp]]:
    groups: dict[str, list[LangOp]] = {}
    for op in LANGUAGE.values():  # table order
        if op.public:
            groups.setdefault(op.group or "other", []).append(op)
    return groups


def _anchor(title: str) -> str:
    return re.sub(r"[^a-z0-9_\- ]", "", title.lower()).strip().replace(" ", "-")


def render(examples: Sequence[Path] = (), relative_to: Path | None = None) -> str:
    """The op reference page as Markdown; ``examples``: programs (files or folders) whose calls of
    each op are shown, linked relative to ``relative_to`` (the page's folder; default: here)."""
    groups = _groups()
    used = usages(examples)
    base = relative_to if relative_to is not None else Path.cwd()
    out = [
        "# Op reference",
        "",
        f"<!-- Generated by `{COMMAND}`",
        "     from the op table (pypto/ir/ops/table.py); do not edit by hand. -->",
        "",
        "Every `pl.*` operation of the kernel language, one section per group, in the order of the op",
        "table. The signature and text are what `help(pl.<name>)` shows. *Forms* lists the IR ops a",
        "call becomes, chosen by the kind of its first operand: *operands* counts the typed operands",
        "(offsets, shapes, dtypes and memory spaces passed as arguments are attributes); *dtypes* and",
        "*memory spaces* are those the form accepts for its tile or tensor operands (for an op that",
        "makes a tile, such as `pl.load`, the spaces of the tile it makes); the line under a form is",
        "its type rule applied to sample operands. `pl.tile.<name>` is the same function as",
        "`pl.<name>`, exported for the ops that have a tile form. An *Example* with a file name is",
        "the first line of that [tutorial](../tutorial/README.md) step that calls the op; CI runs",
        "every step and checks its result against numpy or torch.",
        "",
    ]
    out += [
        f"- [{g}](#{_anchor(g)}): " + ", ".join(f"`{op.spelled}`" for op in ops) for g, ops in groups.items()
    ]
    out += [""]
    for group, ops in groups.items():
        out += [f"## {group}", ""]
        for op in ops:
            out += _op_section(op, used.get(op.name), base)
    return "\n".join(out).rstrip("\n") + "\n"


def main(argv: list[str] | None = None, write: Callable[[str], Any] = sys.stdout.write) -> int:
    """Write the op reference to PATH (or print it); with ``--check``, exit 1 when PATH differs
    from the page the table gives now."""
    parser = argparse.ArgumentParser(prog="python -m pypto.ir.ops.reference", description=main.__doc__)
    parser.add_argument("path", nargs="?", type=Path, help="where to write the page (default: stdout)")
    parser.add_argument(
        "--check", action="store_true", help="compare PATH with the table instead of writing it"
    )
    parser.add_argument(
        "--examples",
        action="append",
        type=Path,
        default=[],
        help="a program, or a folder of them, to take each op's example line from (repeatable)",
    )
    ns = parser.parse_args(argv)
    if ns.check and ns.path is None:
        parser.error("--check needs the PATH of the committed page")
    text = render(ns.examples, ns.path.parent if ns.path is not None else None)
    if ns.check:
        if not ns.path.is_file() or ns.path.read_text(encoding="utf-8") != text:
            write(
                f"{ns.path} is not the op table's reference; regenerate it (from the repository root): {COMMAND}\n"
            )
            return 1
        return 0
    if ns.path is None:
        write(text)
    else:
        ns.path.parent.mkdir(parents=True, exist_ok=True)
        ns.path.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
