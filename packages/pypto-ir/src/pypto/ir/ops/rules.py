"""The type rules of the ops: operand checks and result types, one module per op family.

A rule takes the operand types (tuple operands such as offsets left out) and the attributes
and returns the result type, or raises ``OpError`` with a sentence that says what is wrong and
how to fix it; the parser attaches the source position. Which op uses which rule, and the
facts the family rules read (memory spaces, dtypes), are entered in ``pypto.ir.ops.table``.

This module gathers the families so the table reads every rule as ``rules.<name>``:
``operand_checks`` (the checks and dtype sets they share), ``elementwise_rules``,
``reduction_rules`` (reductions and row/column broadcasts), ``compare_rules`` (bitwise,
compare, select), ``movement_rules`` (load, store, move, create), ``layout_rules`` (reshape,
transpose, concat, cast), ``matmul_rules``, ``region_rules`` (sub-tiles, windows, padding,
elements, print) and ``task_rules`` (the task graph). The cross-rank rules are ``comm_rules``.
"""

from __future__ import annotations

from pypto.ir.ops.compare_rules import MASK_CARRIERS, MASK_COL_ALIGN, bitwise, compare, mask_shape, select
from pypto.ir.ops.elementwise_rules import binary, expands, float_only, leaky, scalar_binary, unary
from pypto.ir.ops.layout_rules import (
    CASTABLE,
    scalar_cast,
    tensor_cast,
    tensor_concat,
    tensor_reshape,
    tensor_transpose,
    tile_cast,
    tile_concat,
    tile_reshape,
    tile_transpose,
    tile_transpose_view,
)
from pypto.ir.ops.matmul_rules import (
    MATMUL_ACC,
    acc_dtype,
    tensor_matmul,
    tensor_matmul_acc,
    tile_matmul,
    tile_matmul_acc,
)
from pypto.ir.ops.movement_rules import (
    GATHER_DTYPES,
    tensor_ci,
    tensor_create,
    tensor_dim,
    tensor_gather,
    tile_ci,
    tile_create,
    tile_full,
    tile_gather,
    tile_load,
    tile_move,
    tile_shape_for,
    tile_store,
    tile_tri,
)
from pypto.ir.ops.operand_checks import FLOAT, INT, VEC
from pypto.ir.ops.reduction_rules import expand, reduction
from pypto.ir.ops.region_rules import (
    debug_print,
    tensor_assemble,
    tensor_fillpad,
    tensor_fillpad_expand,
    tensor_read,
    tensor_view,
    tensor_write,
    tile_assemble,
    tile_fillpad,
    tile_fillpad_expand,
    tile_read,
    tile_set_validshape,
    tile_slice,
)
from pypto.ir.ops.task_rules import (
    array_create,
    array_get,
    array_set,
    deps_entries,
    runtime_scope_mark,
    task_dummy,
    task_invalid,
)

__all__ = [
    "CASTABLE",
    "FLOAT",
    "GATHER_DTYPES",
    "INT",
    "MASK_CARRIERS",
    "MASK_COL_ALIGN",
    "MATMUL_ACC",
    "VEC",
    "acc_dtype",
    "array_create",
    "array_get",
    "array_set",
    "binary",
    "bitwise",
    "compare",
    "debug_print",
    "deps_entries",
    "expand",
    "expands",
    "float_only",
    "leaky",
    "mask_shape",
    "reduction",
    "runtime_scope_mark",
    "scalar_binary",
    "scalar_cast",
    "select",
    "task_dummy",
    "task_invalid",
    "tensor_assemble",
    "tensor_cast",
    "tensor_ci",
    "tensor_concat",
    "tensor_create",
    "tensor_dim",
    "tensor_fillpad",
    "tensor_fillpad_expand",
    "tensor_gather",
    "tensor_matmul",
    "tensor_matmul_acc",
    "tensor_read",
    "tensor_reshape",
    "tensor_transpose",
    "tensor_view",
    "tensor_write",
    "tile_assemble",
    "tile_cast",
    "tile_ci",
    "tile_concat",
    "tile_create",
    "tile_fillpad",
    "tile_fillpad_expand",
    "tile_full",
    "tile_gather",
    "tile_load",
    "tile_matmul",
    "tile_matmul_acc",
    "tile_move",
    "tile_read",
    "tile_reshape",
    "tile_set_validshape",
    "tile_shape_for",
    "tile_slice",
    "tile_store",
    "tile_transpose",
    "tile_transpose_view",
    "tile_tri",
    "unary",
]
