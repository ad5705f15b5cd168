"""Inline chip levels in a ``@pl.program`` host orchestrator.

A block ``with pl.at(level=pl.Level.CHIP, role=pl.Role.Orchestrator):`` in the body of a
``@pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)`` method is chip code written in
place: :func:`outline_chip_blocks` makes each block a chip orchestration of the program, named
``<host>_chip_orch_<k>`` (``k`` counts the blocks in source order), whose parameters are the
host values the block reads, in the order it first reads them. Each must be a parameter of the
host function or a name the body binds with an annotation (``t: pl.Tensor[[n], pl.FP32] =
pl.create_tensor(...)``); a parameter annotated ``pl.Out``/``pl.InOut`` keeps its direction,
and any other tensor the block writes (the first argument of a ``pl.assemble``/``pl.store``) is
``pl.InOut``. The host body then launches the orchestration in the block's place, on rank
``k % world_size``; a name the block binds as ``x = pl.assemble(t, ...)`` is ``t`` after it.
"""

from __future__ import annotations

import ast
import copy
from dataclasses import dataclass
from typing import Any

from pypto.ir.errors import KernelError
from pypto.ir.types import Level, Role
from pypto.language.parser.common import SourceInfo

__all__ = ["OutlinedChip", "outline_chip_blocks"]

_WRITERS = frozenset({"assemble", "store"})
_PL = "__pypto_pl__"
_RANK = "__pypto_chip_rank__"


@dataclass(frozen=True)
class OutlinedChip:
    """A chip block of a host orchestrator: the name of its orchestration and its source (a
    function definition made of the block, positioned in the host function's file)."""

    name: str
    source: SourceInfo


def _chip_rank(k: int) -> int:
    from pypto.language.host_trace import require_trace

    return k % require_trace("a pl.at(level=pl.Level.CHIP) block").world_size


def _is_at(node: ast.With, src: SourceInfo) -> ast.Call | None:
    """The ``pl.at(...)`` call of ``node``'s first item, if it is one."""
    if not isinstance(node.items[0].context_expr, ast.Call):
        return None
    call = node.items[0].context_expr
    from pypto.language.dsl import at

    try:
        func = eval(compile(ast.Expression(call.func), src.file, "eval"), src.namespace)
    except Exception:
        return None
    return call if func is at else None


def _value(kw: ast.keyword, src: SourceInfo, host: str) -> Any:
    try:
        return eval(compile(ast.Expression(kw.value), src.file, "eval"), src.namespace)
    except Exception as exc:
        raise KernelError(f"{host}: cannot evaluate pl.at({kw.arg}=...): {exc}", src.span(kw.value)) from None


def _chip_block(node: ast.With, src: SourceInfo, host: str) -> bool:
    """Whether ``node`` is a ``pl.at(level=pl.Level.CHIP...)`` block (another level is an error)."""
    call = _is_at(node, src)
    if call is None:
        return False
    values = {str(kw.arg): _value(kw, src, host) for kw in call.keywords}
    if call.args:
        raise KernelError(f"{host}: give pl.at's level by keyword in a host orchestrator", src.span(call))
    level, role = values.pop("level", None), values.pop("role", Role.Orchestrator)
    if level is not Level.CHIP or role is not Role.Orchestrator or values or node.items[0].optional_vars:
        raise KernelError(
            f"{host}: a host orchestrator's pl.at blocks are chip levels, "
            f"`with pl.at(level=pl.Level.CHIP, role=pl.Role.Orchestrator):`; got level={level!r}, "
            f"role={role!r}{''.join(f', {k}=...' for k in values)}",
            src.span(call),
        )
    return True


def _names(nodes: list[ast.stmt], ctx: type) -> list[str]:
    seen: dict[str, None] = {}
    for stmt in nodes:
        for n in ast.walk(stmt):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ctx):
                seen.setdefault(n.id)
    return list(seen)


def _written(nodes: list[ast.stmt]) -> set[str]:
    out = set()
    for stmt in nodes:
        for n in ast.walk(stmt):
            if (
                isinstance(n, ast.Call)
                and isinstance(n.func, ast.Attribute)
                and n.func.attr in _WRITERS
                and n.args
                and isinstance(n.args[0], ast.Name)
            ):
                out.add(n.args[0].id)
    return out


def _direction(annotation: ast.expr, src: SourceInfo) -> str | None:
    """``"Out"``/``"InOut"`` when the annotation is ``pl.Out[...]``/``pl.InOut[...]``."""
    if isinstance(annotation, ast.Subscript):
        try:
            head = eval(compile(ast.Expression(annotation.value), src.file, "eval"), src.namespace)
        except Exception:
            return None
        import pypto.language as pl

        if head is pl.Out:
            return "Out"
        if head is pl.InOut:
            return "InOut"
    return None


