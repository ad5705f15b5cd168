"""The kernel-language text of an IR program or function (``as_python``).

``print_ir`` (:mod:`pypto.ir.nodes`) is a compact dump for people; this printer writes Python
that ``pl.parse`` reads back: a ``@pl.program`` class of ``@pl.function`` methods, or one
``@pl.function``, with ``pl.*`` calls for the ops. For IR as the parser produces it (before the
passes) the text parses back to a structurally equal program (``structural_equal``);
``tests/test_python_printer.py`` checks that over the shared example programs and the tutorial.
IR after the passes prints too, for reading (loop-carried values as ``pl.range(...,
init_values=...)`` with ``pl.yield_``); parsed back it is not the same nodes (SSA names, the
``outlined`` flag), and a task id returned by an outlined kernel's call does not parse.

A dynamic dimension is declared before the code that uses it (``M = pl.dynamic("M")``).
"""

from __future__ import annotations

import enum
import json
from collections.abc import Callable, Iterator
from typing import Any

from pypto.ir import nodes
from pypto.ir.dtypes import DataType
from pypto.ir.param_info import Layout, ParamDirection
from pypto.ir.types import DynDim, FunctionType, ScalarType, TensorType, TileType, TupleType, Type

__all__ = ["function_text", "program_text", "python_print", "type_text"]

_INDENT = "    "


# ----------------------------------------------------------------------------- types


def _dims(shape: tuple[Any, ...]) -> str:
    return "[" + ", ".join(d.name if isinstance(d, DynDim) else str(d) for d in shape) + "]"


def _dtype(dt: DataType) -> str:
    return f"pl.{dt.value}"


def type_text(t: Type) -> str:
    """The annotation that declares ``t``: ``pl.Tensor[[64, 64], pl.FP32]``, ``pl.FP32``, ..."""
    if isinstance(t, TensorType):
        layout = ", pl.NZ" if t.layout is Layout.NZ else ""
        return f"pl.Tensor[{_dims(t.shape)}, {_dtype(t.dtype)}{layout}]"
    if isinstance(t, TileType):
        return f"pl.Tile[{_dims(t.shape)}, {_dtype(t.dtype)}, pl.MemorySpace.{t.memory.value}]"
    if isinstance(t, ScalarType):
        return _dtype(t.dtype)
    if isinstance(t, TupleType):
        return "tuple[" + ", ".join(type_text(i) for i in t.items) + "]"
    raise ValueError(f"type_text(t): {t} has no annotation in the kernel language")


def _annotated(t: Type) -> bool:
    return isinstance(t, (TensorType, TileType, ScalarType))


def _dyn_dims(t: Type) -> Iterator[str]:
    if isinstance(t, TensorType):
        yield from (d.name for d in t.shape if isinstance(d, DynDim))
    elif isinstance(t, TupleType):
        for i in t.items:
            yield from _dyn_dims(i)


# ----------------------------------------------------------------------------- expressions

_SYMBOLS = nodes.BINOP_SYMBOLS  # the compact dump and this text spell binary ops alike


def _static(v: Any) -> str:
    if isinstance(v, DataType):
        return _dtype(v)
    if isinstance(v, enum.Enum):
        return repr(v)  # the enums of pypto.ir.types print as pl.<Enum>.<member>
    if isinstance(v, (tuple, list)):
        return "[" + ", ".join(_static(x) for x in v) + "]"
    return repr(v)


def _const(c: nodes.Const) -> str:
    v = c.value
    natural = (
        DataType.BOOL if isinstance(v, bool) else DataType.FP32 if isinstance(v, float) else DataType.INT64
    )
    text = repr(v)
    if isinstance(v, float) and text in ("inf", "-inf", "nan"):
        raise ValueError(f"as_python: the constant {text} has no kernel-language spelling")
    if c.dtype is natural:
        return text
    return f"pl.cast({text}, {_dtype(c.dtype)})"


def _expr(e: nodes.Arg) -> str:
    if isinstance(e, tuple):
        return "[" + ", ".join(_expr(x) for x in e) + "]"
    if isinstance(e, nodes.Var):
        return e.name
    if isinstance(e, nodes.Const):
        return _const(e)
    if isinstance(e, nodes.BinOp):
        sym = _SYMBOLS.get(e.op)
        if sym is None:
            return f"{e.op}({_expr(e.lhs)}, {_expr(e.rhs)})"
        return f"({_expr(e.lhs)} {sym} {_expr(e.rhs)})"
    if isinstance(e, nodes.CallFunc):
        args = [_expr(a) for a in e.args]
        if e.deps:
            args.append(f"deps=[{', '.join(_expr(d) for d in e.deps)}]")
        return f"self.{e.callee}({', '.join(args)})"
    return _call(e)


