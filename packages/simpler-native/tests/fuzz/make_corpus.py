"""Write the seed corpora of the fuzz targets from tests/data/tmr_vectors.json (run by hand).

Each seed is a selector byte (0: view from the packet's header) followed by a vector's packet;
fuzz_block seeds carry the u64 size prefix as well.
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


if __name__ == "__main__":
    main()