def outline_chip_blocks(fn: Any, host: str, is_method: bool) -> tuple[Any, tuple[OutlinedChip, ...]]:
    """The host function with its chip blocks replaced by launches, and the blocks as chip
    orchestrations; ``(fn, ())`` when it has none."""
    src = SourceInfo.of(fn)
    tree = src.tree
    blocks: list[ast.With] = []

    def find(node: ast.AST) -> None:  # the blocks in source order; their bodies are chip code
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.With) and _chip_block(child, src, host):
                blocks.append(child)
            else:
                find(child)

    find(tree)
    if not blocks:
        return fn, ()
    if not is_method:
        raise KernelError(
            f"{host}: a host orchestrator with pl.at(level=pl.Level.CHIP) blocks is a method (self first)",
            src.span(tree),
        )
    annotations: dict[str, ast.expr] = {}
    params = [a.arg for a in tree.args.args]
    for a in tree.args.args[1:]:
        if a.annotation is not None:
            annotations[a.arg] = a.annotation
    bound_in_body = set(params) | set(_names(tree.body, ast.Store))
    for n in ast.walk(tree):
        if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name):
            annotations[n.target.id] = n.annotation
    import pypto.language as pl

    namespace = {**src.namespace, _PL: pl, _RANK: _chip_rank}
    chips: list[OutlinedChip] = []
    calls: dict[int, tuple[str, list[str], dict[str, str]]] = {}
    for k, b in enumerate(blocks):
        name = f"{host}_chip_orch_{k}"
        # `with pl.at(CHIP), pl.at(CORE_GROUP):` is the chip block around the inner scope
        body: list[ast.stmt] = (
            b.body if len(b.items) == 1 else [ast.copy_location(ast.With(b.items[1:], b.body), b)]
        )
        stored = set(_names(body, ast.Store))
        inputs = [n for n in _names(body, ast.Load) if n not in stored and n in bound_in_body]
        written = _written(body)
        args = [ast.arg("self")]
        for pname in inputs:
            ann = annotations.get(pname)
            if ann is None:
                raise KernelError(
                    f"{host}: the pl.at(level=pl.Level.CHIP) block #{k} reads {pname!r}; annotate it "
                    f"(a parameter, or `{pname}: pl.Tensor[[dims], dtype] = ...`) so the block's chip "
                    "orchestration can take it",
                    src.span(b),
                )
            if pname in written and _direction(ann, src) is None:
                head = ast.copy_location(ast.Name(_PL, ast.Load()), ann)
                attr = ast.copy_location(ast.Attribute(head, "InOut", ast.Load()), ann)
                ann = ast.copy_location(ast.Subscript(attr, ann, ast.Load()), ann)
            args.append(ast.arg(pname, ann))
        fdef = ast.FunctionDef(
            name=name,
            args=ast.arguments(posonlyargs=[], args=args, kwonlyargs=[], kw_defaults=[], defaults=[]),
            body=body,
            decorator_list=[],
            returns=None,
        )
        if "type_params" in ast.FunctionDef._fields:  # Python 3.12+
            setattr(fdef, "type_params", [])  # noqa: B010 - a field this Python's stubs may lack
        ast.copy_location(fdef, b)
        chips.append(
            OutlinedChip(name, SourceInfo(fn, src.file, fdef, src.line_offset, src.col_offset, namespace))
        )
        outputs = {}
        for stmt in body:
            for n in ast.walk(stmt):
                if (
                    isinstance(n, (ast.Assign, ast.AnnAssign))
                    and isinstance(n.value, ast.Call)
                    and isinstance(n.value.func, ast.Attribute)
                    and n.value.func.attr == "assemble"
                    and n.value.args
                    and isinstance(n.value.args[0], ast.Name)
                    and n.value.args[0].id in inputs
                ):
                    targets = n.targets if isinstance(n, ast.Assign) else [n.target]
                    for t in targets:
                        if isinstance(t, ast.Name):
                            outputs[t.id] = n.value.args[0].id
        calls[id(b)] = (name, inputs, outputs)

    class _Launch(ast.NodeTransformer):
        def __init__(self) -> None:
            self.k = 0

        def visit_With(self, node: ast.With) -> Any:
            got = calls.get(id(originals.get(id(node), node)))
            if got is None:
                return self.generic_visit(node)
            name, inputs, outputs = got
            k = self.k
            self.k += 1
            launch = ast.Expr(
                ast.Call(
                    ast.Attribute(ast.Name(params[0], ast.Load()), name, ast.Load()),
                    [ast.Name(n, ast.Load()) for n in inputs],
                    [ast.keyword("device", ast.Call(ast.Name(_RANK, ast.Load()), [ast.Constant(k)], []))],
                )
            )
            out: list[ast.stmt] = [launch]
            out += [
                ast.Assign([ast.Name(t, ast.Store())], ast.Name(s, ast.Load())) for t, s in outputs.items()
            ]
            for s in out:
                ast.copy_location(s, node)
                ast.fix_missing_locations(s)
            return out

    rewritten = copy.deepcopy(tree)
    originals = {
        id(c): o for c, o in zip(ast.walk(rewritten), ast.walk(tree), strict=True) if isinstance(o, ast.With)
    }
    rewritten.decorator_list = []
    rewritten = _Launch().visit(rewritten)
    module = ast.Module([rewritten], type_ignores=[])
    ast.fix_missing_locations(module)
    ast.increment_lineno(module, src.line_offset)
    exec(compile(module, src.file, "exec"), namespace)  # the user's own function, rewritten
    new_fn = namespace[tree.name]
    new_fn.__qualname__ = getattr(fn, "__qualname__", tree.name)
    return new_fn, tuple(chips)
