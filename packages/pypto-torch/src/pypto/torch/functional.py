"""Functional PyPTO operators: :func:`register` with ``functional=True``.

The kernel's ``Out`` tensors are not arguments of the operator: it allocates them (from a shape
rule), runs the kernel and returns them. Its schema mutates nothing (``ns::name(Tensor x,
Tensor w, float eps) -> Tensor``), so autograd, functionalization and inductor treat it like
any functional op, and :meth:`FunctionalOperator.register_autograd` gives it a backward.

Shape rules, per ``Out`` parameter:

- derived from the annotations: every dim of ``pl.Out[pl.Tensor[[M, H], pl.FP32]]`` is a
  constant or a ``pl.dynamic`` name that an ``In`` tensor's annotation also has
  (``x: pl.Tensor[[M, H], pl.FP32]``): the output takes that input's extent;
- declared: ``shapes={"out": "x"}`` (the shape of input ``x``) or ``shapes={"out": lambda x,
  w, eps: (x.shape[0], w.shape[1])}`` (called with the ``In`` arguments, on real and on Fake
  tensors, so it must only read shapes).

The dtype of an output is its annotated dtype (a ``pl.dtype_var``: the dtype of an input
annotated with the same variable), else the dtype of the first tensor input.
``InOut`` parameters have no functional form (register the mutation-only operator instead).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import torch
from pypto.ir import DataType, ParamDirection, ParamInfo, SignatureError
from pypto.torch._dtypes import from_torch_dtype, to_torch_dtype
from pypto.torch._kernel.exit_gate import exit_gate
from pypto.torch._operator_kernels import (
    KernelSet,
    OperatorBase,
    Variants,
    define_operator,
    is_dynamic,
    parse_name,
    variants_of,
)
from pypto.torch._validation import ArgumentError, check_tensor_signature, describe_param
from pypto.torch.registration import RegistrationSignature

__all__ = ["FunctionalOperator"]

ShapeRule = Callable[..., Sequence[Any]]


def _annotated_shape(d: Any) -> tuple[Any, ...] | None:
    return getattr(getattr(d.annotation, "inner", d.annotation), "shape", None)


class FunctionalOperator(OperatorBase):
    """A registered PyPTO kernel whose outputs the operator allocates and returns.

    Call it with the kernel's ``In`` parameters (tensors and scalars, by position or name); it
    returns the ``Out`` tensors (one tensor, or a tuple in parameter order).

    Attributes:
        name: The qualified operator name, ``"ns::name"``.
        fn: The ``@pl.jit`` function (the first variant's, for a dtype-generic operator).
        schema: The dispatcher schema (functional: nothing mutated, new tensors returned).
        op: The ``torch.ops`` overload.
    """

    def __init__(
        self,
        fn: Any,
        qualname: str,
        *,
        dtypes: Iterable[Any] | None = None,
        shapes: Mapping[str, str | ShapeRule] | None = None,
        pin: bool = False,
    ) -> None:
        what = f"register({qualname!r}, functional=True)"
        name = parse_name(qualname)[1]
        self.name = qualname
        self._variants = Variants(variants_of(fn, dtypes, qualname), qualname, pin=pin)
        first = next(iter(self._variants.sets.values()))
        self.fn = first.fn
        declared = first.declared
        for d in declared:
            if d.direction is ParamDirection.INOUT:
                raise SignatureError(
                    f"{what}: parameter {d.name!r} is InOut; a functional operator writes only Out tensors it "
                    "allocates (register it without functional=True to pass the buffer)"
                )
        self._inputs = tuple(d for d in declared if d.direction is ParamDirection.IN)
        self._outputs = tuple(d for d in declared if d.direction is ParamDirection.OUT)
        if not self._outputs:
            raise SignatureError(f"{what}: the kernel has no Out tensor to return")
        if not any(not d.is_scalar for d in self._inputs):
            raise SignatureError(f"{what}: a functional operator needs a tensor input (for device and dtype)")
        self._first_tensor = next(i for i, d in enumerate(self._inputs) if not d.is_scalar)
        # an output annotated with a pl.dtype_var takes the dtype of an input with that variable
        by_var = {pos: var for var, places in first.dtype_vars.items() for pos in places}
        in_index = {d.position: k for k, d in enumerate(self._inputs)}
        self._dtype_from = {
            k: next(
                (in_index[p] for p, v in by_var.items() if v == by_var[d.position] and p in in_index), None
            )
            for k, d in enumerate(self._outputs)
            if d.position in by_var
        }
        self._rules = {d.name: self._rule(d, dict(shapes or {}), what) for d in self._outputs}
        unknown = set(shapes or {}) - set(self._rules)
        if unknown:
            raise SignatureError(f"{what}: shapes names {sorted(unknown)}, which are not Out parameters")
        in_params = [
            d.param_info()
            or ParamInfo(d.name, d.direction, None if d.is_scalar else (-1,), d.dtype or DataType.FP32)
            for d in self._inputs
        ]
        args_schema = RegistrationSignature(in_params).schema(name)
        assert args_schema.endswith(" -> ()")
        rets = "Tensor" if len(self._outputs) == 1 else "(" + ", ".join(["Tensor"] * len(self._outputs)) + ")"
        self.schema = args_schema[: -len(" -> ()")] + f" -> {rets}"
        self._library, self.op = define_operator(qualname, self.schema, self._fake, self._kernel)
        full = inspect.signature(self.fn.fn)
        self._signature = full.replace(parameters=[full.parameters[d.name] for d in self._inputs])

    def __repr__(self) -> str:
        return f"<pypto.torch.FunctionalOperator {self.name}: {self.schema}>"

    # -- shape rules -----------------------------------------------------------------------------

    def _rule(self, out: Any, shapes: dict[str, str | ShapeRule], what: str) -> ShapeRule:
        given = shapes.get(out.name)
        names = [d.name for d in self._inputs]
        if isinstance(given, str):
            if given not in names or next(d for d in self._inputs if d.name == given).is_scalar:
                raise SignatureError(
                    f"{what}: shapes[{out.name!r}] = {given!r} is not a tensor input ({names})"
                )
            k = names.index(given)
            return lambda *ins: tuple(ins[k].shape)
        if given is not None:
            if not callable(given):
                raise SignatureError(
                    f"{what}: shapes[{out.name!r}]: expected an input name or a callable, got {type(given).__name__}"
                )
            return given
        dims = _annotated_shape(out)
        if dims is None:
            raise SignatureError(
                f"{what}: Out parameter {out.name!r} has no annotated shape; annotate it "
                f"(pl.Out[pl.Tensor[[M, N], pl.FP32]] with pl.dynamic dims an input also has) or pass "
                f"shapes={{{out.name!r}: 'x'}} or a callable of the inputs"
            )
        where: dict[str, tuple[int, int]] = {}
        for k, d in enumerate(self._inputs):
            for axis, dim in enumerate(_annotated_shape(d) or () if not d.is_scalar else ()):
                if is_dynamic(dim):
                    where.setdefault(dim.name, (k, axis))
        parts: list[int | tuple[int, int]] = []
        for dim in dims:
            if is_dynamic(dim):
                if dim.name not in where:
                    raise SignatureError(
                        f"{what}: Out parameter {out.name!r} has dim {dim.name}, which no In tensor's annotation "
                        "has, so its extent is unknown; pass shapes= for it"
                    )
                parts.append(where[dim.name])
            else:
                parts.append(int(dim))
        return lambda *ins: tuple(p if isinstance(p, int) else ins[p[0]].shape[p[1]] for p in parts)

    def _out_dtype(self, ks: KernelSet, k: int, first: torch.Tensor, ins: Sequence[Any]) -> torch.dtype:
        d = ks.declared[self._outputs[k].position]
        src = self._dtype_from.get(k)
        dtype: torch.dtype = ks.tensor_dtypes.get(d.position, first.dtype if src is None else ins[src].dtype)
        return dtype

    def _allocate(self, ks: KernelSet, ins: Sequence[Any], what: str) -> list[torch.Tensor]:
        first = ins[self._first_tensor]
        outs = []
        for k, d in enumerate(self._outputs):
            try:
                shape = list(self._rules[d.name](*ins))
            except Exception as exc:
                raise ArgumentError(
                    f"{what}: the shape rule of Out parameter {d.name!r} failed: {exc}"
                ) from exc
            outs.append(first.new_empty(shape, dtype=self._out_dtype(ks, k, first, ins)))
        return outs

    def _full_args(self, ins: Sequence[Any], outs: Sequence[Any]) -> list[Any]:
        full: list[Any] = [None] * (len(self._inputs) + len(self._outputs))
        for d, v in zip(self._inputs, ins, strict=True):
            full[d.position] = v
        for d, v in zip(self._outputs, outs, strict=True):
            full[d.position] = v
        return full

    # -- the call as users make it -------------------------------------------------------------

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if kwargs:
            args = self._positional(args, kwargs)
        # The exit gate's bracket around the dispatcher (pypto.torch._kernel.exit_gate); not
        # while torch.compile traces the call (the kernel opens it when the graph runs).
        opened = not torch.compiler.is_compiling() and exit_gate.enter()
        try:
            return self.op(*args)
        finally:
            if opened:
                exit_gate.leave()

    def _full_example(self, ins: list[Any], label: str) -> list[Any]:
        """The kernel's arguments for one of :meth:`precompile`'s examples, which are the
        operator's own (the ``In`` parameters): the ``Out`` tensors allocated as a call would."""
        ks = self._variants.select(self._full_args(ins, [None] * len(self._outputs)))
        return self._full_args(ins, self._allocate(ks, ins, label))

    def register_autograd(
        self, backward: Callable[..., Any], *, setup_context: Callable[..., Any] | None = None
    ) -> None:
        """Give the operator a backward (``torch.library.register_autograd``): ``backward(ctx,
        *grads)`` returns one gradient (or None) per input; ``setup_context(ctx, inputs,
        output)`` saves what it needs. Either may call other PyPTO operators or any torch code."""
        torch.library.register_autograd(self.name, backward, setup_context=setup_context, lib=self._library)

    # -- the kernels installed in the library ------------------------------------------------

    def _kernel(self, *ins: Any) -> Any:
        opened = exit_gate.enter()  # open already when the call came through __call__
        try:
            ins = tuple(a.contiguous() if isinstance(a, torch.Tensor) else a for a in ins)
            ks = self._variants.select(self._full_args(ins, [None] * len(self._outputs)))
            outs = self._allocate(ks, ins, self.name)
            with torch.no_grad():  # the operator's autograd formula, if any, is registered above it
                ks.launch(self._full_args(ins, outs))
        finally:
            if opened:
                exit_gate.leave()
        return outs[0] if len(outs) == 1 else tuple(outs)

    def _fake(self, *ins: Any) -> Any:
        what = f"fake: {self.name}"
        if len(ins) != len(self._inputs):
            raise ArgumentError(f"{what} takes {len(self._inputs)} arguments, got {len(ins)}")
        ks = self._variants.select(self._full_args(ins, [None] * len(self._outputs)))
        device = None
        for k, (d, arg) in enumerate(zip(self._inputs, ins, strict=True)):
            if d.is_scalar:
                continue
            decl = ks.declared[d.position]
            info = decl.param_info()
            if not isinstance(arg, torch.Tensor):
                raise ArgumentError(
                    f"{what}: parameter {d.name!r} (#{d.position}): expected a tensor, got {type(arg).__name__}"
                )
            if info is None:
                dtype = decl.dtype or from_torch_dtype(arg.dtype, what=f"{what}: parameter {d.name!r}")
                info = ParamInfo(d.name, d.direction, decl.shape or (-1,) * arg.dim(), dtype)
            check_tensor_signature(
                d.position, info, arg, to_torch_dtype(info.dtype, what=what), caller="fake"
            )
            if device is None:
                device = arg.device
            elif arg.device != device:
                raise ArgumentError(
                    f"{what}: {describe_param(k, info)}: is on {arg.device}, the first input on {device}"
                )
        outs = self._allocate(ks, ins, what)
        ks.check_dyn_dims(self._full_args(ins, outs), what)
        return outs[0] if len(outs) == 1 else tuple(outs)
