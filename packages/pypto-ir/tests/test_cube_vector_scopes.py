"""Generated ``pl.at`` scopes that mix tensor-level matmuls (cube) and elementwise ops (vector)
either compile to kernel sources or fail with a located user error (a KernelError carrying the
user's ``file:line``), never with an internal error. Codegen only: no C++ is compiled here, so
the lowered kernels are also checked for moves no platform performs (L1 to Vec)."""

from __future__ import annotations

import tempfile
import textwrap
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pypto_ir_test_helpers import HostArray, load_source

from pypto.ir import Contract
from pypto.ir.compile import compile_to_files
from pypto.ir.errors import KernelError
from pypto.ir.nodes import Assign, Call, walk_stmts
from pypto.ir.types import MemorySpace, TileType

UNARY = ("pl.exp({})", "pl.neg({})", "pl.relu({})", "pl.recip(pl.add(pl.exp(pl.neg({})), 1.0))")
BINARY = ("pl.add({}, {})", "pl.mul({}, {})", "pl.sub({}, {})")


@st.composite
def scopes(draw: st.DrawFn) -> tuple[str, tuple[int, int, int], int]:
    """Source of one @pl.jit function: x [m, k] times weights [k, n], then vector ops on the
    products (and on earlier vector values), the last value written to out."""
    m = draw(st.sampled_from((16, 32, 64)))
    k = draw(st.sampled_from((32, 128, 256)))
    n = draw(st.sampled_from((32, 128, 256)))
    n_weights = draw(st.integers(1, 2))
    lines = [f"p{i} = pl.matmul(x, w{i})" for i in range(n_weights)]
    values = [f"p{i}" for i in range(n_weights)]
    for j in range(draw(st.integers(1, 4))):
        if draw(st.booleans()):
            expr = draw(st.sampled_from(UNARY)).format(draw(st.sampled_from(values)))
        else:
            a, b = draw(st.sampled_from(values)), draw(st.sampled_from(values))
            expr = draw(st.sampled_from(BINARY)).format(a, b)
        lines.append(f"v{j} = {expr}")
        values.append(f"v{j}")
    weights = "".join(f"w{i}: pl.Tensor, " for i in range(n_weights))
    src = "\n".join(
        [
            "import pypto.language as pl",
            "",
            "",
            "@pl.jit",
            f"def scope(x: pl.Tensor, {weights}out: pl.Out[pl.Tensor]):",
            "    with pl.at(level=pl.Level.CORE_GROUP):",
            *(f"        {line}" for line in lines),
            f"        out[:] = {values[-1]}",
            "    return out",
            "",
        ]
    )
    return src, (m, k, n), n_weights


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scopes())
def test_mixed_cube_vector_scopes_compile_or_fail_located(
    case: tuple[str, tuple[int, int, int], int],
) -> None:
    src, (m, k, n), n_weights = case
    with tempfile.TemporaryDirectory() as d:
        module = load_source(src, Path(d))
        fn = module.scope
        args = [HostArray((m, k)), *(HostArray((k, n)) for _ in range(n_weights)), HostArray((m, n))]
        error: KernelError | None = None
        try:
            result = compile_to_files(
                fn.specialize(*args),  # type: ignore[attr-defined]
                Path(d) / "out",
                contract=Contract.KERNEL,
                platform="a2a3sim",
            )
        except KernelError as exc:  # a user error (e.g. the tiles do not fit): it must say where
            error = exc
    if error is not None:
        assert error.span is not None, f"unlocated error for\n{src}\n{error}"
        assert f"{module.__file__}:" in str(error), str(error)
        return
    for f in result.program.funcs:
        for s in walk_stmts(f.body):
            if isinstance(s, Assign) and isinstance(s.value, Call) and s.value.op == "tile.move":
                src_type = s.value.args[0].type  # type: ignore[union-attr]
                assert isinstance(src_type, TileType)
                assert not (
                    src_type.memory is MemorySpace.Mat and s.value.attr("memory") is MemorySpace.Vec
                ), f"{f.name} moves an L1 tile to Vec (no platform can):\n{src}"


def test_swiglu_in_one_scope_compiles_past_one_tile() -> None:
    """Two matmuls too large for one cube tile each, and the SwiGLU epilogue, in one scope."""
    src = """
        import pypto.language as pl


        @pl.jit
        def scope(x: pl.Tensor, wg: pl.Tensor, wu: pl.Tensor, out: pl.Out[pl.Tensor]):
            with pl.at(level=pl.Level.CORE_GROUP):
                g = pl.matmul(x, wg)
                u = pl.matmul(x, wu)
                out[:] = pl.mul(pl.mul(g, pl.recip(pl.add(pl.exp(pl.neg(g)), 1.0))), u)
            return out
        """
    with tempfile.TemporaryDirectory() as d:
        fn = load_source(textwrap.dedent(src), Path(d)).scope
        args = [HostArray((64, 256)), HostArray((256, 256)), HostArray((256, 256)), HostArray((64, 256))]
        result = compile_to_files(
            fn.specialize(*args),  # type: ignore[attr-defined]
            Path(d) / "out",
            contract=Contract.KERNEL,
            platform="a2a3sim",
        )
    (kernel,) = [f for f in result.program.funcs if f.name.endswith("_k0")]
    scratch = [
        s.value.attr("memory")
        for s in walk_stmts(kernel.body)
        if isinstance(s, Assign) and isinstance(s.value, Call) and s.value.op == "tile.create"
    ]
    assert scratch == [
        MemorySpace.Vec,
        MemorySpace.Vec,
    ]  # each product assembled where the vector ops read it
