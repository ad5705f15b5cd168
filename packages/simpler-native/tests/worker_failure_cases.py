"""The failing runs of the `failures` orchestration (csrc/): the arguments of each case and the
message its failure must carry. Shared by the failure tests and the inline-run tests, which
check that a run on the calling thread fails as the same run on the core threads does."""

from __future__ import annotations

import numpy as np

from simpler import ArgDirection as D
from simpler import Buffer, CallConfig, DataType, TaskArgs


def failure_args(case: int) -> tuple[TaskArgs, np.ndarray]:
    x = np.zeros(16, dtype=np.float32)
    t = Buffer.wrap(x.ctypes.data, x.nbytes, owner=x).tensor((16,), DataType.FLOAT32)
    return TaskArgs().add_tensor(t, D.In).add_scalar(case, DataType.INT64), x


CASES = [
    (0, r"task 0 \(kernel 'fails' \(func_id 8, AIV\)\) failed: tile access out of bounds at row 16"),
    (1, r"task 0 \(kernel 'throws' \(func_id 9, AIV\)\) failed: threw kernel exploded"),
    (2, r"orchestration 'failures' threw orchestration exploded"),
    (3, r"task 0: func_id 42 is not a child of this callable \(children: 0, 1, .*9\)"),
    (4, r"task 0 \(kernel 'empty' .*\): expected 1 tensors and 0 scalars, got 2 and 0"),
    (5, r"orchestration 'failures' returned status 3"),
    (6, r"explicit dependency 0 \(12345\) is not a task id returned by an earlier submit"),
    (7, r"deadlock: ring 1's heap of 1024 bytes cannot fit 704 bytes; 704 bytes are held by scopes"),
    (
        8,
        r"task 0 \(kernel 'empty' .*\): tensor 0: invalid descriptor .*expected a DEVICE tensor inside its buffer",
    ),
    (9, r"tensor 0 is tagged Out but the kernel signature says In"),
    (10, r"task 6 \(kernel 'muladd' .*\): needs 6 dependency entries but ring 0's dependency pool holds 5"),
]

# host_build_graph keeps every intermediate until the run ends: case 7 there exceeds the graph's
# byte bound (workspace_budget_bytes) instead of deadlocking on a ring heap.
HBG_MESSAGES = {
    7: r"alloc_tensor: 704 bytes would exceed the host-built graph's 1024 bytes for intermediate tensors "
    r"\(704 in use\): host_build_graph keeps every intermediate until the run ends, within workspace_budget_bytes",
}


def failure_config(runtime: str, case: int, message: str, **fields: object) -> tuple[CallConfig, str]:
    """The run settings of the failure cases on ``runtime`` and the message expected there."""
    if runtime == "host_build_graph":
        return CallConfig(heap=1024, dep_pool=5, workspace_budget_bytes=1024, **fields), HBG_MESSAGES.get(
            case, message
        )
    return CallConfig(heap=1024, dep_pool=5, **fields), message
