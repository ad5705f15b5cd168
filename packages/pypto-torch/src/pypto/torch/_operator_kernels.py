"""The compiled kernels behind one registered operator, shared by its mutation-only and
functional forms (:mod:`pypto.torch.library`, :mod:`pypto.torch.functional`).

A :class:`KernelSet` is one ``@pl.jit`` function's artifacts, keyed by what a compile depends
on: per tensor its dtype, rank and the dims its annotation pins (an int in the annotation).
Every other dim is a run-time value: a ``pl.dynamic`` dim, and each dim of a bare
``pl.Tensor`` (compiled as a :class:`~pypto.language.TensorSpec` of ``pl.dynamic`` dims named
``<param>_<axis>``, read in the body with ``pl.dim(x, axis)``). One artifact serves every
extent. A kernel the language cannot compile with run-time dims for its bare tensors (tensor-
level ops need static shapes) is compiled per shape instead (``KernelSet.pinned_reason`` says
why); ``register(..., pin=True)`` asks for that from the start. Every scalar is compiled as
``pl.RUNTIME``. A tensor annotated with a ``pl.dtype_var`` takes its dtype from the call: one
compile per dtype signature, every tensor of one variable checked to agree before a compile.

A :class:`Variants` is the set of jit functions one operator dispatches between by the dtype of
its first tensor argument (a dtype-generic operator: ``register(build, name, dtypes=[...])``
with ``build(dtype) -> @pl.jit function``). Every variant must have the same dispatcher schema.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable, Iterable, Sequence
from operator import attrgetter, itemgetter
from typing import TYPE_CHECKING, Any

import torch
from pypto.ir import DYNAMIC, Contract, DataType, ParamInfo, PyptoCompileError, SignatureError
from pypto.torch._dtypes import from_torch_dtype, to_torch_dtype
from pypto.torch._kernel import context
from pypto.torch._kernel.callable import KernelCallable
from pypto.torch._validation import ArgumentError, check_tensor_signature

if TYPE_CHECKING:
    from pypto.language.interface import DeclaredParam, JITFunction

__all__ = [
    "KernelSet",
    "OperatorBase",
    "Variants",
    "declared_params",
    "define_operator",
    "operators",
    "parse_name",
    "variants_of",
]


operators: dict[str, Any] = {}  # qualified name -> Operator / FunctionalOperator (keeps each library alive)
operators_lock = threading.Lock()


class OperatorBase:
    """What both kinds of registered operator share: the count of their compiles, keyword
    arguments bound to positions, and removal from the dispatcher."""

    name: str  # the qualified operator name, "ns::name"
    _variants: Variants
    _signature: inspect.Signature  # the parameters a caller passes, in the torch operator's order
    _library: Any

    @property
    def compiles(self) -> int:
        """How many kernels this operator has compiled (and registered) so far."""
        return self._variants.compiles

    def precompile(
        self,
        *,
        dtypes: Iterable[Any] | None = None,
        examples: Iterable[Sequence[Any]] | None = None,
        extent: int = 16,
    ) -> int:
        """Compile ahead of the first calls: for ``examples`` (argument lists as the operator is
        called, tensors may be empty), else for ``dtypes`` (default every variant) of a kernel
        whose tensors all have annotated shapes (each ``pl.dynamic`` dim compiled at ``extent``:
        one artifact serves every extent). Shows a progress bar when it takes more than a
        second. Kernel mode is initialised with the defaults if it was not. Returns the number
        of new compiles."""
        label = f"precompile {self.name}"
        full = None if examples is None else [self._full_example(list(ex), label) for ex in examples]
        return self._variants.precompile(full, dtypes, extent, label)

    def _full_example(self, args: list[Any], label: str) -> list[Any]:
        """The kernel's arguments for one of :meth:`precompile`'s examples: the operator's
        arguments as they are."""
        return args

    def _positional(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
        """A call's arguments as one tuple in the torch operator's (positional) order; a
        TypeError naming the operator when they do not bind."""
        try:
            bound = self._signature.bind(*args, **kwargs)
        except TypeError as exc:
            raise TypeError(f"{self.name}: {exc}") from None
        return tuple(bound.arguments[n] for n in self._signature.parameters)

    # -- lifetime ------------------------------------------------------------------------------

    def remove(self) -> None:
        """Remove the operator from the dispatcher (its kernels stay registered on the Worker)."""
        with operators_lock:
            if operators.get(self.name) is self:
                del operators[self.name]
        self._library._destroy()


def parse_name(qualname: object) -> tuple[str, str]:
    if not isinstance(qualname, str) or qualname.count("::") != 1:
        raise ValueError(f"register(name): expected 'namespace::name', got {qualname!r}")
    ns, name = qualname.split("::")
    if not ns.isidentifier() or not name.isidentifier():
        raise ValueError(f"register(name): expected 'namespace::name' of two identifiers, got {qualname!r}")
    return ns, name


def define_operator(qualname: str, schema: str, fake: Any, kernel: Any) -> tuple[Any, Any]:
    """Define ``qualname`` with ``schema`` in a FRAGMENT library, with ``fake`` as its fake
    (meta) kernel and ``kernel`` for every backend; returns the library (which owns the
    definition) and the operator's default overload. Nothing stays defined on failure."""
    ns, name = parse_name(qualname)
    library = torch.library.Library(ns, "FRAGMENT")
    try:
        library.define(schema)
        register_fake = getattr(torch.library, "register_fake", None) or torch.library.impl_abstract
        register_fake(qualname, fake, lib=library)
        library.impl(name, kernel, "CompositeExplicitAutograd")
    except BaseException:
        library._destroy()
        raise
    return library, getattr(getattr(torch.ops, ns), name).default


