"""The sync-insertion pass (pypto.ir.passes.sync_insertion) on kernel plans and on generated
kernels: set_flag/wait_flag pairs between the pipes that touch a tile."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pypto_ir_test_helpers import HostArray

import pypto.language as pl
from pypto.ir.codegen import generate_kernel
from pypto.ir.codegen.plan import EVENT_IDS, Barrier, Branch, Inst, Item, Jump, Loop, Pipe, Sync, render
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


def test_a_sync_names_two_pipes_and_an_event_id_of_the_isa() -> None:
    with pytest.raises(ValueError, match=r"event id 8 is not one of EVENT_ID0\.\.EVENT_ID7"):
        Sync(Pipe.MTE2, Pipe.V, EVENT_IDS)
    with pytest.raises(ValueError, match="source and destination are both PIPE_V"):
        Sync(Pipe.V, Pipe.V)


_EVENT = re.compile(r"(set|wait)_flag\((PIPE_\w+), (PIPE_\w+), EVENT_ID(\d+)\);")


def event_protocol_errors(lines: list[str]) -> list[str]:
    """What breaks the ISA's event protocol in rendered kernel lines: a set_flag of an event
    (source, destination, id) already pending, a wait_flag with none pending, an id outside
    EVENT_ID0..7, or an event still pending where a block (loop body, branch arm) ends, since
    the next iteration or the other path would set or wait for it again."""
    errors: list[str] = []
    pending: list[set[tuple[str, str, int]]] = [set()]
    for n, line in enumerate(lines):
        s = line.strip()
        m = _EVENT.fullmatch(s)
        if m:
            kind, src, dst, e = m.group(1), m.group(2), m.group(3), int(m.group(4))
            ev = (src, dst, e)
            if not 0 <= e < EVENT_IDS:
                errors.append(f"line {n}: event id {e}")
            if kind == "set":
                if any(ev in p for p in pending):
                    errors.append(f"line {n}: {ev} set while pending")
                pending[-1].add(ev)
            elif ev in pending[-1]:
                pending[-1].discard(ev)
            else:
                errors.append(f"line {n}: {ev} waited with none pending in this block")
        elif s.startswith("}"):
            if pending[-1]:
                errors.append(f"line {n}: {sorted(pending[-1])} pending at the end of a block")
            pending.pop()
            if s.endswith("{"):  # } else {
                pending.append(set())
        elif s.endswith("{"):
            pending.append(set())
    if pending != [set()]:
        errors.append(f"pending at the end of the kernel: {pending}")
    return errors


_TILES = ("a", "b", "c")
_PIPES = (Pipe.MTE2, Pipe.V, Pipe.MTE3, Pipe.S, Pipe.MTE1, Pipe.M, Pipe.FIX)


@st.composite
def plans(draw: st.DrawFn, depth: int = 0) -> list[Item]:
    """Random kernel plans: instructions on any pipe reading and writing a few tiles, nested
    loops and branches, and jumps inside loops."""
    items: list[Item] = []
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(
            st.sampled_from(["inst", "inst", "inst", "loop", "branch", "jump"] if depth < 2 else ["inst"])
        )
        if kind == "inst":
            pipe = draw(st.sampled_from(_PIPES))
            reads = tuple(draw(st.lists(st.sampled_from(_TILES), max_size=2, unique=True)))
            writes = tuple(draw(st.lists(st.sampled_from(_TILES), max_size=1)))
            items.append(Inst((f"OP({', '.join(writes + reads)});",), pipe, reads, writes))
        elif kind == "loop":
            items.append(Loop("for (;;) {", draw(plans(depth + 1))))
        elif kind == "branch":
            items.append(Branch("c", draw(plans(depth + 1)), draw(plans(depth + 1))))
        elif depth > 0:
            items.append(Jump(("continue;",)))
    return items


def _in_loop_only(items: list[Item], in_loop: bool = False) -> list[Item]:
    """Drop the jumps that are not inside a loop (a plan from codegen has none)."""
    out: list[Item] = []
    for it in items:
        if isinstance(it, Jump) and not in_loop:
            continue
        if isinstance(it, Loop):
            out.append(Loop(it.head, _in_loop_only(it.body, True)))
        elif isinstance(it, Branch):
            out.append(Branch(it.cond, _in_loop_only(it.then, in_loop), _in_loop_only(it.orelse, in_loop)))
        else:
            out.append(it)
    return out


@settings(max_examples=150, deadline=None)
@given(plans())
def test_every_event_is_waited_for_before_its_id_is_set_again(items: list[Item]) -> None:
    out = insert_syncs(_in_loop_only(items), same)
    lines = render(out, 1)
    assert event_protocol_errors(lines) == []


def test_the_protocol_check_sees_a_second_set_and_a_wait_left_for_the_next_iteration() -> None:
    # the check must be able to fail: a deferred wait with a reused id, and one left pending
    bad = ["set_flag(PIPE_MTE2, PIPE_V, EVENT_ID0);", "set_flag(PIPE_MTE2, PIPE_V, EVENT_ID0);"]
    assert any("set while pending" in e for e in event_protocol_errors(bad))
    loop = ["for (;;) {", "    set_flag(PIPE_V, PIPE_MTE2, EVENT_ID1);", "}"]
    assert any("pending at the end of a block" in e for e in event_protocol_errors(loop))
    assert event_protocol_errors(["wait_flag(PIPE_V, PIPE_MTE2, EVENT_ID1);"]) != []


def test_generated_kernels_keep_the_event_protocol() -> None:
    prog = lower(pipeline.specialize(HostArray((64, 16)), HostArray((64, 16))).program).program
    (k,) = [f for f in prog.functions.values() if f.func_type.is_kernel]
    lines = generate_kernel(k).text.splitlines()
    body = lines[next(i for i, s in enumerate(lines) if "kernel_entry" in s) + 1 :]
    assert any("set_flag(" in s for s in body)
    assert event_protocol_errors(body[:-1]) == []  # the entry's closing brace ends the kernel
