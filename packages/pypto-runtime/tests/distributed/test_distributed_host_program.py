"""The forms of a ``@pl.program`` host orchestrator: host tensors it creates
(``pl.create_tensor``), inline chip blocks (``pl.at(level=pl.Level.CHIP)``), ``pl.Out``
tensors the caller leaves out (allocated and returned) and ``DistributedConfig(aicpu_thread_num)``,
checked against torch. One program is compiled once and run on one prepared 2-rank worker."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torch.distributed")

from _dist_programs import chip_functions, config  # noqa: E402

import pypto.language as pl  # noqa: E402
from pypto import ir  # noqa: E402
from pypto.ir import DistributedConfig, KernelError  # noqa: E402

R, C = 16, 32


@pl.program
class _Forms:
    add_tiles, chip_add = chip_functions(R, C)

    @pl.function(level=pl.Level.HOST, role=pl.Role.SubWorker)
    def combine(
        s: pl.Tensor[[R, C], pl.FP32],
        d: pl.Tensor[[R, C], pl.FP32],
        f: pl.Out[pl.Tensor[[R, C], pl.FP32]],
    ):
        f[:] = 2 * s + d

    @pl.function(level=pl.Level.HOST, role=pl.Role.SubWorker)
    def probe(z: pl.InOut[pl.Tensor[[R, C], pl.FP32]]):
        # a created tensor starts every call at zero; leave something behind to be cleared
        if float(z.abs().sum()) != 0.0:
            raise AssertionError("a created host tensor kept an earlier call's data")
        z.fill_(7.0)

    @pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)
    def host(
        self,
        a: pl.Tensor[[R, C], pl.FP32],
        b: pl.Tensor[[R, C], pl.FP32],
        f: pl.Out[pl.Tensor[[R, C], pl.FP32]],
    ):
        s: pl.Tensor[[R, C], pl.FP32] = pl.create_tensor([R, C], dtype=pl.FP32)
        d: pl.Tensor[[R, C], pl.FP32] = pl.create_tensor([R, C], dtype=pl.FP32)
        z: pl.Tensor[[R, C], pl.FP32] = pl.create_tensor([R, C], dtype=pl.FP32)
        s2 = self.chip_add(a, b, s, device=1)
        with pl.at(level=pl.Level.CHIP, role=pl.Role.Orchestrator):  # noqa: SIM117 - the nested form
            with pl.at(level=pl.Level.CORE_GROUP):
                t = pl.sub(a, b)
                d2 = pl.assemble(d, t, [0, 0])
        self.probe(z)
        self.combine(s2, d2, f)


def _expected(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return 2 * (a + b) + (a - b)


@pytest.fixture(scope="module")
def compiled():
    return ir.compile(
        _Forms,
        distributed_config=DistributedConfig(device_ids=[0, 1], num_sub_workers=1, aicpu_thread_num=2),
    )


@pytest.fixture(scope="module")
def worker(compiled):
    with compiled.prepare() as w:
        yield w


def test_the_plan(compiled) -> None:
    plan = compiled.plan
    assert [p.name for p in plan.caller_params] == ["a", "b", "f"]
    assert [(p.name, p.local, p.shape) for p in plan.params[3:]] == [
        ("create_tensor#0", True, (R, C)),
        ("create_tensor#1", True, (R, C)),
        ("create_tensor#2", True, (R, C)),
    ]
    # the chip block is an orchestration of the program, launched on rank 0 (block 0)
    assert _Forms.get_function("host_chip_orch_0").func_type is pl.FunctionType.Orchestration
    ranks = {d.rank: d.args for d in plan.dispatches}
    assert ranks[1] == (("host", 0, []), ("host", 1, []), ("host", 3, []))
    assert ranks[0] == (("host", 0, []), ("host", 1, []), ("host", 4, []))
    assert plan.aicpu_thread_num == 2


@pytest.mark.parametrize("seed", [0, 1])
def test_worker_runs_every_form(worker, seed: int) -> None:
    g = torch.Generator().manual_seed(seed)
    a, b = torch.randn(R, C, generator=g), torch.randn(R, C, generator=g)
    f = torch.full((R, C), -5.0)
    assert worker(a, b, f) is None
    torch.testing.assert_close(f, _expected(a, b))
    returned = worker(b, a)  # f left out: allocated, returned
    torch.testing.assert_close(returned, _expected(b, a))


def test_omitting_an_input_is_refused(compiled) -> None:
    with pytest.raises(TypeError, match=r"host\(\): parameter 'b': expected a tensor of shape \[16, 32\]"):
        compiled(torch.ones(R, C))


def test_host_level_errors() -> None:
    with pytest.raises(
        KernelError, match=r"host orchestrator's pl.at blocks are chip levels.*level=pl.Level.CORE_GROUP"
    ):

        @pl.program
        class _CoreInHost:
            @pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)
            def host(self, a: pl.Tensor[[R, C], pl.FP32], f: pl.Out[pl.Tensor[[R, C], pl.FP32]]):
                with pl.at(level=pl.Level.CORE_GROUP):
                    pl.assemble(f, pl.add(a, a), [0, 0])

    with pytest.raises(KernelError, match=r"block #0 reads 'g'; annotate it"):

        @pl.program
        class _Unannotated:
            @pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)
            def host(self, a: pl.Tensor[[R, C], pl.FP32], f: pl.Out[pl.Tensor[[R, C], pl.FP32]]):
                g = pl.create_tensor([R, C], dtype=pl.FP32)
                with pl.at(level=pl.Level.CHIP, role=pl.Role.Orchestrator), pl.at(level=pl.Level.CORE_GROUP):
                    pl.assemble(f, pl.add(a, g), [0, 0])

    with pytest.raises(KernelError, match=r"pl.at\(level=pl.Level.CHIP\) in a chip orchestration"):

        @pl.program
        class _ChipInChip:
            @pl.function(type=pl.FunctionType.Orchestration)
            def chip(self, a: pl.Tensor[[R, C], pl.FP32], f: pl.Out[pl.Tensor[[R, C], pl.FP32]]):
                with pl.at(level=pl.Level.CHIP):
                    pl.assemble(f, pl.add(a, a), [0, 0])


def test_combined_with_is_a_chip_block_around_its_scope() -> None:
    @pl.program
    class _Combined:
        @pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)
        def host(self, a: pl.Tensor[[R, C], pl.FP32], f: pl.Out[pl.Tensor[[R, C], pl.FP32]]):
            with pl.at(level=pl.Level.CHIP, role=pl.Role.Orchestrator), pl.at(level=pl.Level.CORE_GROUP):
                f2 = pl.assemble(f, pl.mul(a, a), [0, 0])
            return f2

    chip = _Combined.get_function("host_chip_orch_0")
    assert [(p.name, p.direction.value) for p in chip.params] == [("f", "Out"), ("a", "In")]
    assert _Combined.entry == "host_chip_orch_0"
    assert type(chip.body[0]).__name__ == "Scope"  # the CORE_GROUP scope, inside the chip block


def test_create_tensor_and_aicpu_thread_checks() -> None:
    @pl.program
    class _BadShape:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[R, C], pl.FP32], out: pl.Out[pl.Tensor[[R, C], pl.FP32]]):
            return pl.store(pl.load(a, [0, 0], [R, C]), [0, 0], out)

        @pl.function(type=pl.FunctionType.Orchestration)
        def chip(self, a: pl.Tensor[[R, C], pl.FP32], out: pl.Out[pl.Tensor[[R, C], pl.FP32]]):
            return self.k(a, out)

        @pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)
        def host(self, a: pl.Tensor[[R, C], pl.FP32], f: pl.Out[pl.Tensor[[R, C], pl.FP32]]):
            t = pl.create_tensor([R, 0], dtype=pl.FP32)
            self.chip(a, t)

    with pytest.raises(
        TypeError,
        match=r"pl.create_tensor\(...\) #0 in a host body: shape: expected a list of ints > 0, got \[16, 0\]",
    ):
        ir.compile(_BadShape, distributed_config=DistributedConfig(device_ids=[0]))
    with pytest.raises(ValueError, match=r"DistributedConfig\(aicpu_thread_num\): expected an int >= 0"):
        DistributedConfig(device_ids=[0], aicpu_thread_num=-1)
    with pytest.raises(
        ValueError, match=r"DistributedConfig\(aicpu_thread_num\): 9 is more than a chip runs"
    ):
        ir.compile(_Forms, distributed_config=DistributedConfig(device_ids=[0, 1], aicpu_thread_num=9))
    assert config(1).distributed_config.aicpu_thread_num == 0


def test_window_views_in_a_program_plan() -> None:
    import pypto.language.distributed as pld
    from pypto.runtime.distributed.program_plan import plan_program

    class Chip:  # the chip part of both programs below
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[4, 8], pl.FP32], w: pld.DistributedTensor[[4, 8], pl.FP32]):
            return pl.store(pl.load(x, [0, 0], [4, 8]), [0, 0], w)

        @pl.function(type=pl.FunctionType.Orchestration)
        def chip(self, x: pl.Tensor[[4, 8], pl.FP32], w: pld.DistributedTensor[[4, 8], pl.FP32]):
            return self.k(x, w)

    @pl.program
    class _Windows:
        k, chip = Chip.k, Chip.chip

        @pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)
        def host(self, x: pl.Tensor[[2, 4, 8], pl.FP32]):
            raw = pld.alloc_window_buffer(4 * 8 * pl.FP32.get_byte())
            typed = pld.alloc_window_buffer([4, 8], dtype=pl.FP32)
            for r in pl.range(pld.world_size()):
                view = pld.window(raw if r == 0 else typed, [4, 8], dtype=pl.FP32)
                self.chip(x[r], view, device=r)

    plan, _ = plan_program(_Windows, config(2))
    assert [(w.shape, w.dtype, w.nbytes) for w in plan.windows] == [
        ((128,), "UINT8", 128),
        ((4, 8), "FP32", 128),
    ]
    assert [d.args[1] for d in plan.dispatches] == [
        ("window", 0, [4, 8], "FP32"),
        ("window", 1, [4, 8], "FP32"),
    ]

    @pl.program
    class _TooBig:
        k, chip = Chip.k, Chip.chip

        @pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)
        def host(self, x: pl.Tensor[[4, 8], pl.FP32]):
            self.chip(x, pld.window(pld.alloc_window_buffer(64), [4, 8], dtype=pl.FP32))

    with pytest.raises(ValueError, match=r"a \[4, 8\] FP32 view needs 128 bytes"):
        plan_program(_TooBig, config(1))
    assert (pl.FP32.get_byte(), pl.BF16.get_byte()) == (4, 2)
