"""PyPTO kernels as PyTorch operators: :func:`register` and :class:`Operator`.

``register(fn, "ns::name")`` takes a ``@pl.jit`` function and defines ``torch.ops.ns.name``:

- a mutation-only dispatcher schema (Out/InOut tensors written, no dispatcher return), which
  functionalization, ``torch.library.opcheck`` and ``torch.compile`` accept;
- a Fake kernel that checks what the declaration fixes (scalar kinds and ranges, annotated
  dtypes and static dims, contiguity, one device, inference-only use) and allocates nothing;
- the real kernel: per concrete set of tensor shapes and dtypes, the function is compiled
  with the KERNEL contract through the artifact store (scalar parameters stay runtime
  values: one artifact serves every value), registered once on the process's kernel Worker,
  and each call runs describe_call -> TMR packet -> launch on the caller's current stream.
  On the simulated chip the call waits for the run, so its results are visible to the next
  torch operation; on the NPU the launch is ordered on torch_npu's current stream.

The returned :class:`Operator` calls the operator and gives back the caller's aliased tensors
(what the jit function returns); the operator itself is ``Operator.op``. Kernel mode is
initialised with the defaults on the first call if :func:`pypto.torch.init` was not called.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
import threading
from typing import TYPE_CHECKING, Any

import torch
from pypto.ir import Contract, DataType, ParamInfo, SignatureError
from pypto.torch._dtypes import from_torch_dtype, to_torch_dtype
from pypto.torch._kernel import context
from pypto.torch._kernel.callable import KernelCallable, RegistrationError
from pypto.torch._validation import ArgumentError, check_tensor_signature
from pypto.torch.registration import RegistrationSignature

if TYPE_CHECKING:
    from pypto.language.jit import DeclaredParam, JITFunction

__all__ = ["Operator", "register"]

_operators: dict[str, Operator] = {}  # qualified name -> Operator (keeps each library alive)
_operators_lock = threading.Lock()


def _declared_params(fn: Any, what: str) -> tuple[DeclaredParam, ...]:
    """The jit function's declared parameters; each must be a tensor or a scalar dtype."""
    from pypto.language.jit import JITFunction

    if not isinstance(fn, JITFunction):
        raise TypeError(f"{what}: expected a @pl.jit function, got {type(fn).__name__}")
    declared = fn.declared_params()
    for d in declared:
        if d.kind is None:
            raise SignatureError(
                f"{what}: parameter {d.name!r} has annotation {d.annotation!r}; an operator needs every "
                "parameter annotated as pl.Tensor (optionally pl.Out/pl.InOut) or a scalar dtype "
                "(pl.Scalar[pl.FP32])"
            )
    return declared