def _lang_names() -> dict[str, str]:
    from pypto.ir.ops import LANGUAGE

    names: dict[str, str] = {}
    for lang in LANGUAGE.values():
        if not lang.public:
            continue
        for op in lang.ir_ops:
            names.setdefault(op, lang.spelled)
    for lang in LANGUAGE.values():  # a tile or tensor form only a keyword reaches (pl.gather's mask form)
        if not lang.public and lang.spelling:
            for op in lang.ir_ops:
                if op.startswith(("tile.", "tensor.")):
                    names.setdefault(op, lang.spelling)
    return names


_LANG: dict[str, str] = {}


def _kw(call: nodes.Call, attr: str, key: str) -> list[str]:
    v = call.attr(attr)
    return [] if v is None else [f"{key}={_static(v)}"]


def _shape(call: nodes.Call) -> str:
    return _dims(tuple(call.attr("shape")))


def _load(c: nodes.Call) -> list[str]:
    parts = [_expr(c.args[0]), _expr(c.args[1]), _shape(c)]
    if len(c.args) > 2:
        parts.append(f"valid_shape={_expr(c.args[2])}")
    return parts + _kw(c, "memory", "target_memory")


def _create_tile(c: nodes.Call) -> list[str]:
    return [
        _shape(c),
        f"dtype={_dtype(c.attr('dtype'))}",
        *_kw(c, "memory", "target_memory"),
        *_kw(c, "transpose", "transpose"),
        *_kw(c, "flat_layout", "flat_layout"),
    ]


def _full(c: nodes.Call) -> list[str]:
    return [_shape(c), f"dtype={_dtype(c.attr('dtype'))}", f"value={_expr(c.args[0])}"]


def _tri(c: nodes.Call) -> list[str]:
    parts = [_expr(c.args[0]), _shape(c)]
    if c.attr("valid_shape") is not None:
        parts.append(f"valid_shape={_dims(tuple(c.attr('valid_shape')))}")
    parts.append(f"dtype={_dtype(c.attr('dtype'))}")
    return parts + (["upper=True"] if c.attr("upper") else [])


def _random(c: nodes.Call) -> list[str]:
    parts = [*(_expr(a) for a in c.args), _shape(c)]
    if c.attr("valid_shape") is not None:
        parts.append(f"valid_shape={_dims(tuple(c.attr('valid_shape')))}")
    parts.append(f"dtype={_dtype(c.attr('dtype'))}")
    return [*parts, f"rounds={c.attr('rounds')}"]


def _ci(c: nodes.Call) -> list[str]:
    parts = [_expr(c.args[0]), _shape(c), f"dtype={_dtype(c.attr('dtype'))}"]
    return parts + (["descending=True"] if c.attr("descending") else [])


def _cast(c: nodes.Call) -> list[str]:
    return [_expr(c.args[0]), _dtype(c.attr("dtype")), *_kw(c, "mode", "mode")]


def _slice(c: nodes.Call) -> list[str]:
    return [_expr(c.args[0]), _shape(c), _expr(c.args[1])]


