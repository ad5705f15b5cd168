"""Dispatcher schema and Fake/Meta kernel helpers for a PyPTO kernel-mode operator.

:class:`RegistrationSignature` turns a kernel's ParamInfo signature and return aliases into
a ``torch.library`` schema and a Fake kernel, and :meth:`RegistrationSignature.define`
installs exactly those two into a library that the caller owns. No device kernel is
installed here, and importing this module registers nothing.

Schema rules: Out/InOut tensors are writable (``Tensor(a!)``), each in its own alias set;
each tensor return repeats the alias set of the parameter it returns; every argument is
required; no output is allocated. Integer scalars are ``SymInt`` (symbols stay symbols),
FP32/FP16/BF16 scalars ``float`` and BOOL ``bool``.

Example:
    >>> import torch
    >>> from pypto.ir import ParamInfo
    >>> sig = RegistrationSignature(
    ...     [ParamInfo("x", "In", [-1], "FP32"), ParamInfo("out", "Out", [-1], "FP32"),
    ...      ParamInfo("n", "In", None, "INT32")])
    >>> sig.schema("scale")
    'scale(Tensor x, Tensor(a!) out, SymInt n) -> ()'
"""

from __future__ import annotations

import keyword
import re
from collections.abc import Callable, Iterable
from typing import Any

import torch
from pypto.ir import (
    DEFAULT_PLATFORM,
    DataType,
    ParamInfo,
    SignatureError,
    bind_complete_args,
    validate_param_names,
    validate_return_aliases,
)
from pypto.torch._dtypes import to_torch_dtype
from pypto.torch._validation import ArgumentError, check_scalar, check_tensor_signature, describe_param
from pypto.torch.interop import CallSignature
from torch._subclasses.fake_tensor import is_fake

__all__ = ["ArgumentError", "RegistrationSignature"]

_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*\Z")
_SCALAR_TYPES = {
    DataType.INT8: "SymInt",
    DataType.INT16: "SymInt",
    DataType.INT32: "SymInt",
    DataType.INT64: "SymInt",
    DataType.UINT8: "SymInt",
    DataType.UINT16: "SymInt",
    DataType.UINT32: "SymInt",
    DataType.FP32: "float",
    DataType.FP16: "float",
    DataType.BF16: "float",
    DataType.BOOL: "bool",
}


def _alias_set(k: int) -> str:
    return chr(ord("a") + k) if k < 26 else f"a{k}"


def _check_name(name: object, what: str) -> str:
    if not isinstance(name, str) or not _NAME.match(name) or keyword.iskeyword(name):
        raise SignatureError(
            f"{what}: expected a plain identifier (letters, digits, '_'; no namespace, overload or "
            f"Python keyword), got {name!r}"
        )
    return name


def _fake_registration_api() -> Callable[..., Any]:
    """``torch.library.register_fake``, or ``impl_abstract`` on a PyTorch that predates it."""
    api = getattr(torch.library, "register_fake", None) or getattr(torch.library, "impl_abstract", None)
    if api is None:
        raise RuntimeError(
            f"define(): torch {torch.__version__} has neither torch.library.register_fake nor "
            "torch.library.impl_abstract, so no Fake kernel can be installed; no schema was defined"
        )
    result: Callable[..., Any] = api
    return result


