"""Properties of the whole pipeline on generated programs: every stage verifies, lowering is
deterministic, SSA is idempotent, and codegen emits one library call per tile op."""

from __future__ import annotations

import re
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pypto_ir_test_helpers import HostArray, load_source

from pypto.ir.codegen import generate_kernel
from pypto.ir.nodes import Assign, Call, structural_equal, walk_stmts
from pypto.ir.passes import ssa
from pypto.ir.pipeline import lower

UNARY = ["pl.exp", "pl.abs", "pl.neg", "pl.relu", "pl.sqrt"]
BINARY = ["pl.add", "pl.sub", "pl.mul", "pl.maximum", "pl.minimum"]


@st.composite
def programs(draw: st.DrawFn) -> str:
    """Source of a @pl.jit function: a random chain of tile ops, optionally inside a loop."""
    n = draw(st.integers(1, 6))
    lines = ["x0 = pl.load(a, [i * 8, 0], [8, 16])", "y0 = pl.load(b, [i * 8, 0], [8, 16])"]
    names = ["x0", "y0"]
    for k in range(n):
        if draw(st.booleans()):
            op = draw(st.sampled_from(UNARY))
            lines.append(f"t{k} = {op}({draw(st.sampled_from(names))})")
        else:
            op = draw(st.sampled_from(BINARY))
            rhs = draw(st.one_of(st.sampled_from(names), st.just("1.5")))
            lines.append(f"t{k} = {op}({draw(st.sampled_from(names))}, {rhs})")
        names.append(f"t{k}")
    if draw(st.booleans()):  # rebind a name: exercises SSA versions
        lines.append(f"x0 = pl.add({names[-1]}, x0)")
        names.append("x0")
    lines.append(f"pl.store({names[-1]}, [i * 8, 0], c)")
    body = "\n".join("            " + ln for ln in lines)
    return (
        "import pypto.language as pl\n\n\n@pl.jit\ndef generated(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):\n"
        "    with pl.at(level=pl.Level.CORE_GROUP):\n        for i in pl.range(2):\n"
        + body
        + "\n    return c\n"
    )


def _load(tmp: Path, source: str):  # type: ignore[no-untyped-def]
    return load_source(source, tmp).generated


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(source=programs())
def test_generated_programs_lower_deterministically(source: str, tmp_path_factory) -> None:  # type: ignore[no-untyped-def]
    fn = _load(tmp_path_factory.mktemp("gen"), source)
    args = (HostArray((16, 16)), HostArray((16, 16)), HostArray((16, 16)))
    program = fn.specialize(*args).program
    once = ssa.run(program)
    assert structural_equal(ssa.run(once), once)  # SSA of SSA changes nothing
    first = lower(program)  # verifies after every stage
    second = lower(program)
    assert first.program == second.program
    kernel = first.program.functions["generated_k0"]
    tile_ops = [
        s.value.op
        for s in walk_stmts(kernel.body)
        if isinstance(s, Assign) and isinstance(s.value, Call) and s.value.op.startswith("tile.")
    ]
    text = generate_kernel(kernel).text
    # one instruction per tile op (plus the store statement)
    calls = len(re.findall(r"^\s*T(?!ASSIGN)[A-Z_0-9]+\(", text, re.M))
    assert calls == len(tile_ops) + 1
    assert "pt::" not in text
