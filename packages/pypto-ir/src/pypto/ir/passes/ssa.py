"""SSA conversion: every variable assigned exactly once, nested op calls flattened.

- A name bound again gets a version suffix (``x``, ``x__1``, ``x__2``); parameters keep
  their external names.
- ``y = x`` (a copy) is propagated: later uses of ``y`` read ``x``'s current version.
- A name rebound inside a loop and defined before it becomes a loop-carried value: the loop
  gets an iter arg (initialised from the value before the loop), a ``Yield`` of the value at
  the end of the body, and a result that later code reads.
- ``while`` loops carry values the same way; their condition reads the iter args. A ``break``
  or ``continue`` records the values the innermost loop's carried names have at that point
  (what the loop's results, or its next iteration, take when it leaves or restarts there).
- Operator calls nested in arguments become their own ``Assign`` of a fresh temporary, so
  that every op has variables (or constants) as operands: codegen is then 1:1.
"""

from __future__ import annotations

from dataclasses import replace

from pypto.ir import nodes
from pypto.ir.errors import KernelError
from pypto.ir.types import TensorType, TileType, Type

NAME = "ssa"
SEP = "__"


def base_name(name: str) -> str:
    """The name without its SSA version suffix."""
    head, sep, tail = name.rpartition(SEP)
    return head if sep and tail.isdigit() else name


def run(program: nodes.Program) -> nodes.Program:
    return program.replace(tuple(convert_function(f) for f in program.funcs))


def convert_function(fn: nodes.Function) -> nodes.Function:
    c = _Converter(fn)
    body = c.body(fn.body)
    return replace(fn, body=tuple(body))


