"""PyPTO kernels as PyTorch operators: :func:`register` and :class:`Operator`.

``register(fn, "ns::name")`` takes a ``@pl.jit`` function and defines ``torch.ops.ns.name``:

- a mutation-only dispatcher schema (Out/InOut tensors written, no dispatcher return), which
  functionalization, ``torch.library.opcheck`` and ``torch.compile`` accept;
- a Fake kernel that checks what the declaration fixes (scalar kinds and ranges, annotated
  dtypes and static dims, contiguity, one device, inference-only use) and allocates nothing;
- the real kernel: per dtype signature and pinned dims, the function is compiled with the
  KERNEL contract through the artifact store (unpinned dims and scalar parameters stay
  run-time values: one artifact serves every extent and value), registered once on the
  process's kernel Worker,
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
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from pypto.ir import DataType, ParamInfo
from pypto.torch._kernel.callable import RegistrationError
from pypto.torch._kernel.exit_gate import exit_gate
from pypto.torch._kernel.pins import _pins as _native_pins
from pypto.torch._operator_kernels import (
    OperatorBase,
    Variants,
    define_operator,
    operators,
    operators_lock,
    parse_name,
    variants_of,
)
from pypto.torch._validation import ArgumentError
from pypto.torch.functional import FunctionalOperator
from pypto.torch.registration import RegistrationSignature
from torch.compiler import is_compiling

if TYPE_CHECKING:
    from pypto.language.interface import DeclaredParam, JITFunction

__all__ = ["Operator", "register"]


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


class Operator(OperatorBase):
    """A registered PyPTO kernel: call it like the jit function (Out/InOut supplied by the caller).

    Calling it calls ``torch.ops.<ns>.<name>`` and returns the caller's tensors that the jit
    function returns (None, one tensor or a tuple), never new ones.

    Attributes:
        name: The qualified operator name, ``"ns::name"``.
        fn: The ``@pl.jit`` function (the first variant's, for a dtype-generic operator).
        schema: The dispatcher schema (mutation-only).
    """

    def __init__(
        self, fn: Any, qualname: str, *, dtypes: Iterable[Any] | None = None, pin: bool = False
    ) -> None:
        name = parse_name(qualname)[1]
        self.name = qualname
        self._variants = Variants(variants_of(fn, dtypes, qualname), qualname, pin=pin)
        first = next(iter(self._variants.sets.values()))
        self.fn = first.fn
        self._declared = first.declared
        self._aliases: tuple[int, ...] | None = _static_aliases(self._declared, self.fn)
        # The schema depends on names, directions and scalar types only, so a tensor whose
        # dtype or shape comes from the call is described by a placeholder here.
        schema_params = [
            d.param_info()
            or ParamInfo(d.name, d.direction, None if d.is_scalar else (-1,), d.dtype or DataType.FP32)
            for d in self._declared
        ]
        self.schema = RegistrationSignature(schema_params).schema(name)
        self._library, self.op = define_operator(qualname, self.schema, self._fake, self._kernel)
        self._signature = inspect.signature(self.fn.fn)
        self._bound: Any = None  # the last registration's bound launch: (args) -> None or False

    def __repr__(self) -> str:
        return f"<pypto.torch.Operator {self.name}: {self.schema}>"

    @property
    def _callables(self) -> dict[tuple[Any, ...], Any]:
        """Every variant's registered kernels by compile key (for tests and benchmarks)."""
        out: dict[tuple[Any, ...], Any] = {}
        for dt, ks in self._variants.sets.items():
            out.update({(dt, *k): kc for k, kc in ks._callables.items()})
        return out

    # -- the call as users make it -------------------------------------------------------------

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if kwargs:
            args = self._positional(args, kwargs)
        # The exit gate's bracket around the dispatcher, whose GIL release and re-take lie
        # inside it (pypto.torch._kernel.exit_gate); the kernel then finds it open. Traced by
        # torch.compile, the call is a graph node: the kernel opens the gate when it runs.
        opened = not is_compiling() and exit_gate.enter()
        try:
            self.op(*args)
        finally:
            if opened:
                exit_gate.leave()
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
            aliases: tuple[int, ...] = kc.return_aliases
            self._aliases = aliases
            return aliases
        raise RuntimeError(
            f"{self.name}: the returned tensors could not be read from the source of "
            f"{self.fn.__name__} (return the Out/InOut parameters by name), and no call has compiled it yet"
        )

    # -- the kernels installed in the library ------------------------------------------------

    def _kernel(self, *args: Any) -> None:
        opened = exit_gate.enter()  # open already when the call came through __call__
        try:
            # The last registration's bound plan: one native call for a common call (it
            # declines, with no side effect, any other: pypto.torch._kernel.bound).
            bound = self._bound
            if bound is None or _native_pins.native is None or bound(args) is False:
                self._launch(args)
        finally:
            if opened:
                exit_gate.leave()

    def _launch(self, args: tuple[Any, ...]) -> None:
        """The general path: select, compile once per key, describe, launch."""
        ks = self._variants.select(args)
        before = ks.compiles
        kc = ks.launch(args)
        if ks.compiles != before and self._aliases is not None:
            for k in ks._callables.values():
                if k.return_aliases != self._aliases:
                    raise RegistrationError(
                        f"{self.name}: the compiled kernel returns parameters {list(k.return_aliases)} "
                        f"but the source returns {list(self._aliases)}"
                    )
        self._bound = kc.bound or None

    def _fake(self, *args: Any) -> None:
        """The Fake kernel: :meth:`RegistrationSignature.fake` on the declaration, where a tensor
        whose dtype or shape comes from the call takes them from the abstract argument (so only
        what the annotations fix is checked), and nothing is returned (mutation-only)."""
        if len(args) != len(self._declared):
            raise ArgumentError(f"fake: {self.name} takes {len(self._declared)} arguments, got {len(args)}")
        ks = self._variants.select(args)
        RegistrationSignature(ks.fake_params(args, f"fake: {self.name}")).fake(*args)
        ks.check_dyn_dims(args, f"fake: {self.name}")


def register(
    fn: Any = None,
    name: str | None = None,
    *,
    functional: bool = False,
    dtypes: Iterable[Any] | None = None,
    shapes: Any = None,
    pin: bool = False,
) -> Any:
    """Define ``torch.ops.<ns>.<name>`` from a ``@pl.jit`` function and install its kernel.

    Works as a call, ``register(fn, "ns::name")``, and as a decorator,
    ``@register("ns::name")`` (stacked on ``@pl.jit``).

    The operator compiles once per (dtype signature, the dims the annotations pin): a dim is
    pinned by an int in its annotation (``pl.Tensor[[M, 64], pl.FP32]`` pins axis 1); every
    other dim (a ``pl.dynamic`` one, each dim of a bare ``pl.Tensor``) is a run-time value, so
    one compile serves every extent. A body that needs static shapes for its bare tensors
    (tensor-level ops) is compiled per shape instead; ``pin=True`` asks for that from the start.
    A ``pl.dtype_var`` in the annotations makes one kernel serve each of its dtypes.

    Args:
        fn: The ``@pl.jit`` function; every parameter annotated (``pl.Tensor``, ``pl.Out[...]``,
            ``pl.InOut[...]``, or a scalar dtype such as ``pl.FP32``). With ``dtypes``: a
            builder ``fn(dtype) -> @pl.jit function``.
        name: ``"namespace::name"``.
        functional: Register the functional form (:class:`~pypto.torch.functional.FunctionalOperator`):
            the operator allocates the Out tensors and returns them; InOut is refused.
        dtypes: The dtypes of a dtype-generic operator: one kernel per dtype from the builder,
            one operator that dispatches on the dtype of its first tensor input.
        shapes: Functional only: ``{out name: input name | callable(*inputs) -> shape}`` for
            outputs whose shape the annotations do not give.
        pin: Compile a bare ``pl.Tensor``'s whole shape into the kernel (one compile per shape).

    Returns:
        The :class:`Operator` (mutation-only: call it with the jit signature's arguments,
        Out/InOut supplied by the caller; it returns the caller's aliased tensors) or the
        :class:`~pypto.torch.functional.FunctionalOperator`. ``.op`` is the ``torch.ops`` overload.

    Raises:
        TypeError: ``fn`` is not a ``@pl.jit`` function (or builder, with ``dtypes``).
        ValueError: A malformed name; SignatureError (a ValueError) for a parameter the
            dispatcher cannot carry, or variants whose signatures differ.
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

        def decorate(f: Any) -> Any:
            return register(f, qualname, functional=functional, dtypes=dtypes, shapes=shapes, pin=pin)

        return decorate
    if name is None:
        raise TypeError("register(fn, name): the operator name 'namespace::name' is required")
    op: Any
    if functional:
        op = FunctionalOperator(fn, name, dtypes=dtypes, shapes=shapes, pin=pin)
    else:
        if shapes is not None:
            raise TypeError(
                "register(shapes=...): shape rules are for functional=True (a mutation-only "
                "operator's caller passes its Out tensors)"
            )
        op = Operator(fn, name, dtypes=dtypes, pin=pin)
    with operators_lock:
        operators[op.name] = op
    return op


def registered() -> dict[str, Any]:
    """The operators registered in this process, by qualified name."""
    with operators_lock:
        return dict(operators)
