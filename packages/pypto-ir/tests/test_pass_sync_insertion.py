"""The sync-insertion pass (pypto.ir.passes.sync_insertion) on kernel plans and on generated
kernels: set_flag/wait_flag pairs between the pipes that touch a tile."""

from __future__ import annotations

import re

from pypto_ir_test_helpers import HostArray

import pypto.language as pl
from pypto.ir.codegen import generate_kernel
from pypto.ir.codegen.plan import Barrier, Inst, Item, Jump, Loop, Pipe, Sync, render
from pypto.ir.passes.sync_insertion import insert_syncs
from pypto.ir.pipeline import lower


def same(a: str, b: str) -> bool:
    return a == b


def syncs(items: list[Item]) -> list[tuple[Pipe, Pipe]]:
    out: list[tuple[Pipe, Pipe]] = []
    for it in items:
        if isinstance(it, Sync):
            out.append((it.src, it.dst))
        elif isinstance(it, Loop):
            out += syncs(it.body)
    return out


def load(t: str) -> Inst:
    return Inst((f"TLOAD({t}, g);",), Pipe.MTE2, writes=(t,))


def vop(dst: str, *src: str) -> Inst:
    return Inst((f"TEXP({dst}, {src[0]});",), Pipe.V, reads=src, writes=(dst,))


def store(t: str) -> Inst:
    return Inst((f"TSTORE(g, {t});",), Pipe.MTE3, reads=(t,))


def test_load_compute_store_gets_one_flag_per_pipe_change() -> None:
    out = insert_syncs([load("a"), vop("b", "a"), store("b")], same)
    assert syncs(out) == [(Pipe.MTE2, Pipe.V), (Pipe.V, Pipe.MTE3)]
    text = "\n".join(render(out, 0))
    assert text.index("TLOAD") < text.index("set_flag(PIPE_MTE2, PIPE_V, EVENT_ID0);")
    assert text.index("wait_flag(PIPE_MTE2, PIPE_V, EVENT_ID0);") < text.index("TEXP")
    assert text.index("wait_flag(PIPE_V, PIPE_MTE3, EVENT_ID0);") < text.index("TSTORE")


def test_independent_tiles_need_no_flags() -> None:
    assert syncs(insert_syncs([load("a"), vop("b", "c"), store("d")], same)) == []


def test_a_loop_orders_the_next_iterations_load_after_this_iterations_store() -> None:
    body: list[Item] = [load("a"), vop("b", "a"), store("b")]
    out = insert_syncs([Loop("for (;;) {", body)], same)
    loop = out[0]
    assert isinstance(loop, Loop)
    pairs = syncs(loop.body)
    # in-iteration: MTE2 -> V, V -> MTE3; across iterations the load of a waits for the vector
    # read of a, and the vector write of b waits for the store of b
    assert (Pipe.MTE2, Pipe.V) in pairs
    assert (Pipe.V, Pipe.MTE3) in pairs
    assert (Pipe.V, Pipe.MTE2) in pairs
    assert (Pipe.MTE3, Pipe.V) in pairs
    first = loop.body.index(next(i for i in loop.body if isinstance(i, Inst)))
    assert any(isinstance(i, Sync) and (i.src, i.dst) == (Pipe.V, Pipe.MTE2) for i in loop.body[:first])


def test_a_jump_drains_every_pipe() -> None:
    out = insert_syncs([Loop("for (;;) {", [load("a"), Jump(("break;",))])], same)
    loop = out[0]
    assert isinstance(loop, Loop)
    assert isinstance(loop.body[-2], Barrier)


@pl.jit
def pipeline(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(4):
            t = pl.load(a, [i * 16, 0], [16, 16])
            pl.store(pl.exp(t), [i * 16, 0], out)
    return out


def test_generated_kernel_syncs_load_compute_store_in_a_loop() -> None:
    prog = lower(pipeline.specialize(HostArray((64, 16)), HostArray((64, 16))).program).program
    (k,) = [f for f in prog.functions.values() if f.func_type.is_kernel]
    text = generate_kernel(k).text
    loop = text[text.index("for (") :]
    assert (
        loop.index("TLOAD(t,") < loop.index("set_flag(PIPE_MTE2, PIPE_V, EVENT_ID0);") < loop.index("TEXP(")
    )
    assert re.search(r"wait_flag\(PIPE_MTE2, PIPE_V, EVENT_ID0\);\n(.*\n)?.*\n\s*TEXP\(", loop)
    assert re.search(r"wait_flag\(PIPE_V, PIPE_MTE3, EVENT_ID0\);\n\s*TSTORE\(", loop)
    # the next iteration's load overwrites t, which this iteration's vector op read
    assert "set_flag(PIPE_V, PIPE_MTE2, EVENT_ID0);" in loop