class _Converter:
    def __init__(self, fn: nodes.Function) -> None:
        self.env: dict[str, nodes.Expr] = {}
        self.count: dict[str, int] = {}
        for p in fn.params:
            self.env[p.name] = p.var
            self.count[p.name] = 0
        self.tmp = 0
        self.loops: list[list[tuple[str, Type]]] = []  # innermost last: (carried name, its type)

    def fresh(self, v: nodes.Var) -> nodes.Var:
        n = self.count.get(v.name)
        if n is None:
            self.count[v.name] = 0
            return v
        self.count[v.name] = n + 1
        return nodes.Var(f"{v.name}{SEP}{n + 1}", v.type, v.span)

    def temp(self, e: nodes.Expr) -> nodes.Var:
        self.tmp += 1
        name = f"_t{self.tmp}"
        while name in self.count:
            self.tmp += 1
            name = f"_t{self.tmp}"
        self.count[name] = 0
        return nodes.Var(name, e.type, e.span)

    def use(self, e: nodes.Expr, out: list[nodes.Stmt], top: bool = False) -> nodes.Expr:
        """Rename uses in ``e``; nested calls are hoisted into temporaries unless ``top``."""
        if isinstance(e, nodes.Var):
            if e.name not in self.env:
                raise KernelError(
                    f"{e.name!r} is used before it is defined (or outside the loop that defines it)", e.span
                )
            return self.env[e.name]
        if isinstance(e, nodes.Const):
            return e
        if isinstance(e, nodes.BinOp):
            return replace(e, lhs=self.use(e.lhs, out), rhs=self.use(e.rhs, out))
        if isinstance(e, nodes.Call):
            new: nodes.Expr = replace(e, args=tuple(self.use_arg(a, out) for a in e.args))
        else:
            assert isinstance(e, nodes.CallFunc)
            new = replace(
                e,
                args=tuple(self.use(a, out) for a in e.args),
                deps=tuple(self.use(d, out) for d in e.deps),
                dumps=tuple(self.use(d, out) for d in e.dumps),
            )
        if top:
            return new
        t = self.temp(new)
        out.append(nodes.Assign(t, new, e.span))
        return t

    def use_arg(self, a: nodes.Arg, out: list[nodes.Stmt]) -> nodes.Arg:
        if isinstance(a, tuple):
            return tuple(self.use(x, out) for x in a)
        return self.use(a, out)

    def body(self, stmts: tuple[nodes.Stmt, ...]) -> list[nodes.Stmt]:
        out: list[nodes.Stmt] = []
        for s in stmts:
            self.stmt(s, out)
        return out

    def stmt(self, s: nodes.Stmt, out: list[nodes.Stmt]) -> None:
        if isinstance(s, nodes.Assign):
            value = self.use(s.value, out, top=True)
            if isinstance(value, nodes.Var):
                self.env[s.var.name] = value  # copy propagation
                return
            v = self.fresh(s.var)
            out.append(replace(s, var=v, value=value))
            self.env[s.var.name] = v
        elif isinstance(s, nodes.ExprStmt):
            out.append(replace(s, value=self.use(s.value, out, top=True)))
        elif isinstance(s, nodes.TensorWrite):
            target = self.use(s.target, out)
            assert isinstance(target, nodes.Var)
            offsets = tuple(self.use(o, out) for o in s.offsets)
            value = self.use(s.value, out, top=True)
            out.append(replace(s, target=target, offsets=offsets, value=value))
        elif isinstance(s, nodes.Return):
            out.append(replace(s, values=tuple(self.use(v, out) for v in s.values)))
        elif isinstance(s, nodes.Scope):
            deps = tuple(self.use(d, out) for d in s.deps)
            body = self.body(s.body)
            task = None
            if s.task is not None:
                task = self.fresh(s.task)
                self.env[s.task.name] = task
            out.append(replace(s, deps=deps, body=tuple(body), task=task))
        elif isinstance(s, (nodes.For, nodes.While)):
            self.loop(s, out)
        elif isinstance(s, nodes.If):
            self.branch(s, out)
        elif isinstance(s, (nodes.Break, nodes.Continue)):
            word = "break" if isinstance(s, nodes.Break) else "continue"
            if not self.loops:
                raise KernelError(f"{word} outside a loop", s.span)
            values: list[nodes.Expr] = []
            for name, ty in self.loops[-1]:
                carried = self.env[name]
                if carried.type != ty:
                    raise KernelError(
                        f"{name!r} changes type inside the loop ({ty} -> {carried.type}) before this {word}; "
                        "a loop-carried value must keep its type",
                        s.span,
                    )
                values.append(carried)
            out.append(replace(s, values=tuple(values)))
        else:
            raise KernelError(f"ssa: unexpected statement {type(s).__name__}", getattr(s, "span", None))

    def branch(self, s: nodes.If, out: list[nodes.Stmt]) -> None:
        cond = self.use(s.cond, out)
        before = dict(self.env)
        then = self.body(s.then_body)
        # a branch that ends in break / continue does not reach the code after the if
        env_then = dict(before) if _leaves(then) else self.env
        self.env = dict(before)
        els = self.body(s.else_body)
        env_else = dict(before) if _leaves(els) else self.env
        merged: list[str] = []
        for name in (*env_then, *env_else):
            if name in merged:
                continue
            if name in before:
                if env_then.get(name) is not before[name] or env_else.get(name) is not before[name]:
                    merged.append(name)
            elif name in env_then and name in env_else:
                merged.append(name)
        self.env = dict(before.items())
        results: list[nodes.Var] = []
        tv: list[nodes.Expr] = []
        ev: list[nodes.Expr] = []
        for name in merged:
            a, b = env_then.get(name, before.get(name)), env_else.get(name, before.get(name))
            assert a is not None
            assert b is not None
            if a.type != b.type:
                raise KernelError(
                    f"{name!r} has type {a.type} after the if branch but {b.type} after the else branch; "
                    "both branches must give it the same type",
                    s.span,
                )
            r = self.fresh(nodes.Var(name, a.type, s.span))
            results.append(r)
            tv.append(a)
            ev.append(b)
            self.env[name] = r
        if results:
            then.append(nodes.Yield(tuple(tv), s.span))
            els.append(nodes.Yield(tuple(ev), s.span))
        out.append(replace(s, cond=cond, then_body=tuple(then), else_body=tuple(els), results=tuple(results)))

    def loop(self, s: nodes.For | nodes.While, out: list[nodes.Stmt]) -> None:
        if isinstance(s, nodes.For):
            start = self.use(s.start, out)
            stop = self.use(s.stop, out)
            step = self.use(s.step, out)
        loop_name = s.var.name if isinstance(s, nodes.For) else None
        assigned: list[str] = []
        for inner in nodes.walk_stmts(s.body):
            for v in nodes.stmt_defs(inner):
                if v.name in self.env and v.name not in assigned and v.name != loop_name:
                    assigned.append(v.name)
        before = dict(self.env)
        widened: set[str] = set()
        while True:
            phis: list[nodes.IterArg] = []
            for name in assigned:
                init = before[name]
                ty = init.type
                if name in widened:
                    assert isinstance(ty, TileType)
                    ty = TensorType(ty.shape, ty.dtype)
                phi = self.fresh(nodes.Var(name, ty, s.span))
                phis.append(nodes.IterArg(phi, init))
                self.env[name] = phi
            if isinstance(s, nodes.For):
                loop_var = self.fresh(s.var)
                self.env[s.var.name] = loop_var
            else:
                hoisted: list[nodes.Stmt] = []
                cond = self.use(s.cond, hoisted)
                if hoisted:
                    raise KernelError(
                        "a while condition compares scalar names, constants and arithmetic on them; "
                        "compute other values (op calls) into a name in the loop body and compare that",
                        s.cond.span or s.span,
                    )
            self.loops.append([(n, ia.var.type) for n, ia in zip(assigned, phis, strict=True)])
            try:
                body = self.body(s.body)
            finally:
                self.loops.pop()
            # a tile the loop rebinds to a tensor-level value of its shape and dtype (tiles mixed
            # with tensors in a pl.at scope) is carried as that tensor-level value: the body runs
            # again with the iter arg typed so; tensor_to_tile carries it as the tile
            wider = {
                name
                for name, ia in zip(assigned, phis, strict=True)
                if _tile_to_tensor_level(ia.var.type, self.env[name].type) and name not in widened
            }
            if not wider:
                break
            widened |= wider
            self.env = dict(before)
        yields: list[nodes.Expr] = []
        for name, ia in zip(assigned, phis, strict=True):
            final = self.env[name]
            if final.type != ia.var.type:
                raise KernelError(
                    f"{name!r} changes type inside the loop ({ia.var.type} -> {final.type}); "
                    "a loop-carried value must keep its type",
                    s.span,
                )
            yields.append(final)
        results = []
        # restore: names first bound in the loop are not visible after it
        self.env = {k: v for k, v in self.env.items() if k in before}
        self.env.update({k: before[k] for k in before if k not in assigned})
        for name, ia in zip(assigned, phis, strict=True):
            r = self.fresh(nodes.Var(name, ia.var.type, s.span))
            results.append(r)
            self.env[name] = r
        if phis:
            body.append(nodes.Yield(tuple(yields), s.span))
        if isinstance(s, nodes.While):
            out.append(replace(s, cond=cond, body=tuple(body), iter_args=tuple(phis), results=tuple(results)))
            return
        out.append(
            replace(
                s,
                var=loop_var,
                start=start,
                stop=stop,
                step=step,
                body=tuple(body),
                iter_args=tuple(phis),
                results=tuple(results),
            )
        )


def _leaves(body: list[nodes.Stmt]) -> bool:
    """Whether a converted body always ends in ``break`` / ``continue`` (directly or through an
    if whose branches both do)."""
    if not body:
        return False
    last = body[-1]
    if isinstance(last, (nodes.Break, nodes.Continue)):
        return True
    return isinstance(last, nodes.If) and _leaves(list(last.then_body)) and _leaves(list(last.else_body))


def _tile_to_tensor_level(start: Type, end: Type) -> bool:
    """Whether a loop-carried value starts as a tile and ends as a tensor-level value of the
    same shape and dtype."""
    return (
        isinstance(start, TileType)
        and isinstance(end, TensorType)
        and tuple(end.shape) == tuple(start.shape)
        and end.dtype is start.dtype
    )
