"""Write the seed corpora of the fuzz targets (run by hand).

fuzz_decode and fuzz_block: from tests/data/tmr_vectors.json, each seed a selector byte (0: view
from the packet's header) followed by a vector's packet; fuzz_block seeds carry the u64 size
prefix as well. fuzz_comm_host: a few host-path requests in that target's input layout.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

HERE = Path(__file__).parent


def main() -> None:
    vectors = json.loads((HERE.parent / "data" / "tmr_vectors.json").read_text(encoding="utf-8"))["vectors"]
    for target in ("fuzz_decode", "fuzz_block"):
        out = HERE / "corpus" / target
        out.mkdir(parents=True, exist_ok=True)
        for v in vectors:
            packet = bytes.fromhex(v["packet_hex"])
            body = struct.pack("<Q", len(packet)) + packet if target == "fuzz_block" else packet
            (out / v["name"]).write_bytes(b"\0" + body)

    _comm_host_seeds(HERE / "corpus" / "fuzz_comm_host")


def _comm_host_seeds(out: Path) -> None:
    """Requests in fuzz_comm_host's layout: op, dtype, value, run count, runs, data length, data."""
    read, write, add, notify_add, notify_set = 0, 1, 2, 3, 4
    fp32, fp16, int32 = 0, 1, 2  # simpler DataType codes
    seeds = {
        "write_two_runs": (write, fp32, 0, [(8, 4), (0, 4)], bytes(range(8))),
        "read_one_run": (read, fp32, 0, [(16, 16)], bytes(16)),
        "add_fp16": (add, fp16, 0, [(32, 8)], bytes([0, 60] * 4)),
        "add_int32": (add, int32, 0, [(64, 8), (128, 4)], bytes(12)),
        "notify_add": (notify_add, int32, -5, [(4, 4)], b""),
        "notify_set": (notify_set, int32, 7, [(508, 4)], b""),
        "outside_window": (write, fp32, 0, [(510, 4)], bytes(4)),
        "unaligned_add": (add, fp32, 0, [(2, 4)], bytes(4)),
    }
    out.mkdir(parents=True, exist_ok=True)
    for name, (op, dtype, value, runs, data) in seeds.items():
        body = struct.pack("<BBqB", op, dtype, value, len(runs))
        body += b"".join(struct.pack("<QQ", off, nbytes) for off, nbytes in runs)
        (out / name).write_bytes(body + struct.pack("<H", len(data)) + data)


if __name__ == "__main__":
    main()
