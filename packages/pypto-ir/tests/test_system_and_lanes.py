"""pl.system operations, SPMD launch forms (``with pl.spmd(...) as tid``, ``pl.spmd_submit``)
and ``pl.split_aiv`` lanes in the front end and the kernel emitter: what they parse to, how
they print, what the generated C++ does with them, and the errors bad uses get. Their numbers
on the simulator are checked in pypto-runtime's tests/test_spmd_system_run.py."""

from __future__ import annotations

import re

import pytest
from pypto_ir_test_helpers import TextProgram, program

import pypto.language as pl
from pypto.ir.codegen import generate_kernel
from pypto.ir.errors import KernelError
from pypto.ir.nodes import Assign, Call, CallFunc, ExprStmt, For, Scope, walk_stmts
from pypto.ir.pipeline import lower
from pypto.ir.types import ArrayType, PipeType, TaskIdType


def _calls(fn: object, prefix: str) -> list[Call]:
    return [
        s.value
        for s in walk_stmts(fn.body)  # type: ignore[attr-defined]
        if isinstance(s, (Assign, ExprStmt)) and isinstance(s.value, Call) and s.value.op.startswith(prefix)
    ]


# an InCore kernel of every pl.system hint, called by an orchestration that fences first
Hints = program(
    "[32, 16]",
    kernel=[
        "pl.system.set_ffts(flags)",
        "pl.system.aiv_initialize_pipe(dir_mask=2, slot_size=512)",
        'pl.system.reserve_buffer(name="ring", size=4096)',
        'pl.reserve_buffer(name="auto", size=64, base=pl.AUTO)',
        'pl.system.reserve_buffer(name="placed", size=64, base=128)',
        'pl.system.import_peer_buffer(name="ring", peer_func="producer")',
        "t = pl.load(x, [0, 0], [32, 16])",
        "pl.system.sync_src(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.V, event_id=1)",
        "pl.system.sync_dst(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.V, event_id=1)",
        "pl.system.sync_set(ev, pipe=pl.PipeType.MTE3, ffts_mode=2)",
        "pl.system.sync_wait(5, pipe=pl.PipeType.MTE2)",
        "pl.system.bar_v()",
        "pl.system.bar_m()",
        "pl.system.bar_all()",
        "pl.system.fence()",
        "pl.system.cacheinvalid(x, [16, 16], [16, 0])",
        "pl.system.cacheinvalid()",
        "y = pl.store(pl.exp(t), [0, 0], y)",
        "return y",
    ],
    main=["pl.system.fence()", "y = self.k(x, flags, ev, y)", "return y"],
    ins=("x", "flags: pl.Tensor[[64], pl.INT64]", "ev: pl.Scalar[pl.INDEX]"),
)()


def test_system_statements_parse_with_their_arguments_as_attributes() -> None:
    calls = {c.op: c for c in _calls(Hints.functions["k"], "system.")}
    assert set(calls) >= {"system.sync_src", "system.sync_set", "system.cacheinvalid", "system.set_ffts"}
    src = calls["system.sync_src"]
    assert (src.attr("set_pipe"), src.attr("wait_pipe"), src.attr("event_id")) == (
        PipeType.MTE2,
        PipeType.V,
        1,
    )
    dynamic = calls["system.sync_set"]
    assert dynamic.attr("event_id") is None  # the index scalar is the operand
    assert len(dynamic.args) == 1
    assert dynamic.attr("ffts_mode") == 2
    assert calls["system.sync_wait"].attr("event_id") == 5
    buffers = {c.attr("name"): c for c in _calls(Hints.functions["k"], "system.reserve_buffer")}
    assert buffers["ring"].attr("size") == 4096
    # base=pl.AUTO (upstream's sentinel, -1): the compiler places it, as when base is left out
    assert pl.AUTO is pl.system.AUTO
    assert buffers["auto"].attr("base") is None
    assert buffers["ring"].attr("base") is None
    assert buffers["placed"].attr("base") == 128
    assert calls["system.import_peer_buffer"].attr("peer_func") == "producer"


def test_system_statements_print_as_pl_system_calls() -> None:
    text = Hints.as_python()
    assert "pl.system.sync_src(event_id=1, set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.V)" in text
    assert "pl.system.sync_set(ev, ffts_mode=2, pipe=pl.PipeType.MTE3)" in text
    assert "pl.system.bar_m()" in text
    assert "pl.system.import_peer_buffer(name='ring', peer_func='producer')" in text