def declared_params(fn: Any, what: str) -> tuple[DeclaredParam, ...]:
    """The jit function's declared parameters; each must be a tensor or a scalar dtype."""
    from pypto.language.interface import JITFunction

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


_DTYPE_RANK = attrgetter("dtype", "ndim")


def _getter(positions: tuple[int, ...]) -> Callable[[Sequence[Any]], tuple[Any, ...]]:
    """A function returning the items of a sequence at ``positions``, always as a tuple."""
    if len(positions) > 1:
        return itemgetter(*positions)
    if positions:
        i = positions[0]
        return lambda args: (args[i],)
    return lambda args: ()


class KernelSet:
    """The artifacts of one jit function registered on the kernel Worker, by compile key.

    Attributes:
        fn: The ``@pl.jit`` function.
        declared: Its declared parameters.
        compiles: How many compiles (artifact store look-ups and registrations) it has made.
    """

    def __init__(
        self, fn: JITFunction, declared: tuple[DeclaredParam, ...], name: str, *, pin: bool = False
    ) -> None:
        self.fn = fn
        self.declared = declared
        self.name = name
        self.compiles = 0
        self.scalar_positions = tuple(d.position for d in declared if d.is_scalar)
        self.tensor_positions = tuple(d.position for d in declared if not d.is_scalar)
        self.tensor_dtypes = {
            d.position: to_torch_dtype(d.dtype, what=f"register({name!r}): {d.name}")
            for d in declared
            if not d.is_scalar and d.dtype is not None
        }
        # per tensor: None (the whole shape comes from the call) or the axes the annotation pins
        self._pinned = tuple(
            (
                d.position,
                None if d.shape is None else tuple(i for i, s in enumerate(d.shape) if s != DYNAMIC),
            )
            for d in declared
            if not d.is_scalar
        )
        # a pl.dynamic name on two or more axes: checked on every call (an output sized for
        # another extent would be written out of bounds), before any compile
        self.dyn_dims = {k: v for k, v in dyn_dims(declared).items() if len(v) > 1}
        self.dtype_vars = dtype_vars(declared)
        # bare tensors: run-time dims (False once the language refused them, or with pin=True)
        self.dynamic = not pin and any(p is None for _, p in self._pinned)
        # every tensor bare: while ``dynamic`` the key is (dtype, rank) per tensor, read by
        # C-level getters (the per-call path of the common case; the same key as the loop's)
        self._all_bare = all(p is None for _, p in self._pinned)
        self._tensors_of = _getter(self.tensor_positions)
        self.pinned_reason: str | None = "register(pin=True)" if pin else None
        self._callables: dict[tuple[Any, ...], KernelCallable] = {}
        self._lock = threading.Lock()

    def key(self, args: Sequence[Any], generation: int) -> tuple[Any, ...]:
        """What a compile for ``args`` depends on (and the context generation)."""
        if self.dynamic and self._all_bare:
            return (generation, *map(_DTYPE_RANK, self._tensors_of(args)))
        parts: list[Any] = [generation]
        for i, pinned in self._pinned:
            a = args[i]
            shape = a.shape
            if pinned is None:
                parts.append((a.dtype, len(shape)) if self.dynamic else (a.dtype, tuple(shape)))
            else:
                parts.append((a.dtype, len(shape), tuple(shape[j] for j in pinned if j < len(shape))))
        return tuple(parts)

    def launch(self, args: Sequence[Any]) -> KernelCallable:
        """Compile (once per key) and run the kernel on ``args`` (every parameter supplied);
        returns the registration it ran (its ``bound`` plan takes the next common calls)."""
        manager = context.current()
        info = manager.ready()
        key = self.key(args, info.generation)
        kc = self._callables.get(key)
        if kc is None:
            kc = self.prepare(args, info)
        elif self.dyn_dims:
            self.check_dyn_dims(args, "describe_call")
        frame = kc.signature.describe_call(args)
        manager.launch(kc, frame, wait=kc.signature.platform.is_simulator)
        if kc.bound is None:  # a dyn_dims check runs per call above: not in the native plan
            kc.bound = () if self.dyn_dims else manager.bind(kc)
        return kc

    def prepare(self, args: Sequence[Any], info: Any = None) -> KernelCallable:
        """The registered kernel for ``args`` (tensors or Meta tensors), compiled if new."""
        from pypto.language import RUNTIME
        from pypto.runtime import compile_artifact

        manager = context.current()
        if info is None:
            info = manager.ready()
        with self._lock:
            key = self.key(args, info.generation)  # under the lock: a fallback changes the key's form
            kc = self._callables.get(key)
            if kc is not None:
                return kc
            self.check_declared(args)
            self.check_dyn_dims(args, "describe_call")
            spec_args = [RUNTIME if i in self.scalar_positions else a for i, a in enumerate(args)]
            artifact = None
            if self.dynamic:
                try:
                    artifact = compile_artifact(
                        self.fn,
                        *self._runtime_dims(spec_args),
                        contract=Contract.KERNEL,
                        platform=info.platform,
                        runtime=info.runtime,
                    )
                except PyptoCompileError as exc:
                    # the body needs static shapes for its bare tensors: compile per shape
                    self.dynamic = False
                    self.pinned_reason = f"{type(exc).__name__}: {exc}"
                    key = self.key(args, info.generation)
                    kc = self._callables.get(key)
                    if kc is not None:
                        return kc
            if artifact is None:
                artifact = compile_artifact(
                    self.fn,
                    *spec_args,
                    contract=Contract.KERNEL,
                    platform=info.platform,
                    runtime=info.runtime,
                )
            kc = manager.prepare(artifact)
            self.compiles += 1
            self._callables[key] = kc
            return kc

    def _runtime_dims(self, args: list[Any]) -> list[Any]:
        """``args`` with each bare tensor a TensorSpec of run-time dims ``<param>_<axis>``."""
        from pypto.language import TensorSpec, dynamic

        out = list(args)
        for i, pinned in self._pinned:
            if pinned is None:
                name = self.declared[i].name
                dims = tuple(dynamic(f"{name}_{axis}") for axis in range(args[i].dim()))
                out[i] = TensorSpec(dims, from_torch_dtype(args[i].dtype, what=f"parameter {name!r}"))
        return out

    def check_declared(self, args: Sequence[Any]) -> None:
        """Before compiling for new shapes: the dtype, rank and static dims that the annotations
        fix, with describe_call's own check and message (a compile would only say it later)."""
        for d in self.declared:
            if d.is_scalar or d.position not in self.tensor_dtypes:
                continue
            arg = args[d.position]
            if not isinstance(arg, torch.Tensor):
                raise ArgumentError(
                    f"describe_call: parameter {d.name!r} (#{d.position}): expected a torch.Tensor, "
                    f"got {type(arg).__name__}"
                )
            info = d.param_info()
            if info is not None:
                check_tensor_signature(
                    d.position, info, arg, self.tensor_dtypes[d.position], caller="describe_call"
                )
            elif arg.dtype != self.tensor_dtypes[d.position]:
                declared = d.dtype.value if d.dtype is not None else "?"
                raise ArgumentError(
                    f"describe_call: parameter {d.name!r} (#{d.position}, {d.direction.value} {declared}): "
                    f"expected dtype {self.tensor_dtypes[d.position]}, got {arg.dtype}"
                )

    def check_dyn_dims(self, args: Sequence[Any], what: str) -> None:
        """Every tensor axis annotated with one ``pl.dynamic`` name has one extent (an output
        sized for another M is refused before anything is compiled or run), and every tensor
        annotated with one ``pl.dtype_var`` has one dtype, an allowed one."""
        for var, var_places in self.dtype_vars.items():
            first_pos: int | None = None
            for vpos in var_places:
                varg = args[vpos]
                dt = getattr(varg, "dtype", None)
                if not isinstance(dt, torch.dtype):
                    continue
                vd = self.declared[vpos]
                if var.allowed and dt not in [to_torch_dtype(a, what=what) for a in var.allowed]:
                    raise ArgumentError(
                        f"{what}: parameter {vd.name!r} (#{vpos}) has dtype variable {var.name}: expected one of "
                        f"{[str(to_torch_dtype(a, what=what)) for a in var.allowed]}, got {dt}"
                    )
                if first_pos is None:
                    first_pos = vpos
                elif args[first_pos].dtype != dt:
                    fd = self.declared[first_pos]
                    raise ArgumentError(
                        f"{what}: dtype variable {var.name} is {args[first_pos].dtype} in parameter {fd.name!r} "
                        f"but {dt} in parameter {vd.name!r}; every tensor annotated {var.name} has one dtype"
                    )
        for name, places in self.dyn_dims.items():
            first: tuple[int, int, Any] | None = None
            for pos, axis in places:
                arg = args[pos]
                if not isinstance(arg, torch.Tensor) or axis >= arg.dim():
                    continue  # describe_call / the Fake kernel name the wrong type or rank
                size = arg.shape[axis]
                if first is None:
                    first = (pos, axis, size)
                    continue
                if isinstance(size, int) and isinstance(first[2], int):
                    if size != first[2]:
                        a, b = self.declared[first[0]].name, self.declared[pos].name
                        raise ArgumentError(
                            f"{what}: dimension {name} is {first[2]} in parameter {a!r} (axis {first[1]}) but "
                            f"{size} in parameter {b!r} (axis {axis}); every axis annotated {name} must agree"
                        )
                else:
                    msg = f"{what}: dimension {name} must agree in every parameter annotated with it"
                    torch._check(size == first[2], lambda msg=msg: msg)

    def fake_params(self, args: Sequence[Any], what: str) -> list[ParamInfo]:
        """The ParamInfo of each argument as the Fake kernel checks it: the declaration, where a
        tensor whose dtype or shape comes from the call takes them from the abstract argument."""
        params = []
        for d, arg in zip(self.declared, args, strict=True):
            info = d.param_info()
            if info is None:
                if not isinstance(arg, torch.Tensor):
                    raise ArgumentError(
                        f"{what}: parameter {d.name!r} (#{d.position}): expected a FakeTensor "
                        f"or Meta tensor, got {type(arg).__name__}"
                    )
                dtype = d.dtype or from_torch_dtype(arg.dtype, what=f"{what}: parameter {d.name!r}")
                shape = d.shape if d.shape is not None else (-1,) * arg.dim()
                info = ParamInfo(d.name, d.direction, shape, dtype)
            params.append(info)
        return params

    def example_args(self, dtype: torch.dtype | None, extent: int) -> list[Any] | None:
        """Meta-free example arguments for a compile: every dynamic dim ``extent``, scalars 0;
        None when a tensor's rank comes only from the call (a bare ``pl.Tensor``)."""
        args: list[Any] = []
        for d in self.declared:
            if d.is_scalar:
                args.append(False if d.dtype is DataType.BOOL else 0 if not d.dtype.is_float else 0.0)  # type: ignore[union-attr]
                continue
            if d.shape is None:
                return None
            tdtype = self.tensor_dtypes.get(d.position, dtype)
            if tdtype is None:
                return None
            args.append(torch.empty([extent if s == DYNAMIC else s for s in d.shape], dtype=tdtype))
        return args


