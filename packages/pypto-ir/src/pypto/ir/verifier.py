"""The IR's executable spec, run between passes.

Checks that every use is defined before it (in scope), that SSA programs assign each name
once, that every op's recorded type is what the op registry infers from its operands, and
where each kind of statement may appear (no scopes or calls inside kernels; after outlining
no scopes and no on-core ops in orchestrations; after lowering no tensor-level compute in
kernels). A failure names the function, the statement, the op and its operand types.

IR nodes are immutable, so within one run of the pipeline (``pipeline.lower`` passes a
:class:`VerifyMemo`) a function object already verified at the same level, against the same
functions, is not walked again when a stage hands it on unchanged, and an op call whose
recorded type was checked against the registry's inference is not inferred again: each stage's
output is still verified whole, the repeats of identical objects are what is skipped.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pypto.ir import nodes
from pypto.ir.errors import PyptoCompileError
from pypto.ir.ops import OPS, OpError, infer
from pypto.ir.passes.tensor_to_tile import fits_one_tile
from pypto.ir.types import ScalarType, TensorType, TileType

__all__ = ["VerifyError", "VerifyLevel", "VerifyMemo", "verify"]


class VerifyError(PyptoCompileError):
    """The IR broke an invariant (a compiler bug, or hand-built IR that is wrong)."""


@dataclass(frozen=True)
class VerifyLevel:
    ssa: bool = False
    outlined: bool = False
    lowered: bool = False


class VerifyMemo:
    """What one run of the pipeline has verified (module docstring). Keyed by object identity;
    the objects are held here, so an id is not reused while the memo lives."""

    def __init__(self) -> None:
        # (id(function), level[, ids of the program's functions]) -> the objects the key names
        self.functions: dict[tuple[object, ...], object] = {}
        self.calls: dict[int, nodes.Call] = {}  # id -> an op call whose recorded type is inferred


def verify(
    program: nodes.Program,
    level: VerifyLevel = VerifyLevel(),
    stage: str = "",
    memo: VerifyMemo | None = None,
) -> None:
    """Check ``program`` against the invariants of ``level``; ``stage`` names the stage that
    produced it in a failure. ``memo`` skips what an earlier call with the same memo checked."""
    functions = program.functions
    for f in program.funcs:
        key: tuple[object, ...] = ()
        if memo is not None:
            # a kernel calls no function, so its checks read nothing but itself; an
            # orchestration's calls are checked against its callees' parameters, and the
            # ``lowered`` level checks kernels only
            if f.func_type.is_kernel:
                key = (id(f), level)
            else:
                key = (id(f), level.ssa, level.outlined, *map(id, program.funcs))
            if key in memo.functions:
                continue
        _FnVerifier(functions, f, level, stage, memo).run()
        if memo is not None:
            memo.functions[key] = (f, program.funcs)


class _FnVerifier:
    def __init__(
        self,
        functions: Mapping[str, nodes.Function],
        fn: nodes.Function,
        level: VerifyLevel,
        stage: str,
        memo: VerifyMemo | None,
    ) -> None:
        self.functions = functions  # the program's, for the calls of an orchestration
        self.memo = memo
        self.kernel = fn.func_type.is_kernel
        self.fn = fn
        self.level = level
        self.stage = stage
        self.assigned: set[str] = set()
        self.loops: list[int] = []  # the iter-arg counts of the loops around a statement, innermost last

    def fail(self, msg: str, s: object = None) -> VerifyError:
        where = f" after {self.stage}" if self.stage else ""
        detail = ""
        if isinstance(s, nodes.Assign):
            detail = f"\n  in: {s.var}: {s.var.type} = {s.value}"
        elif s is not None:
            detail = f"\n  in: {s}"
        return VerifyError(f"IR verification failed{where} in function {self.fn.name!r}: {msg}{detail}")

    def run(self) -> None:
        scope = {p.name for p in self.fn.params}
        for p in self.fn.params:
            self.define(p.var, p)
        self.body(self.fn.body, scope, in_scope=False, in_loop=False)

    def define(self, v: nodes.Var, s: object) -> None:
        if self.level.ssa and v.name in self.assigned:
            raise self.fail(f"{v.name!r} is assigned more than once in SSA form", s)
        self.assigned.add(v.name)

    def use(self, e: nodes.Arg, scope: set[str], s: object) -> None:
        if isinstance(e, nodes.Var):  # the commonest operand first
            if e.name not in scope:
                raise self.fail(f"{e.name!r} is used but not defined here", s)
        elif isinstance(e, nodes.Const):
            return
        elif isinstance(e, tuple):
            for x in e:
                self.use(x, scope, s)
        elif isinstance(e, nodes.BinOp):
            self.use(e.lhs, scope, s)
            self.use(e.rhs, scope, s)
        elif isinstance(e, nodes.Call):
            for a in e.args:
                self.use(a, scope, s)
            self.check_call(e, s)
        elif isinstance(e, nodes.CallFunc):
            for a in e.args:
                self.use(a, scope, s)
            for d in (*e.deps, *e.dumps):
                self.use(d, scope, s)
            self.check_callfunc(e, s)

    def check_call(self, e: nodes.Call, s: object) -> None:
        memo = self.memo
        if memo is None or id(e) not in memo.calls:
            types = [a.type for a in e.args if not isinstance(a, tuple)]
            try:
                want = infer(e.op, types, dict(e.attrs))
            except OpError as exc:
                ops = ", ".join(str(t) for t in types)
                raise self.fail(f"op {e.op} rejects operands ({ops}): {exc}", s) from None
            if want != e.type:
                raise self.fail(f"op {e.op} records type {e.type} but its operands give {want}", s)
            if memo is not None:
                memo.calls[id(e)] = e
        kernel = self.kernel
        if self.level.outlined and not kernel and OPS[e.op].on_core:
            raise self.fail(f"op {e.op} runs on a core but appears in orchestration", s)
        if (
            self.level.lowered
            and kernel
            and e.op.startswith("tensor.")
            and e.op not in ("tensor.dim", "tensor.read", "tensor.write")
        ):
            raise self.fail(f"tensor-level op {e.op} survived lowering", s)
        if kernel and e.op == "tensor.create" and not fits_one_tile(e.type):  # type: ignore[arg-type]
            raise self.fail("tensor.create inside a kernel that does not fit one tile", s)

    def check_callfunc(self, e: nodes.CallFunc, s: object) -> None:
        if self.kernel:
            raise self.fail(f"kernel calls function {e.callee!r}", s)
        callee = self.functions.get(e.callee)
        if callee is None:
            raise self.fail(f"call of unknown function {e.callee!r}", s)
        if len(callee.params) != len(e.args):
            raise self.fail(
                f"call of {e.callee!r} passes {len(e.args)} arguments for {len(callee.params)}", s
            )
        if e.directions and len(e.directions) != len(e.args):
            raise self.fail(
                f"call of {e.callee!r} has {len(e.directions)} directions for {len(e.args)} args", s
            )
        for p, a in zip(callee.params, e.args, strict=True):
            if isinstance(p.var.type, TensorType) != isinstance(a.type, TensorType):
                raise self.fail(
                    f"call of {e.callee!r}: argument for {p.name!r} is {a.type}, expected {p.var.type}", s
                )

    def body(self, stmts: tuple[nodes.Stmt, ...], scope: set[str], in_scope: bool, in_loop: bool) -> None:
        for i, s in enumerate(stmts):
            if isinstance(s, nodes.Assign):
                self.use(s.value, scope, s)
                if s.var.type != s.value.type:
                    raise self.fail(
                        f"{s.var.name!r} has type {s.var.type} but its value has {s.value.type}", s
                    )
                self.define(s.var, s)
                scope.add(s.var.name)
            elif isinstance(s, nodes.ExprStmt):
                self.use(s.value, scope, s)
            elif isinstance(s, nodes.TensorWrite):
                self.use(s.target, scope, s)
                for o in s.offsets:
                    self.use(o, scope, s)
                self.use(s.value, scope, s)
            elif isinstance(s, (nodes.For, nodes.While)):
                if isinstance(s, nodes.For):
                    for e in (s.start, s.stop, s.step):
                        self.use(e, scope, s)
                for ia in s.iter_args:
                    self.use(ia.init, scope, s)
                inner = set(scope)
                if isinstance(s, nodes.For):
                    self.define(s.var, s)
                    inner.add(s.var.name)
                for ia in s.iter_args:
                    if ia.var.type != ia.init.type and not _tile_carried_as_tensor_level(ia):
                        raise self.fail(
                            f"iter arg {ia.var.name!r} is {ia.var.type} but starts as {ia.init.type}", s
                        )
                    self.define(ia.var, s)
                    inner.add(ia.var.name)
                if s.iter_args:
                    if not s.body or not isinstance(s.body[-1], nodes.Yield):
                        raise self.fail("a loop with iter args must end its body with a yield", s)
                    y = s.body[-1]
                    if len(y.values) != len(s.iter_args):
                        raise self.fail(
                            f"yield of {len(y.values)} values for {len(s.iter_args)} iter args", s
                        )
                if len(s.results) != len(s.iter_args):
                    raise self.fail(f"{len(s.results)} loop results for {len(s.iter_args)} iter args", s)
                if isinstance(s, nodes.While):
                    self.use(s.cond, inner, s)
                    if not isinstance(s.cond.type, ScalarType):
                        raise self.fail(f"a while condition is a scalar, got {s.cond.type}", s)
                self.loops.append(len(s.iter_args))
                try:
                    self.body(s.body, inner, in_scope, True)
                finally:
                    self.loops.pop()
                for r in s.results:
                    self.define(r, s)
                    scope.add(r.name)
            elif isinstance(s, nodes.If):
                self.use(s.cond, scope, s)
                branch_scopes = []
                for branch in (s.then_body, s.else_body):
                    if s.results:
                        last = branch[-1] if branch else None
                        if not isinstance(last, nodes.Yield) or len(last.values) != len(s.results):
                            raise self.fail(
                                f"each branch of an if with {len(s.results)} results must end with a yield of them",
                                s,
                            )
                        for r, v in zip(s.results, last.values, strict=True):
                            if r.type != v.type:
                                raise self.fail(
                                    f"if result {r.name!r} is {r.type} but a branch yields {v.type}", s
                                )
                    inner = set(scope)
                    self.body(branch, inner, in_scope, True)
                    branch_scopes.append(inner)
                if not self.level.ssa:  # before SSA a name bound in both branches is visible after
                    scope.update(branch_scopes[0] & branch_scopes[1])
                for r in s.results:
                    self.define(r, s)
                    scope.add(r.name)
            elif isinstance(s, (nodes.Break, nodes.Continue)):
                word = "break" if isinstance(s, nodes.Break) else "continue"
                if not self.loops:
                    raise self.fail(f"{word} outside a loop", s)
                if self.level.ssa and len(s.values) != self.loops[-1]:
                    raise self.fail(
                        f"{word} with {len(s.values)} values in a loop of {self.loops[-1]} iter args", s
                    )
                for v in s.values:
                    self.use(v, scope, s)
            elif isinstance(s, nodes.Yield):
                if not in_loop or i != len(stmts) - 1:
                    raise self.fail("yield must end a loop or branch body", s)
                for v in s.values:
                    self.use(v, scope, s)
            elif isinstance(s, nodes.Scope):
                if self.kernel or in_scope:
                    raise self.fail("pl.at scope inside a kernel or another scope", s)
                if self.level.outlined:
                    raise self.fail("pl.at scope survived outlining", s)
                for d in s.deps:
                    self.use(d, scope, s)
                loops, self.loops = self.loops, []  # a scope's body becomes a kernel of its own
                try:
                    self.body(s.body, scope, True, in_loop)
                finally:
                    self.loops = loops
                if s.task is not None:
                    self.define(s.task, s)
                    scope.add(s.task.name)
            elif isinstance(s, nodes.Return):
                if i != len(stmts) - 1 or in_loop or in_scope:
                    raise self.fail("return must be the last statement of the function body", s)
                for v in s.values:
                    self.use(v, scope, s)
                if tuple(v.type for v in s.values) != self.fn.returns:
                    raise self.fail(
                        f"returns ({', '.join(str(v.type) for v in s.values)}) but the function declares "
                        f"({', '.join(map(str, self.fn.returns))})",
                        s,
                    )
            else:
                raise self.fail(f"unknown statement {type(s).__name__}", s)


def _tile_carried_as_tensor_level(ia: nodes.IterArg) -> bool:
    """A tile that the loop rebinds to tensor-level values of its shape and dtype (in a kernel
    or scope, before tensor_to_tile carries it as the tile)."""
    start, end = ia.init.type, ia.var.type
    return (
        isinstance(start, TileType)
        and isinstance(end, TensorType)
        and tuple(end.shape) == tuple(start.shape)
        and end.dtype is start.dtype
    )
