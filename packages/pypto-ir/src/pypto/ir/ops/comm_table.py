"""The op table's cross-rank entries (``pypto.language.distributed`` as ``pld``): kernels of
multi-chip programs reaching other ranks' windows.

Not ``pl`` functions: ``pld`` exports them (``LangOp.spelling``). The kernel emitter writes each
as PTO-ISA communication instructions (TNOTIFY, TWAIT, TPUT, TGET; TLOAD/TSTORE through a peer's
view for the tile forms) or a collective's schedule of them in simpler/kernel_collectives.hpp
(``comm_call`` in codegen/kernel_emit.py);
the type rules are in ``comm_rules``, the parser's builders in pypto/language/op_builders.py and
pypto/language/comm_builders.py.
"""

from __future__ import annotations

from pypto.ir.ops import comm_rules
from pypto.ir.ops.spec import LangOp, OpSpec, Param
from pypto.ir.ops.table import _enter
from pypto.ir.types import AtomicType, ReduceOp

__all__: list[str] = []

P = Param


def _comm(name: str, spelling: str, params: tuple[Param, ...], doc: str, spec: OpSpec) -> None:
    _enter(
        LangOp(name, params, doc, default=spec.name, group="distributed", public=False, spelling=spelling),
        spec,
    )


_comm(
    "get_comm_ctx",
    "pld.get_comm_ctx",
    (P("dist_tensor"),),
    """The comm context of a window: ``ctx = pld.get_comm_ctx(signal)``, read by ``pld.rank(ctx)``
    and ``pld.nranks(ctx)``.""",
    OpSpec("comm.ctx", comm_rules.comm_ctx, 1, 1),
)
_comm(
    "comm_rank",
    "pld.rank",
    (P("ctx"),),
    """This rank's number (INT32, 0 <= rank < nranks).""",
    OpSpec("comm.rank", comm_rules.comm_query("pld.rank"), 1, 1),
)
_comm(
    "comm_nranks",
    "pld.nranks",
    (P("ctx"),),
    """The number of ranks of the program (INT32).""",
    OpSpec("comm.nranks", comm_rules.comm_query("pld.nranks"), 1, 1),
)
_comm(
    "notify",
    "pld.system.notify",
    (P("target"), P("peer"), P("offsets"), P("value"), P("op")),
    """Signal rank ``peer``: its INT32 cell ``target[offsets]`` gets ``value`` added atomically
    (``op=pld.NotifyOp.AtomicAdd``) or stored (``Set``), after every earlier write of the kernel.""",
    OpSpec("comm.notify", comm_rules.notify, 3, 3, attrs=("op",), offsets_at=2),
)
_comm(
    "wait",
    "pld.system.wait",
    (P("signal"), P("offsets"), P("expected"), P("cmp")),
    """Wait until this rank's INT32 cell ``signal[offsets]`` is ``== expected``
    (``cmp=pld.WaitCmp.Eq``) or ``>= expected`` (``Ge``). A wait that is not satisfied within the
    program's timeout fails the dispatch, naming the rank, the cell and the value seen.""",
    OpSpec("comm.wait", comm_rules.wait, 2, 2, attrs=("cmp",), offsets_at=1),
)
_comm(
    "barrier",
    "pld.tensor.barrier",
    (P("signal"),),
    """Wait until every rank has reached this barrier; returns ``signal``. ``signal`` is an INT32
    window with one cell per rank (``[nranks, 1]`` or ``[nranks]``); the barrier leaves it as it
    found it, so it may be used again at once.""",
    OpSpec("comm.barrier", comm_rules.barrier, 1, 1),
)
_comm(
    "remote_load",
    "pld.tile.remote_load",
    (P("target"), P("peer"), P("offsets"), P("shape"), P("valid_shape", None)),
    """A Vec tile of ``shape`` loaded from rank ``peer``'s window ``target`` at ``offsets``;
    ``valid_shape`` (at most ``shape``) loads only that part, the tile's valid shape.""",
    OpSpec("comm.remote_load", comm_rules.remote_load, 2, 2, attrs=("shape",), offsets_at=2),
)
_comm(
    "remote_store",
    "pld.tile.remote_store",
    (P("src_tile"), P("target"), P("peer"), P("offsets"), P("atomic", AtomicType.None_)),
    """Store ``src_tile`` into rank ``peer``'s window ``target`` at ``offsets``;
    ``atomic=pld.AtomicType.Add`` adds it element by element, atomically.""",
    OpSpec("comm.remote_store", comm_rules.remote_store, 3, 3, attrs=("atomic",), offsets_at=3),
)
_REGION = (P("dst_offsets", None), P("src_offsets", None), P("shape", None))
_CHUNKS = (P("chunk_rows", 0), P("chunk_cols", 0), P("pipeline", False))
_comm(
    "put",
    "pld.tensor.put",
    (P("dst"), P("peer"), P("src"), *_REGION, P("atomic", AtomicType.None_), *_CHUNKS),
    """Copy this rank's ``src`` into rank ``peer``'s window ``dst`` (same shape and dtype);
    ``atomic=pld.AtomicType.Add`` adds it element by element, atomically. ``dst_offsets``,
    ``src_offsets`` and ``shape`` (all three or none) copy the region ``src[src_offsets : + shape]``
    to ``dst[dst_offsets : + shape]``. ``chunk_rows``/``chunk_cols``/``pipeline`` size the
    hardware's staging tiles; they are checked and do not change the result.""",
    OpSpec(
        "comm.put", comm_rules.put, 3, 3, attrs=("atomic", "region", "chunk_rows", "chunk_cols", "pipeline")
    ),
)
_comm(
    "get",
    "pld.tensor.get",
    (P("dst"), P("peer"), P("src"), *_REGION, *_CHUNKS),
    """Copy rank ``peer``'s window ``src`` into this rank's ``dst`` (same shape and dtype);
    regions and chunking as for ``pld.tensor.put``.""",
    OpSpec("comm.get", comm_rules.get, 3, 3, attrs=("region", "chunk_rows", "chunk_cols", "pipeline")),
)

