"""The op table's matmul entries."""

from __future__ import annotations

from pypto.ir.ops import rules
from pypto.ir.ops.entries import P, _both, _enter
from pypto.ir.ops.spec import Cpp, LangOp, OpSpec
from pypto.ir.types import MemorySpace

__all__: list[str] = []


_enter(
    LangOp(
        "matmul",
        (
            P("lhs"),
            P("rhs"),
            P("out_dtype", None),
            P("a_trans", False),
            P("b_trans", False),
            P("c_matrix_nz", False),
        ),
        """Left [M, K] x Right [K, N] -> Acc [M, N] (FP32 accumulation, INT32 for INT8 operands).

    Of tiles, ``out_dtype`` may only name the accumulator type. Of tensors (in a ``pl.at`` scope
    or a kernel), ``out_dtype`` may name any castable dtype: the product is accumulated, then
    cast once; ``a_trans=True`` / ``b_trans=True`` multiply by the transposed operand (an [K, M]
    lhs, an [N, K] rhs). Tensors may be batched, ``[.., M, K] @ [.., K, N] -> [.., M, N]``:
    the batch dims broadcast as numpy does (a 2-D operand serves every batch), one product a
    batch, ``a_trans``/``b_trans`` transposing each batch's matrix. A tile operand is transposed
    with ``pl.tile.transpose_view`` instead. ``c_matrix_nz=True`` (an NZ-laid-out result) is not
    available.""",
        _both("matmul"),
        group="matmul",
    ),
    OpSpec(
        "tile.matmul",
        rules.tile_matmul,
        2,
        2,
        Cpp("TMATMUL", (0, 1), valid="matmul"),
        dtypes=frozenset(rules.MATMUL_ACC),
        spaces=(MemorySpace.Left, MemorySpace.Right),
    ),
    OpSpec("tensor.matmul", rules.tensor_matmul, 2, 2, dtypes=frozenset(rules.MATMUL_ACC)),
)
_enter(
    LangOp(
        "matmul_acc",
        (P("acc"), P("lhs"), P("rhs"), P("a_trans", False), P("b_trans", False), P("init_cond", None)),
        """``acc + lhs @ rhs`` into the Acc tile; with a tensor-level operand (in a ``pl.at``
    scope) it is tensor-level: the product added to ``acc`` in FP32. ``a_trans``/``b_trans`` as
    for ``pl.matmul`` (tensor operands only).

    ``init_cond`` (tile operands): where it holds, ``acc`` is overwritten with ``lhs @ rhs``
    instead of accumulated into, so a split-K loop needs neither a zeroed accumulator nor a
    peeled first step: ``acc = pl.matmul_acc(acc, a, b, init_cond=(k0 == 0))``. A literal
    ``True``/``False`` picks ``pl.matmul``/``pl.matmul_acc`` when compiling; a run-time
    condition makes the kernel choose TMATMUL or TMATMUL_ACC at each step.""",
        _both("matmul_acc"),
        group="matmul",
    ),
    OpSpec(
        "tile.matmul_acc",
        rules.tile_matmul_acc,
        3,
        4,
        Cpp("TMATMUL_ACC", (1, 2), into=0),
        dtypes=frozenset(rules.MATMUL_ACC),
        spaces=(MemorySpace.Acc, MemorySpace.Left, MemorySpace.Right),
    ),
    OpSpec("tensor.matmul_acc", rules.tensor_matmul_acc, 3, 3, dtypes=frozenset(rules.MATMUL_ACC)),
)
_enter(
    LangOp(
        "matmul_bias",
        (P("lhs"), P("rhs"), P("bias")),
        """``lhs @ rhs + bias`` (tiles): the ``[1, N]`` bias row, in the accumulator type (FP32, INT32
    for INT8 operands), added to every row of the product (PTO-ISA TMATMUL_BIAS). Operands in Mat
    (upstream's form) are moved to Left, Right and Bias first.""",
        {"tile": "tile.matmul_bias"},
        group="matmul",
    ),
    OpSpec(
        "tile.matmul_bias",
        rules.tile_matmul_bias,
        3,
        3,
        Cpp("TMATMUL_BIAS", (0, 1, 2), valid="matmul"),
        dtypes=frozenset(rules.MATMUL_ACC),
        spaces=(MemorySpace.Left, MemorySpace.Right, MemorySpace.Bias),
    ),
)
_enter(
    LangOp(
        "batch_matmul",
        (P("lhs"), P("rhs")),
        """Batched products of tiles: ``[.., M, K] @ [.., K, N] -> [.., M, N]``, the batch dims
    broadcast as numpy does; an operand is an N-D tile (``pl.load`` of an N-D window into Mat), a
    ``pl.tile.transpose_view`` of one, or a 2-D tile used for every batch. One ``pl.matmul`` a
    batch (of the planes moved from Mat to Left and Right); the result is held as its ``[M, N]``
    Acc planes, which ``pl.store`` stores one by one and ``t[i]`` reads (an Acc tile cannot hold
    a batch's planes side by side on the device).""",
        {"tile": "tile.matmul"},
        group="matmul",
    ),
)
_GEMV_DOC = """``acc_phase`` (``"unspecified"``, ``"partial"``, ``"final"``) tells the device when the
    result may leave L0C; it changes no value. Operands in Mat (upstream's form) are moved to Left
    and Right first."""