# IR op -> its pl arguments, for the ops whose attributes are pl arguments; any other op
# prints its operands in order (``pl.add(a, b)``, ``pl.row_sum(t, tmp)``, ``pl.read(t, [i])``).
_ARGS: dict[str, Callable[[nodes.Call], list[str]]] = {
    "tile.load": _load,
    "tile.move": lambda c: [_expr(c.args[0]), *_kw(c, "memory", "target_memory")],
    "tile.create": _create_tile,
    "tensor.create": lambda c: [_shape(c), f"dtype={_dtype(c.attr('dtype'))}"],
    "tile.full": _full,
    "tensor.full": _full,
    "tile.tri": _tri,
    "tile.ci": _ci,
    "tile.random": _random,
    "tensor.random": _random,
    "tensor.ci": _ci,
    "tensor.dim": lambda c: [_expr(c.args[0]), repr(c.attr("axis"))],
    "tile.reshape": lambda c: [_expr(c.args[0]), _shape(c)],
    "tensor.reshape": lambda c: [_expr(c.args[0]), _shape(c)],
    "tile.cast": _cast,
    "tensor.cast": _cast,
    "scalar.cast": _cast,
    "tile.slice": _slice,
    "tile.extract": lambda c: [
        _expr(c.args[0]),
        *(_expr(o) for o in c.args[1]),  # type: ignore[union-attr]
        _shape(c),
        *_kw(c, "memory", "target_memory"),
    ],
    "tile.fillpad": lambda c: [_expr(c.args[0]), *_kw(c, "pad", "pad_value")],
    "tensor.fillpad": lambda c: [_expr(c.args[0]), *_kw(c, "pad", "pad_value")],
    **{
        op: lambda c: [_expr(c.args[0]), _expr(c.args[1]), *_kw(c, "cmp_type", "cmp_type")]
        for op in ("tile.cmp", "tensor.cmp", "tile.cmps")
    },
    "tensor.gather": lambda c: [_expr(c.args[0]), f"dim={c.attr('dim')}", f"index={_expr(c.args[1])}"],
    "tensor.scatter": lambda c: [
        _expr(c.args[0]),
        f"dim={c.attr('dim')}",
        f"index={_expr(c.args[1])}",
        f"src={_expr(c.args[2])}",
    ],
    "tile.matmul_acc": lambda c: [
        *(_expr(a) for a in c.args[:3]),
        *(f"init_cond={_expr(a)}" for a in c.args[3:]),
    ],
    **{
        op: lambda c: [*(_expr(a) for a in c.args), *_kw(c, "acc_phase", "acc_phase")]
        for op in ("tile.gemv", "tile.gemv_acc", "tile.gemv_bias")
    },
    **{
        op: lambda c: [_expr(c.args[0]), f"block_len={_expr(c.args[1])}"]
        for op in ("tile.mrgsort", "tensor.mrgsort")
    },
    "tile.mrgsort_lists": lambda c: [
        *(_expr(a) for a in c.args[:-1]),
        f"tmp={_expr(c.args[-1])}",
        *_kw(c, "exhausted", "exhausted"),
    ],
    "tensor.mrgsort_lists": lambda c: [*(_expr(a) for a in c.args), *_kw(c, "exhausted", "exhausted")],
    **{
        op: lambda c: [
            _expr(c.args[0]),
            *_kw(c, "mask_pattern", "mask_pattern"),
            *_kw(c, "output_dtype", "output_dtype"),
        ]
        for op in ("tile.gather_mask", "tensor.gather_mask")
    },
    "tile.print": lambda c: [_expr(c.args[0]), *_kw(c, "label", "label")],
    "scalar.print": lambda c: [_expr(c.args[0]), *_kw(c, "label", "label")],
}


def _call(c: nodes.Call) -> str:
    if c.op == "tensor.view":
        return _view(c)
    if not _LANG:
        _LANG.update(_lang_names())
    name = _LANG.get(c.op)
    if name is None and c.op.startswith("system."):  # pl.system.<name>(operands, attr=value, ...)
        from pypto.ir.ops import LANGUAGE

        lang = LANGUAGE.get(c.op.split(".", 1)[1])
        if lang is not None and lang.spelling:
            # "blocks" (an inline pl.spmd body's block count) is implied by the enclosing launch
            parts = [_expr(a) for a in c.args] + [f"{k}={_static(v)}" for k, v in c.attrs if k != "blocks"]
            return f"{lang.spelling}({', '.join(parts)})"
    if name is None:
        raise ValueError(f"as_python: the IR op {c.op!r} has no pl.* function")
    build = _ARGS.get(c.op)
    parts = build(c) if build is not None else [_expr(a) for a in c.args]
    parts += _kw(c, "high_precision", "high_precision")
    return f"{name}({', '.join(parts)})"


def _window(base: nodes.Expr, offsets: tuple[nodes.Expr, ...], extents: tuple[Any, ...]) -> str:
    """``t[o0:o0 + e0, ...]``; a whole dimension (offset 0, the tensor's extent) is ``:``."""
    assert isinstance(base.type, TensorType)
    items = []
    for off, ext, dim in zip(offsets, extents, base.type.shape, strict=True):
        if isinstance(off, nodes.Const) and off.value == 0 and ext == dim:
            items.append(":")
        elif isinstance(off, nodes.Const):
            items.append(f"{_const(off)}:{_const(nodes.Const(off.value + ext, off.dtype))}")
        else:
            o = _expr(off)
            items.append(f"{o}:{o} + {ext}")
    return f"{_expr(base)}[{', '.join(items)}]"