def _returned_names(fn: Any) -> list[list[str]] | None:
    """The parameter names each ``return`` of ``fn`` returns, or None if one returns anything else."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn.fn)))
    except (OSError, TypeError, SyntaxError):
        return None
    func = tree.body[0]
    if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    found: list[list[str]] = []
    stack: list[ast.AST] = list(func.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        if isinstance(node, ast.Return):
            value = node.value
            if value is None:
                found.append([])
            elif isinstance(value, ast.Name):
                found.append([value.id])
            elif isinstance(value, ast.Tuple) and all(isinstance(e, ast.Name) for e in value.elts):
                found.append([e.id for e in value.elts if isinstance(e, ast.Name)])
            else:
                return None
        stack.extend(ast.iter_child_nodes(node))
    return found


def _static_aliases(declared: tuple[DeclaredParam, ...], fn: JITFunction) -> tuple[int, ...] | None:
    """Return aliases read from the source when every ``return`` names Out/InOut parameters."""
    returns = _returned_names(fn)
    if returns is None:
        return None
    if not returns:
        return ()
    by_name = {d.name: d for d in declared}
    first = returns[0]
    if any(r != first for r in returns):
        return None
    aliases = []
    for name in first:
        d = by_name.get(name)
        if d is None or d.is_scalar or not d.direction.writes:
            return None
        aliases.append(d.position)
    return tuple(aliases)


def _parse_name(qualname: object) -> tuple[str, str]:
    if not isinstance(qualname, str) or qualname.count("::") != 1:
        raise ValueError(f"register(name): expected 'namespace::name', got {qualname!r}")
    ns, name = qualname.split("::")
    if not ns.isidentifier() or not name.isidentifier():
        raise ValueError(f"register(name): expected 'namespace::name' of two identifiers, got {qualname!r}")
    return ns, name


class Operator:
    """A registered PyPTO kernel: call it like the jit function (Out/InOut supplied by the caller).

    Calling it calls ``torch.ops.<ns>.<name>`` and returns the caller's tensors that the jit
    function returns (None, one tensor or a tuple), never new ones.

    Attributes:
        name: The qualified operator name, ``"ns::name"``.
        fn: The ``@pl.jit`` function.
        schema: The dispatcher schema (mutation-only).
    """

    def __init__(self, fn: JITFunction, qualname: str) -> None:
        from pypto.language.binding import arg_key

        what = f"register({qualname!r})"
        ns, name = _parse_name(qualname)
        self._arg_key = arg_key
        self.fn = fn
        self.name = qualname
        self._declared = _declared_params(fn, what)
        self._scalar_positions = tuple(d.position for d in self._declared if d.is_scalar)
        self._tensor_positions = tuple(d.position for d in self._declared if not d.is_scalar)
        self._tensor_dtypes = {
            d.position: to_torch_dtype(d.dtype, what=f"{what}: {d.name}")
            for d in self._declared
            if not d.is_scalar and d.dtype is not None
        }
        self._aliases: tuple[int, ...] | None = _static_aliases(self._declared, fn)
        # The schema depends on names, directions and scalar types only, so a tensor whose
        # dtype or shape comes from the call is described by a placeholder here.
        schema_params = [
            d.param_info()
            or ParamInfo(d.name, d.direction, None if d.is_scalar else (-1,), d.dtype or DataType.FP32)
            for d in self._declared
        ]
        self.schema = RegistrationSignature(schema_params).schema(name)
        self._callables: dict[tuple[Any, ...], KernelCallable] = {}
        self._compile_lock = threading.Lock()
        self._library = torch.library.Library(ns, "FRAGMENT")
        try:
            self._library.define(self.schema)
            register_fake = getattr(torch.library, "register_fake", None) or torch.library.impl_abstract
            register_fake(qualname, self._fake, lib=self._library)
            self._library.impl(name, self._kernel, "CompositeExplicitAutograd")
        except BaseException:
            self._library._destroy()
            raise
        self.op = getattr(getattr(torch.ops, ns), name).default
        self._signature = inspect.signature(fn.fn)

    def __repr__(self) -> str:
        return f"<pypto.torch.Operator {self.name}: {self.schema}>"

    # -- the call as users make it -------------------------------------------------------------

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if kwargs:
            try:
                bound = self._signature.bind(*args, **kwargs)
            except TypeError as exc:
                raise TypeError(f"{self.name}: {exc}") from None
            args = tuple(bound.arguments[n] for n in self._signature.parameters)
        self.op(*args)
        aliases = self._aliases
        if aliases is None:
            aliases = self._aliases_after_first_call()
        if not aliases:
            return None
        if len(aliases) == 1:
            return args[aliases[0]]
        return tuple(args[i] for i in aliases)

    def _aliases_after_first_call(self) -> tuple[int, ...]:
        for kc in self._callables.values():
            self._aliases = kc.return_aliases
            return kc.return_aliases
        raise RuntimeError(
            f"{self.name}: the returned tensors could not be read from the source of "
            f"{self.fn.__name__} (return the Out/InOut parameters by name), and no call has compiled it yet"
        )

    # -- the kernels installed in the library ------------------------------------------------

    def _kernel(self, *args: Any) -> None:
        gate = context.exit_gate  # keeps daemon threads' calls out of interpreter finalization
        gate.enter()
        try:
            self._launch(args)
        finally:
            gate.leave()

    def _launch(self, args: tuple[Any, ...]) -> None:
        manager = context.current()
        info = manager.ready()
        # the binder's per-argument call key (type, shape, dtype, strides), as @pl.jit calls use;
        # a 0-d tensor has none: its shape and dtype
        arg_key = self._arg_key
        key = (
            info.generation,
            *(arg_key(args[i]) or (args[i].shape, args[i].dtype) for i in self._tensor_positions),
        )
        kc = self._callables.get(key)
        if kc is None:
            kc = self._prepare(args, info, key)
        frame = kc.signature.describe_call(args)
        manager.launch(kc, frame, wait=kc.signature.platform.is_simulator)

    def _prepare(self, args: tuple[Any, ...], info: Any, key: tuple[Any, ...]) -> KernelCallable:
        from pypto.language import RUNTIME
        from pypto.runtime import compile_artifact

        with self._compile_lock:
            kc = self._callables.get(key)
            if kc is not None:
                return kc
            self._check_declared(args)
            spec_args = [RUNTIME if i in self._scalar_positions else a for i, a in enumerate(args)]
            artifact = compile_artifact(
                self.fn, *spec_args, contract=Contract.KERNEL, platform=info.platform, runtime=info.runtime
            )
            kc = context.current().prepare(artifact)
            if self._aliases is not None and kc.return_aliases != self._aliases:
                raise RegistrationError(
                    f"{self.name}: the compiled kernel returns parameters {list(kc.return_aliases)} but the "
                    f"source returns {list(self._aliases)}"
                )
            self._callables[key] = kc
            return kc

    def _check_declared(self, args: tuple[Any, ...]) -> None:
        """Before compiling for new shapes: the dtype, rank and static dims that the annotations
        fix, with describe_call's own check and message (a compile would only say it later)."""
        for d in self._declared:
            if d.is_scalar or d.position not in self._tensor_dtypes:
                continue
            arg = args[d.position]
            info = d.param_info()
            if info is not None:
                check_tensor_signature(
                    d.position, info, arg, self._tensor_dtypes[d.position], caller="describe_call"
                )
            elif arg.dtype != self._tensor_dtypes[d.position]:
                declared = d.dtype.value if d.dtype is not None else "?"
                raise ArgumentError(
                    f"describe_call: parameter {d.name!r} (#{d.position}, {d.direction.value} {declared}): "
                    f"expected dtype {self._tensor_dtypes[d.position]}, got {arg.dtype}"
                )

    def _fake(self, *args: Any) -> None:
        """The Fake kernel: :meth:`RegistrationSignature.fake` on the declaration, where a tensor
        whose dtype or shape comes from the call takes them from the abstract argument (so only
        what the annotations fix is checked), and nothing is returned (mutation-only)."""
        if len(args) != len(self._declared):
            raise ArgumentError(f"fake: {self.name} takes {len(self._declared)} arguments, got {len(args)}")
        params = []
        for d, arg in zip(self._declared, args, strict=True):
            info = d.param_info()
            if info is None:
                if not isinstance(arg, torch.Tensor):
                    raise ArgumentError(
                        f"fake: {self.name}: parameter {d.name!r} (#{d.position}): expected a FakeTensor "
                        f"or Meta tensor, got {type(arg).__name__}"
                    )
                dtype = d.dtype or from_torch_dtype(
                    arg.dtype, what=f"fake: {self.name}: parameter {d.name!r}"
                )
                info = ParamInfo(d.name, d.direction, (-1,) * arg.dim(), dtype)
            params.append(info)
        RegistrationSignature(params).fake(*args)

    # -- lifetime ------------------------------------------------------------------------------

    def remove(self) -> None:
        """Remove the operator from the dispatcher (its kernels stay registered on the Worker)."""
        with _operators_lock:
            if _operators.get(self.name) is self:
                del _operators[self.name]
        self._library._destroy()