def test_the_kernel_records_each_hint_as_a_comment() -> None:
    src = generate_kernel(lower(Hints).program.functions["k"]).text
    for name in ("sync_src", "sync_dst", "sync_set", "sync_wait", "bar_v", "bar_m", "bar_all", "fence"):
        assert re.search(rf"// pl\.system\.{name}\(.*\): no effect on the simulated chip", src), name
    assert "pypto_syncall" not in src  # no barrier: an ordinary entry
    assert 'extern "C" __attribute__((visibility("default"))) void kernel_entry' in src


Barrier = program(
    "[64, 8]",
    kernel=[
        'pl.system.syncall(core_type="aiv_only")',
        "y = pl.store(pl.load(x, [0, 0], [64, 8]), [0, 0], y)",
        "return y",
    ],
    main=["with pl.spmd(4):", "    y = self.k(x, y)", "return y"],
)()


def test_a_kernel_that_syncs_gets_the_block_parameters_and_a_group_entry() -> None:
    k = Barrier.functions["k"]
    assert [p.name for p in k.params][-2:] == ["pypto_block_idx", "pypto_block_num"]
    (sync,) = _calls(k, "system.syncall")
    assert (sync.attr("mode"), sync.attr("core_type")) == ("hard", "aiv_only")
    src = generate_kernel(lower(Barrier).program.functions["k"]).text
    assert "pypto_syncall.arrive_and_wait();  // pl.system.syncall" in src
    assert "if (index != 0) return;  // the task of block 0 runs every block of the launch" in src
    assert "pthread_attr_setstacksize(&attr, 16777216);" in src


def test_core_count_queries_are_the_simulated_chips_and_size_launches() -> None:
    Counts = program(
        "[48, 8]",
        main=[
            "for i in pl.spmd(pl.system.available_aiv_count()):",
            "    y = pl.store(pl.load(x, [i, 0], [1, 8]), [i, 0], y)",
            "for j in pl.spmd(pl.system.available_cluster_count()):",
            "    y = pl.store(pl.load(x, [j, 0], [1, 8]), [j, 0], y)",
            "return y",
        ],
    )()

    loops = [s for s in Counts.functions["main"].body if isinstance(s, For)]
    assert [int(s.stop.value) for s in loops] == [48, 24]  # type: ignore[union-attr]


def _program_error(body: str) -> str:
    """The message a kernel whose body starts with ``body`` is refused with."""
    kernel = [body, "y = pl.store(pl.load(x, [0, 0], [32, 16]), [0, 0], y)", "return y"]
    return _error(program("[32, 16]", kernel=kernel, ins=("x", "ws: pl.Tensor[[8], pl.INT32]")))


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            'pl.system.syncall(mode="fast")',
            r"pl\.system\.syncall\(mode\): expected one of hard, soft, got 'fast'",
        ),
        (
            'pl.system.syncall(core_type="bogus")',
            r"pl\.system\.syncall\(core_type\): expected one of mix, aiv_only, aic_only, got 'bogus'",
        ),
        ('pl.system.syncall(mode="soft", used_cores=2)', r"gm_workspace=<an INT32 tensor> is required"),
        ('pl.system.syncall(mode="soft", gm_workspace=ws)', r"explicit used_cores= is required"),
        (
            'pl.system.syncall(mode="soft", gm_workspace=ws, used_cores=-1)',
            r"used_cores\): expected an int in the INT32 range \[0, 2147483647\], got -1",
        ),
        (
            'pl.system.syncall(mode="soft", gm_workspace=x, used_cores=2)',
            r"gm_workspace must be an INT32 tensor",
        ),
        ("pl.system.syncall(used_cores=2)", r"gm_workspace and used_cores belong to mode='soft'"),
        (
            "pl.system.sync_src(set_pipe=1, wait_pipe=pl.PipeType.V, event_id=0)",
            r"sync_src\(set_pipe\): expected a pl\.PipeType such as pl\.PipeType\.MTE2, got 1",
        ),
        (
            "pl.system.sync_wait(-2, pipe=pl.PipeType.V)",
            r"sync_wait\(event_id\): expected an int >= 0 or an index scalar, got -2",
        ),
        ("pl.system.cacheinvalid(None, [1], [0])", r"the whole-GM form takes no shapes/offsets"),
        (
            "pl.system.cacheinvalid(x, [16, 16], [0])",
            r"cacheinvalid\(offsets\): expected 2 entries \(the tensor's rank\), got 1",
        ),
        ("pl.system.cacheinvalid(x, [16, 16])", r"a tensor region needs offsets=\[\.\.\.\] with 2 entries"),
        (
            "pl.system.reserve_buffer(size=64)",
            r"reserve_buffer\(name, size, base\): missing a required argument: 'name'",
        ),
        (
            'pl.system.reserve_buffer(name="", size=64)',
            r"reserve_buffer\(name\): expected a non-empty string, got ''",
        ),
        ("pl.system.aic_initialize_pipe(dir_mask=1)", r"aic_initialize_pipe: slot_size= is required"),
        ("pl.system.barrier()", r"pl\.system has no attribute 'barrier'"),
    ],
)
def test_bad_system_calls_are_refused_naming_the_argument(body: str, message: str) -> None:
    assert re.search(message, _program_error(body))


