"""Round trip of a registered PyPTO operator on the simulated chip, beside torch baselines.

``torch.ops.pypto_bench.add(a, b, out)`` on 32x32 FP32 tensors (a2a3sim: describe_call,
TMR packet encode, launch on the stream, run on the simulated AICPU and AICore threads, wait)
is measured in the same run as ``torch.add(a, b, out=out)`` and as a no-op
``torch.library.custom_op`` with the same signature (the dispatcher cost any custom operator
pays). Each figure is a ratio to the no-op custom op. The breakdown shows where the time
goes: describe_call, building simpler's materialised arguments, the dispatcher, and the
native launch + run + wait.

Run with ``python bench_kernel_mode.py [--quick]``.
"""

from __future__ import annotations

import argparse

import torch
from bench_interop import _best_per_call  # the timing helper of the sibling benchmark script

import pypto.language as pl
import pypto.torch as pt
from pypto.torch._kernel import context
from pypto_testing.bench import report


@pl.jit
def bench_add(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="add"):
        out[:] = pl.add(a, b)
    return out


@torch.library.custom_op("pypto_bench::noop", mutates_args=("out",))
def noop(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor) -> None:
    """The baseline: a custom op that does nothing."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer iterations (smoke run)")
    opts = parser.parse_args()
    number, repeat = (200, 3) if opts.quick else (2000, 5)
    torch.set_num_threads(1)

    op = pt.register(bench_add, "pypto_bench::add")
    a, b, out = torch.randn(32, 32), torch.randn(32, 32), torch.empty(32, 32)
    op(a, b, out)
    torch.testing.assert_close(out, a + b)  # the kernel really ran

    manager = context.current()
    kc = next(iter(op._callables.values()))
    frame = kc.signature.describe_call([a, b, out])
    mat = kc.materialize(frame)
    worker = manager.worker

    baseline = _best_per_call(lambda: torch.ops.pypto_bench.noop(a, b, out), number, repeat)
    rows = [
        ("torch.add(a, b, out=out)", _best_per_call(lambda: torch.add(a, b, out=out), number, repeat)),
        ("no-op custom_op (baseline)", baseline),
        ("torch.ops.pypto_bench.add (round trip)", _best_per_call(lambda: op.op(a, b, out), number, repeat)),
        (
            "  Operator kernel alone (no dispatcher)",
            _best_per_call(lambda: op._kernel(a, b, out), number, repeat),
        ),
        ("  describe_call", _best_per_call(lambda: kc.signature.describe_call([a, b, out]), number, repeat)),
        (
            "  materialize (descriptors + scalars)",
            _best_per_call(lambda: kc.materialize(frame), number, repeat),
        ),
        (
            "  Worker.launch + wait (native run)",
            _best_per_call(lambda: worker.launch(kc.handle, mat).result(), number, repeat),
        ),
    ]
    pt.shutdown()
    report("torch operator round trip, 32x32 FP32 add", rows[2][1], baseline, "no-op custom_op", "us")

    title = f"pypto.torch kernel mode on a2a3sim (torch {torch.__version__}; baseline = no-op custom_op {baseline:.1f} us)"
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:
        print(title)
        for name, cost in rows:
            print(f"{name:<44} {cost:>10.2f} us {cost / baseline:>8.2f}x")
        return
    table = Table(title=title)
    table.add_column("case")
    table.add_column("us/call", justify="right")
    table.add_column("x no-op custom op", justify="right")
    for name, cost in rows:
        table.add_row(name, f"{cost:.2f}", f"{cost / baseline:.2f}")
    Console(width=120).print(table)


if __name__ == "__main__":
    main()
