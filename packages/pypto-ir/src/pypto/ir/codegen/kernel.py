"""Kernel C++: one InCore function -> one source calling the tile library (simpler/tile.hpp).

The entry is ``extern "C" void kernel_entry(std::int64_t* args)``; ``args[i]`` follows the
kernel's ABI order: its tensor parameters in order, then its scalar parameters in order.
Every tile is a local declared where the IR defines it; every op is one library call.
Loop-carried values live in variables declared before the loop and assigned at its end.
Every tile declared is recorded (``KernelSource.tiles``): the compiler checks them against the
platform's on-chip buffers (pypto.ir.platforms) and reports their use in the metadata.
"""

from __future__ import annotations

from dataclasses import dataclass

from pypto.ir import __version__
from pypto.ir.codegen.cpp import SCALAR_HELPERS, cpp_type, ident, literal, scalar_cpp_type, scalar_expr
from pypto.ir.dtypes import DataType
from pypto.ir.errors import CompileError, Span
from pypto.ir.nodes import (
    Assign,
    Call,
    Const,
    Expr,
    ExprStmt,
    For,
    Function,
    If,
    Param,
    Return,
    Stmt,
    Var,
    Yield,
    expr_vars,
    stmt_exprs,
    walk_stmts,
)
from pypto.ir.param_info import Layout, nz_block_shape
from pypto.ir.passes.ssa import base_name
from pypto.ir.platforms import TileAlloc
from pypto.ir.types import CoreType, MemorySpace, PadValue, ScalarType, TensorType, TileType

__all__ = ["ENTRY", "KernelSource", "abi_params", "core_type_of", "generate_kernel"]

ENTRY = "kernel_entry"

_SPACE = {
    MemorySpace.Vec: "Vec",
    MemorySpace.Mat: "Mat",
    MemorySpace.Left: "Left",
    MemorySpace.Right: "Right",
    MemorySpace.Acc: "Acc",
}
_BINARY = {"add": "add", "sub": "sub", "mul": "mul", "div": "div", "maximum": "max", "minimum": "min"}
_UNARY = ("exp", "log", "sqrt", "rsqrt", "recip", "abs", "neg", "relu")
_THREE = {
    "row_expand_add",
    "row_expand_sub",
    "row_expand_mul",
    "row_expand_div",
    "col_expand_add",
    "col_expand_sub",
    "col_expand_mul",
    "col_expand_div",
    "concat",
}


_PAD = {PadValue.zero: "0", PadValue.min: "-1", PadValue.max: "1"}

# Sub-tile helpers the tile library does not provide; written with its public Tile members.
TILE_HELPERS = """\
template <class D, class S>
static inline void pypto_assemble(D& dst, const S& src, std::int64_t r0, std::int64_t c0) {
    if (r0 < 0 || c0 < 0 || r0 + src.valid_rows > D::rows || c0 + src.valid_cols > D::cols) {
        simpler::report_kernel_error("assemble: [%d, %d] at (%lld, %lld) does not fit [%d, %d]", src.valid_rows,
                                     src.valid_cols, static_cast<long long>(r0), static_cast<long long>(c0), D::rows,
                                     D::cols);
        return;
    }
    for (int r = 0; r < src.valid_rows; ++r)
        for (int c = 0; c < src.valid_cols; ++c)
            dst(static_cast<int>(r0) + r, static_cast<int>(c0) + c) = static_cast<typename D::value_type>(src(r, c));
}
template <class D, class S>
static inline void pypto_slice(D& dst, const S& src, std::int64_t r0, std::int64_t c0) {
    if (r0 < 0 || c0 < 0 || r0 + D::rows > src.valid_rows || c0 + D::cols > src.valid_cols) {
        simpler::report_kernel_error("slice: [%d, %d] at (%lld, %lld) is outside the valid [%d, %d]", D::rows,
                                     D::cols, static_cast<long long>(r0), static_cast<long long>(c0), src.valid_rows,
                                     src.valid_cols);
        return;
    }
    for (int r = 0; r < D::rows; ++r)
        for (int c = 0; c < D::cols; ++c) dst(r, c) = src(static_cast<int>(r0) + r, static_cast<int>(c0) + c);
}
// pad: 0 zero, -1 lowest (-inf for floats), +1 highest (+inf for floats); the result is fully valid.
template <class D>
static inline void pypto_fillpad(D& t, int pad) {
    using T = typename D::value_type;
    using C = pt::compute_t<T>;
    C v = C(0);
    if (pad != 0) {
        if (std::numeric_limits<C>::has_infinity)
            v = pad < 0 ? -std::numeric_limits<C>::infinity() : std::numeric_limits<C>::infinity();
        else
            v = pad < 0 ? std::numeric_limits<C>::lowest() : std::numeric_limits<C>::max();
    }
    const T fill = pt::from_compute<T>(v);
    for (int r = 0; r < D::rows; ++r)
        for (int c = 0; c < D::cols; ++c)
            if (r >= t.valid_rows || c >= t.valid_cols) t(r, c) = fill;
    t.valid_rows = D::rows;
    t.valid_cols = D::cols;
}
"""


