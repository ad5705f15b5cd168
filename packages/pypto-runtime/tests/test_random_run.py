"""``pl.tile.random`` (PTO-ISA TRANDOM, Philox-4x32) on a5sim against a reference written here
from the official CPU backend's definition: the cipher rounds (the published Philox, checked
against its known answers), and the schedule that gives each element its counter (64 lanes a
repeat, four words a lane, a row's loops of 256 columns each advancing the counter by a quarter
of the row stride; the A5 kernel's source appears to place the words and step the counter
differently, which no machine here can check). Upstream's ``test_random.py`` only checks that two
draws with the same seeds cancel; the golden here is the words themselves. Shapes and seeds as
upstream's cases, plus a narrowed valid shape and a counter whose low word carries; the tensor
form ``pl.random`` in upstream's program (two equal draws cancel) and against the reference."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import pypto.language as pl
from pypto.runtime import RunConfig, run

torch = pytest.importorskip("torch")

_MASK = 0xFFFF_FFFF


def _philox(counter: list[int], key: list[int], rounds: int) -> list[int]:
    c0, c1, c2, c3 = counter
    k0, k1 = key
    for _ in range(rounds):
        p0, p1 = c0 * 0xD2511F53, c2 * 0xCD9E8D57
        c0, c1, c2, c3 = (p1 >> 32) ^ c1 ^ k0, p1 & _MASK, (p0 >> 32) ^ c3 ^ k1, p0 & _MASK
        k0, k1 = (k0 + 0x9E3779B9) & _MASK, (k1 + 0xBB67AE85) & _MASK
    return [c0, c1, c2, c3]


def _words(counter: int) -> list[int]:
    return [(counter >> (32 * i)) & _MASK for i in range(4)]


def _reference(seeds: tuple[int, ...], shape: tuple[int, int], valid: tuple[int, int], rounds: int) -> Any:
    """The words TRANDOM writes over ``valid`` of a row-major tile of ``shape`` (zeros elsewhere)."""
    key = [s & _MASK for s in seeds[:2]]
    running = sum((s & _MASK) << (32 * i) for i, s in enumerate(seeds[2:]))
    out = np.zeros(shape, dtype=np.uint32)
    for r in range(valid[0]):
        for loop in range(-(-valid[1] // 256)):
            for lane in range(64):
                words = _philox(_words((running + lane) % (1 << 128)), key, rounds)
                for k, w in enumerate(words):
                    col = loop * 256 + k * 64 + lane
                    if col < valid[1]:
                        out[r, col] = w
            running += shape[1] // 4
    return out


def _program(
    seeds: tuple[int, ...], shape: tuple[int, int], valid: tuple[int, int], dtype: Any, rounds: int
) -> Any:
    k0, k1, c0, c1, c2, c3 = seeds
    rows, cols = shape
    vr, vc = valid

    @pl.program
    class RandomProgram:
        @pl.function(type=pl.FunctionType.InCore)
        def kernel(self, output: pl.Out[pl.Tensor[[rows, cols], dtype]]) -> pl.Tensor[[rows, cols], dtype]:
            a: pl.Tile[[rows, cols], dtype] = pl.tile.random(
                k0, k1, c0, c1, c2, c3, [rows, cols], valid_shape=[vr, vc], dtype=dtype, rounds=rounds
            )
            out = pl.store(a, [0, 0], output)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def orchestrator(
            self, output: pl.Out[pl.Tensor[[rows, cols], dtype]]
        ) -> pl.Tensor[[rows, cols], dtype]:
            output = self.kernel(output)
            return output

    return RandomProgram


@pytest.mark.parametrize(
    ("seeds", "shape", "valid", "dtype", "rounds"),
    [
        ((0x1234, 0x5678, 1, 2, 3, 4), (4, 256), (4, 256), pl.UINT32, 10),
        ((0x0ABC, 0x0DEF, 7, 0, 0, 0), (8, 128), (8, 128), pl.INT32, 10),
        ((0x1111, 0x2222, 5, 6, 7, 8), (16, 64), (16, 64), pl.UINT32, 7),
        ((0x9, 0xA, 3, 0, 0, 0), (4, 512), (4, 512), pl.UINT32, 10),  # two loops a row
        (
            (0x77, 0x88, 0xFFFF_FFF0, 0xFFFF_FFFF, 0, 9),
            (16, 128),
            (10, 100),
            pl.UINT32,
            10,
        ),  # carries; narrowed
    ],
)
def test_random_words_are_philox_in_trandoms_schedule(
    seeds: tuple[int, ...], shape: tuple[int, int], valid: tuple[int, int], dtype: Any, rounds: int
) -> None:
    out = torch.zeros(shape, dtype=torch.int32 if dtype is pl.INT32 else torch.uint32)
    run(_program(seeds, shape, valid, dtype, rounds), out, config=RunConfig(platform="a5sim"))
    got = out.view(torch.int32).numpy().view(np.uint32)
    assert np.array_equal(got, _reference(seeds, shape, valid, rounds))


def test_the_reference_rounds_are_philox_4x32() -> None:
    """The reference's cipher is the published Philox-4x32-10 (Random123's known answers)."""
    assert _philox([0, 0, 0, 0], [0, 0], 10) == [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]
    pi = ([0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344], [0xA4093822, 0x299F31D0])
    assert _philox(*pi, 10) == [0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1]


@pl.program
class RandomTensorForm:
    """Upstream's tensor-level program (two equal ``pl.random`` draws cancel), and the words of one
    draw of other seeds kept."""

    @pl.function(type=pl.FunctionType.InCore)
    def kernel(
        self, output: pl.Out[pl.Tensor[[4, 256], pl.UINT32]], words: pl.Out[pl.Tensor[[8, 128], pl.INT32]]
    ) -> tuple[pl.Tensor[[4, 256], pl.UINT32], pl.Tensor[[8, 128], pl.INT32]]:
        a: pl.Tensor[[4, 256], pl.UINT32] = pl.random(0x1234, 0x5678, 1, 2, 3, 4, [4, 256])
        b: pl.Tensor[[4, 256], pl.UINT32] = pl.random(0x1234, 0x5678, 1, 2, 3, 4, [4, 256])
        diff: pl.Tensor[[4, 256], pl.UINT32] = pl.sub(a, b)
        output = pl.assemble(output, diff, [0, 0])
        w = pl.tensor.random(0x0ABC, 0x0DEF, 7, 0, 0, 0, [8, 128], dtype=pl.INT32, rounds=7)
        words = pl.assemble(words, w, [0, 0])
        return output, words

    @pl.function(type=pl.FunctionType.Orchestration)
    def orchestrator(
        self, output: pl.Out[pl.Tensor[[4, 256], pl.UINT32]], words: pl.Out[pl.Tensor[[8, 128], pl.INT32]]
    ) -> tuple[pl.Tensor[[4, 256], pl.UINT32], pl.Tensor[[8, 128], pl.INT32]]:
        output, words = self.kernel(output, words)
        return output, words


def test_the_tensor_form_is_the_tile_forms_words() -> None:
    output = np.full((4, 256), 5, dtype=np.uint32)
    words = np.zeros((8, 128), dtype=np.int32)
    run(RandomTensorForm, output, words, config=RunConfig(platform="a5sim"))
    assert not output.any()  # upstream's check: equal seeds, equal words
    want = _reference((0x0ABC, 0x0DEF, 7, 0, 0, 0), (8, 128), (8, 128), 7)
    assert np.array_equal(words.view(np.uint32), want)
