"""The op table: every ``pl.*`` op once, with its signature, doc, IR forms, type rules and C++.

An entry is the whole op for the compiler: ``pypto.language`` builds ``pl.<name>`` (and
``pl.tile.<name>`` for ops with a tile form) from it, the parser dispatches a call to the form
its first operand selects and checks it with the form's rule, and the kernel emitter writes the
tile form as the ``Cpp`` call recorded there. The entries live in one module per op family,
entered (``entries._enter``) in the order imported here, which is the order of the op
reference page (docs/reference/ops.md); the ``pl.system`` and cross-rank ``pld`` entries are
``system_ops`` and ``comm_table``. A new unary op is one ``_unary(...)`` line in
``elementwise_table`` naming its PTO-ISA instruction (or a simpler/kernel_args.hpp helper);
tests/test_op_table.py checks the table against the ``pl`` exports, the builders and a PTO-ISA
implementation's headers.
"""

from __future__ import annotations

# The families, in table order (isort would sort them by name).
# isort: off
from pypto.ir.ops import movement_table  # noqa: F401
from pypto.ir.ops import sort_table  # noqa: F401
from pypto.ir.ops import elementwise_table  # noqa: F401
from pypto.ir.ops import math_table  # noqa: F401
from pypto.ir.ops import compare_table  # noqa: F401
from pypto.ir.ops import reduction_table  # noqa: F401
from pypto.ir.ops import layout_table  # noqa: F401
from pypto.ir.ops import matmul_table  # noqa: F401
from pypto.ir.ops import region_table  # noqa: F401
from pypto.ir.ops import task_table  # noqa: F401

# isort: on
from pypto.ir.ops.entries import P, _enter

__all__ = ["P", "_enter"]  # for the entries entered outside the families (comm_table)