def test_an_inline_spmd_body_that_syncs_is_a_kernel_whose_blocks_run_as_a_group() -> None:
    P = program(
        "[8, 8]",
        main=[
            "for b in pl.spmd(2):",
            "    pl.system.syncall()",
            "    y = pl.store(pl.load(x, [b * 4, 0], [4, 8]), [b * 4, 0], y)",
            "return y",
        ],
    )()

    (loop,) = [s for s in P.functions["main"].body if isinstance(s, For)]
    assert loop.var.name == "pypto_block_idx"  # the outlined kernel's hidden block parameter
    (sync,) = _calls(P.functions["main"], "system.syncall")
    assert sync.attr("blocks") == 2
    assert "blocks=" not in P.as_python()  # implied by the enclosing launch
    kernel = next(f for n, f in lower(P).program.functions.items() if n != "main")
    src = generate_kernel(kernel).text
    assert "const std::int64_t count = 2;" in src


# ----------------------------------------------------------------------------- launches


Launches = program(
    "[32, 8]",
    kernel=[
        "i = pl.tile.get_block_idx()",
        "y = pl.store(pl.load(x, [i * 8, 0], [8, 8]), [i * 8, 0], y)",
        "return y",
    ],
    main=[
        "with pl.manual_scope():",
        "    mid = pl.create_tensor([32, 8], dtype=pl.FP32)",
        "    mid, first = pl.spmd_submit(self.k, x, mid, core_num=4)",
        '    with pl.spmd(4, name_hint="copy", optimizations=[pl.split(pl.SplitMode.UP_DOWN)], deps=[first]) as second:',
        "        y = self.k(mid, y)",
        "    pl.system.task_dummy(deps=[second])",
        "return y",
    ],
)()


def test_a_recorded_launch_collects_its_blocks_task_ids_in_an_array() -> None:
    body = Launches.functions["main"].body
    arrays = [s for s in walk_stmts(body) if isinstance(s, Assign) and isinstance(s.var.type, ArrayType)]
    assert {
        s.var.type.extent for s in arrays if isinstance(s.value, Call) and s.value.op == "array.create"
    } == {4}
    ids = [
        s
        for s in walk_stmts(body)
        if isinstance(s, Assign) and isinstance(s.value, Call) and s.value.op == "system.task_dummy"
    ]
    assert [s.var.name for s in ids][:2] == ["first", "second"]
    submits = [
        s.value
        for s in walk_stmts(body)
        if isinstance(s, Assign) and isinstance(s.value, CallFunc) and s.value.type == TaskIdType()
    ]
    assert len(submits) == 2
    assert submits[0].deps == ()
    assert [d.name for d in submits[1].deps] == ["first"]  # type: ignore[union-attr]
    loops = [s for s in walk_stmts(body) if isinstance(s, For)]
    assert [int(s.stop.value) for s in loops] == [4, 4]  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("y, t = pl.spmd_submit(self.k, x, y)", r"core_num=n \(the launch's block count\) is required"),
        ("y, t = pl.spmd_submit(self.k, x, y, core_num=2, blocks=2)", r"unsupported keyword 'blocks'"),
        (
            "y, z, t = pl.spmd_submit(self.k, x, y, core_num=2)",
            r"'k' returns 1 value\(s\); 2 name\(s\) are assigned",
        ),
        ("y, t = pl.spmd_submit(k, x, y, core_num=2)", r"the first argument must be a kernel method"),
    ],
)
def test_bad_spmd_submits_are_refused(line: str, message: str) -> None:
    kernel = ["y = pl.store(pl.load(x, [0, 0], [8, 8]), [0, 0], y)", "return y"]
    assert re.search(message, _error(program("[8, 8]", kernel=kernel, main=[line, "return y"])))


