"""The operations of the kernel language (``pl.load``, ``pl.add``, ...), built from the op table.

Each ``pl.<name>`` here is made from its entry in ``pypto.ir.ops.table`` (signature and doc),
so ``help(pl.add)`` shows what the table records. These functions are never executed: the
parser reads kernel bodies and turns each call into an IR operator, binding the call's
arguments against the signature (so a wrong arity or an unknown keyword is reported at the
call's source position). Calling one from ordinary Python raises an error that says so. Ops
that exist at tile and tensor level (``pl.add`` on two tiles or on two tensors) dispatch on
their first operand.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from pypto.ir.ops import LANGUAGE, REQUIRED, LangOp

FUNCTIONS = [name for name, op in sorted(LANGUAGE.items()) if op.public]
"""Every op the language has a function for (the names of this module's functions)."""
__all__ = [name for name in FUNCTIONS if LANGUAGE[name].in_pl]
"""The ops ``pl`` exports (this module's names for them: the table's keys)."""


def _level(has_form: str, *, aliases: bool = True) -> dict[str, str]:
    names: dict[str, str] = {}
    for name in FUNCTIONS:
        op = LANGUAGE[name]
        if getattr(op, has_form):
            for public in (op.public_name, op.alias if aliases else ""):
                if public and names.setdefault(public, name) != name:
                    raise ValueError(
                        f"op table: {has_form} ops {names[public]!r} and {name!r} both export {public!r}"
                    )
    return dict(sorted(names.items()))


PL_LEVEL = _level("in_pl", aliases=False)
"""The names ``pl`` exports -> the op each is (an op's ``public_name``; not its aliases)."""
TILE_LEVEL = _level("tile_level")
"""The names ``pl.tile`` exports -> the op each is: the ops with a tile form, and their aliases."""
TENSOR_LEVEL = _level("tensor_level")
"""The names ``pl.tensor`` exports -> the op each is: the ops with a tensor form, and their aliases."""


def signature(op: LangOp) -> inspect.Signature:
    """The Python signature of ``pl.<op.name>`` (what the parser binds a call against)."""
    kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
    return inspect.Signature(
        [
            inspect.Parameter(
                p.name, kind, default=inspect.Parameter.empty if p.default is REQUIRED else p.default
            )
            for p in op.params
        ]
    )


def make_op(op: LangOp) -> Callable[..., Any]:
    """The function ``pl.<op.name>``: its signature and doc are the table's."""
    name = op.name
    spelled = op.spelled
    sig = signature(op)

    def outside(*args: Any, **kwargs: Any) -> Any:
        from pypto.language.host_trace import HOST_OPS, active_trace

        trace = active_trace()
        if trace is not None and name in HOST_OPS:  # a host body runs it as Python
            return trace.host_op(name, sig.bind(*args, **kwargs).arguments)
        raise RuntimeError(
            f"{spelled}() is part of the kernel language and runs only inside a @pl.jit, "
            "@pl.jit.incore or @pl.function body, which the compiler parses"
        )

    def bound(*args: Any, **kwargs: Any) -> Any:  # the signature the parser binds
        return sig.bind(*args, **kwargs)

    bound.__signature__ = sig  # type: ignore[attr-defined]
    outside.__name__ = op.public_name
    outside.__qualname__ = op.public_name
    outside.__module__ = __name__
    outside.__doc__ = op.doc
    outside.__signature__ = sig  # type: ignore[attr-defined]
    outside.__wrapped__ = bound  # type: ignore[attr-defined]
    outside.__pypto_op__ = name  # type: ignore[attr-defined]
    return outside


globals().update({name: make_op(LANGUAGE[name]) for name in FUNCTIONS})


def __getattr__(name: str) -> Any:
    # Declared so that static checkers accept ``from pypto.language.ops import add`` (the ops are
    # set in the module's globals above, which they cannot see); at run time an unknown name is
    # an AttributeError as for any module.
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