def is_dynamic(dim: object) -> bool:
    """Whether an annotated dim is a ``pl.dynamic`` one (annotated dims are ints or those)."""
    return not isinstance(dim, int) and isinstance(getattr(dim, "name", None), str)


def dyn_dims(declared: Iterable[DeclaredParam]) -> dict[str, list[tuple[int, int]]]:
    """``{pl.dynamic name: [(parameter position, axis), ...]}`` from the tensor annotations."""
    out: dict[str, list[tuple[int, int]]] = {}
    for d in declared:
        if d.is_scalar:
            continue
        shape = getattr(getattr(d.annotation, "inner", d.annotation), "shape", None)
        for axis, dim in enumerate(shape or ()):
            if is_dynamic(dim):
                out.setdefault(dim.name, []).append((d.position, axis))
    return out


def dtype_vars(declared: Iterable[DeclaredParam]) -> dict[Any, list[int]]:
    """``{pl.dtype_var: [tensor parameter positions annotated with it]}``."""
    from pypto.language import DTypeVar

    out: dict[Any, list[int]] = {}
    for d in declared:
        dtype = getattr(getattr(d.annotation, "inner", d.annotation), "dtype", None)
        if not d.is_scalar and isinstance(dtype, DTypeVar):
            out.setdefault(dtype, []).append(d.position)
    return out


