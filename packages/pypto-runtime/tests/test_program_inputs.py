"""Program mode checks what it is given as carefully as describe_call does (issue 12).

Storage bounds and aliasing come from ``pypto.ir.storage_rules`` (describe_call's rules); a
None argument, a bare ``__array_interface__`` and a shrunk torch storage are refused before
anything runs, each error naming the parameter. Cases that corrupted memory before the fix run
in a child process, so that a regression fails one test instead of crashing the session.
"""

from __future__ import annotations

import array
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from runtime_programs import add, make_add, scale

import pypto.language as pl
import pypto.runtime as rt
from pypto.runtime.compiled import CompiledProgram
from pypto.runtime.host_tensors import TensorBindingError, describe

pytestmark = pytest.mark.usefixtures("module_store")  # one store: each program compiles once

R, C = 16, 64


add_square = make_add()  # an object of its own: its specialisations are not add's


def ones(*shape: int) -> np.ndarray:
    return np.ones(shape, np.float32)


def seq(*shape: int) -> np.ndarray:
    return np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)


@pytest.fixture
def prog() -> CompiledProgram:
    return rt.compile(add, ones(R, C), ones(R, C), ones(R, C))


def run_child(code: str) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter (it shares this module's store through the env)."""
    header = textwrap.dedent(
        f"""
        import sys
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        import numpy as np
        import pypto.runtime as rt
        from test_program_inputs import add, ones, R, C
        prog = rt.compile(add, ones(R, C), ones(R, C), ones(R, C))
        """
    )
    return subprocess.run(
        [sys.executable, "-c", header + textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=600,
        env=dict(os.environ),
        check=False,
    )


# ---------------------------------------------------------------- storage bounds (torch)


def test_shrunk_torch_input_is_refused(prog: CompiledProgram) -> None:
    torch = pytest.importorskip("torch")
    a = torch.ones(R, C)
    a.untyped_storage().resize_(R // 2 * C * 4)  # the view now reaches past its storage
    with pytest.raises(
        TensorBindingError, match=r"argument 'a': invalid storage bounds: the view reaches byte 4096 "
    ):
        prog(a, torch.ones(R, C), torch.empty(R, C))


def test_shrunk_torch_output_is_refused_before_anything_is_written() -> None:
    pytest.importorskip("torch")
    child = run_child(
        """
        import torch
        from pypto.runtime.host_tensors import TensorBindingError
        out = torch.empty(R, C)
        out.untyped_storage().resize_(8)
        try:
            prog(torch.ones(R, C), torch.ones(R, C), out)
        except TensorBindingError as exc:
            print("refused:", exc)
        """
    )
    assert child.returncode == 0, child.stderr[-2000:]
    assert "refused: add(): argument 'out': invalid storage bounds" in child.stdout
    assert "a storage of 8 bytes" in child.stdout


def test_torch_view_at_a_storage_offset_runs(prog: CompiledProgram) -> None:
    torch = pytest.importorskip("torch")
    base = torch.arange((R + 2) * C, dtype=torch.float32).reshape(R + 2, C)
    a = base[2:]  # storage offset 2 rows
    out = torch.zeros(R + 1, C)[1:]
    assert prog(a, torch.ones(R, C), out) is out
    torch.testing.assert_close(out, a + 1)


def test_the_chip_descriptor_carries_the_real_storage_capacity() -> None:
    import simpler
    from pypto.runtime.runner import _chip_view

    base = seq(R + 4, C)
    view = describe(base[3:], what="a")
    assert (view.storage_ptr, view.storage_nbytes) == (base.ctypes.data, base.nbytes)
    addr, size, _, shape, _, start = _chip_view(simpler, view, "a").descriptor()
    assert (addr, size, tuple(shape), start) == (base.ctypes.data, base.nbytes, (R + 1, C), 3 * C)
    torch = pytest.importorskip("torch")
    t = torch.zeros(R + 4, C)
    tv = describe(t[1 : R + 1], what="t")
    addr, size, _, _, _, start = _chip_view(simpler, tv, "t").descriptor()
    assert (addr, size, start) == (t.untyped_storage().data_ptr(), t.untyped_storage().nbytes(), C)


def test_empty_views_may_start_past_their_storage() -> None:
    torch = pytest.importorskip("torch")
    t = torch.zeros(4, C)
    empty = t[4:]  # offset == capacity, no element
    v = describe(empty, what="e")
    assert v.span_bytes == 0
    np_empty = np.zeros((4, C), np.float32)[4:]
    assert describe(np_empty, what="e").span_bytes == 0


# ---------------------------------------------------------------- None arguments


@pytest.mark.parametrize(
    ("args", "param"),
    [((None, "b", "out"), "a"), (("a", None, "out"), "b"), (("a", "b", None), "out"), ((None, "b"), "a")],
)
def test_none_is_never_an_argument(prog: CompiledProgram, args: tuple[str | None, ...], param: str) -> None:
    real = {"a": ones(R, C), "b": ones(R, C), "out": ones(R, C)}
    with pytest.raises(TypeError, match=rf"add\(\): parameter '{param}' \(\w+\) is a tensor; got NoneType"):
        prog(*(None if x is None else real[x] for x in args))
    with pytest.raises(TypeError, match=r"parameter 'b' \(In\) is a tensor; got NoneType"):
        prog(ones(R, C), b=None, out=ones(R, C))


def test_jit_call_with_none_raises_type_error_too() -> None:
    with pytest.raises(TypeError, match="parameter 'a' is a tensor; got NoneType"):
        add(None, ones(R, C), ones(R, C))


# ---------------------------------------------------------------- aliasing (describe_call's rule)


def test_output_partially_overlapping_an_input_is_refused(prog: CompiledProgram) -> None:
    buf = seq(R + 1, C)
    with pytest.raises(
        TensorBindingError, match=r"parameters 'a' \(In, .*\) and 'out' \(Out, .*\) partially overlap"
    ):
        prog(buf[:R], ones(R, C), buf[1:])
    before = buf.copy()
    with pytest.raises(TensorBindingError, match="partially overlap"):
        prog(ones(R, C), buf[1:], buf[:R])
    np.testing.assert_array_equal(buf, before)  # nothing ran


def test_partial_overlap_refused_for_torch_tensors(prog: CompiledProgram) -> None:
    torch = pytest.importorskip("torch")
    buf = torch.zeros(R + 1, C)
    with pytest.raises(TensorBindingError, match="partially overlap"):
        prog(buf[1:], torch.ones(R, C), buf[:R])


def test_exact_aliases_disjoint_views_and_overlapping_inputs_are_accepted(prog: CompiledProgram) -> None:
    x = seq(R, C)
    want = x + x
    assert prog(x, x, x) is x  # in place: every view is the same bytes
    np.testing.assert_array_equal(x, want)
    buf = seq(2 * R, C)
    top, bottom = buf[:R], buf[R:]
    want = top + 1
    prog(top, ones(R, C), bottom)  # disjoint views of one array
    np.testing.assert_array_equal(bottom, want)
    shared = seq(R + 1, C)
    out = np.zeros((R, C), np.float32)
    prog(shared[:R], shared[1:], out)  # read-only views may overlap
    np.testing.assert_array_equal(out, shared[:R] + shared[1:])


def test_same_bytes_in_another_order_is_refused() -> None:
    sq = seq(C, C)
    p = rt.compile(add_square, sq, sq, np.zeros((C, C), np.float32))
    with pytest.raises(TensorBindingError, match="same bytes with different layouts"):
        p(sq, ones(C, C), sq.T)  # an in-place transpose: same byte span, not the same elements
    x = seq(C, C)
    p(x.T, ones(C, C), x.T)  # the same strided view twice is an exact alias
    np.testing.assert_array_equal(x, seq(C, C) + 1)


# ---------------------------------------------------------------- what counts as a tensor


def test_bare_array_interface_is_refused_without_dereferencing_it() -> None:
    child = run_child(
        """
        from pypto.runtime.host_tensors import TensorBindingError

        class Raw:
            shape, dtype = (R, C), np.dtype(np.float32)
            __array_interface__ = {"shape": (R, C), "typestr": "<f4", "data": (0x10, False), "version": 3}

        try:
            prog(Raw(), ones(R, C), ones(R, C))
        except TensorBindingError as exc:
            print("refused:", exc)
        """
    )
    assert child.returncode == 0, child.stderr[-2000:]
    assert "refused: add(): argument 'a': got a Raw that exposes only __array_interface__" in child.stdout


def test_buffer_protocol_objects_are_accepted(prog: CompiledProgram) -> None:
    data = bytearray(R * C * 4)
    a = memoryview(data).cast("f", (R, C))
    a[0, 0] = 5.0
    ro = memoryview(bytes(R * C * 4)).cast("f", (R, C))  # read-only input
    out = bytearray(R * C * 4)
    prog(a, ro, memoryview(out).cast("f", (R, C)))
    got = np.frombuffer(out, np.float32).reshape(R, C)
    assert got[0, 0] == 5.0
    assert not got[1:].any()
    with pytest.raises(TensorBindingError, match="argument 'out': is Out but the array is read-only"):
        prog(a, a, ro)
    flat = array.array("f", [1.0]) * (R * C)
    with pytest.raises(TensorBindingError, match=r"argument 'a': expected rank 2 .* got shape \[1024\]"):
        prog(flat, a)
    with pytest.raises(TensorBindingError, match=r"argument 'a': unsupported buffer element format 'd'"):
        prog(memoryview(bytearray(R * C * 8)).cast("d", (R, C)), a)


def test_buffer_view_inside_its_exporter_carries_the_exporter_capacity() -> None:
    data = bytearray(4 * (R + 2) * C)
    view = describe(memoryview(data).cast("f", ((R + 2), C))[2:], what="v")
    assert view.storage_nbytes == len(data)
    assert view.offset_bytes == 2 * C * 4


def test_other_objects_name_the_parameter_and_what_was_given(prog: CompiledProgram) -> None:
    with pytest.raises(TensorBindingError, match=r"argument 'b': expected a host tensor .* got list"):
        prog(ones(R, C), [[1.0] * C] * R)


# ---------------------------------------------------------------- host element access (pl.read / pl.write)


@pl.jit
def copy_element(cfg: pl.Tensor, data: pl.InOut[pl.Tensor], x: pl.Tensor, out: pl.Out[pl.Tensor]):
    src = pl.read(cfg, [0])
    dst = pl.read(cfg, [1])
    v = pl.read(data, [src])
    pl.write(data, [dst], v)
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(x, 1.0)
    return out


def _copy_args(src: int, dst: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    big = seq(16)
    return np.array([src, dst], np.int64), big, ones(R, C), np.zeros((R, C), np.float32)


def test_host_element_access_in_bounds_runs() -> None:
    cfg, big, x, out = _copy_args(2, 5)
    data = big[4:12]
    copy_element(cfg, data, x, out)
    assert data[5] == data[2] == 6.0
    np.testing.assert_array_equal(out, x + 1)


@pytest.mark.parametrize(
    ("src", "dst", "access", "index"),
    [
        (8, 0, "pl.read of 'data'", "8"),  # one past the end: the element after the view
        (-1, 0, "pl.read of 'data'", "-1"),
        (2**28, 0, "pl.read of 'data'", str(2**28)),  # far outside: segfaulted before
        (0, 8, "pl.write of 'data'", "8"),
        (0, -5, "pl.write of 'data'", "-5"),
        (0, 2**28, "pl.write of 'data'", str(2**28)),
    ],
)
def test_host_element_access_out_of_bounds_fails_the_run(src: int, dst: int, access: str, index: str) -> None:
    import simpler

    cfg, big, x, out = _copy_args(src, dst)
    before = big.copy()
    with pytest.raises(
        simpler.DeviceError,
        match=rf"{access} \(test_program_inputs\.py:\d+\): index \[{index}\] is outside the tensor "
        r"\(shape \[8\]\); nothing was accessed",
    ):
        copy_element(cfg, big[4:12], x, out)
    np.testing.assert_array_equal(big, before)  # neither the view nor its neighbours changed
    cfg, _, _, _ = _copy_args(1, 3)
    copy_element(cfg, big[4:12], x, out)  # the Worker stays usable
    assert big[7] == big[5]


def test_constant_out_of_bounds_index_is_a_compile_error() -> None:
    from pypto.ir.errors import KernelError

    @pl.jit
    def const_index(cfg: pl.Tensor, x: pl.Tensor, out: pl.Out[pl.Tensor]):
        k = pl.read(cfg, [3])
        if k > 0:
            with pl.at(level=pl.Level.CORE_GROUP):
                out[:] = pl.add(x, 1.0)
        return out

    with pytest.raises(
        KernelError, match=r"pl\.read\(cfg, \.\.\.\): index 3 of dimension 0 is outside .* \[2\]"
    ):
        rt.compile(const_index, np.zeros(2, np.int32), ones(R, C), ones(R, C))


def test_host_write_to_an_in_parameter_is_a_compile_error() -> None:
    from pypto.ir.errors import KernelError

    @pl.jit
    def write_input(flags: pl.Tensor, x: pl.Tensor, out: pl.Out[pl.Tensor]):
        pl.write(flags, [0], 1)
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = pl.add(x, 1.0)
        return out

    with pytest.raises(KernelError, match=r"writes the In parameter 'flags'.*pl\.InOut"):
        rt.compile(write_input, np.zeros(2, np.int32), ones(R, C), ones(R, C))


# ---------------------------------------------------------------- non-finite scalars


@pl.jit
def scale_at_run_time(a: pl.Tensor, out: pl.Out[pl.Tensor], alpha: pl.FP32 = pl.RUNTIME):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.mul(a, alpha)
    return out


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf"), np.float32("nan")])
def test_non_finite_scalar_cannot_be_folded_and_says_so(value: float) -> None:
    with pytest.raises(
        ValueError,
        match=r"scale: parameter 'alpha' is .*; a NaN or infinite value cannot be folded .* pl\.RUNTIME",
    ):
        scale(ones(R, C), value, np.zeros((R, C), np.float32))


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf")])
def test_non_finite_runtime_scalar_is_a_legal_value(value: float) -> None:
    out = np.zeros((R, C), np.float32)
    assert scale_at_run_time(ones(R, C), out, value) is out
    np.testing.assert_array_equal(out, np.full((R, C), value, np.float32))
    prog = rt.compile(scale, ones(R, C), pl.RUNTIME, out)
    out[:] = 0
    prog(ones(R, C), value, out)
    np.testing.assert_array_equal(out, np.full((R, C), value, np.float32))
