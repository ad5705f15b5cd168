"""The op table's cross-rank entries (``pypto.language.distributed`` as ``pld``): kernels of
multi-chip programs reaching other ranks' windows.

Not ``pl`` functions: ``pld`` exports them (``LangOp.spelling``). The kernel emitter writes each
as one call of simpler/tile/comm.hpp (``comm_cpp`` in codegen/kernel.py); the type rules are in
``comm_rules``.
"""

from __future__ import annotations

from pypto.ir.ops import comm_rules
from pypto.ir.ops.spec import LangOp, OpSpec, Param
from pypto.ir.ops.table import _enter
from pypto.ir.types import AtomicType

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
    """A Vec tile of ``shape`` loaded from rank ``peer``'s window ``target`` at ``offsets``.""",
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
_comm(
    "put",
    "pld.tensor.put",
    (P("dst"), P("peer"), P("src"), P("atomic", AtomicType.None_)),
    """Copy this rank's ``src`` into rank ``peer``'s window ``dst`` (same shape and dtype);
    ``atomic=pld.AtomicType.Add`` adds it element by element, atomically.""",
    OpSpec("comm.put", comm_rules.put, 3, 3, attrs=("atomic",)),
)
_comm(
    "get",
    "pld.tensor.get",
    (P("dst"), P("peer"), P("src")),
    """Copy rank ``peer``'s window ``src`` into this rank's ``dst`` (same shape and dtype).""",
    OpSpec("comm.get", comm_rules.get, 3, 3),
)
