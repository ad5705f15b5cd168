"""Orchestration C++: the entry function -> one source against simpler/runtime/orchestration.hpp.

Tensor parameters are ``args->tensor(i)`` (the i-th tensor parameter), scalars
``args->scalar_as<T>(j)`` (the j-th scalar parameter). ``pl.create_tensor`` becomes
``alloc_tensor``; each kernel call becomes one ``submit`` with the callee's func_id, its
tensor arguments tagged In/Out/InOut and its scalars as raw bits, in the kernel's ABI order
(tensors, then scalars), plus explicit task dependencies (task ids, and task-id arrays whose
unset entries, -1, are skipped). A ``pl.array`` of task ids is a ``std::vector<std::int64_t>``
(value semantics: an update copies, as the IR's SSA form says); ``pl.manual_scope()`` is one
``scope_begin``/``scope_end`` pair. A call's tensor result is a
reference to the argument the kernel returns (the return-lineage of the callee). A host
``pl.read``/``pl.write`` of one element goes through ``pypto_element``, which checks the index
against the tensor's shape and the element against its buffer; a bad index fails the run with
a message naming the access, the tensor, the index and the shape, and touches nothing.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from pypto.ir import __version__, nodes
from pypto.ir.analysis.return_lineage import function_aliases
from pypto.ir.codegen.cpp import (
    SCALAR_HELPERS,
    WIRE_DTYPE,
    converted_scalar,
    cpp_type,
    ident,
    scalar_cpp_type,
    scalar_expr,
)
from pypto.ir.codegen.kernel import abi_params
from pypto.ir.dtypes import DataType
from pypto.ir.errors import KernelError, PyptoCompileError
from pypto.ir.param_info import ParamDirection
from pypto.ir.types import ArrayType, ScalarType, TaskIdType, TensorType, Type

__all__ = ["OrchestrationSource", "generate_orchestration", "orchestration_symbol"]

_DIR = {ParamDirection.IN: "in", ParamDirection.OUT: "out", ParamDirection.INOUT: "inout"}


# A window t[o0:o0+e0, ...] of a tensor descriptor: same buffer, later start, smaller shape. An
# axis whose declared extent runs past the tensor's end keeps only the part inside the tensor
# (from a start at or past the end: nothing), so the descriptor addresses the tensor's own
# elements only; a fixed-width window near a tensor's end (an unroll-width slice of a block
# table) is valid for the elements the tensor has, and a kernel that touches more fails its
# bounds-checked access. The runtime checks every submitted descriptor against its backing
# before a task runs.
WINDOW_HELPER = """\
static inline simpler::ChipTensor pypto_window(const simpler::ChipTensor& t, std::initializer_list<std::int64_t> start,
                                               std::initializer_list<std::uint32_t> extent) {
    simpler::ChipTensor v = t;
    std::uint32_t i = 0;
    for (std::int64_t s : start) {
        v.start_offset += static_cast<std::uint64_t>(s) * t.strides[i];
        ++i;
    }
    i = 0;
    auto s = start.begin();
    for (std::uint32_t e : extent) {
        const std::int64_t from = *s++;
        const std::int64_t dim = i < t.ndims ? static_cast<std::int64_t>(t.shapes[i]) : 0;
        if (from >= 0 && from + static_cast<std::int64_t>(e) > dim) {
            e = from >= dim ? 0u : static_cast<std::uint32_t>(dim - from);
        }
        v.shapes[i++] = e;
    }
    return v;
}
"""


# A window whose extents are run-time scalars: each axis's [start, start + extent) must lie in
# the tensor's extent on that axis, else the run fails naming the window (nothing is submitted).
WINDOW_CHECK_HELPER = """\
static inline bool pypto_window_ok(simpler::Orchestrator& orch, const simpler::ChipTensor& t, const char* what,
                                   std::initializer_list<std::int64_t> start, std::initializer_list<std::int64_t> extent) {
    std::uint32_t i = 0;
    auto e = extent.begin();
    for (std::int64_t s : start) {
        const std::int64_t n = *e++;
        if (s < 0 || n <= 0 || i >= t.ndims || static_cast<std::uint64_t>(s) + static_cast<std::uint64_t>(n) > t.shapes[i]) {
            std::string msg = std::string(what) + ": the window [" + std::to_string(s) + ", " + std::to_string(s + n) +
                              ") on axis " + std::to_string(i) + " is outside the tensor's extent " +
                              std::to_string(i < t.ndims ? t.shapes[i] : 0) + "; nothing was submitted";
            orch.report_error(msg.c_str());
            return false;
        }
        ++i;
    }
    return true;
}
"""


# One element of a tensor on the host (pl.read / pl.write): the address of element `index`, or
# nullptr after failing the run (orch.report_error) when the index is outside the tensor's shape
# or the element outside its buffer. Nothing is read or written through a failed access.
ELEMENT_HELPER = """\
template <typename T>
static inline T* pypto_element(simpler::Orchestrator& orch, const simpler::ChipTensor& t, const char* what,
                               std::initializer_list<std::int64_t> index) {
    std::uint64_t off = t.start_offset, end = 0, term = 0;
    bool ok = index.size() == t.ndims && t.buffer.addr != 0;
    std::uint32_t k = 0;
    for (std::int64_t i : index) {
        if (k >= t.ndims || i < 0 || static_cast<std::uint64_t>(i) >= t.shapes[k] ||
            __builtin_mul_overflow(static_cast<std::uint64_t>(i), static_cast<std::uint64_t>(t.strides[k]), &term) ||
            __builtin_add_overflow(off, term, &off))
            ok = false;
        ++k;
    }
    ok = ok && !__builtin_add_overflow(off, std::uint64_t{1}, &end) &&
         !__builtin_mul_overflow(end, static_cast<std::uint64_t>(sizeof(T)), &end) && end <= t.buffer.size;
    if (ok) return reinterpret_cast<T*>(static_cast<std::uintptr_t>(t.buffer.addr)) + off;
    std::string msg = std::string(what) + ": index [";
    k = 0;
    for (std::int64_t i : index) msg += (k++ ? ", " : "") + std::to_string(i);
    msg += "] is outside the tensor (shape [";
    for (std::uint32_t d = 0; d < t.ndims && d < simpler::kMaxTensorDims; ++d)
        msg += (d ? ", " : "") + std::to_string(t.shapes[d]);
    msg += "]";
    if (index.size() != t.ndims) msg += ", " + std::to_string(t.ndims) + " dimensions";
    msg += "); nothing was accessed";
    orch.report_error(msg.c_str());
    return nullptr;
}
"""


def _extents(t: TensorType, given: object) -> list[str]:
    """Per dimension, the C++ extent of a created tensor or a window: a constant, or the
    run-time index scalar the program gave (``given``, one expression per dimension)."""
    if given is None:
        return [f"{int(d)}u" for d in t.shape]  # type: ignore[arg-type]
    assert isinstance(given, tuple)
    return [
        f"{int(d)}u" if isinstance(d, int) else f"static_cast<std::uint32_t>({scalar_expr(x)})"
        for d, x in zip(t.shape, given, strict=True)
    ]


def _c_string(text: str) -> str:
    """A C string literal of ``text`` (printable ASCII kept, everything else escaped)."""
    out = []
    for ch in text:
        if ch in '\\"':
            out.append("\\" + ch)
        elif " " <= ch <= "~":
            out.append(ch)
        else:
            out.extend(f"\\{b:03o}" for b in ch.encode())
    return '"' + "".join(out) + '"'


def _access_what(op: str, tensor: nodes.Var, c: nodes.Call) -> str:
    """How a host element access is named in its error: ``pl.read of 'x' (file.py:12)``."""
    where = f" ({os.path.basename(c.span.file)}:{c.span.line})" if c.span is not None else ""
    return f"{op} of {tensor.name.split('__')[0]!r}{where}"


@dataclass(frozen=True)
class OrchestrationSource:
    name: str
    func_name: str
    needs_name: str
    text: str
    tensor_count: int
    scalar_count: int


def orchestration_symbol(name: str) -> str:
    return f"{ident(name)}_orch"


def generate_orchestration(
    fn: nodes.Function, program: nodes.Program, func_ids: Mapping[str, int]
) -> OrchestrationSource:
    return _OrchGen(fn, program, func_ids).run()


class _OrchGen:
    def __init__(self, fn: nodes.Function, program: nodes.Program, func_ids: Mapping[str, int]) -> None:
        self.fn = fn
        self.program = program
        self.func_ids = func_ids
        self.lines: list[str] = []
        # tensor name -> the orchestration parameter it is (a window of), for host writes
        self.roots: dict[str, str] = {p.name: p.name for p in fn.params if isinstance(p.var.type, TensorType)}
        # task ids bound by a submit: always valid, passed to a submit as they are
        self.submitted: set[str] = set()
        # the loops around the statement being emitted, each with whether its body opens a
        # runtime scope (closed before a break / continue leaves the body)
        self.loops: list[tuple[nodes.For | nodes.While, bool]] = []

    def emit(self, depth: int, text: str) -> None:
        self.lines.append("    " * depth + text)

    def run(self) -> OrchestrationSource:
        fn = self.fn
        sym = orchestration_symbol(fn.name)
        tensors = [p for p in fn.params if isinstance(p.var.type, TensorType)]
        scalars = [p for p in fn.params if not isinstance(p.var.type, TensorType)]
        head = [
            f"// Generated by pypto-ir {__version__} from orchestration '{fn.name}'. Do not edit.",
            "#include <cstdint>",
            "#include <initializer_list>",
            "#include <string>",
            "#include <vector>",
            "#include <simpler/runtime/orchestration.hpp>",
            "#include <simpler/dtype.hpp>",
            "",
            SCALAR_HELPERS,
            WINDOW_HELPER,
            WINDOW_CHECK_HELPER,
            ELEMENT_HELPER,
            f"SIMPLER_ORCHESTRATION({sym}, {len(tensors)}, {len(scalars)})",
            "(const SimplerOrchApi* api, SimplerOrchContext* ctx, const simpler::ChipStorageTaskArgs* args) {",
        ]
        self.emit(1, "simpler::Orchestrator orch(api, ctx);")
        for i, p in enumerate(tensors):
            self.emit(
                1, f"const simpler::ChipTensor& {ident(p.name)} = args->tensor({i});  // {p.direction.value}"
            )
            self.emit(1, f"(void){ident(p.name)};")
        for j, p in enumerate(scalars):
            t = p.var.type
            assert isinstance(t, ScalarType)
            ct, hold = cpp_type(t.dtype), scalar_cpp_type(t.dtype)
            value = f"args->scalar_as<{ct}>({j})"
            if hold != ct:
                value = f"static_cast<{hold}>({value})"
            self.emit(1, f"const {hold} {ident(p.name)} = {value};")
            self.emit(1, f"(void){ident(p.name)};")
        self.body(fn.body, 1)
        if not fn.body or not isinstance(fn.body[-1], nodes.Return):
            self.emit(1, "return 0;")  # a function without `return` still reports success
        self.lines.append("}")
        text = "\n".join(head) + "\n" + "\n".join(self.lines) + "\n"
        return OrchestrationSource(fn.name, sym, f"{sym}_needs", text, len(tensors), len(scalars))

    def body(self, stmts: tuple[nodes.Stmt, ...], depth: int) -> None:
        for s in stmts:
            if isinstance(s, nodes.Assign):
                self.assign(s.var, s.value, depth)
            elif (
                isinstance(s, nodes.ExprStmt)
                and isinstance(s.value, nodes.Call)
                and s.value.op == "tensor.write"
            ):
                self.host_write(s.value, depth)
            elif (
                isinstance(s, nodes.ExprStmt)
                and isinstance(s.value, nodes.Call)
                and s.value.op == "system.scope_begin"
            ):
                self.emit(depth, "if (orch.scope_begin() != 0) return 1;  // pl.manual_scope()")
            elif (
                isinstance(s, nodes.ExprStmt)
                and isinstance(s.value, nodes.Call)
                and s.value.op == "system.scope_end"
            ):
                self.emit(depth, "if (orch.scope_end() != 0) return 1;  // end of pl.manual_scope()")
            elif (
                isinstance(s, nodes.ExprStmt)
                and isinstance(s.value, nodes.Call)
                and s.value.op == "system.fence"
            ):
                # the orchestration submits in program order; a fence orders nothing more here
                self.emit(depth, "// pl.system.fence(): no effect on the simulated chip")
            elif isinstance(s, nodes.ExprStmt):
                if not isinstance(s.value, nodes.CallFunc):
                    raise PyptoCompileError(f"orchestration codegen: unexpected statement {s.value}")
                self.submit(s.value, depth, None)
            elif isinstance(s, (nodes.For, nodes.While)):
                self.loop(s, depth)
            elif isinstance(s, nodes.If):
                self.branch(s, depth)
            elif isinstance(s, (nodes.Break, nodes.Continue)):
                self.leave(s, depth)
            elif isinstance(s, nodes.Yield):
                pass
            elif isinstance(s, nodes.Return):
                self.emit(depth, "return 0;")
            else:
                raise PyptoCompileError(
                    f"orchestration codegen: {type(s).__name__} in a lowered orchestration"
                )

    def assign(self, v: nodes.Var, e: nodes.Expr, depth: int) -> None:
        name = ident(v.name)
        if isinstance(e, nodes.CallFunc):
            self.submit(e, depth, v)
            return
        if isinstance(e, nodes.Call) and e.op == "system.task_invalid":  # no task: deps skip ids < 0
            self.emit(depth, f"const std::int64_t {name} = -1;")
            self.emit(depth, f"(void){name};")
            return
        if isinstance(e, nodes.Call) and e.op == "tensor.write":
            self.host_write(e, depth)
            dst = e.args[0]
            assert isinstance(dst, nodes.Var)
            self.emit(depth, f"const simpler::ChipTensor& {name} = {ident(dst.name)};")
            self.emit(depth, f"(void){name};")
            return
        if isinstance(e, nodes.Call) and e.op == "tensor.view":
            base, offs = e.args[0], e.args[1]
            assert isinstance(base, nodes.Var)
            if base.name in self.roots:
                self.roots[v.name] = self.roots[base.name]
            assert isinstance(offs, tuple)
            t = v.type
            assert isinstance(t, TensorType)
            starts = ", ".join(f"static_cast<std::int64_t>({scalar_expr(o)})" for o in offs)
            given = e.args[2] if len(e.args) > 2 else None
            extents = ", ".join(_extents(t, given))
            if given is not None:
                assert isinstance(given, tuple)
                what = _c_string(_access_what("pl.slice", base, e))
                wide = ", ".join(f"static_cast<std::int64_t>({scalar_expr(x)})" for x in given)
                self.emit(
                    depth,
                    f"if (!pypto_window_ok(orch, {ident(base.name)}, {what}, {{{starts}}}, {{{wide}}})) return 1;",
                )
            self.emit(
                depth,
                f"const simpler::ChipTensor {name} = pypto_window({ident(base.name)}, {{{starts}}}, {{{extents}}});",
            )
            self.emit(depth, f"(void){name};")
            return
        if isinstance(e, nodes.Call) and e.op == "tensor.create":
            t = v.type
            assert isinstance(t, TensorType)
            dims = ", ".join(_extents(t, e.args[0] if e.args else None))
            self.emit(depth, f"simpler::ChipTensor {name};")
            self.emit(depth, "{")
            self.emit(depth + 1, f"const std::uint32_t shape[{len(t.shape)}] = {{{dims}}};")
            self.emit(
                depth + 1,
                f"if (orch.alloc_tensor(simpler::DataType::{WIRE_DTYPE[t.dtype]}, {len(t.shape)}, shape, &{name}) != 0) return 1;",
            )
            self.emit(depth, "}")
            return
        if isinstance(e, nodes.Call) and e.op.startswith("array."):
            self.array_op(v, e, depth)
            return
        if isinstance(e, nodes.Var) and isinstance(v.type, (ArrayType, TaskIdType)):
            self.emit(depth, f"const {_task_cpp(v.type)} {name} = {ident(e.name)};")
            return
        t = v.type
        if isinstance(t, ScalarType) and isinstance(e, nodes.Call) and e.op == "tensor.read":
            src, idx = e.args
            assert isinstance(src, nodes.Var)
            assert isinstance(idx, tuple)
            ct, hold = cpp_type(t.dtype), scalar_cpp_type(t.dtype)
            self.emit(
                depth, "// host read of tensor data (the simulated chip's device memory is host memory)"
            )
            ptr = f"pypto_{name}_at"
            self.emit(depth, f"const {ct}* {ptr} = {self.element(ct, src, idx, e, 'pl.read')};")
            self.emit(depth, f"if ({ptr} == nullptr) return 1;")
            self.emit(depth, f"const {hold} {name} = static_cast<{hold}>(*{ptr});")
            return
        if isinstance(t, ScalarType):
            self.emit(depth, f"const {scalar_cpp_type(t.dtype)} {name} = {scalar_expr(e)};")
            return
        raise PyptoCompileError(f"orchestration codegen: cannot assign {v.name} = {e}")

    def array_op(self, v: nodes.Var, e: nodes.Call, depth: int) -> None:
        """``pl.array.create`` / ``arr[i]`` / ``arr[i] = tid``; an index outside the array fails
        the run naming the access."""
        name = ident(v.name)
        if e.op == "array.create":
            t = v.type
            assert isinstance(t, ArrayType)
            self.emit(depth, f"std::vector<std::int64_t> {name}({t.extent}, -1);  // no entry set")
            return
        arr, idx = e.args[0], e.args[1]
        assert isinstance(arr, nodes.Var)
        assert not isinstance(idx, tuple)
        at = arr.type
        assert isinstance(at, ArrayType)
        what = "read" if e.op == "array.get" else "update"
        where = f" ({os.path.basename(e.span.file)}:{e.span.line})" if e.span is not None else ""
        msg = _c_string(f"array {what} of {arr.name.split('__')[0]!r}{where}: index ")
        self.emit(
            depth, f"const std::int64_t pypto_{name}_i = static_cast<std::int64_t>({scalar_expr(idx)});"
        )
        self.emit(depth, f"if (pypto_{name}_i < 0 || pypto_{name}_i >= {at.extent}) {{")
        tail = _c_string(f" is outside the array's {at.extent} entries")
        self.emit(
            depth + 1,
            f"orch.report_error((std::string({msg}) + std::to_string(pypto_{name}_i) + {tail}).c_str());",
        )
        self.emit(depth + 1, "return 1;")
        self.emit(depth, "}")
        if e.op == "array.get":
            self.emit(depth, f"const std::int64_t {name} = {ident(arr.name)}[pypto_{name}_i];")
            self.emit(depth, f"(void){name};")
            return
        value = e.args[2]
        assert isinstance(value, nodes.Var)
        self.emit(depth, f"std::vector<std::int64_t> {name} = {ident(arr.name)};")
        self.emit(depth, f"{name}[pypto_{name}_i] = {ident(value.name)};")

    def host_write(self, c: nodes.Call, depth: int) -> None:
        dst, idx, value = c.args
        assert isinstance(dst, nodes.Var)
        assert isinstance(idx, tuple)
        assert not isinstance(value, tuple)
        t = dst.type
        assert isinstance(t, TensorType)
        root = next((p for p in self.fn.params if p.name == self.roots.get(dst.name)), None)
        if root is not None and root.direction is ParamDirection.IN:
            raise KernelError(
                f"pl.write({dst.name.split('__')[0]}, ...) writes the In parameter {root.name!r}, which the "
                "caller may pass read-only; declare it pl.InOut[...] (or pl.Out[...])",
                c.span,
            )
        ct = cpp_type(t.dtype)
        self.emit(depth, "// host write of tensor data (the simulated chip's device memory is host memory)")
        self.emit(depth, "{")
        self.emit(depth + 1, f"{ct}* pypto_at = {self.element(ct, dst, idx, c, 'pl.write')};")
        self.emit(depth + 1, "if (pypto_at == nullptr) return 1;")
        src = getattr(getattr(value, "type", None), "dtype", None)
        self.emit(depth + 1, f"*pypto_at = {converted_scalar(scalar_expr(value), src, t.dtype)};")
        self.emit(depth, "}")

    @staticmethod
    def element(ct: str, tensor: nodes.Var, idx: tuple[nodes.Expr, ...], c: nodes.Call, op: str) -> str:
        """The checked address of one element (``pypto_element``), as a C++ expression.
        Constant indices outside a static dimension, and a wrong index count, fail here."""
        t = tensor.type
        assert isinstance(t, TensorType)
        shown = tensor.name.split("__")[0]
        if len(idx) != len(t.shape):
            raise KernelError(
                f"{op}({shown}, ...): {len(idx)} indices for a tensor of shape {list(t.shape)}", c.span
            )
        for k, (i, d) in enumerate(zip(idx, t.shape, strict=True)):
            if (
                isinstance(i, nodes.Const)
                and isinstance(i.value, int)
                and isinstance(d, int)
                and not 0 <= i.value < d
            ):
                raise KernelError(
                    f"{op}({shown}, ...): index {i.value} of dimension {k} is outside the tensor's shape "
                    f"{list(t.shape)}",
                    c.span,
                )
        index = ", ".join(f"static_cast<std::int64_t>({scalar_expr(i)})" for i in idx)
        what = _c_string(_access_what(op, tensor, c))
        return f"pypto_element<{ct}>(orch, {ident(tensor.name)}, {what}, {{{index}}})"

    def submit(self, c: nodes.CallFunc, depth: int, result: nodes.Var | None) -> None:
        callee = self.program.functions[c.callee]
        if c.callee not in self.func_ids:
            raise PyptoCompileError(f"orchestration codegen: {c.callee!r} is not a kernel of the program")
        if len(c.directions) != len(c.args):
            raise PyptoCompileError(
                f"orchestration codegen: call of {c.callee!r} has no directions (run call_directions)"
            )
        by_param = {p.name: (a, d) for p, a, d in zip(callee.params, c.args, c.directions, strict=True)}
        tensor_args, scalar_args = [], []
        for p in abi_params(callee):
            a, d = by_param[p.name]
            if isinstance(p.var.type, TensorType):
                if not isinstance(a, nodes.Var):
                    raise PyptoCompileError(
                        f"orchestration codegen: tensor argument {a} of {c.callee!r} is not a variable"
                    )
                tensor_args.append(f"simpler::{_DIR[d]}({ident(a.name)})")
            else:
                t = p.var.type
                assert isinstance(t, ScalarType)
                value = scalar_expr(a)
                if t.dtype in (DataType.FP16, DataType.BF16):  # 16-bit floats travel as their bits
                    bits = f"{cpp_type(t.dtype)}(static_cast<float>({value})).bits"
                    scalar_args.append(f"simpler::scalar_bits(static_cast<std::uint16_t>({bits}))")
                else:
                    scalar_args.append(f"simpler::scalar_bits(static_cast<{cpp_type(t.dtype)}>({value}))")
        deps = [d for d in c.deps if isinstance(d, nodes.Var)]
        if len(deps) != len(c.deps):
            raise PyptoCompileError(
                f"orchestration codegen: deps of {c.callee!r} are not all variables (run ssa)"
            )
        tid = f"task_{len(self.lines)}"
        if result is not None and isinstance(result.type, TaskIdType):
            tid = ident(result.name)
        fid = self.func_ids[c.callee]
        if all(d.name in self.submitted for d in deps):
            dep_list = ", ".join(ident(d.name) for d in deps)
            self.emit(
                depth,
                f"const std::int64_t {tid} = orch.submit({fid}, "
                f"{{{', '.join(tensor_args)}}}, {{{', '.join(scalar_args)}}}, {{{dep_list}}});  // {c.callee}",
            )
        else:  # arrays and array entries: only the entries set (>= 0) are dependencies
            self.emit(depth, f"std::vector<std::int64_t> pypto_{tid}_deps;")
            for dv in deps:
                if isinstance(dv.type, ArrayType):
                    self.emit(
                        depth,
                        f"for (std::int64_t pypto_d : {ident(dv.name)}) if (pypto_d >= 0) pypto_{tid}_deps.push_back(pypto_d);",
                    )
                else:
                    self.emit(
                        depth, f"if ({ident(dv.name)} >= 0) pypto_{tid}_deps.push_back({ident(dv.name)});"
                    )
            self.emit(
                depth,
                f"const std::initializer_list<simpler::OrchTensorArg> pypto_{tid}_t = {{{', '.join(tensor_args)}}};",
            )
            self.emit(
                depth,
                f"const std::initializer_list<std::uint64_t> pypto_{tid}_s = {{{', '.join(scalar_args)}}};",
            )
            self.emit(
                depth,
                f"const std::int64_t {tid} = orch.submit({fid}, pypto_{tid}_t.begin(), "
                f"static_cast<std::uint32_t>(pypto_{tid}_t.size()), pypto_{tid}_s.begin(), "
                f"static_cast<std::uint32_t>(pypto_{tid}_s.size()), pypto_{tid}_deps.data(), "
                f"static_cast<std::uint32_t>(pypto_{tid}_deps.size()));  // {c.callee}",
            )
        if result is not None and isinstance(result.type, TaskIdType):
            self.submitted.add(result.name)
        self.emit(depth, f"if ({tid} < 0) return 1;")
        if result is not None and isinstance(result.type, TensorType):
            rets = function_aliases(callee, self.program)
            if len(rets) != 1 or rets[0] is None:
                raise PyptoCompileError(
                    f"orchestration codegen: {c.callee!r} does not return one of its parameters"
                )
            src = c.args[rets[0]]
            assert isinstance(src, nodes.Var)
            self.emit(depth, f"const simpler::ChipTensor& {ident(result.name)} = {ident(src.name)};")
            self.emit(depth, f"(void){ident(result.name)};")
        elif result is not None and not isinstance(result.type, TaskIdType):
            raise PyptoCompileError(f"orchestration codegen: cannot bind {result.name} of type {result.type}")
        if result is None or isinstance(result.type, TaskIdType):
            self.emit(depth, f"(void){tid};")

    def branch(self, s: nodes.If, depth: int) -> None:
        for r in s.results:
            t = r.type
            if isinstance(t, TensorType):
                self.emit(depth, f"simpler::ChipTensor {ident(r.name)}_v{{}};")
            elif isinstance(t, ScalarType):
                self.emit(depth, f"{scalar_cpp_type(t.dtype)} {ident(r.name)}{{}};")
            elif isinstance(t, (ArrayType, TaskIdType)):
                self.emit(depth, f"{_task_cpp(t)} {ident(r.name)}{{}};")
            else:
                raise PyptoCompileError(f"orchestration codegen: an if cannot produce {t}")
        self.emit(depth, f"if ({scalar_expr(s.cond)}) {{")
        self.arm(s.then_body, s.results, depth + 1)
        self.emit(depth, "} else {")
        self.arm(s.else_body, s.results, depth + 1)
        self.emit(depth, "}")
        for r in s.results:
            if isinstance(r.type, TensorType):
                self.emit(depth, f"const simpler::ChipTensor& {ident(r.name)} = {ident(r.name)}_v;")
                self.emit(depth, f"(void){ident(r.name)};")

    def arm(self, body: tuple[nodes.Stmt, ...], results: tuple[nodes.Var, ...], depth: int) -> None:
        self.body(body, depth)
        if results:
            y = body[-1]
            assert isinstance(y, nodes.Yield)
            for r, v in zip(results, y.values, strict=True):
                if isinstance(r.type, TensorType):
                    assert isinstance(v, nodes.Var)
                    self.emit(depth, f"{ident(r.name)}_v = {ident(v.name)};")
                elif isinstance(r.type, (ArrayType, TaskIdType)):
                    assert isinstance(v, nodes.Var)
                    self.emit(depth, f"{ident(r.name)} = {ident(v.name)};")
                else:
                    self.emit(depth, f"{ident(r.name)} = {scalar_expr(v)};")

    def loop(self, s: nodes.For | nodes.While, depth: int) -> None:
        for ia in s.iter_args:
            t = ia.var.type
            if isinstance(t, TensorType):
                assert isinstance(ia.init, nodes.Var)
                self.emit(depth, f"simpler::ChipTensor {ident(ia.var.name)}_v = {ident(ia.init.name)};")
            elif isinstance(t, ScalarType):
                self.emit(depth, f"{scalar_cpp_type(t.dtype)} {ident(ia.var.name)} = {scalar_expr(ia.init)};")
            elif isinstance(t, (ArrayType, TaskIdType)):
                assert isinstance(ia.init, nodes.Var)
                self.emit(depth, f"{_task_cpp(t)} {ident(ia.var.name)} = {ident(ia.init.name)};")
            else:
                raise PyptoCompileError(f"orchestration codegen: loop-carried {t} is not supported")
        if isinstance(s, nodes.While):  # the condition compares scalars (the SSA pass checks it)
            self.emit(depth, f"while ({scalar_expr(s.cond)}) {{")
        else:
            var = ident(s.var.name)
            start, stop, step = (scalar_expr(x) for x in (s.start, s.stop, s.step))
            if isinstance(s.step, nodes.Const):
                cond = f"{var} < {stop}" if int(s.step.value) > 0 else f"{var} > {stop}"
            else:
                cond = f"(({step}) > 0 ? {var} < {stop} : {var} > {stop})"
            self.emit(depth, f"for (std::int64_t {var} = {start}; {cond}; {var} += {step}) {{")
        for ia in s.iter_args:
            if isinstance(ia.var.type, TensorType):
                self.emit(
                    depth + 1, f"const simpler::ChipTensor& {ident(ia.var.name)} = {ident(ia.var.name)}_v;"
                )
        scoped = _allocates_locally(s, self.program)
        if scoped:  # intermediates of one iteration are freed once its tasks retire
            self.emit(depth + 1, "if (orch.scope_begin() != 0) return 1;")
        self.loops.append((s, scoped))
        try:
            self.body(s.body, depth + 1)
        finally:
            self.loops.pop()
        if scoped:
            self.emit(depth + 1, "if (orch.scope_end() != 0) return 1;")
        if s.iter_args:
            y = s.body[-1]
            assert isinstance(y, nodes.Yield)
            self.carry(s, y.values, depth + 1)
        self.emit(depth, "}")
        for ia, r in zip(s.iter_args, s.results, strict=True):
            if isinstance(ia.var.type, TensorType):
                self.emit(depth, f"const simpler::ChipTensor& {ident(r.name)} = {ident(ia.var.name)}_v;")
            else:
                self.emit(depth, f"const auto {ident(r.name)} = {ident(ia.var.name)};")
            self.emit(depth, f"(void){ident(r.name)};")

    def leave(self, s: nodes.Break | nodes.Continue, depth: int) -> None:
        """``break`` / ``continue``: close the iteration's runtime scope if the loop opens one,
        and give the innermost loop's iter args the values recorded at the statement."""
        if not self.loops:
            raise PyptoCompileError("orchestration codegen: break / continue outside a loop")
        loop, scoped = self.loops[-1]
        if scoped:
            self.emit(depth, "if (orch.scope_end() != 0) return 1;")
        self.carry(loop, s.values, depth)
        self.emit(depth, "break;" if isinstance(s, nodes.Break) else "continue;")

    def carry(self, s: nodes.For | nodes.While, values: tuple[nodes.Expr, ...], depth: int) -> None:
        """Set the loop's iter args to their next values (at a yield, break or continue).

        A tensor is carried by value (its descriptor), never by address: the value may be a
        tensor of this iteration's block, gone once the block ends. With more than one
        assignment every next value is read into a temporary first, so a value that names
        another iter arg (``a, b = b, a``) is read before that iter arg changes."""
        moves: list[tuple[str, str, str]] = []  # (target, C++ type of a temporary, value)
        for ia, v in zip(s.iter_args, values, strict=True):
            name = ident(ia.var.name)
            if isinstance(ia.var.type, TensorType):
                assert isinstance(v, nodes.Var)
                if v.name != ia.var.name:
                    moves.append((f"{name}_v", "simpler::ChipTensor", ident(v.name)))
            elif isinstance(ia.var.type, (ArrayType, TaskIdType)):
                assert isinstance(v, nodes.Var)
                if v.name != ia.var.name:
                    moves.append((name, _task_cpp(ia.var.type), ident(v.name)))
            elif not (isinstance(v, nodes.Var) and v.name == ia.var.name):
                t = ia.var.type
                assert isinstance(t, ScalarType)
                moves.append((name, scalar_cpp_type(t.dtype), scalar_expr(v)))
        if len(moves) == 1:
            target, _, value = moves[0]
            self.emit(depth, f"{target} = {value};")
        elif moves:
            self.emit(depth, "{")
            for k, (_, cpp, value) in enumerate(moves):
                self.emit(depth + 1, f"const {cpp} next_{k} = {value};")
            for k, (target, _, _) in enumerate(moves):
                self.emit(depth + 1, f"{target} = next_{k};")
            self.emit(depth, "}")


