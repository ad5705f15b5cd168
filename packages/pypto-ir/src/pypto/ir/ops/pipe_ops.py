"""The op table's cross-core pipe entries, with upstream PyPTO's names: a cube (AIC) kernel
pushes tiles to the vector (AIV) cores (``pl.tpush_to_aiv``), which pop them
(``pl.tpop_from_aic``) and free the slot (``pl.tfree_to_aic``); the other direction is
``pl.tpush_to_aic`` / ``pl.tpop_from_aiv`` / ``pl.tfree_to_aiv``. Each is spelled ``pl.<name>``
and ``pl.tile.<name>``.

On the chip they are PTO-ISA's ``TPUSH`` / ``TPOP`` / ``TFREE`` on a ring of slots between the
cores of a cluster (set up by ``pl.system.aic_initialize_pipe`` / ``aiv_initialize_pipe``).
Here they are parsed and type-checked (which side of the pipe a function may use each on, the
split code, the popped tile's type); the simulated chip has no AIC-AIV pipe, so a kernel that
uses one does not compile (``PIPE_OPS``; docs/pypto-ir.md, "Cross-core pipes").
"""

from __future__ import annotations

from typing import Any

from pypto.ir.errors import PyptoCompileError
from pypto.ir.ops.spec import LangOp, OpError, OpSpec, Param
from pypto.ir.ops.table import _enter
from pypto.ir.types import MemorySpace, TileType, TupleType, Type

__all__ = ["CUBE_SIDE", "PIPE_OPS", "VECTOR_SIDE", "no_pipe"]

P = Param
_NONE = TupleType(())
_GROUP = "cross-core pipe"


def _push(name: str) -> Any:
    def rule(args: list[Type], attrs: dict[str, Any]) -> Type:
        if not isinstance(args[0], TileType):
            raise OpError(f"pl.{name}: the value pushed must be a tile, got {args[0]}")
        return _NONE

    return rule


def _pop(memory: MemorySpace) -> Any:
    def rule(args: list[Type], attrs: dict[str, Any]) -> Type:
        return TileType(tuple(attrs["shape"]), attrs["dtype"], attrs.get("memory", memory))

    return rule


def _free(name: str) -> Any:
    def rule(args: list[Type], attrs: dict[str, Any]) -> Type:
        if not isinstance(args[0], TileType):
            raise OpError(f"pl.{name}: the operand must be the tile a pop gave, got {args[0]}")
        return _NONE

    return rule


def _op(
    name: str, params: tuple[Param, ...], doc: str, rule: Any, *, arity: int, attrs: tuple[str, ...]
) -> None:
    _enter(
        LangOp(name, params, doc, default=f"tile.{name}", group=_GROUP),
        OpSpec(f"tile.{name}", rule, arity, arity, attrs=attrs),
    )


_SIM = """The simulated chip has no AIC-AIV pipe: a kernel that uses one is refused when
    compiling."""

_op(
    "tpush_to_aiv",
    (P("tile"), P("split"), P("lane_stride", None), P("id", None)),
    f"""In a cube (AIC) function: push ``tile`` to the vector cores through the cross-core pipe
    (PTO-ISA ``TPUSH``). ``split``: 0 sends it whole, 1/2 halves it up-down/left-right between
    the two vector lanes (3/4: the same over an odd extent); ``lane_stride`` the partition
    stride of a ragged split; ``id`` the pipe. {_SIM}""",
    _push("tpush_to_aiv"),
    arity=1,
    attrs=("split", "lane_stride", "id"),
)
_op(
    "tpush_to_aic",
    (P("tile"), P("split"), P("id", None)),
    f"""In a vector (AIV) function: push ``tile`` to the cube core (PTO-ISA ``TPUSH``); ``split``
    0 (whole), 1 (up-down) or 2 (left-right). {_SIM}""",
    _push("tpush_to_aic"),
    arity=1,
    attrs=("split", "id"),
)
_op(
    "tpop_from_aic",
    (P("shape", None), P("dtype", None), P("split", 0), P("lane_stride", None), P("id", None)),
    f"""In a vector (AIV) function: the next tile the cube pushed (PTO-ISA ``TPOP``), a Vec tile
    of ``shape`` and ``dtype`` (or of the assignment's ``pl.Tile[...]`` annotation). {_SIM}""",
    _pop(MemorySpace.Vec),
    arity=0,
    attrs=("shape", "dtype", "memory", "split", "lane_stride", "id"),
)
_op(
    "tpop_from_aiv",
    (P("shape", None), P("dtype", None), P("split", 0), P("id", None)),
    f"""In a cube (AIC) function: the next tile the vector cores pushed (PTO-ISA ``TPOP``), a Mat
    tile of ``shape`` and ``dtype`` (or of the assignment's annotation). {_SIM}""",
    _pop(MemorySpace.Mat),
    arity=0,
    attrs=("shape", "dtype", "memory", "split", "id"),
)
_op(
    "tfree_to_aic",
    (P("tile"), P("split", None), P("id", None)),
    f"""In a vector (AIV) function: release the pipe slot of ``tile`` (from ``pl.tpop_from_aic``)
    back to the cube (PTO-ISA ``TFREE``). {_SIM}""",
    _free("tfree_to_aic"),
    arity=1,
    attrs=("split", "id"),
)
_op(
    "tfree_to_aiv",
    (P("tile"), P("split", None), P("id", None)),
    f"""In a cube (AIC) function: release the pipe slot of ``tile`` (from ``pl.tpop_from_aiv``)
    back to the vector cores (PTO-ISA ``TFREE``). {_SIM}""",
    _free("tfree_to_aiv"),
    arity=1,
    attrs=("split", "id"),
)

CUBE_SIDE = frozenset({"tpush_to_aiv", "tpop_from_aiv", "tfree_to_aiv"})
"""The pipe ops a cube (AIC) function uses."""
VECTOR_SIDE = frozenset({"tpush_to_aic", "tpop_from_aic", "tfree_to_aic"})
"""The pipe ops a vector (AIV) function uses."""
PIPE_OPS = frozenset(f"tile.{n}" for n in CUBE_SIDE | VECTOR_SIDE)
"""The IR ops of the cross-core pipes (no kernel code on the simulated chip)."""


def no_pipe(op: str) -> PyptoCompileError:
    """The error of compiling a kernel that uses the cross-core pipe op ``op``."""
    return PyptoCompileError(
        f"pl.{op.split('.', 1)[1]}: the simulated chip has no cross-core (AIC-AIV) pipe, so a kernel "
        "that uses one cannot run here yet (PTO-ISA TPUSH/TPOP/TFREE; docs/pypto-ir.md, 'Cross-core pipes')"
    )
