"""``pl.tensor``: the tensor-level spelling of the ops (``pl.tensor.read``, ``pl.tensor.dim``,
``pl.tensor.add``, ...). The same functions as ``pl.*``, for every op of the table with a
tensor form; the names say the operands are tensors."""

from typing import Any

from pypto.language import ops as _ops

__all__ = list(_ops.TENSOR_LEVEL)

globals().update({_name: getattr(_ops, _op) for _name, _op in _ops.TENSOR_LEVEL.items()})

# pl.tensor.no_dep is pl.no_dep (a kernel call's argument marker, no op of the table), as upstream
# spells it in both places; so are pl.tensor.dump_tag (an orchestration's directive) and the SPMD
# block queries (pl.tile.get_block_idx, ...)
from pypto.language.dsl import (  # noqa: E402, F401
    dump_tag,
    get_block_idx,
    get_block_num,
    get_subblock_idx,
    no_dep,
)


def __getattr__(name: str) -> Any:
    # Declared so that static checkers accept ``pl.tensor.read``; the ops are set above from the table.
    from pypto.language.suggest import instead_of

    hint = instead_of(name, __all__, prefix="pl.tensor.", close_names=False)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}" + (f"; {hint}" if hint else ""))