@dataclass(frozen=True)
class KernelSource:
    name: str
    core_type: CoreType
    entry: str
    text: str
    params: tuple[Param, ...]  # ABI order
    tiles: tuple[TileAlloc, ...] = ()  # every tile the kernel declares, in source order


def abi_params(fn: Function) -> tuple[Param, ...]:
    """The kernel's parameters in ABI order: tensors first, then scalars."""
    tensors = [p for p in fn.params if isinstance(p.var.type, TensorType)]
    scalars = [p for p in fn.params if not isinstance(p.var.type, TensorType)]
    return (*tensors, *scalars)


def core_type_of(fn: Function) -> CoreType:
    """AIC when the kernel uses the cube unit (matmul or a Left/Right/Mat tile), AIV otherwise."""
    for s in walk_stmts(fn.body):
        for e in stmt_exprs(s):
            if isinstance(e, Call):
                if e.op in ("tile.matmul", "tile.matmul_acc"):
                    return CoreType.AIC
                t = e.type
                if isinstance(t, TileType) and t.memory in (
                    MemorySpace.Left,
                    MemorySpace.Right,
                    MemorySpace.Mat,
                    MemorySpace.Acc,
                ):
                    return CoreType.AIC
    return CoreType.AIV


def tile_type(t: TileType) -> str:
    r, c = t.shape
    return f"pt::Tile<pt::Space::{_SPACE[t.memory]}, {cpp_type(t.dtype)}, {r}, {c}>"


def generate_kernel(fn: Function) -> KernelSource:
    return _KernelGen(fn).run()