class Variants:
    """The jit functions of one operator by the dtype of the first tensor argument.

    Args:
        fns: ``{torch dtype or None: jit function}``; None is the one function of an operator
            that does not dispatch on dtype.
        name: The qualified operator name (for messages).
    """

    def __init__(self, fns: dict[Any, JITFunction], name: str, *, pin: bool = False) -> None:
        what = f"register({name!r})"
        self.name = name
        self.sets: dict[Any, KernelSet] = {
            dt: KernelSet(fn, declared_params(fn, what), name, pin=pin) for dt, fn in fns.items()
        }
        first = next(iter(self.sets.values()))
        self.declared = first.declared
        self.generic = None not in self.sets
        for dt, ks in self.sets.items():
            shape = [(d.name, d.direction, d.kind, d.dtype if d.is_scalar else None) for d in ks.declared]
            want = [(d.name, d.direction, d.kind, d.dtype if d.is_scalar else None) for d in self.declared]
            if shape != want:
                raise SignatureError(
                    f"{what}: the variant for {dt} has parameters {shape}, the first has {want}; every "
                    "dtype variant needs the same names, directions and scalar types"
                )
        tensors = [d.position for d in self.declared if not d.is_scalar and not d.direction.writes]
        tensors = tensors or [d.position for d in self.declared if not d.is_scalar]
        self.dispatch_position = tensors[0] if tensors else 0

    @property
    def compiles(self) -> int:
        return sum(ks.compiles for ks in self.sets.values())

    def select(self, args: Sequence[Any]) -> KernelSet:
        """The kernel set for ``args`` (by the dtype of the first tensor argument)."""
        if not self.generic:
            return self.sets[None]
        arg = args[self.dispatch_position]
        ks = self.sets.get(getattr(arg, "dtype", None))
        if ks is None:
            d = self.declared[self.dispatch_position]
            raise ArgumentError(
                f"{self.name}: parameter {d.name!r} (#{d.position}) selects the kernel by dtype: expected one of "
                f"{[str(k) for k in self.sets]}, got {getattr(arg, 'dtype', type(arg).__name__)}"
            )
        return ks

    def precompile(
        self,
        examples: Iterable[Sequence[Any]] | None,
        dtypes: Iterable[Any] | None,
        extent: int,
        label: str,
    ) -> int:
        """Compile the kernels of ``examples`` (argument lists) or, for dynamic-shape kernels,
        of ``dtypes`` (default: every variant); a ``rich`` progress bar is shown once the work
        has taken more than a second. Returns the number of new compiles."""
        jobs: list[tuple[KernelSet, Sequence[Any]]] = []
        if examples is not None:
            jobs = [(self.select(list(ex)), list(ex)) for ex in examples]
        else:
            keys = list(self.sets) if dtypes is None else [_as_torch_dtype(d) for d in dtypes]
            if dtypes is None and not self.generic:  # a dtype variable's allowed dtypes
                allowed = [a for var in self.sets[None].dtype_vars for a in var.allowed]
                keys = [_as_torch_dtype(a) for a in dict.fromkeys(allowed)] or keys
            for dt in keys:
                ks = self.sets.get(dt) if self.generic else self.sets[None]
                if ks is not None and dt is not None and not self.generic:
                    for var in ks.dtype_vars:
                        if var.allowed and dt not in [_as_torch_dtype(a) for a in var.allowed]:
                            ks = None
                if ks is None:
                    raise ValueError(
                        f"{label}: no variant for dtype {dt}; the operator has {list(self.sets)}"
                    )
                args = ks.example_args(dt, extent)
                if args is None and dt is None and ks.dtype_vars:
                    raise ValueError(
                        f"{label}: {ks.fn.__name__}'s dtype variable lists no dtypes; pass dtypes=[...]"
                    )
                if args is None:
                    raise ValueError(
                        f"{label}: {ks.fn.__name__} takes a tensor's rank from the call (a bare pl.Tensor), "
                        "so it cannot be compiled ahead without example arguments; pass examples=[(args...)]"
                    )
                jobs.append((ks, args))
        return _run_with_progress(jobs, label)