def _view(c: nodes.Call) -> str:
    base, offsets = c.args[0], c.args[1]
    assert isinstance(base, (nodes.Var, nodes.Call))
    assert isinstance(offsets, tuple)
    if c.attr("valid_shape") is not None or c.attr("pad") is not None:  # a pl.slice with a valid shape
        parts = [_expr(base), _shape(c), _expr(offsets)]
        parts += _kw(c, "valid_shape", "valid_shape") + _kw(c, "pad", "pad_value")
        return f"pl.slice({', '.join(parts)})"
    return _window(base, offsets, tuple(c.attr("shape")))


# ----------------------------------------------------------------------------- statements


def _body(
    body: tuple[nodes.Stmt, ...], depth: int, out: list[str], carried: tuple[nodes.Var, ...] = ()
) -> None:
    pad = _INDENT * depth
    if not body:
        out.append(pad + "pass")
    for s in body:
        _stmt(s, depth, out, carried)


def _stmt(s: nodes.Stmt, depth: int, out: list[str], carried: tuple[nodes.Var, ...]) -> None:
    pad = _INDENT * depth
    if isinstance(s, (nodes.Assign, nodes.ExprStmt)) and isinstance(s.value, nodes.CallFunc):
        # a kernel call's dump marks, as pl.dump_tag statements (a mark holds for later calls too)
        out.extend(f"{pad}pl.dump_tag({d.name})" for d in s.value.dumps if isinstance(d, nodes.Var))
    if isinstance(s, nodes.Assign):
        ann = f": {type_text(s.var.type)}" if _annotated(s.var.type) else ""
        out.append(f"{pad}{s.var.name}{ann} = {_expr(s.value)}")
    elif isinstance(s, nodes.ExprStmt):
        out.append(f"{pad}{_expr(s.value)}")
    elif isinstance(s, nodes.TensorWrite):
        vt = s.value.type
        assert isinstance(vt, TensorType)
        out.append(f"{pad}{_window(s.target, s.offsets, vt.shape)} = {_expr(s.value)}")
    elif isinstance(s, nodes.For):
        rng = f"pl.range({_expr(s.start)}, {_expr(s.stop)}, {_expr(s.step)}"
        if s.iter_args:
            names = ", ".join(ia.var.name for ia in s.iter_args)
            inits = ", ".join(_expr(ia.init) for ia in s.iter_args)
            out.append(f"{pad}for {s.var.name}, ({names},) in {rng}, init_values=({inits},)):")
            _body(s.body, depth + 1, out, s.results)
        else:
            out.append(f"{pad}for {s.var.name} in {rng}):")
            _body(s.body, depth + 1, out)
    elif isinstance(s, nodes.While):
        if s.iter_args:  # after SSA: the carried values spelled out, the condition by pl.cond
            names = ", ".join(ia.var.name for ia in s.iter_args)
            inits = ", ".join(_expr(ia.init) for ia in s.iter_args)
            out.append(f"{pad}for ({names},) in pl.while_(init_values=({inits},)):")
            out.append(f"{pad}{_INDENT}pl.cond({_expr(s.cond)})")
            _body(s.body, depth + 1, out, s.results)
        else:
            out.append(f"{pad}while {_expr(s.cond)}:")
            _body(s.body, depth + 1, out)
    elif isinstance(s, (nodes.Break, nodes.Continue)):
        out.append(f"{pad}{'break' if isinstance(s, nodes.Break) else 'continue'}")
    elif isinstance(s, nodes.If):
        out.append(f"{pad}if {_expr(s.cond)}:")
        _body(s.then_body, depth + 1, out, s.results)
        if s.else_body:
            out.append(f"{pad}else:")
            _body(s.else_body, depth + 1, out, s.results)
    elif isinstance(s, nodes.Yield):
        values = ", ".join(_expr(v) for v in s.values)
        if carried:
            out.append(f"{pad}{', '.join(v.name for v in carried)} = pl.yield_({values})")
        else:
            out.append(f"{pad}pl.yield_({values})")
    elif isinstance(s, nodes.Scope):
        args = [f"level={s.level!r}"]
        if s.name_hint is not None:
            args.append(f"name_hint={s.name_hint!r}")
        if s.deps:
            args.append(f"deps=[{', '.join(_expr(d) for d in s.deps)}]")
        task = f" as {s.task.name}" if s.task is not None else ""
        out.append(f"{pad}with pl.at({', '.join(args)}){task}:")
        _body(s.body, depth + 1, out)
    elif isinstance(s, nodes.Return):
        out.append(f"{pad}return" + (" " + ", ".join(_expr(v) for v in s.values) if s.values else ""))
    else:  # pragma: no cover - Stmt is closed
        raise ValueError(f"as_python: unknown statement {type(s).__name__}")


