"""Python AST -> IR for kernel-language functions.

The parser is one class assembled from its parts: ``common`` (source positions, contexts,
annotations), ``expressions``, ``directives`` (``pl.static_print`` ...), ``calls`` (ops,
kernels, inlined helpers), ``tasks`` (the task graph), ``tuples``, ``control`` (while, break,
continue), ``launches`` (SPMD), ``scopes`` (``with pl.at``) and ``statements``; ``placements``
checks tile placements for the statement parser; ``subscripts`` (upstream's subscript forms),
``nd_tiles`` (tiles of more than two dims) and ``conversions`` (upstream's implicit
conversions) are the helpers the statement and call parts use.

The parser reads a function's source (it never runs the body), resolves names statically
(locals first, then the function's closure and globals: module constants, ``pl``, kernels),
type-checks every op through the op registry and reports mistakes as ``file:line:col`` with
the source line and a caret.

The IR it produces is not yet SSA: a name assigned twice yields two ``Assign``s of the same
name; the SSA pass versions them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pypto.ir.nodes import (
    Function,
    Param,
    Var,
)
from pypto.ir.param_info import ParamDirection
from pypto.ir.types import (
    DynDim,
    FunctionType,
    ScalarType,
    TensorType,
    Type,
)
from pypto.language import typing as lt
from pypto.language.fold import make_const
from pypto.language.parser.common import (
    ParseContext,
    SourceInfo,
    _FnState,
    _rebound_names,
    _SelfMethod,
    annotation_to_type,
    param_annotations,
)
from pypto.language.parser.scopes import core_runs_as_scopes
from pypto.language.parser.statements import _Statements

__all__ = [
    "ParseContext",
    "SourceInfo",
    "_Parser",
    "_SelfMethod",
    "annotation_to_type",
    "param_annotations",
    "parse_function",
]


def parse_function(
    fn: Callable[..., Any],
    *,
    ctx: ParseContext,
    name: str | None = None,
    func_type: FunctionType = FunctionType.Opaque,
    arg_types: Mapping[str, Type] | None = None,
    scalar_values: Mapping[str, int | float | bool] | None = None,
    is_method: bool = False,
    attrs: Mapping[str, Any] | None = None,
    source: SourceInfo | None = None,
) -> Function:
    """Parse ``fn`` into an IR Function.

    Args:
        ctx: Resolves calls of other kernels and collects them.
        name: The IR name (default: the Python name).
        func_type: Orchestration, InCore or Opaque (inferred from the body).
        arg_types: Per-parameter types from a call (for bare ``pl.Tensor``).
        scalar_values: Scalar parameters whose values are specialisation constants; every
            other scalar parameter (a ``pl.RUNTIME`` one) stays its parameter Var.
        is_method: Skip ``self``.
        attrs: Function attributes given by the decorator (``@pl.function(attrs=...)``); the
            body's ``pl.func_attr`` adds to them.
        source: The definition to parse instead of ``fn``'s own source (a function made of
            part of another, as a host orchestrator's chip block).
    """
    src = source or SourceInfo.of(fn)
    return _Parser(src, ctx).parse(
        name or fn.__name__,
        func_type,
        dict(arg_types or {}),
        dict(scalar_values or {}),
        is_method,
        attrs=attrs,
    )


class _Parser(_Statements):
    """Parses one function body (see ``parse_function``)."""

    # ------------------------------------------------------------------ function

    def parse(
        self,
        name: str,
        func_type: FunctionType,
        arg_types: dict[str, Type],
        scalar_values: dict[str, Any],
        is_method: bool,
        *,
        attrs: Mapping[str, Any] | None = None,
    ) -> Function:
        self.st = _FnState(func_type)
        self.st.attrs.update(attrs or {})
        self.st.multi = _rebound_names(self.src.tree)
        params: list[Param] = []
        for pname, ann, node in param_annotations(self.src, is_method):
            ty, direction = annotation_to_type(ann, pname, self.src.span(node), arg_types.get(pname))
            var = Var(pname, ty, self.src.span(node))
            params.append(Param(var, direction))
            inner = ann.inner if isinstance(ann, lt.DirectionAnnotation) else ann
            if getattr(inner, "window", False):  # a pld.DistributedTensor parameter
                self.st.distributed.add(id(var))
            if direction in (ParamDirection.OUT, ParamDirection.INOUT):
                self.st.out_params.add(id(var))
            if pname in scalar_values and isinstance(ty, ScalarType):
                self.st.env[pname] = make_const(scalar_values[pname], ty.dtype, self.src.span(node))
            else:
                self.st.env[pname] = var
                if isinstance(ty, ScalarType):
                    self.st.runtime_scalars[id(var)] = pname
            if isinstance(ty, TensorType):
                for axis, d in enumerate(ty.shape):
                    if isinstance(d, DynDim) and d.name not in self.st.dyn_dims:
                        self.st.dyn_dims[d.name] = (var, axis)
        body, returns = self.block(self.src.tree.body, top=True)
        # a bare pl.Tensor parameter passed to an inlined helper's pl.Out / pl.InOut parameter is
        # written by this function: the helper's annotation declares it, so it is InOut here
        params = [
            Param(p.var, ParamDirection.INOUT)
            if id(p.var) in self.st.helper_written and p.direction is ParamDirection.IN
            else p
            for p in params
        ]
        params.extend(Param(v, ParamDirection.IN) for v in self.st.block_vars)
        ft = func_type
        if ft is FunctionType.Opaque:
            if self.st.saw_scope or self.st.saw_call:
                ft = FunctionType.Orchestration
            elif self.st.saw_tile:
                ft = FunctionType.InCore
        if ft is FunctionType.Orchestration and self.st.outside_node is not None:
            # an Opaque function that submits work and also computes outside its pl.at scopes:
            # each run of that computation becomes a scope of its own (as upstream PyPTO scopes it)
            body = list(core_runs_as_scopes(tuple(body)))
        return Function(
            name,
            tuple(params),
            returns,
            tuple(body),
            ft,
            span=self.src.span(self.src.tree),
            attrs=tuple(sorted(self.st.attrs.items())),
            placements=tuple(self.st.placements),
        )