class _KernelGen:
    def __init__(self, fn: Function) -> None:
        self.fn = fn
        self.lines: list[str] = []
        self.dim_of: dict[tuple[str, int], str] = {}
        self.later_uses: dict[str, int] = {}
        self.tiles: list[TileAlloc] = []

    def record(self, name: str, t: TileType, span: object = None) -> None:
        """Count a tile the generated code declares (its storage lives for the invocation)."""
        r, c = t.shape
        where = span if isinstance(span, Span) else None
        self.tiles.append(TileAlloc(base_name(name), t.memory, t.dtype, (int(r), int(c)), where))

    def emit(self, depth: int, text: str) -> None:
        self.lines.append("    " * depth + text)

    def run(self) -> KernelSource:
        fn = self.fn
        params = abi_params(fn)
        head = [
            f"// Generated by pypto-ir {__version__} from kernel '{fn.name}'. Do not edit.",
            "#include <cstdint>",
            "#include <limits>",
            "#include <simpler/tile.hpp>",
            "",
            "namespace pt = simpler::tile;",
            "",
            "SIMPLER_DEFINE_KERNEL_ABI();",
            "",
            SCALAR_HELPERS,
            TILE_HELPERS,
            f'extern "C" __attribute__((visibility("default"))) void {ENTRY}(std::int64_t* args) {{',
        ]
        for i, p in enumerate(params):
            t = p.var.type
            name = ident(p.name)
            if isinstance(t, TensorType):
                self.emit(
                    1,
                    f"const simpler::ChipTensor& {name} = pt::tensor_arg(args[{i}]);  // {p.direction.value}",
                )
                self.emit(1, f"(void){name};")
                if t.layout is Layout.NZ:
                    n = len(t.shape)
                    rows, c0 = nz_block_shape(t.dtype)
                    # logical [.., R, C] from the blocked [.., C/C0, R/16, 16, C0] (load_nz checks the block)
                    self.dim_of[(p.name, n - 1)] = (
                        f"(static_cast<std::int64_t>({name}.shapes[{n - 2}]) * {c0})"
                    )
                    self.dim_of[(p.name, n - 2)] = (
                        f"(static_cast<std::int64_t>({name}.shapes[{n - 1}]) * {rows})"
                    )
            else:
                assert isinstance(t, ScalarType)
                ct = cpp_type(t.dtype)
                hold = scalar_cpp_type(t.dtype)
                value = f"pt::scalar_arg<{ct}>(args[{i}])"
                if hold != ct:
                    value = f"static_cast<{hold}>({value})"
                self.emit(1, f"const {hold} {name} = {value};")
                self.emit(1, f"(void){name};")
        self.body(fn.body, 1)
        self.lines.append("}")
        text = "\n".join(head) + "\n" + "\n".join(self.lines) + "\n"
        return KernelSource(fn.name, core_type_of(fn), ENTRY, text, params, tuple(self.tiles))

    def used_after(self, body: tuple[Stmt, ...], index: int, name: str) -> bool:
        for s in body[index + 1 :]:
            for inner in walk_stmts((s,)):
                for e in stmt_exprs(inner):
                    if any(v.name == name for v in expr_vars(e)):
                        return True
        return False

    def body(self, stmts: tuple[Stmt, ...], depth: int) -> None:
        for i, s in enumerate(stmts):
            if isinstance(s, Assign):
                self.assign(s.var, s.value, depth, stmts, i)
            elif isinstance(s, ExprStmt):
                if isinstance(s.value, Call) and s.value.op == "tensor.write":
                    self.write(s.value, depth)
                    continue
                if not isinstance(s.value, Call) or s.value.op != "tile.store":
                    raise CompileError(f"kernel codegen: unexpected statement {s.value}")
                self.store(s.value, depth)
            elif isinstance(s, For):
                self.loop(s, depth)
            elif isinstance(s, If):
                self.branch(s, depth)
            elif isinstance(s, Yield):
                pass  # handled by loop()
            elif isinstance(s, Return):
                if s.values:
                    pass  # a kernel's tensor returns alias its parameters; nothing to emit
            else:
                raise CompileError(f"kernel codegen: {type(s).__name__} cannot appear in a lowered kernel")

    def offsets(self, offs: object) -> str:
        assert isinstance(offs, tuple)
        parts = [
            str(int(o.value))
            if isinstance(o, Const)
            else f"static_cast<std::int64_t>({scalar_expr(o, self.dim_of)})"
            for o in offs
        ]
        return "{" + ", ".join(parts) + "}"

    def store(self, c: Call, depth: int) -> None:
        tile, offs, dst = c.args
        assert isinstance(tile, Var)
        assert isinstance(dst, Var)
        nz = isinstance(dst.type, TensorType) and dst.type.layout is Layout.NZ
        fn = "store_nz" if nz else "store"
        self.emit(depth, f"pt::{fn}({ident(dst.name)}, {ident(tile.name)}, {self.offsets(offs)});")

    def write(self, c: Call, depth: int) -> None:
        dst, idx, value = c.args
        assert isinstance(dst, Var)
        t = dst.type
        assert isinstance(t, TensorType)
        ct = cpp_type(t.dtype)
        self.record(f"pl.write({dst.name})", TileType((1, 1), t.dtype, MemorySpace.Vec), c.span)
        self.emit(depth, "{  // one element through a 1x1 tile (bounds-checked like any store)")
        self.emit(depth + 1, f"pt::Tile<pt::Space::Vec, {ct}, 1, 1> one;")
        self.emit(depth + 1, f"one(0, 0) = static_cast<{ct}>({self.scalar_arg(value, t.dtype)});")
        self.emit(depth + 1, f"pt::store({ident(dst.name)}, one, {self.offsets(idx)});")
        self.emit(depth, "}")

    def scalar_arg(self, e: object, elem: DataType) -> str:
        assert not isinstance(e, tuple)
        hold = scalar_cpp_type(elem)
        if isinstance(e, Const):
            return f"static_cast<{hold}>({literal(e)})"
        return f"static_cast<{hold}>({scalar_expr(e, self.dim_of)})"  # type: ignore[arg-type]

    def assign(self, v: Var, e: Expr, depth: int, body: tuple[Stmt, ...], index: int) -> None:
        name = ident(v.name)
        t = v.type
        if isinstance(t, ScalarType):
            if isinstance(e, Call) and e.op == "tile.read":
                src, idx = e.args
                assert isinstance(src, Var)
                assert isinstance(idx, tuple)
                r, c = (scalar_expr(i, self.dim_of) for i in idx)
                hold = scalar_cpp_type(t.dtype)
                self.emit(
                    depth,
                    f"const {hold} {name} = static_cast<{hold}>({ident(src.name)}(static_cast<int>({r}), static_cast<int>({c})));",
                )
                return
            if isinstance(e, Call) and e.op == "tensor.read":
                src, idx = e.args
                assert isinstance(src, Var)
                hold = scalar_cpp_type(t.dtype)
                self.record(
                    f"{v.name} (pl.read)", TileType((1, 1), t.dtype, MemorySpace.Vec), v.span or e.span
                )
                self.emit(depth, f"pt::Tile<pt::Space::Vec, {cpp_type(t.dtype)}, 1, 1> {name}_rd;")
                self.emit(depth, f"pt::load({name}_rd, {ident(src.name)}, {self.offsets(idx)});")
                self.emit(depth, f"const {hold} {name} = static_cast<{hold}>({name}_rd(0, 0));")
                return
            self.emit(depth, f"const {scalar_cpp_type(t.dtype)} {name} = {scalar_expr(e, self.dim_of)};")
            return
        if not isinstance(e, Call):
            raise CompileError(f"kernel codegen: {v.name} = {e} is not an op call")
        op = e.op.split(".", 1)[1]
        args = e.args
        if e.op == "tensor.write":
            self.write(e, depth)
            dst = args[0]
            assert isinstance(dst, Var)
            self.emit(depth, f"const simpler::ChipTensor& {name} = {ident(dst.name)};")
            self.emit(depth, f"(void){name};")
            return
        if e.op == "tile.store":
            self.store(e, depth)
            dst = args[2]
            assert isinstance(dst, Var)
            self.emit(depth, f"const simpler::ChipTensor& {name} = {ident(dst.name)};")
            self.emit(depth, f"(void){name};")
            return
        assert isinstance(t, TileType), f"{v.name}: {t}"
        self.record(v.name, t, v.span or e.span)  # every branch below declares exactly this tile
        decl = f"{tile_type(t)} {name};"
        if op == "load":
            src, offs = args[0], args[1]
            assert isinstance(src, Var)
            nz = e.attr("layout") is Layout.NZ or (
                isinstance(src.type, TensorType) and src.type.layout is Layout.NZ
            )
            valid = ""
            if len(args) == 3:
                vr, vc = (scalar_expr(x, self.dim_of) for x in args[2])  # type: ignore[union-attr]
                valid = f", static_cast<int>({vr}), static_cast<int>({vc})"
            self.emit(depth, decl)
            self.emit(
                depth,
                f"pt::{'load_nz' if nz else 'load'}({name}, {ident(src.name)}, {self.offsets(offs)}{valid});",
            )
            return
        if op == "assemble":
            target, source, offs = args
            assert isinstance(target, Var)
            assert isinstance(source, Var)
            r0, c0 = (scalar_expr(o, self.dim_of) for o in offs)  # type: ignore[union-attr]
            self.emit(depth, f"{tile_type(t)} {name} = {ident(target.name)};  // assemble into a copy (SSA)")
            self.emit(depth, f"pypto_assemble({name}, {ident(source.name)}, {r0}, {c0});")
            return
        if op == "slice":
            source, offs = args
            assert isinstance(source, Var)
            r0, c0 = (scalar_expr(o, self.dim_of) for o in offs)  # type: ignore[union-attr]
            self.emit(depth, decl)
            self.emit(depth, f"pypto_slice({name}, {ident(source.name)}, {r0}, {c0});")
            return
        if op == "fillpad":
            source = args[0]
            assert isinstance(source, Var)
            self.emit(depth, f"{tile_type(t)} {name} = {ident(source.name)};")
            self.emit(depth, f"pypto_fillpad({name}, {_PAD[e.attr('pad')]});")
            return
        if op == "create":
            self.emit(depth, f"{decl}  // scratch")
            self.emit(depth, f"(void){name};")
            return
        if op == "full":
            self.emit(depth, decl)
            self.emit(
                depth, f"{name}.fill(static_cast<{cpp_type(t.dtype)}>({self.scalar_arg(args[0], t.dtype)}));"
            )
            return
        names = [ident(a.name) if isinstance(a, Var) else "" for a in args]
        if op in _BINARY:
            a, b = args
            assert isinstance(a, Var)
            self.emit(depth, decl)
            if isinstance(b.type, ScalarType):  # type: ignore[union-attr]
                self.emit(depth, f"pt::{_BINARY[op]}s({name}, {names[0]}, {self.scalar_arg(b, t.dtype)});")
            else:
                self.emit(depth, f"pt::{_BINARY[op]}({name}, {names[0]}, {names[1]});")
            return
        reductions = ("row_sum", "row_max", "row_min", "col_sum", "col_max", "col_min")
        if op in _UNARY or op in reductions or op in ("move", "reshape", "transpose", "cast"):
            self.emit(depth, decl)
            self.emit(depth, f"pt::{op}({name}, {names[0]});")
            return
        if op in ("row_expand", "col_expand"):
            self.emit(depth, decl)
            self.emit(depth, f"pt::{op}({name}, {names[1]});")
            return
        if op in _THREE:
            self.emit(depth, decl)
            self.emit(depth, f"pt::{op}({name}, {names[0]}, {names[1]});")
            return
        if op == "matmul":
            self.emit(depth, decl)
            self.emit(depth, f"pt::matmul({name}, {names[0]}, {names[1]});")
            return
        if op == "matmul_acc":
            acc = args[0]
            assert isinstance(acc, Var)
            self.emit(depth, f"{tile_type(t)} {name} = {names[0]};  // accumulate into a copy (SSA)")
            self.emit(depth, f"pt::matmul_acc({name}, {names[1]}, {names[2]});")
            return
        raise CompileError(f"kernel codegen: no C++ for op {e.op}")

    def loop(self, s: For, depth: int) -> None:
        var = ident(s.var.name)
        for ia in s.iter_args:
            if isinstance(ia.var.type, TileType):
                self.record(ia.var.name, ia.var.type, ia.var.span or s.span)
            self.emit(depth, f"{self.holder(ia.var)} {ident(ia.var.name)} = {self.value(ia.init)};")
        start, stop, step = (scalar_expr(x, self.dim_of) for x in (s.start, s.stop, s.step))
        if isinstance(s.step, Const):
            cond = f"{var} < {stop}" if int(s.step.value) > 0 else f"{var} > {stop}"
        else:
            cond = f"(({step}) > 0 ? {var} < {stop} : {var} > {stop})"
        self.emit(depth, f"for (std::int64_t {var} = {start}; {cond}; {var} += {step}) {{")
        self.body(s.body, depth + 1)
        if s.iter_args:
            y = s.body[-1]
            assert isinstance(y, Yield)
            for ia, v in zip(s.iter_args, y.values, strict=True):
                if not (isinstance(v, Var) and v.name == ia.var.name):
                    self.emit(depth + 1, f"{ident(ia.var.name)} = {self.value(v)};")
        self.emit(depth, "}")
        for ia, r in zip(s.iter_args, s.results, strict=True):
            self.emit(depth, f"{self.holder(r, ref=True)} {ident(r.name)} = {ident(ia.var.name)};")
            self.emit(depth, f"(void){ident(r.name)};")

    def branch(self, s: If, depth: int) -> None:
        for r in s.results:
            if isinstance(r.type, TileType):
                self.record(r.name, r.type, r.span or s.span)
            init = "{}" if not isinstance(r.type, TileType) else ""
            self.emit(depth, f"{self.holder(r)} {ident(r.name)}{init};")
        self.emit(depth, f"if ({scalar_expr(s.cond, self.dim_of)}) {{")
        self.arm(s.then_body, s.results, depth + 1)
        self.emit(depth, "} else {")
        self.arm(s.else_body, s.results, depth + 1)
        self.emit(depth, "}")

    def arm(self, body: tuple[Stmt, ...], results: tuple[Var, ...], depth: int) -> None:
        self.body(body, depth)
        if results:
            y = body[-1]
            assert isinstance(y, Yield)
            for r, v in zip(results, y.values, strict=True):
                self.emit(depth, f"{ident(r.name)} = {self.value(v)};")

    def holder(self, v: Var, ref: bool = False) -> str:
        t = v.type
        if isinstance(t, TileType):
            return tile_type(t) + ("&" if ref else "")
        if isinstance(t, TensorType):
            return "simpler::ChipTensor" + ("&" if ref else "")
        assert isinstance(t, ScalarType)
        return scalar_cpp_type(t.dtype)

    def value(self, e: Expr) -> str:
        if isinstance(e, Var):
            return ident(e.name)
        return scalar_expr(e, self.dim_of)