_enter(
    LangOp(
        "gemv",
        (P("lhs"), P("rhs"), P("acc_phase", "unspecified")),
        f"""A row vector times a matrix (tiles): ``[1, K] @ [K, N] -> [1, N]`` in Acc, accumulated
    as ``pl.matmul`` does (PTO-ISA TGEMV). {_GEMV_DOC}""",
        {"tile": "tile.gemv"},
        group="matmul",
    ),
    OpSpec(
        "tile.gemv",
        rules.tile_gemv,
        2,
        2,
        Cpp("TGEMV", (0, 1), valid="matmul"),
        dtypes=frozenset(rules.MATMUL_ACC),
        spaces=(MemorySpace.Left, MemorySpace.Right),
        attrs=("acc_phase",),
    ),
)
_enter(
    LangOp(
        "gemv_acc",
        (P("acc"), P("lhs"), P("rhs"), P("acc_phase", "unspecified")),
        f"""``acc + lhs @ rhs`` for a ``[1, K]`` row (PTO-ISA TGEMV_ACC); ``acc`` is the ``[1, N]``
    Acc tile of a ``pl.gemv``. {_GEMV_DOC}""",
        {"tile": "tile.gemv_acc"},
        group="matmul",
    ),
    OpSpec(
        "tile.gemv_acc",
        rules.tile_gemv_acc,
        3,
        3,
        Cpp("TGEMV_ACC", (1, 2), into=0),
        dtypes=frozenset(rules.MATMUL_ACC),
        spaces=(MemorySpace.Acc, MemorySpace.Left, MemorySpace.Right),
        attrs=("acc_phase",),
    ),
)
_enter(
    LangOp(
        "gemv_bias",
        (P("lhs"), P("rhs"), P("bias"), P("acc_phase", "unspecified")),
        f"""``lhs @ rhs + bias`` for a ``[1, K]`` row and a ``[1, N]`` bias in the accumulator type
    (PTO-ISA TGEMV_BIAS). {_GEMV_DOC} A Mat bias is moved to Bias.""",
        {"tile": "tile.gemv_bias"},
        group="matmul",
    ),
    OpSpec(
        "tile.gemv_bias",
        rules.tile_gemv_bias,
        3,
        3,
        Cpp("TGEMV_BIAS", (0, 1, 2), valid="matmul"),
        dtypes=frozenset(rules.MATMUL_ACC),
        spaces=(MemorySpace.Left, MemorySpace.Right, MemorySpace.Bias),
        attrs=("acc_phase",),
    ),
)
