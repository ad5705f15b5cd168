"""Host-level functions of a multi-chip ``@pl.program``: ``@pl.function(level=pl.Level.HOST,
role=...)``.

Their bodies are Python run on the host CPU, not kernel code: the program keeps them beside its
device functions (``Program.host_funcs``) instead of parsing them. The ``Orchestrator``'s body
runs once when the program is compiled for its devices (``pypto.ir.compile(program,
distributed_config=...)``), recording which chip orchestrations it launches and which
SubWorkers it calls, in order. A ``SubWorker`` whose body is ``...`` is bound at runtime
(``requires_runtime_binding``): ``compiled.prepare(callbacks={name: fn})`` supplies it.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pypto.ir.types import Level, Role

__all__ = ["HostLevelFunction", "has_ellipsis_body"]


def has_ellipsis_body(fn: Callable[..., Any]) -> bool:
    """Whether ``fn``'s body is ``...`` alone (after an optional docstring)."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return False
    node = tree.body[0]
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    body = list(node.body)
    first = body[0].value if body and isinstance(body[0], ast.Expr) else None
    if isinstance(first, ast.Constant) and isinstance(first.value, str) and len(body) > 1:
        body = body[1:]  # the docstring
    return (
        len(body) == 1
        and isinstance(body[0], ast.Expr)
        and isinstance(body[0].value, ast.Constant)
        and body[0].value.value is Ellipsis
    )


@dataclass(frozen=True)
class HostLevelFunction:
    """A ``Level.HOST`` function of a program: its ``name``, ``role``, the Python function
    (``fn``) and whether its first parameter is ``self`` (``is_method``)."""

    name: str
    role: Role
    fn: Callable[..., Any] = field(compare=False, repr=False)
    is_method: bool = False
    requires_runtime_binding: bool = False  # a SubWorker with a `...` body
    # an Orchestrator's view of the program's chip orchestrations: per orchestration, the
    # annotations of its window parameters (pld.DistributedTensor), which the IR does not keep
    window_params: Mapping[str, Mapping[str, Any]] = field(default_factory=dict, compare=False, repr=False)

    @property
    def level(self) -> Level:
        return Level.HOST

    @property
    def param_names(self) -> tuple[str, ...]:
        names = tuple(inspect.signature(self.fn).parameters)
        return names[1:] if self.is_method else names
