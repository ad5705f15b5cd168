"""``pl.tile``: the tile-level spelling of the ops (``pl.tile.assemble``, ``pl.tile.fillpad``,
``pl.tile.load``, ...). The same functions as ``pl.*``, for every op of the table with a tile
form; the names say the operands are tiles."""

from typing import Any

from pypto.language import ops as _ops

__all__ = list(_ops.TILE_LEVEL)

globals().update({_name: getattr(_ops, _op) for _name, _op in _ops.TILE_LEVEL.items()})

# The SPMD block queries are read in kernels but are no ops of the table, so they are not in
# __all__ (the op list): pl.tile.get_block_idx() / get_block_num(), and the vector lane of a
# pl.split_aiv loop, pl.tile.get_subblock_idx(). pl.tile.max / pl.tile.min are upstream's
# spelling of pl.max / pl.min (of two scalars), pl.tile.aiv_shard / aic_gather of the lanes'
# pl.aiv_shard / pl.aic_gather.
# pl.tile.MaskPattern names the column patterns of pl.tile.gather_mask (a constant, no op).
from pypto.ir.ops.sort_rules import MaskPattern  # noqa: E402, F401
from pypto.language.dsl import (  # noqa: E402, F401
    aic_gather,
    aiv_shard,
    get_block_idx,
    get_block_num,
    get_subblock_idx,
    max,
    min,
)

# pl.tile.alloc reserves bytes of an on-chip buffer for tiles placed with pl.MemRef; it is no
# op of the table either (pypto.language.memref).
from pypto.language.memref import alloc  # noqa: E402, F401


def __getattr__(name: str) -> Any:
    # Declared so that static checkers accept ``pl.tile.add``; the ops are set above from the table.
    from pypto.language.suggest import instead_of

    hint = instead_of(name, __all__, prefix="pl.tile.", close_names=False)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}" + (f"; {hint}" if hint else ""))
