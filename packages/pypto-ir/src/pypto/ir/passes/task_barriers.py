"""Task barriers: ``pl.system.task_dummy(deps=[...])`` becomes a submit of an empty kernel.

The simulated chip orders tasks only through submitted tasks, so a barrier is a real task: a
kernel with no parameters and no work (``pypto_task_dummy``), submitted with the barrier's
dependencies. It finishes once every dependency has, and its task id stands for that whole set
in later ``deps=`` lists (one edge per consumer instead of one per producer).
"""

from __future__ import annotations

from dataclasses import replace

from pypto.ir.nodes import Assign, Call, CallFunc, Function, Program, Return, Stmt
from pypto.ir.passes._rewrite import map_bodies
from pypto.ir.types import FunctionType, TaskIdType

NAME = "task_barriers"
KERNEL = "pypto_task_dummy"


def run(program: Program) -> Program:
    used = False

    def rewrite(body: tuple[Stmt, ...]) -> tuple[Stmt, ...]:
        nonlocal used
        out: list[Stmt] = []
        for s in body:
            if isinstance(s, Assign) and isinstance(s.value, Call) and s.value.op == "system.task_dummy":
                used = True
                deps = tuple(a for a in s.value.args if not isinstance(a, tuple))
                call = CallFunc(KERNEL, (), TaskIdType(), deps=deps, span=s.value.span)
                out.append(replace(s, value=call))
            else:
                out.append(s)
        return tuple(out)

    funcs = [replace(f, body=map_bodies(f.body, rewrite)) for f in program.funcs]
    if not used:
        return program
    if KERNEL in program.functions:
        raise ValueError(f"program {program.name!r} already has a function named {KERNEL!r}")
    empty = Function(KERNEL, (), (), (Return(()),), FunctionType.InCore, outlined=True)
    return program.replace((*funcs, empty))
