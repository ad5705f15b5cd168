"""Turn tests/data/tmr_vectors.json into a C++ header for the wire tests (run by meson at build time)."""

from __future__ import annotations

import json
import os
import sys
from typing import Any


def _tensor(t: dict[str, Any]) -> str:
    shapes = ", ".join(str(int(x)) for x in t["shapes"])
    strides = ", ".join(str(int(x)) for x in t["strides"])
    return (
        f"{{{int(t['addr'])}ull, {int(t['size'])}ull, {int(t['dtype'])}, {{{shapes}}}, {{{strides}}}, "
        f"{int(t.get('start_offset', 0))}ull}}"
    )


def main(src: str, dst: str) -> None:
    with open(src, encoding="utf-8") as f:
        data = json.load(f)
    rows = []
    for v in data["vectors"]:
        view, binding, decoded = v["view"], v["binding"], v.get("decoded")
        tensors = ", ".join(_tensor(t) for t in decoded["tensors"]) if decoded else ""
        scalars = ", ".join(f"{int(s)}ull" for s in decoded["scalars"]) if decoded else ""
        rows.append(
            f'  {{"{v["name"]}", "{v["packet_hex"]}", {int(view["callable_id"])}, {int(view["tensor_count"])}, '
            f"{int(view['scalar_count'])}, {int(view['slot_generation'])}ull, "
            f"{int(binding['device_binding_addr'])}ull, {int(binding['context_generation'])}ull, "
            f"{'true' if v['expect'] == 'ok' else 'false'}, {'true' if decoded else 'false'}, "
            f"{{{tensors}}}, {{{scalars}}}}},"
        )
    out = [
        "// Generated from tests/data/tmr_vectors.json by gen_vectors.py; do not edit.",
        "#pragma once",
        '#include "vector_types.hpp"',
        "inline const std::vector<TmrVector>& tmr_vectors() {",
        "  static const std::vector<TmrVector> v = {",
        *rows,
        "  };",
        "  return v;",
        "}",
    ]
    tmp = dst + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write("\n".join(out) + "\n")
    os.replace(tmp, dst)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