def register(fn: Any = None, name: str | None = None) -> Any:
    """Define ``torch.ops.<ns>.<name>`` from a ``@pl.jit`` function and install its kernel.

    Works as a call, ``register(fn, "ns::name")``, and as a decorator,
    ``@register("ns::name")`` (stacked on ``@pl.jit``).

    Args:
        fn: The ``@pl.jit`` function; every parameter annotated (``pl.Tensor``, ``pl.Out[...]``,
            ``pl.InOut[...]``, or a scalar dtype such as ``pl.FP32``).
        name: ``"namespace::name"``.

    Returns:
        The :class:`Operator`: call it with the jit signature's arguments (Out/InOut supplied
        by the caller); it returns the caller's aliased tensors. ``Operator.op`` is the
        ``torch.ops`` overload.

    Raises:
        TypeError: ``fn`` is not a ``@pl.jit`` function.
        ValueError: A malformed name; SignatureError (a ValueError) for a parameter the
            dispatcher cannot carry.
        RuntimeError: PyTorch's own error when the name is already defined.

    Example:
        >>> @pl.jit  # doctest: +SKIP
        ... def add(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
        ...     with pl.at(level=pl.Level.CORE_GROUP):
        ...         out[:] = pl.add(a, b)
        ...     return out
        >>> add_op = pypto.torch.register(add, "my_ns::add")  # doctest: +SKIP
        >>> add_op(a, b, torch.empty_like(a))  # or torch.ops.my_ns.add(a, b, out)  # doctest: +SKIP
    """
    if isinstance(fn, str) and name is None:
        qualname = fn

        def decorate(f: Any) -> Operator:
            op: Operator = register(f, qualname)
            return op

        return decorate
    if name is None:
        raise TypeError("register(fn, name): the operator name 'namespace::name' is required")
    op = Operator(fn, name)
    with _operators_lock:
        _operators[op.name] = op
    return op


def registered() -> dict[str, Operator]:
    """The operators registered in this process, by qualified name."""
    with _operators_lock:
        return dict(_operators)