class RegistrationSignature:
    """A kernel's signature as the dispatcher sees it.

    Args:
        params: The ParamInfo signature (carrier shapes as ParamInfo records them).
        return_aliases: Indices into ``params`` of the Out/InOut tensors the operator
            returns (they may repeat); empty for a mutation-only operator.

    Raises:
        SignatureError: No tensor parameter, a return that names a read-only input or a
            scalar, a scalar type the dispatcher cannot carry (UINT64, FP8, FP4), a dtype
            this torch lacks, or a parameter name the schema language rejects.
    """

    __slots__ = ("_alias_sets", "_torch_dtypes", "params", "return_aliases")

    def __init__(self, params: Iterable[ParamInfo], return_aliases: Iterable[int] = ()) -> None:
        self.params: tuple[ParamInfo, ...] = tuple(params)
        validate_param_names(self.params)
        self.return_aliases: tuple[int, ...] = validate_return_aliases(self.params, return_aliases)
        if not any(p.is_tensor for p in self.params):
            raise SignatureError(
                "RegistrationSignature: a scalar-only operator has nothing to write; "
                "declare at least one tensor parameter"
            )
        alias_sets: dict[int, str] = {}
        torch_dtypes: dict[int, Any] = {}
        for i, p in enumerate(self.params):
            what = f"RegistrationSignature: {describe_param(i, p)}"
            _check_name(p.name, f"{what}: name")
            if p.is_scalar:
                if p.dtype not in _SCALAR_TYPES:
                    reason = (
                        "the dispatcher's signed 64-bit integer cannot hold the full UINT64 range"
                        if p.dtype is DataType.UINT64
                        else "the dispatcher has no scalar type for it"
                    )
                    raise SignatureError(f"{what}: a {p.dtype.value} scalar cannot be registered: {reason}")
                continue
            try:
                torch_dtypes[i] = to_torch_dtype(p.dtype, what=what)
            except ValueError as exc:
                raise SignatureError(str(exc)) from None
            if p.direction.writes:
                alias_sets[i] = _alias_set(len(alias_sets))
        for k, index in enumerate(self.return_aliases):
            if index not in alias_sets:
                raise SignatureError(
                    f"return_aliases[{k}]: index {index} names read-only input {self.params[index].name!r}; "
                    "a returned tensor must be an Out or InOut parameter (the dispatcher rejects "
                    "returning a read-only input object)"
                )
        self._alias_sets = alias_sets
        self._torch_dtypes = torch_dtypes

    def __repr__(self) -> str:
        names = ", ".join(f"{p.name}:{p.direction.value}" for p in self.params)
        return f"RegistrationSignature([{names}], return_aliases={list(self.return_aliases)})"

    def call_signature(self, *, platform: str | Any = DEFAULT_PLATFORM) -> CallSignature:
        """The :class:`~pypto.torch.interop.CallSignature` with the same params and return
        aliases, for the real kernel behind this schema to describe its calls with."""
        return CallSignature(self.params, self.return_aliases, platform=platform)

    def schema(self, name: str) -> str:
        """The dispatcher schema of operator ``name`` (without namespace), e.g.
        ``"scale(Tensor x, Tensor(a!) out, SymInt n) -> Tensor(a!)"``."""
        _check_name(name, "schema(name)")
        args = []
        for i, p in enumerate(self.params):
            if p.is_scalar:
                args.append(f"{_SCALAR_TYPES[p.dtype]} {p.name}")
            elif i in self._alias_sets:
                args.append(f"Tensor({self._alias_sets[i]}!) {p.name}")
            else:
                args.append(f"Tensor {p.name}")
        rets = [f"Tensor({self._alias_sets[i]}!)" for i in self.return_aliases]
        returns = rets[0] if len(rets) == 1 else f"({', '.join(rets)})"
        text = f"{name}({', '.join(args)}) -> {returns}"
        try:
            torch._C.parse_schema(text)
        except RuntimeError as exc:
            raise SignatureError(f"schema({name!r}): the dispatcher rejects {text!r}: {exc}") from None
        return text

    def fake(self, *args: Any) -> Any:
        """The Fake/Meta kernel: validate abstract arguments and return the declared outputs.

        Accepts FakeTensor or Meta tensors and checks dtype, rank, static dimensions,
        contiguity, one device and inference-only use; scalars keep their symbols. Returns
        None, the one aliased input object, or a tuple of them: the exact objects passed
        in, so strides, storage offset and alias identity are kept. It never reads data or
        pointers, queries formats, devices or streams, allocates, or touches a Worker.
        """
        bound = bind_complete_args(self.params, args)
        grad_enabled = torch.is_grad_enabled()
        device = None
        first_name = ""
        for i, (p, arg) in enumerate(bound):
            if p.is_scalar:
                check_scalar(i, p, arg, caller="fake", symbolic=True)
                continue

            def fail(problem: str, i: int = i, p: ParamInfo = p) -> ArgumentError:
                return ArgumentError(f"fake: {describe_param(i, p)}: {problem}")

            if not isinstance(arg, torch.Tensor):
                raise fail(f"expected a FakeTensor or Meta tensor, got {type(arg).__name__}")
            tensor: Any = arg
            if not (tensor.is_meta or is_fake(tensor)):
                raise fail(f"expected a FakeTensor or Meta tensor, got a real tensor on {tensor.device}")
            if grad_enabled and tensor.requires_grad:
                raise fail(
                    "the tensor requires grad while autograd is enabled; PyPTO kernels are inference-only"
                )
            check_tensor_signature(i, p, tensor, self._torch_dtypes[i], caller="fake")
            if not tensor.is_contiguous():
                raise fail(f"expected a contiguous view, got strides {list(tensor.stride())}")
            if device is None:
                device, first_name = tensor.device, p.name
            elif tensor.device != device:
                raise fail(f"is on {tensor.device}, but parameter {first_name!r} is on {device}")
        rets = tuple(args[i] for i in self.return_aliases)
        if not rets:
            return None
        return rets[0] if len(rets) == 1 else rets

    def define(self, library: Any, name: str) -> str:
        """Install this schema and :meth:`fake` as operator ``name`` in ``library``.

        Args:
            library: A caller-owned ``torch.library.Library`` (kind ``"DEF"`` or
                ``"FRAGMENT"``); the caller keeps it alive, and the registration ends with it.
            name: The operator name, without namespace or overload.

        Returns:
            The qualified name ``"<namespace>::<name>"``.

        Raises:
            SignatureError: An invalid name.
            RuntimeError: PyTorch's own error for a repeated definition, or neither Fake
                registration API exists (raised before any schema is installed).

        Example:
            >>> lib = torch.library.Library("pypto_doc_example", "DEF")
            >>> sig = RegistrationSignature([ParamInfo("out", "Out", [-1], "FP32")], [0])
            >>> sig.define(lib, "fill")
            'pypto_doc_example::fill'
            >>> out = torch.empty(3, device="meta")
            >>> torch.ops.pypto_doc_example.fill(out) is out
            True
            >>> lib._destroy()
        """
        register_fake = _fake_registration_api()
        text = self.schema(name)
        if not isinstance(library, torch.library.Library):
            raise TypeError(
                f"define(library): expected a torch.library.Library, got {type(library).__name__}"
            )
        library.define(text)
        qualname = f"{library.ns}::{name}"
        register_fake(qualname, self.fake, lib=library)
        return qualname
