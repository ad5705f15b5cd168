"""simpler.CallPlan: the native fill-submit-wait path gives TaskArgs' descriptors and scalar
bits, declines (nothing submitted) whatever it does not take, and runs on a Worker."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from call_plan_forms import DYN, SCALAR_CODES, f32, fields, fmt, plan
from hypothesis import given, settings
from hypothesis import strategies as st

import simpler
from simpler import ArgDirection as D
from simpler import Buffer, CallPlan, TaskArgs
from simpler._dtypes import dtype_code
from simpler.task_args import encode_scalar
from simpler.worker import finish_plan_run


def general(*arrays: np.ndarray) -> tuple[Any, ...]:
    """The descriptors TaskArgs gives for whole arrays wrapped as simpler Buffers."""
    args = TaskArgs()
    for a in arrays:
        dt = {np.float32: "FLOAT32", np.float16: "FLOAT16", np.int64: "INT64"}[a.dtype.type]
        args.add_tensor(Buffer.wrap(a.ctypes.data, a.nbytes, owner=a).tensor(a.shape, dt), D.In)
    return args.materialize().tensors


def test_descriptors_are_taskargs_descriptors() -> None:
    p = plan(
        [
            f32(0, [DYN, 8]),
            (1, dtype_code("FLOAT16"), fmt(np.float16), 2, [3, DYN, 5], True),
            (2, dtype_code("INT64"), fmt(np.int64), 8, [DYN], False),
        ]
    )
    for rows in (1, 7):
        a = np.ones((rows, 8), np.float32)
        b = np.zeros((3, rows + 1, 5), np.float16)
        c = np.arange(rows * 3, dtype=np.int64)
        got = p.describe((a, b, c))
        assert got is not None
        assert got == (tuple(general(a, b, c)), ())


@pytest.mark.parametrize("by_fields", [False, True], ids=["buffer", "fields"])
def test_unusual_arguments_are_declined(by_fields: bool) -> None:
    p = plan([f32(0, [4, DYN]), f32(1, [4, DYN], writes=True)])
    if by_fields:
        fields(p, [np.float32, np.float32])
    a, out = np.ones((4, 8), np.float32), np.zeros((4, 8), np.float32)
    assert p.describe((a, out)) is not None
    ro = np.zeros((4, 8), np.float32)
    ro.flags.writeable = False
    base = np.zeros((8, 8), np.float32)
    for args in [
        (a, a.astype(np.float64)),  # another dtype
        (a, out.astype(out.dtype.newbyteorder())),  # another byte order
        (a, np.zeros((5, 8), np.float32)),  # a static dim differs
        (a, np.zeros((4, 8, 1), np.float32)),  # another rank
        (a, np.zeros((4, 0), np.float32)),  # empty
        (a, base[4:]),  # a view (the general path describes its storage)
        (a, np.asfortranarray(np.zeros((4, 8), np.float32))),  # not C-contiguous
        (a, ro),  # read-only but written
        (a, a),  # one array twice
        (a, [[0.0] * 8] * 4),  # not an array
        (a,),  # another count
        [a, out],  # not a tuple
    ]:
        assert p.describe(args) is None, args
    assert p.describe((ro, out)) is not None  # a read-only input is fine


def test_fields_give_the_buffer_descriptors() -> None:
    spec = [f32(0, [DYN, 8]), (1, dtype_code("INT64"), fmt(np.int64), 8, [DYN], True)]
    by_buffer, by_fields = plan(spec), fields(plan(spec), [np.float32, np.int64])
    for rows in (1, 3, 64):
        args = (np.ones((rows, 8), np.float32), np.arange(rows, dtype=np.int64))
        assert by_fields.describe(args) == by_buffer.describe(args) is not None
    # dtypes are compared by identity: an equal dtype object that is not numpy's singleton
    # is declined (the other paths take it)
    tagged = np.ones((2, 8), np.dtype(np.float32, metadata={"tag": 1}))
    assert by_buffer.describe((tagged, np.arange(2))) is not None
    assert by_fields.describe((tagged, np.arange(2))) is None


def test_fields_need_the_probes_to_agree() -> None:
    p = plan([f32(0, [DYN])])
    probe = np.zeros((2, 3), np.float32)
    ro = np.zeros((2, 3), np.float32)
    ro.flags.writeable = False
    dt = [np.dtype(np.float32)]
    assert not p.use_array_fields(probe[1:], ro, probe[1:], dt)  # the "owning" probe is a view
    assert not p.use_array_fields(probe, probe, probe[1:], dt)  # the "read-only" probe is writable
    assert not p.use_array_fields(probe, ro, probe, dt)  # the "view" owns its memory
    assert not p.use_array_fields(np.asfortranarray(probe), ro, probe[1:], dt)
    assert not p.reads_fields
    with pytest.raises(ValueError, match="expected 1 dtypes, got 2"):
        p.use_array_fields(probe, ro, probe[1:], dt * 2)


@settings(max_examples=200, deadline=None)
@given(
    st.sampled_from(SCALAR_CODES),
    st.one_of(
        st.integers(-(1 << 70), 1 << 70),
        st.floats(allow_nan=True),
        st.booleans(),
        st.sampled_from([0, 1, -1, 255, 256, 65504.0, 65520.0, 3.4028235e38, 3.5e38, float("inf"), -0.0]),
    ),
)
def test_scalar_bits_are_encode_scalars(code: int, value: Any) -> None:
    p = plan([], [(0, code)])
    got = p.describe((value,))
    try:
        want = encode_scalar(value, code)
    except (ValueError, OverflowError):
        assert got is None
        return
    assert got is not None
    assert got[1] == (want,)


def test_fixed_values_take_only_that_value_and_type() -> None:
    p = plan([f32(0, [2])], fixed=[(1, 3), (2, 0.5)])
    a = np.ones(2, np.float32)
    assert p.describe((a, 3, 0.5)) is not None
    assert p.describe((a, 3, -0.0 + 0.5)) is not None
    for args in [(a, 4, 0.5), (a, 3.0, 0.5), (a, True, 0.5), (a, 3, 1), (a, 3, float("nan"))]:
        assert p.describe(args) is None, args


def test_plan_checks_its_own_construction() -> None:
    with pytest.raises(ValueError, match="slot 3 is past the 2 parameters"):
        plan([f32(3, [2])], nparams=2)
    with pytest.raises(ValueError, match="unknown dtype code 99"):
        plan([(0, 99, "f", 4, [2], False)])
    with pytest.raises(ValueError, match=r"expected 1\.\.5 dims, got 0"):
        plan([f32(0, [])])
    # its descriptors are submitted unchecked: an itemsize must cover the dtype's bits
    with pytest.raises(ValueError, match="itemsize 2 is smaller than dtype code 0's 32 bits"):
        plan([(0, dtype_code("FLOAT32"), "e", 2, [2], False)])
    with pytest.raises(ValueError, match="itemsize 0"):
        plan([(0, dtype_code("FLOAT32"), "f", 0, [2], False)])
    with pytest.raises(TypeError, match="array_type"):
        CallPlan(3, 1, [], [], [], encode_scalar)


def test_runs_on_a_worker(worker: simpler.Worker, register: Callable[[str], Any], tmp_path: Path) -> None:
    h = register("vadd_tiles")
    target = worker.plan_target(h)
    assert target is not None
    p = plan([f32(0, [DYN]), f32(1, [DYN]), f32(2, [DYN], writes=True)], [(3, dtype_code("UINT32"))])
    for n in (256, 1000):
        a = np.arange(n, dtype=np.float32)
        b = np.ones(n, np.float32)
        c = np.zeros_like(a)
        run = p.run(*target, (a, b, c, 256), -1.0)
        assert run is not None
        finish_plan_run(run, None)
        np.testing.assert_array_equal(c, a + b)
    assert p.run(*target, (a, b, c, -1), -1.0) is None  # declined: nothing ran
    diagnostics = simpler.CallConfig(dep_graph=True, output_prefix=str(tmp_path))
    assert worker.plan_target(h, diagnostics) is None  # a run that writes diagnostics: run()


def test_a_bound_call_runs_returns_and_declines(
    worker: simpler.Worker, register: Callable[[str], Any]
) -> None:
    h = register("vadd_tiles")
    chip, program, settings_ = worker.plan_target(h)
    p = fields(
        plan([f32(0, [DYN]), f32(1, [DYN]), f32(2, [DYN], writes=True)], [(3, dtype_code("UINT32"))]),
        [np.float32] * 3,
    )
    declined = object()
    failed: list[Any] = []

    def finish(run: Any, timeout: Any) -> None:
        failed.append(run.error)
        finish_plan_run(run, timeout)

    one = simpler.BoundCall(p, chip, program, settings_, -1.0, [2], False, declined, finish)
    both = simpler.BoundCall(p, chip, program, settings_, -1.0, [2, 0], True, declined, finish)
    none = simpler.BoundCall(p, chip, program, settings_, -1.0, [], False, declined, finish)
    a = np.arange(1000, dtype=np.float32)
    b = np.ones(1000, np.float32)
    c = np.zeros_like(a)
    assert one((a, b, c, 256)) is c
    np.testing.assert_array_equal(c, a + b)
    c[:] = 0
    got = both((a, b, c, 256))
    assert type(got) is tuple
    assert got[0] is c
    assert got[1] is a
    assert none((a, b, c, 256)) is None
    np.testing.assert_array_equal(c, a + b)
    assert one((a, b, c, -1)) is declined  # a scalar out of range: nothing ran
    assert one((a, b, c.astype(np.float64), 256)) is declined
    assert one([a, b, c, 256]) is declined  # not a tuple
    assert failed == []
    with pytest.raises(ValueError, match="argument 4 is past the 4 parameters"):
        simpler.BoundCall(p, chip, program, settings_, -1.0, [4], False, declined, finish)
    with pytest.raises(ValueError, match="as_tuple"):
        simpler.BoundCall(p, chip, program, settings_, -1.0, [0, 1], False, declined, finish)
    worker.close()
    assert one((a, b, c, 256)) is declined  # a closed chip: nothing submitted