# ----------------------------------------------------------------------------- functions


def _param(name: str, t: Type, direction: ParamDirection) -> str:
    text = type_text(t)
    if direction is ParamDirection.OUT:
        text = f"pl.Out[{text}]"
    elif direction is ParamDirection.INOUT:
        text = f"pl.InOut[{text}]"
    return f"{name}: {text}"


def _function(f: nodes.Function, depth: int, method: bool) -> list[str]:
    pad = _INDENT * depth
    kwargs = [] if f.func_type is FunctionType.Opaque else [f"type={f.func_type!r}"]
    attrs = [(k, v) for k, v in f.attrs if k != "auto_scope"]
    if len(attrs) != len(f.attrs):  # @pl.function(auto_scope=False) records it as an attribute
        kwargs.append(f"auto_scope={dict(f.attrs)['auto_scope']!r}")
    deco = "@pl.function" + (f"({', '.join(kwargs)})" if kwargs else "")
    params = [_param(p.name, p.var.type, p.direction) for p in f.params]
    if method:
        params.insert(0, "self")
    rets = ""
    if len(f.returns) == 1:
        rets = f" -> {type_text(f.returns[0])}"
    elif f.returns:
        rets = " -> tuple[" + ", ".join(type_text(t) for t in f.returns) + "]"
    lines = [pad + deco, f"{pad}def {f.name}({', '.join(params)}){rets}:"]
    if attrs:  # a parameter reference prints as its name, an enum member as pl.<Enum>.<member>
        items = ", ".join(f"{json.dumps(k)}: {v!r}" for k, v in attrs)
        lines.append(f"{pad}{_INDENT}pl.func_attr({{{items}}})")
    _body(f.body, depth + 1, lines)
    return lines


def _declarations(funcs: tuple[nodes.Function, ...]) -> list[str]:
    names: dict[str, None] = {}
    for f in funcs:
        for p in f.params:
            names.update(dict.fromkeys(_dyn_dims(p.var.type)))
        for t in f.returns:
            names.update(dict.fromkeys(_dyn_dims(t)))
    return [f'{n} = pl.dynamic("{n}")' for n in names]


def function_text(f: nodes.Function) -> str:
    """A ``@pl.function`` that parses back to ``f``."""
    lines = _declarations((f,))
    if lines:
        lines.append("")
    return "\n".join([*lines, *_function(f, 0, method=False)]) + "\n"


def program_text(p: nodes.Program) -> str:
    """A ``@pl.program`` class that parses back to ``p``, its functions in order (``@pl.program``
    takes the first orchestration as the entry)."""
    orch = [f.name for f in p.funcs if f.func_type is FunctionType.Orchestration]
    if orch and orch[0] != p.entry:
        raise ValueError(
            f"as_python: program {p.name!r} enters at {p.entry!r}, but @pl.program would enter at its "
            f"first orchestration {orch[0]!r}"
        )
    funcs = p.funcs
    lines = _declarations(p.funcs)
    if lines:
        lines.append("")
    lines += ["@pl.program", f"class {p.name}:"]
    for i, f in enumerate(funcs):
        if i:
            lines.append("")
        lines += _function(f, 1, method=True)
    return "\n".join(lines) + "\n"


def python_print(node: object) -> str:
    """The kernel-language text of a Program or Function, or of a ``@pl.function`` (anything
    with the ``ir`` of one): upstream's ``ir.python_print``. The text parses back with
    ``pl.parse``."""
    target = getattr(node, "ir", node)
    if isinstance(target, nodes.Program):
        return program_text(target)
    if isinstance(target, nodes.Function):
        return function_text(target)
    raise TypeError(
        f"python_print: expected a Program, a Function or a @pl.function, got {type(node).__name__}"
    )