def _error(prog: TextProgram) -> str:
    with pytest.raises(KernelError) as info:
        prog()
    return str(info.value)


def test_spmd_binds_its_task_id_to_one_name() -> None:
    store = "    y = pl.store(pl.load(x, [0, 0], [8, 8]), [0, 0], y)"
    message = _error(program("[8, 8]", main=["with pl.spmd(2) as (_a, _b):", store, "return y"]))
    assert "bind the launch's task id to one name: `as tid`" in message


# ----------------------------------------------------------------------------- split_aiv


def test_split_aiv_at_the_top_of_an_orchestration_is_one_kernel_with_both_lanes() -> None:
    P = program(
        "[16, 8]",
        main=[
            "for lane in pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN):",
            "    y = pl.store(pl.load(x, [lane * 8, 0], [8, 8]), [lane * 8, 0], y)",
            "return y",
        ],
    )()

    (scope,) = [s for s in P.functions["main"].body if isinstance(s, Scope)]
    assert dict(scope.hints) == {"split": "UP_DOWN"}
    stores = [
        s.value
        for s in walk_stmts(scope.body)
        if isinstance(s, Assign) and isinstance(s.value, Call) and s.value.op == "tile.store"
    ]
    assert [int(c.args[1][0].value) for c in stores] == [0, 8]  # type: ignore[index, union-attr]


@pytest.mark.parametrize(
    ("loop", "message"),
    [
        ("for lane in pl.split_aiv(4, mode=pl.SplitMode.UP_DOWN):", r"pl\.split_aiv\(n\): requires n == 2"),
        (
            "for lane in pl.split_aiv(2):",
            r"pl\.split_aiv requires mode=pl\.SplitMode\.UP_DOWN, LEFT_RIGHT or NONE",
        ),
        ("for lane in pl.split_aiv(2, mode=1):", r"pl\.split_aiv\(mode\): expected pl\.SplitMode"),
        ("for a, b in pl.split_aiv(2, mode=pl.SplitMode.NONE):", r"binds a single loop variable"),
        (
            "for lane in pl.split_aiv(2, mode=pl.SplitMode.NONE, init_values=(0,)):",
            r"does not accept 'init_values='",
        ),
    ],
)
def test_bad_split_aiv_loops_are_refused(loop: str, message: str) -> None:
    store = "    y = pl.store(pl.load(x, [0, 0], [8, 8]), [0, 0], y)"
    assert re.search(message, _error(program("[16, 8]", kernel=[loop, store, "return y"])))


def _split_aiv_body(lines: list[str]) -> str:
    """The error of a kernel whose ``pl.split_aiv`` loop body starts with ``lines``."""
    loop = ["for lane in pl.split_aiv(2, mode=pl.SplitMode.NONE):", *(f"    {line}" for line in lines)]
    store = "    y = pl.store(pl.load(x, [0, 0], [8, 8]), [0, 0], y)"
    return _error(program("[16, 8]", kernel=[*loop, store, "return y"]))


def test_split_aiv_body_refuses_break_and_nesting() -> None:
    broken = _split_aiv_body(["if lane == 1:", "    break"])
    assert "'break' not supported inside a pl.split_aiv body" in broken
    nested = _split_aiv_body(["for other in pl.split_aiv(2, mode=pl.SplitMode.NONE):", "    pass"])
    assert "cannot be nested in another pl.split_aiv body" in nested


def test_lane_functions_outside_a_split_aiv_loop_say_where_they_belong() -> None:
    outside = ["t = pl.aiv_shard(pl.load(x, [0, 0], [16, 8]))", "y = pl.store(t, [0, 0], y)", "return y"]
    message = _error(program("[16, 8]", kernel=outside))
    assert re.search(r"pl\.aiv_shard\(\) is read inside a `for lane in pl\.split_aiv", message)
    shard_mode = [
        "t = pl.load(x, [0, 0], [16, 8])",
        "for lane in pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN):",
        "    h = pl.aiv_shard(t, mode=pl.SplitMode.UP_DOWN)",
        "    y = pl.store(h, [lane * 8, 0], y)",
        "return y",
    ]
    assert "pl.aiv_shard does not take a mode: it inherits the enclosing pl.split_aiv loop's" in _error(
        program("[16, 8]", kernel=shard_mode)
    )