def _as_torch_dtype(d: Any) -> Any:
    if d is None or isinstance(d, torch.dtype):
        return d
    return to_torch_dtype(DataType.parse(d, what="precompile(dtypes)"), what="precompile(dtypes)")


def _run_with_progress(jobs: list[tuple[KernelSet, Sequence[Any]]], label: str) -> int:
    """Prepare each job; a progress bar (on stderr) appears once the work has taken a second."""
    sets = list({id(ks): ks for ks, _ in jobs}.values())
    before = sum(ks.compiles for ks in sets)
    lock = threading.Lock()
    state: dict[str, Any] = {"done": 0, "bar": None, "finished": False}

    def show() -> None:
        with lock:
            if not state["finished"]:
                state["bar"] = _start_progress(label, len(jobs), state["done"])

    timer = threading.Timer(1.0, show)
    timer.daemon = True
    timer.start()
    try:
        for n, (ks, args) in enumerate(jobs):
            ks.prepare(args)
            with lock:
                state["done"] = n + 1
                if state["bar"] is not None:
                    bar, task = state["bar"]
                    bar.update(task, completed=n + 1)
    finally:
        timer.cancel()
        with lock:
            state["finished"] = True
            if state["bar"] is not None:
                state["bar"][0].stop()
    return sum(ks.compiles for ks in sets) - before


def _start_progress(label: str, total: int, done: int) -> tuple[Any, Any]:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    progress = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=True,
    )
    progress.start()
    task = progress.add_task(label, total=total, completed=done)
    return progress, task


def variants_of(fn: Any, dtypes: Iterable[Any] | None, name: str) -> dict[Any, Any]:
    """``{None: fn}``, or ``{torch dtype: fn(pl dtype)}`` for a kernel builder and ``dtypes``."""
    if dtypes is None:
        return {None: fn}
    if not callable(fn) or hasattr(fn, "declared_params"):
        raise TypeError(
            f"register({name!r}, dtypes=...): expected a builder dtype -> @pl.jit function, got "
            f"{type(fn).__name__} (a @pl.jit function serves several dtypes through a pl.dtype_var "
            "in its annotations)"
        )
    out: dict[Any, Any] = {}
    for d in dtypes:
        dt = DataType.parse(d, what=f"register({name!r}, dtypes)")
        out[to_torch_dtype(dt, what=f"register({name!r}, dtypes)")] = fn(dt)
    if not out:
        raise ValueError(f"register({name!r}, dtypes): expected at least one dtype")
    return out
