"""Cost of describing one call (pypto.torch.interop.describe_call) beside torch.add.

Both figures are measured in the same run on small CPU tensors (the simulator platform,
where CPU tensors are the device memory); the ratio is describe_call time / torch.add time.
The native fast path is built first (``pypto.torch.build_native``: about 30 s the first time
on this machine, then loaded from torch's extension cache) and measured beside the Python fast
path. Run with ``python bench_interop.py [--quick]``.
"""

from __future__ import annotations

import argparse
import timeit
from collections.abc import Callable

import torch

from pypto.ir import ParamInfo
from pypto.torch import build_native
from pypto.torch._native_describe import native_error
from pypto.torch.interop import CallSignature
from pypto_testing.bench import print_table, report


def _best_per_call(fn: Callable[[], object], number: int, repeat: int) -> float:
    """Best of ``repeat`` runs, in microseconds per call."""
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e6


def _signature(tensors: int) -> tuple[CallSignature, list[object]]:
    params = [ParamInfo(f"in{i}", "In", [-1, 16], "FP32") for i in range(tensors - 1)]
    params += [ParamInfo("out", "Out", [-1, 16], "FP32"), ParamInfo("alpha", "In", None, "FP32")]
    args: list[object] = [torch.randn(4, 16) for _ in range(tensors - 1)]
    args += [torch.empty(4, 16), 0.5]
    return CallSignature(params, [tensors - 1], platform="a2a3sim"), args


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer iterations (smoke run)")
    opts = parser.parse_args()
    number, repeat = (200, 3) if opts.quick else (2000, 7)
    torch.set_num_threads(1)

    native = build_native()
    if not native:
        print(f"native fast path unavailable ({native_error()}); describe_call uses the Python fast path")
    a, b = torch.randn(4, 16), torch.randn(4, 16)
    baseline = _best_per_call(lambda: torch.add(a, b), number, repeat)
    rows = []
    for tensors in (3, 8):
        sig, args = _signature(tensors)
        paths = [("native" if native else "Python", sig.describe_call), ("Python", sig._python_fast)]
        for k, (path, describe) in enumerate(paths[: 2 if native else 1]):
            describe(args)  # warm up and prove the call is valid
            cost = _best_per_call(lambda describe=describe, args=args: describe(args), number, repeat)
            rows.append((f"describe_call ({path}), {tensors} tensors + 1 scalar", cost, cost / baseline))
            if tensors == 3 and k == 0:  # the path describe_call takes (a bound method: no `is`)
                report(
                    f"describe_call ({path} fast path), 3 tensors + 1 scalar",
                    cost,
                    baseline,
                    "torch.add on 4x16",
                    "us",
                    bar=3.0,
                    goal=2.0,
                )

    title = f"pypto.torch.interop (torch {torch.__version__}; baseline torch.add on 4x16 fp32 = {baseline:.2f} us)"
    print_table(title, ("case", "us/call", "x torch.add"), [(n, f"{c:.2f}", f"{r:.2f}") for n, c, r in rows])


if __name__ == "__main__":
    main()
