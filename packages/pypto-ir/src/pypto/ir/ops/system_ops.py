"""The op table's ``pl.system.*`` entries: barriers, pipe synchronisation and core-count queries.

On the chip these order a core's pipes (``sync_src``/``sync_dst``/``bar_*``), signal between
cores (``sync_set``/``sync_wait``), set up cross-core pipes and buffers, or make the blocks of
one SPMD launch meet (``syncall``). On the simulated chip a kernel runs on one AICore thread
whose statements take effect in order, so the pipe orders and cache hints hold by construction:
the kernel emitter writes each as a comment recording it. ``syncall`` has an observable effect
and is modelled: the blocks of a launch whose kernel calls it run concurrently, one thread each,
and meet at a real barrier (codegen/kernel.py). The core-count queries are the simulated chip's
geometry (``SIM_CLUSTERS`` clusters of one AIC and two AIVs).

Every entry is a ``pl.system.<name>`` function (``LangOp.spelling``); the parser builds them
with pypto.language.system's builders, which read their keyword arguments as attributes.
"""

from __future__ import annotations

from typing import Any

from pypto.ir.dtypes import DataType
from pypto.ir.ops.spec import LangOp, OpError, OpSpec, Param
from pypto.ir.ops.table import _enter
from pypto.ir.types import ScalarType, TensorType, TupleType, Type

__all__ = [
    "HINTS",
    "PIPE_SETUP_KEYS",
    "SIM_AIV_PER_CLUSTER",
    "SIM_CLUSTERS",
    "SYNCALL_CORE_TYPES",
    "SYNCALL_MODES",
]

SIM_CLUSTERS = 24
"""Clusters (one AIC and two AIV cores each) the simulated a2a3 chip reports."""
SIM_AIV_PER_CLUSTER = 2
SYNCALL_CORE_TYPES = ("mix", "aiv_only", "aic_only")
SYNCALL_MODES = ("hard", "soft")

_NONE = TupleType(())
P = Param


def _statement(op: str, tensor_at: tuple[int, ...] = (), scalar_at: tuple[int, ...] = ()) -> Any:
    """A rule for an op used as a statement: tensors where ``tensor_at`` says, index or integer
    scalars where ``scalar_at`` says."""

    def rule(args: list[Type], attrs: dict[str, Any]) -> Type:
        for k, t in enumerate(args):
            if k in tensor_at and not isinstance(t, TensorType):
                raise OpError(f"{op}: operand {k} must be a tensor, got {t}")
            if k in scalar_at and not (
                isinstance(t, ScalarType) and not t.dtype.is_float and t.dtype is not DataType.BOOL
            ):
                raise OpError(f"{op}: operand {k} must be an integer scalar, got {t}")
        return _NONE

    return rule


def _count(args: list[Type], attrs: dict[str, Any]) -> Type:
    return ScalarType(DataType.INT32)


def _syncall(args: list[Type], attrs: dict[str, Any]) -> Type:
    if attrs.get("mode") == "soft" and (
        not args or not isinstance(args[0], TensorType) or args[0].dtype is not DataType.INT32
    ):
        got = args[0] if args else "nothing"
        raise OpError(f"pl.system.syncall(mode='soft'): gm_workspace must be an INT32 tensor, got {got}")
    checked: Type = _statement("pl.system.syncall", (0,), (1,))(args, attrs)
    return checked


def _sys(
    name: str,
    params: tuple[Param, ...],
    doc: str,
    rule: Any,
    *,
    arity: tuple[int, int] = (0, 0),
    attrs: tuple[str, ...] = (),
    core: bool = True,
) -> None:
    _enter(
        LangOp(
            name,
            params,
            doc,
            default=f"system.{name}",
            group="system",
            public=False,
            spelling=f"pl.system.{name}",
        ),
        OpSpec(f"system.{name}", rule, arity[0], arity[1], attrs=attrs, on_core=core),
    )


_PIPE_DOC = """On the simulated chip a kernel's statements take effect in program order on one thread,
    so the order this asks for holds already; the kernel records it as a comment."""

