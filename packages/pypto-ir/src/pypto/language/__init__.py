"""The PyPTO kernel language (``import pypto.language as pl``).

Write orchestration with ``@pl.jit`` (tensor shapes and dtypes come from the call), put
on-core work inside ``with pl.at(level=pl.Level.CORE_GROUP):`` scopes or in
``@pl.jit.incore`` kernels, and move data between tensors and tiles with ``pl.load`` /
``pl.store``:

    @pl.jit
    def add(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            c[:] = pl.add(a, b)
        return c

``@pl.program`` classes of ``@pl.function`` methods build IR directly.
"""

from typing import Any

from pypto.ir.dtypes import DataType
from pypto.ir.param_info import Layout
from pypto.ir.types import (
    AtomicType,
    FunctionType,
    Level,
    MemorySpace,
    PadValue,
    PipeType,
    Role,
    SplitMode,
    TaskIdType,
)
from pypto.language import array, optimizations, system, tensor, tile
from pypto.language import ops as _ops
from pypto.language.arg_directions import adir
from pypto.language.decorators import (
    DSLFunction,
    IncoreFunction,
    InlineFunction,
    function,
    inline,
    program,
)
from pypto.language.dsl import (
    ScopeMode,
    aic_gather,
    aiv_shard,
    at,
    cluster,
    cond,
    cross_core_slot,
    dump_tag,
    func_attr,
    get_block_idx,
    get_block_num,
    get_subblock_idx,
    manual_scope,
    max,
    min,
    no_dep,
    parallel,
    pipeline,
    range,
    scope,
    split,
    split_aiv,
    spmd,
    spmd_submit,
    static_assert,
    static_print,
    submit,
    unroll,
    while_,
    yield_,
)
from pypto.language.jit import JITFunction, Specialization, jit
from pypto.language.memref import MemRef, Ptr
from pypto.language.system import (  # upstream's short spellings of these pl.system names
    AUTO,
    aic_initialize_pipe,
    aiv_initialize_pipe,
    import_peer_buffer,
    reserve_buffer,
)
from pypto.language.text import loads, parse
from pypto.language.typing import (
    RUNTIME,
    DTypeVar,
    DynVar,
    InOut,
    Out,
    RuntimeScalarMarker,
    Scalar,
    Tensor,
    TensorSpec,
    TensorView,
    Tile,
    Tuple,
    dtype_var,
    dynamic,
)

Mem = MemorySpace
ND = Layout.ND
NZ = Layout.NZ
TensorLayout = Layout  # pl.TensorLayout.ND / .NZ, the layout a pl.TensorView names

FP32 = DataType.FP32
FP16 = DataType.FP16
BF16 = DataType.BF16
INT8 = DataType.INT8
INT16 = DataType.INT16
INT32 = DataType.INT32
INT64 = DataType.INT64
UINT8 = DataType.UINT8
UINT16 = DataType.UINT16
UINT32 = DataType.UINT32
UINT64 = DataType.UINT64
BOOL = DataType.BOOL
FP8E4M3FN = DataType.FP8E4M3FN
FP8E8M0 = DataType.FP8E8M0
FP4 = DataType.FP4E2M1
INDEX = DataType.INT64  # loop indices and offsets are 64-bit signed integers
TASK_ID = TaskIdType()  # the element type of a task-id array: pl.array.create(n, pl.TASK_ID)

__all__ = [
    "AUTO",
    "BF16",
    "BOOL",
    "FP4",
    "FP8E4M3FN",
    "FP8E8M0",
    "FP16",
    "FP32",
    "INDEX",
    "INT8",
    "INT16",
    "INT32",
    "INT64",
    "ND",
    "NZ",
    "RUNTIME",
    "TASK_ID",
    "UINT8",
    "UINT16",
    "UINT32",
    "UINT64",
    "AtomicType",
    "DSLFunction",
    "DTypeVar",
    "DataType",
    "DynVar",
    "FunctionType",
    "InOut",
    "IncoreFunction",
    "InlineFunction",
    "JITFunction",
    "Layout",
    "Level",
    "Mem",
    "MemRef",
    "MemorySpace",
    "Out",
    "PadValue",
    "PipeType",
    "Ptr",
    "Role",
    "RuntimeScalarMarker",
    "Scalar",
    "ScopeMode",
    "Specialization",
    "SplitMode",
    "Tensor",
    "TensorLayout",
    "TensorSpec",
    "TensorView",
    "Tile",
    "Tuple",
    "adir",
    "aic_gather",
    "aic_initialize_pipe",
    "aiv_initialize_pipe",
    "aiv_shard",
    "array",
    "at",
    "cluster",
    "cond",
    "cross_core_slot",
    "dtype_var",
    "dump_tag",
    "dynamic",
    "func_attr",
    "function",
    "get_block_idx",
    "get_block_num",
    "get_subblock_idx",
    "import_peer_buffer",
    "inline",
    "jit",
    "loads",
    "manual_scope",
    "max",
    "min",
    "no_dep",
    "optimizations",
    "parallel",
    "parse",
    "pipeline",
    "program",
    "range",
    "reserve_buffer",
    "scope",
    "split",
    "split_aiv",
    "spmd",
    "spmd_submit",
    "static_assert",
    "static_print",
    "submit",
    "system",
    "tensor",
    "tile",
    "unroll",
    "while_",
    "yield_",
]

# The ops: one ``pl.<name>`` per public entry of the op table (pypto.ir.ops.table).
globals().update({_name: getattr(_ops, _op) for _name, _op in _ops.PL_LEVEL.items()})
__all__ += list(_ops.PL_LEVEL)


def __getattr__(name: str) -> Any:
    # Declared so that static checkers accept ``pl.add`` and the other ops, which are set in the
    # module's globals above from the op table; at run time an unknown name is an
    # AttributeError as for any module, with what to write instead when there is a fit.
    from pypto.language.suggest import instead_of

    hint = instead_of(name, __all__, close_names=False)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}" + (f"; {hint}" if hint else ""))
