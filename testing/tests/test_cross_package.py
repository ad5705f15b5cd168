"""Facts that two packages pin independently (they never import each other) must agree.

Runs where the whole stack is installed (the `tests` session); skipped, saying why, where a
package is absent.
"""

from __future__ import annotations

import pytest

ir_dtypes = pytest.importorskip("pypto.ir.dtypes", reason="pypto-ir is not installed in this session")
kernel = pytest.importorskip("simpler.kernel", reason="simpler-native is not installed in this session")

# simpler spells the float types out; pypto.language uses the short names.
_SPELLING = {"FLOAT32": "FP32", "FLOAT16": "FP16", "BFLOAT16": "BF16"}


def test_dtype_wire_codes_agree() -> None:
    native = {_SPELLING.get(name, name): member.value for name, member in kernel.DataType.__members__.items()}
    ours = {dt.value: dt.wire_code for dt in ir_dtypes.DataType}
    assert ours == native