_sys(
    "sync_src",
    (P("set_pipe"), P("wait_pipe"), P("event_id")),
    f"""Set event ``event_id`` from pipe ``set_pipe`` for pipe ``wait_pipe`` (the producer half of an
    intra-core pipe dependency). {_PIPE_DOC}""",
    _statement("pl.system.sync_src"),
    attrs=("set_pipe", "wait_pipe", "event_id"),
)
_sys(
    "sync_dst",
    (P("set_pipe"), P("wait_pipe"), P("event_id")),
    f"""Wait in pipe ``wait_pipe`` for event ``event_id`` set by ``set_pipe`` (the consumer half).
    {_PIPE_DOC}""",
    _statement("pl.system.sync_dst"),
    attrs=("set_pipe", "wait_pipe", "event_id"),
)
_sys(
    "sync_set",
    (P("event_id"), P("pipe"), P("ffts_mode", None), P("core_type", None)),
    f"""Raise cross-core flag ``event_id`` (a constant or an index scalar) when ``pipe`` drains.
    {_PIPE_DOC}""",
    _statement("pl.system.sync_set", (), (0,)),
    arity=(0, 1),
    attrs=("pipe", "event_id", "ffts_mode", "core_type"),
)
_sys(
    "sync_wait",
    (P("event_id"), P("pipe"), P("core_type", None)),
    f"""Wait in ``pipe`` for cross-core flag ``event_id``. {_PIPE_DOC}""",
    _statement("pl.system.sync_wait", (), (0,)),
    arity=(0, 1),
    attrs=("pipe", "event_id", "core_type"),
)
_sys(
    "set_ffts",
    (P("workspace"),),
    """Point the cross-core flag unit at ``workspace`` (an INT64 tensor). The simulated chip has no
    flag unit; the kernel records the call.""",
    _statement("pl.system.set_ffts", (0,)),
    arity=(1, 1),
)
for _bar, _what in (("bar_v", "the vector pipe"), ("bar_m", "the cube pipe"), ("bar_all", "every pipe")):
    _sys(
        _bar,
        (),
        f"""Wait until {_what} of this core has drained. {_PIPE_DOC}""",
        _statement(f"pl.system.{_bar}"),
    )
_sys(
    "fence",
    (),
    """Order this core's global-memory writes before its later ones. The simulated chip writes
    global memory in program order; the kernel records the fence.""",
    _statement("pl.system.fence"),
    core=False,
)
_sys(
    "cacheinvalid",
    (P("tensor", None), P("shapes", None), P("offsets", None)),
    """Invalidate the data cache for ``tensor``'s region ``shapes`` at ``offsets`` (no arguments:
    all of global memory). The simulated chip has no data cache; the kernel records the call.""",
    _statement("pl.system.cacheinvalid", (0,)),
    arity=(0, 1),
)
_sys(
    "syncall",
    (P("core_type", "mix"), P("mode", "hard"), P("gm_workspace", None), P("used_cores", None)),
    """Every block of this SPMD launch waits here until all of them have arrived. On the simulated
    chip the blocks of a launch whose kernel calls it run concurrently, one thread each, and meet
    at a barrier; writes before it are seen by every block after it. ``mode="soft"`` (a barrier
    polled through the INT32 tensor ``gm_workspace``) is the same barrier there; ``used_cores``
    must then be the launch's block count, or 0 for "the launch's".""",
    _syncall,
    arity=(0, 2),
    attrs=("core_type", "mode", "blocks"),
)
# The keywords of pl.system.aic/aiv_initialize_pipe (the consumer buffers default to 0, the
# others to None); the parser reads the same names (pypto.language.system).
PIPE_SETUP_KEYS = (
    "c2v_consumer_buf",
    "v2c_consumer_buf",
    "dir_mask",
    "slot_size",
    "slot_num",
    "local_slot_num",
    "id",
)
for _pipe in ("aic_initialize_pipe", "aiv_initialize_pipe"):
    _sys(
        _pipe,
        tuple(P(k, 0 if k.endswith("_consumer_buf") else None) for k in PIPE_SETUP_KEYS),
        """Set up the cube/vector data pipe of this core (direction mask, slot size and count). The
    simulated chip has no cross-core pipe; the kernel records the call.""",
        _statement(f"pl.system.{_pipe}"),
        attrs=PIPE_SETUP_KEYS,
    )
_sys(
    "reserve_buffer",
    (P("name"), P("size"), P("base", None)),
    """Reserve ``size`` bytes of on-chip buffer named ``name`` for a peer core to import. The
    simulated chip has no shared on-chip buffer; the kernel records the call.""",
    _statement("pl.system.reserve_buffer"),
    attrs=("name", "size", "base"),
)
_sys(
    "import_peer_buffer",
    (P("name"), P("peer_func")),
    """Import buffer ``name`` reserved by kernel ``peer_func``. The simulated chip has no shared
    on-chip buffer; the kernel records the call.""",
    _statement("pl.system.import_peer_buffer"),
    attrs=("name", "peer_func"),
)
_sys(
    "available_cluster_count",
    (),
    f"""The number of clusters (one AIC and two AIV cores each) of the chip, an INT32; on the
    simulated chip {SIM_CLUSTERS}, known when compiling (so it may size a ``pl.spmd`` launch).""",
    _count,
    core=False,
)
_sys(
    "available_aiv_count",
    (),
    f"""The number of vector cores of the chip, an INT32; on the simulated chip
    {SIM_CLUSTERS * SIM_AIV_PER_CLUSTER}, known when compiling.""",
    _count,
    core=False,
)

HINTS = frozenset(
    f"system.{n}"
    for n in (
        "sync_src",
        "sync_dst",
        "sync_set",
        "sync_wait",
        "set_ffts",
        "bar_v",
        "bar_m",
        "bar_all",
        "fence",
        "cacheinvalid",
        "aic_initialize_pipe",
        "aiv_initialize_pipe",
        "reserve_buffer",
        "import_peer_buffer",
    )
)
"""The ``pl.system`` statements the simulated chip records without an effect."""
