"""``pl.tile.transpose_view`` of a Mat (L1) tile: the NZ bytes read as a ZN tile over the same
storage (TRESHAPE), never TTRANS, whose source the ISA requires row-major (an NZ tile is not)."""

from __future__ import annotations

import re

import pytest
from pypto_ir_test_helpers import program

from pypto.ir.codegen import generate_kernel
from pypto.ir.errors import PyptoCompileError
from pypto.ir.pipeline import lower


def _matmul_of_views(k: str, tile: str, views: list[str], left: str, right: str) -> object:
    """A kernel that loads all of ``k`` (``"[32, 64], pl.FP32"``: its shape and dtype) into
    the Mat tile ``tile``, runs ``views`` and stores the matmul of ``left`` and ``right``
    moved to Left and Right; called by an orchestration."""
    shape = k.rsplit(", ", 1)[0]
    kernel = [
        f"{tile} = pl.load(k, [0, 0], {shape}, target_memory=pl.MemorySpace.Mat)",
        *views,
        f"a = pl.move({left}, target_memory=pl.MemorySpace.Left)",
        f"b = pl.move({right}, target_memory=pl.MemorySpace.Right)",
        "return pl.store(pl.matmul(a, b), [0, 0], out)",
    ]
    main = ["out = self.k(k, out)", "return out"]
    return program("[32, 32]", kernel=kernel, main=main, ins=(f"k: pl.Tensor[{k}]",), out="out")()


# k's NZ Mat tile, its transpose view and the view of that
KKt = _matmul_of_views(
    "[32, 64], pl.FP32",
    "k_l1",
    ["kt = pl.tile.transpose_view(k_l1)", "back = pl.tile.transpose_view(kt)"],
    "back",
    "kt",
)


def _kernel_text(prog: object, name: str) -> str:
    lowered = lower(prog).program  # type: ignore[arg-type]
    return generate_kernel(lowered.functions[name]).text


def _decl(text: str, name: str) -> tuple[str, str]:
    """(Tile type, TASSIGN offset) of tile ``name``."""
    m = re.search(rf"(Tile<[^;]*>) {name}\(.*\);\n\s*TASSIGN\({name}, (0x[0-9a-f]+)\);", text)
    assert m, f"no declaration of {name}"
    return m.group(1), m.group(2)


def test_the_transpose_of_an_nz_mat_tile_is_a_zn_tile_over_its_bytes() -> None:
    text = _kernel_text(KKt, "k")
    assert "TTRANS" not in text
    nz, at = _decl(text, "k_l1")
    zn, zn_at = _decl(text, "kt")
    nz_again, back_at = _decl(text, "back")
    assert nz == "Tile<TileType::Mat, float, 32, 64, BLayout::ColMajor, -1, -1, SLayout::RowMajor, 512>"
    assert zn == "Tile<TileType::Mat, float, 64, 32, BLayout::RowMajor, -1, -1, SLayout::ColMajor, 512>"
    assert nz_again == nz
    assert at == zn_at == back_at  # one storage, three layouts of its bytes: no copy
    assert re.search(r"kt\(k_l1\.GetValidCol\(\), k_l1\.GetValidRow\(\)\);", text)
    assert "TRESHAPE(kt, k_l1);" in text
    assert "TRESHAPE(back, kt);" in text
    # TRESHAPE runs on no pipe: the first move from the storage waits for the load that wrote it
    body = text[text.index("TLOAD(k_l1") :]
    assert "set_flag" not in body[: body.index("TRESHAPE(back, kt);")]
    assert re.search(r"wait_flag\(PIPE_MTE2, PIPE_MTE1, EVENT_ID0\);\n\s*TMOV\(a, back\);", body)
    assert "TMOV(b, kt);" in body


# one holder t that receives both a tile and its transpose view (in the loop)
Flip = _matmul_of_views(
    "[32, 32], pl.FP16", "t", ["for _ in pl.range(3):", "    t = pl.tile.transpose_view(t)"], "t", "t"
)


def test_a_holder_receiving_a_tile_and_its_transpose_view_is_refused() -> None:
    with pytest.raises(
        PyptoCompileError, match=r"receives both a tile and a pl\.tile\.transpose_view of one"
    ):
        _kernel_text(Flip, "k")