# Collectives: every rank calls one with the same shapes and signal; each is one call of
# simpler/kernel_collectives.hpp, a schedule of PTO-ISA communication instructions (TNOTIFY/TWAIT
# barriers, TREDUCE, TBROADCAST, TPUT, TGET).
_comm(
    "allreduce",
    "pld.tensor.allreduce",
    (P("target"), P("signal", None), P("op", ReduceOp.Sum), P("mode", "mesh"), P("core_num", 1)),
    """Every rank's window ``target`` becomes the element-wise ``op`` (``pld.ReduceOp.Sum``,
    ``Max``, ``Min``, ``Prod``) of all ranks' ``target``; returns ``target``. ``mode="mesh"``:
    ``signal`` is INT32 with one cell per rank (``[nranks]``, ``[nranks, 1]`` or
    ``[nranks, core_num]``); ``mode="ring"``: a ``[2 * (nranks - 1), nranks]`` signal. The
    signal is left all zero, so it may be reused at once. In a host orchestrator ``signal`` may
    be omitted (mesh only): the compiler allocates one.""",
    OpSpec("comm.allreduce", comm_rules.allreduce, 2, 2, attrs=("op", "mode", "core_num")),
)
_comm(
    "broadcast",
    "pld.tensor.broadcast",
    (P("target"), P("signal"), P("root")),
    """Every rank's window ``target`` becomes rank ``root``'s; returns ``target``.""",
    OpSpec("comm.broadcast", comm_rules.broadcast, 3, 3),
)
_comm(
    "allgather",
    "pld.tensor.allgather",
    (P("local_data"), P("target"), P("signal")),
    """Row block ``r`` of every rank's window ``target`` (its leading dim split into ``nranks``
    blocks) becomes rank ``r``'s ``local_data`` (one block's elements); returns ``target``.""",
    OpSpec("comm.allgather", comm_rules.allgather, 3, 3),
)
_comm(
    "reduce_scatter",
    "pld.tensor.reduce_scatter",
    (P("target"), P("signal"), P("op", ReduceOp.Sum)),
    """Row block ``r`` of rank ``r``'s window ``target`` becomes the element-wise ``op`` of block
    ``r`` of every rank's ``target``; returns ``target`` (its other blocks keep their values).""",
    OpSpec("comm.reduce_scatter", comm_rules.reduce_scatter, 2, 2, attrs=("op",)),
)
_comm(
    "all_to_all",
    "pld.tensor.all_to_all",
    (P("input"), P("target"), P("signal")),
    """Row block ``d`` of rank ``r``'s ``input`` lands in row block ``r`` of rank ``d``'s window
    ``target`` (leading dims split into ``nranks`` blocks); returns ``target``.""",
    OpSpec("comm.all_to_all", comm_rules.all_to_all, 3, 3),
)
_comm(
    "all_to_all_v",
    "pld.tensor.all_to_all_v",
    (P("input"), P("target"), P("signal"), P("send_counts"), P("recv_counts")),
    """``all_to_all`` whose blocks hold a variable number of valid rows: rank ``d``'s
    ``recv_counts`` cell ``r`` is set to ``min(send_counts[d], block rows)`` of rank ``r``. Whole
    blocks are copied; rows past the count hold whatever the sender had there.""",
    OpSpec("comm.all_to_all_v", comm_rules.all_to_all_v, 5, 5),
)
_comm(
    "defer_wait",
    "pld.system.defer_wait",
    (P("signal"), P("offsets"), P("expected"), P("cmp")),
    """Make the kernel's task complete only once this rank's INT32 cell ``signal[offsets]`` is
    ``>= expected`` (``cmp=pld.WaitCmp.Ge``); the kernel itself goes on. Work that needs the
    condition belongs in a later task.""",
    OpSpec("comm.defer_wait", comm_rules.defer_wait, 2, 2, attrs=("cmp",), offsets_at=1),
)
