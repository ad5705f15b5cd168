"""The op table: every op's name, signature, doc, operand rules, result type and C++ call.

Tile ops (``tile.*``) work on on-chip tiles; tensor ops (``tensor.*``) are the same
computations written on whole tensors inside a ``pl.at`` scope, which the tensor-to-tile
pass lowers to load/compute/store. ``OPS`` holds the IR ops (``OpSpec``), ``LANGUAGE`` the
``pl.*`` functions (``LangOp``), both filled by ``pypto.ir.ops.table``; ``infer`` checks
operands and returns the result type, or raises ``OpError`` with a sentence that says what is
wrong and how to fix it (the parser attaches the source position).

Modules: ``spec`` (the records and the registry), ``rules`` (the type rules, gathered from one
``*_rules`` module per op family), ``table`` (the entries, from one ``*_table`` module per
family, entered with ``entries``), ``system_ops`` (the ``pl.system`` entries), ``comm_rules`` and ``comm_table`` (the
cross-rank ``pld`` rules and entries).
"""

from __future__ import annotations

from pypto.ir.ops import comm_table as _comm_table  # noqa: F401  # the pld entries
from pypto.ir.ops import pipe_ops as _pipe_ops  # noqa: F401  # the cross-core pipe entries
from pypto.ir.ops import spec
from pypto.ir.ops import system_ops as _system_ops  # noqa: F401  # the pl.system entries
from pypto.ir.ops import table as _table  # noqa: F401  # fills OPS and LANGUAGE
from pypto.ir.ops.rules import acc_dtype, tile_shape_for
from pypto.ir.ops.spec import *  # noqa: F403 -- spec's names (spec.__all__) are this package's

# spec's names, and the two helpers from rules
__all__ = ["acc_dtype", "tile_shape_for"]
__all__ += spec.__all__
