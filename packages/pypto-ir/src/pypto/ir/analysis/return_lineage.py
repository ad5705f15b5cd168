"""Return-lineage alias analysis: which parameter each returned tensor is.

On SSA IR, a tensor value is traced back through ``tile.store`` results (a store returns
the tensor it wrote; so do ``tensor.write``, ``tensor.assemble`` and ``tensor.expand_clone``), kernel-call results (a call returns the argument its callee returns),
loop-carried values and loop results, to a parameter of the function or to an internal
allocation. The entry's aliases are the indices of those parameters in the complete
signature (scalar slots included), in return order, duplicates kept; ``None`` marks a return
that aliases no parameter.
"""

from __future__ import annotations

from pypto.ir import nodes
from pypto.ir.errors import CodegenError

__all__ = ["definitions", "entry_aliases", "function_aliases", "require_aliases", "root_param"]


def definitions(body: tuple[nodes.Stmt, ...]) -> dict[str, object]:
    """Per SSA name defined in ``body`` (nested bodies included), the value it is bound to:
    an assignment's value, a loop-carried value's or loop result's initial value, an ``if``
    result's value yielded by the then-branch."""
    defs: dict[str, object] = {}
    for s in nodes.walk_stmts(body):
        if isinstance(s, nodes.Assign):
            defs[s.var.name] = s.value
        elif isinstance(s, (nodes.For, nodes.While)):
            for ia in s.iter_args:
                defs[ia.var.name] = ia.init
            for k, r in enumerate(s.results):
                defs[r.name] = s.iter_args[k].init
        elif isinstance(s, nodes.If) and s.results:
            y = s.then_body[-1]
            if isinstance(y, nodes.Yield):
                for r, v in zip(s.results, y.values, strict=True):
                    defs[r.name] = v
    return defs


def root_param(
    fn: nodes.Function,
    value: nodes.Expr,
    program: nodes.Program | None = None,
    defs: dict[str, object] | None = None,
) -> int | None:
    """Index of the parameter ``value`` aliases, or None (internal tensor / not a tensor).

    ``defs`` is ``definitions(fn.body)``, computed once by a caller that asks many times.
    """
    if defs is None:
        defs = definitions(fn.body)
    names = {p.name: i for i, p in enumerate(fn.params)}
    seen: set[str] = set()
    cur: object = value
    while True:
        if isinstance(cur, nodes.Var):
            if cur.name in names and cur.name not in defs:
                return names[cur.name]
            if cur.name in seen or cur.name not in defs:
                return None
            seen.add(cur.name)
            cur = defs[cur.name]
        elif isinstance(cur, nodes.Call) and cur.op == "tile.store":
            cur = cur.args[2]
        elif isinstance(cur, nodes.Call) and cur.op in ("tensor.write", "tensor.assemble"):
            cur = cur.args[0]
        elif isinstance(cur, nodes.Call) and cur.op == "tensor.expand_clone":
            cur = cur.args[1]  # the target it writes
        elif isinstance(cur, nodes.Call) and cur.op == "tensor.view":
            cur = cur.args[0]  # a window of a tensor is that tensor for aliasing
        elif isinstance(cur, nodes.CallFunc) and program is not None:
            callee = program.functions.get(cur.callee)
            if callee is None:
                return None
            rets = function_aliases(callee, program)
            if len(rets) != 1 or rets[0] is None:
                return None
            cur = cur.args[rets[0]]
        else:
            return None


def function_aliases(fn: nodes.Function, program: nodes.Program | None = None) -> tuple[int | None, ...]:
    """Per return value of ``fn``, the index of the parameter it aliases (or None)."""
    defs = definitions(fn.body)
    rets = [s for s in fn.body if isinstance(s, nodes.Return)]
    if not rets:
        return ()
    return tuple(root_param(fn, v, program, defs) for v in rets[-1].values)


def entry_aliases(program: nodes.Program) -> tuple[int | None, ...]:
    """The entry's return aliases (run on the SSA form of the original program)."""
    return function_aliases(program.entry_function, program)


def require_aliases(program: nodes.Program) -> tuple[int, ...]:
    aliases = entry_aliases(program)
    for k, a in enumerate(aliases):
        if a is None:
            raise CodegenError(
                f"{program.entry}: return value {k} is not one of the function's tensor parameters; "
                "return the Out/InOut tensors the kernels wrote (e.g. `return c`)"
            )
    return tuple(a for a in aliases if a is not None)