def _task_cpp(t: Type) -> str:
    """The C++ type of a task id (``std::int64_t``, -1 naming no task) or a task-id array."""
    return "std::vector<std::int64_t>" if isinstance(t, ArrayType) else "std::int64_t"


def _allocates_locally(s: nodes.For | nodes.While, program: nodes.Program) -> bool:
    """True when the loop body allocates tensors that do not outlive one iteration: it creates
    tensors, and no tensor it carries to the next iteration (or out of the loop) is one of them.
    A created tensor is often carried under another name (the result of the kernel call that
    wrote it, a view of it), so every name that may stand for one counts."""
    local: set[str] = set()  # names of tensors made in this iteration's body
    for st in s.body:
        if not (isinstance(st, nodes.Assign) and isinstance(st.var.type, TensorType)):
            continue
        e = st.value
        if isinstance(e, nodes.Call) and e.op == "tensor.create":
            local.add(st.var.name)
        elif isinstance(e, nodes.CallFunc):  # a kernel's result is the argument it returns
            rets = function_aliases(program.functions[e.callee], program)
            src = e.args[rets[0]] if len(rets) == 1 and rets[0] is not None else None
            if not isinstance(src, nodes.Var) or src.name in local:
                local.add(st.var.name)
        elif any(v.name in local for v in nodes.expr_vars(e)):
            local.add(st.var.name)
    if not local:
        return False
    carried = {
        v.name
        for stmt in _carry_points(s.body)
        for v in stmt.values
        if isinstance(v, nodes.Var) and isinstance(v.type, TensorType)
    }
    return not (local & carried)


def _carry_points(body: tuple[nodes.Stmt, ...]) -> list[nodes.Yield | nodes.Break | nodes.Continue]:
    """The yields, breaks and continues that end an iteration of the loop whose body this is
    (not those of loops nested in it)."""
    found: list[nodes.Yield | nodes.Break | nodes.Continue] = []
    if body and isinstance(body[-1], nodes.Yield):
        found.append(body[-1])
    stack = list(body)
    while stack:
        st = stack.pop()
        if isinstance(st, (nodes.Break, nodes.Continue)):
            found.append(st)
        elif isinstance(st, nodes.If):
            stack.extend(st.then_body)
            stack.extend(st.else_body)
    return found
