"""Benchmark of the TMR wire layer: cache-hit encode and decode against memcpy of the same bytes.

Timings are taken natively (``simpler._native.kernel._bench_wire``) so that the Python call
overhead does not hide the codec: each figure is the mean over many iterations, best of several
rounds, measured in this run beside its baseline. Baselines: ``memcpy`` of the packet bytes (the
physical floor) and malloc + memcpy (what any owned copy of the packet costs). Targets from the
issue: cache-hit encode within 5x of memcpy, decode within 10x.

Run: ``python packages/simpler-native/benchmarks/bench_wire.py [--rounds N] [--iterations N]``.
"""

from __future__ import annotations

import argparse
from typing import Any

from pypto_testing.bench import print_table
from simpler._native import kernel as _kernel

TENSOR_COUNTS = (0, 1, 8, 256)


def measure(tensors: int, iterations: int, rounds: int) -> dict[str, Any]:
    scalars = min(2, 256 - tensors)
    runs = [_kernel._bench_wire(tensors, scalars, iterations) for _ in range(rounds)]
    if not all(r["all_ok"] for r in runs):
        raise SystemExit(
            f"bench_wire: a measured encode was not a cache hit or a decode failed ({tensors} tensors)"
        )
    best = {
        key: min(r[key] for r in runs)
        for key in ("encode_hit_ns", "decode_ns", "memcpy_ns", "alloc_memcpy_ns")
    }
    return {"tensors": tensors, "scalars": scalars, "packet_bytes": runs[0]["packet_bytes"], **best}


def rows(results: list[dict[str, Any]]) -> list[list[str]]:
    out = []
    for r in results:
        floor = r["memcpy_ns"]
        out.append(
            [
                f"{r['tensors']}",
                f"{r['scalars']}",
                f"{r['packet_bytes']}",
                f"{floor:.1f}",
                f"{r['alloc_memcpy_ns']:.1f}",
                f"{r['encode_hit_ns']:.1f}",
                f"{r['encode_hit_ns'] / floor:.2f}x",
                f"{r['encode_hit_ns'] / r['alloc_memcpy_ns']:.2f}x",
                f"{r['decode_ns']:.1f}",
                f"{r['decode_ns'] / floor:.2f}x",
            ]
        )
    return out


HEADERS = [
    "tensors",
    "scalars",
    "bytes",
    "memcpy ns",
    "alloc+cpy ns",
    "encode ns",
    "enc/memcpy",
    "enc/alloc+cpy",
    "decode ns",
    "dec/memcpy",
]


def show(table: list[list[str]]) -> None:
    title = "TMR wire: cache-hit encode and decode vs memcpy of the same packet bytes (same run)"
    print_table(title, HEADERS, table, right_from=0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--iterations", type=int, default=20000)
    args = parser.parse_args()
    results = [
        measure(n, args.iterations if n < 64 else max(1, args.iterations // 10), args.rounds)
        for n in TENSOR_COUNTS
    ]
    show(rows(results))


if __name__ == "__main__":
    main()
